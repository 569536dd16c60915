import './style.css';
import { App } from './app';

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

const app = new App();
void app.start();
// For tests and the curious: the page's state, read-only by convention.
(window as unknown as { proteus: App }).proteus = app;
