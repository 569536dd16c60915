// The headless Chromium the browser tests and the screenshot script launch: Debian's
// /usr/bin/chromium (or $CHROMIUM) with TOOLCHAIN.md's flags (headless, and no traffic to the
// closed network). One place, so that the documentation's images come from the browser the
// tests check.
export const CHROMIUM_PATH = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
