// Regenerates docs/images/page.png, the screenshot README.md shows: the built page (web/dist,
// served from 127.0.0.1 on a free port) on its default scenario, at 1440x1000, once its first
// result is shown.
//   cd web && npm run build && npm run screenshot
// Browser: /usr/bin/chromium or $CHROMIUM, launched as the browser tests launch it
// (tests/support/browser.ts; the flags of TOOLCHAIN.md). Settings that would otherwise vary
// between machines or runs are fixed: viewport, device scale factor 1, light colour scheme,
// sRGB, reduced motion and animations stopped, caret hidden, full-tile raster. At 1440 px the
// top bar cuts the status to "Simula…", so the run's measured time ("Simulated in … ms") does
// not show either; a wider page would show it and differ there from run to run.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startStaticServer } from './static-server.mjs';

const web = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(web, 'dist');
const output = resolve(web, '..', 'docs', 'images', 'page.png');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const VIEWPORT = { width: 1440, height: 1000 }; // the size README.md's image has always had
// The browser tests' flags (TOOLCHAIN.md: headless, and no traffic to the closed network).
const TEST_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
// With partial raster, a tile invalidated during start-up is re-rastered only in its changed
// part, and rounded corners' anti-aliasing then differed by 1/255 in 20-170 pixels from run to
// run (measured here: 4 runs in a row gave 4 different images; with it 11 of 11 were
// byte-identical). sRGB so that a display's colour profile never enters the image.
const DETERMINISTIC_FLAGS = ['--disable-partial-raster', '--force-color-profile=srgb'];
const RESULT_TIMEOUT_MS = 120_000; // the first run is a few seconds; a loaded 2-core machine is slower

/** The browser tests' readiness signal (tests/support/browser.ts waitForResult), plus a good status. */
function resultShown() {
  const body = document.body;
  return body.classList.contains('has-result') && !body.classList.contains('running') && document.getElementById('status')?.dataset.kind === 'ok';
}

async function main() {
  if (!existsSync(chromiumPath)) {
    throw new Error(`Chromium not found at ${chromiumPath}: install Debian's \`chromium\` package or set CHROMIUM=<path to the browser>`);
  }
  // startStaticServer itself refuses a missing dist/ and says to run `npm run build`.
  const server = await startStaticServer(dist, 0);
  const profile = mkdtempSync(join(tmpdir(), 'proteus-screenshot-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: [...TEST_FLAGS, ...DETERMINISTIC_FLAGS],
      viewport: VIEWPORT,
      deviceScaleFactor: 1,
      colorScheme: 'light',
      reducedMotion: 'reduce',
      locale: 'en-US',
      timezoneId: 'UTC',
    });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(server.url); // no fragment: the default scenario
    try {
      await page.waitForFunction(resultShown, null, { timeout: RESULT_TIMEOUT_MS });
    } catch (e) {
      const status = await page.$eval('#status', (el) => el.textContent).catch(() => '(no status)');
      throw new Error(`the page showed no result within ${RESULT_TIMEOUT_MS / 1000} s (status: ${status}; page errors: ${errors.join(' | ') || 'none'}): ${e.message}`);
    }
    await page.evaluate(() => document.fonts.ready);
    const iteration = await page.$eval('[data-card="iteration_time_s"] .card-value', (el) => el.textContent);
    mkdirSync(dirname(output), { recursive: true });
    await page.screenshot({ path: output, animations: 'disabled', caret: 'hide' });
    console.log(`wrote ${output} (${VIEWPORT.width}x${VIEWPORT.height}; iteration time ${iteration})`);
  } finally {
    await context?.close();
    await server.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(`screenshot: ${e.message}`);
  process.exit(1);
});
