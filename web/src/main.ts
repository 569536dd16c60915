import './style.css';
import { App } from './app';

const app = new App();
void app.start();
// For tests and the curious: the page's state, read-only by convention.
(window as unknown as { proteus: App }).proteus = app;
