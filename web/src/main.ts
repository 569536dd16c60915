import './style.css';
import { boot } from './boot';

// The simulator first (compiling, its worker starting), then the page's code, in parallel.
const booted = boot(document.baseURI, location.hash);

// Dark or light: the visitor's last choice, else the system's (no inline script: CSP).
try {
  const theme = localStorage.getItem('proteus-theme');
  if (theme === 'dark' || theme === 'light') document.documentElement.dataset.theme = theme;
  else if (matchMedia('(prefers-color-scheme: dark)').matches) document.documentElement.dataset.theme = 'dark';
} catch {
  /* storage blocked: light */
}
// Phones: the header collapses to one row once the page scrolls.
window.addEventListener('scroll', () => document.body.classList.toggle('scrolled', window.scrollY > 40), { passive: true });

const { App } = await import('./app');
const app = new App();
// For tests and the curious: the page's state, read-only by convention.
(window as unknown as { proteus: typeof app }).proteus = app;
void app.start(booted);
