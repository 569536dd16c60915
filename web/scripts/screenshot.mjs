// Regenerates every page screenshot in docs/images, from the built page (web/dist, served from
// 127.0.0.1 on a free port). The only writer of docs/images: the browser tests keep theirs in
// web/test-results.
//   docs/images/page.png              README.md: the default scenario at 1440x1000, once its
//                                     first result is shown;
//   docs/images/accuracy-1440x900.png docs/fidelity/validation.md: the tab "How accurate is
//                                     this?" at 1440x900, once every case of
//                                     tests/validation/published.json is simulated (about a
//                                     minute of simulation in the page's worker);
//   the six states of scripts/page_states.mjs, each from a fresh visit, which the browser test
//   tests/browser/features.test.ts drives through the same steps and checks:
//     page-1440x900.png, schedule-picker-1440x900.png, lesson-presenter-1440x900.png,
//     compare-1440x900.png, fit-advice-1440x900.png, page-390x844.png (phone: touch, mobile).
//   cd web && npm run build && npm run screenshot
// Browser: /usr/bin/chromium or $CHROMIUM with the browser tests' flags (scripts/chromium.mjs).
// Settings that would otherwise vary between machines or runs are fixed: viewport, device
// scale factor 1, light colour scheme, sRGB, reduced motion and animations stopped, caret
// hidden, full-tile raster, and the run's measured time left out of the status (dropMeasuredTime;
// at 1440 px the top bar cuts the status to "Simula…" anyway, the phone layout shows it). The
// accuracy panel shows no timings, only the cases' results, which are deterministic.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM_FLAGS, CHROMIUM_PATH } from './chromium.mjs';
import { DESKTOP, PHONE, compareRuns, defaultTimeline, fitAdvice, lessonPresenter, phoneLayout, schedulePicker } from './page_states.mjs';
import { startStaticServer } from './static-server.mjs';

const web = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(web, 'dist');
const images = resolve(web, '..', 'docs', 'images');
const pageOutput = join(images, 'page.png');
const accuracyOutput = join(images, 'accuracy-1440x900.png');
const VIEWPORT = { width: 1440, height: 1000 }; // the size README.md's image has always had
const ACCURACY_VIEWPORT = { width: 1440, height: 900 }; // the size its file name says
// With partial raster, a tile invalidated during start-up is re-rastered only in its changed
// part, and rounded corners' anti-aliasing then differed by 1/255 in 20-170 pixels from run to
// run (measured here: 4 runs in a row gave 4 different images; with it 11 of 11 were
// byte-identical). sRGB so that a display's colour profile never enters the image.
const DETERMINISTIC_FLAGS = ['--disable-partial-raster', '--force-color-profile=srgb'];
const RESULT_TIMEOUT_MS = 120_000; // the first run is a few seconds; a loaded 2-core machine is slower
const ACCURACY_TIMEOUT_MS = 600_000; // every validation case: about a minute, several on a loaded machine
/** The images of scripts/page_states.mjs: file name, browser context (viewport, touch), state. */
const STATE_IMAGES = [
  ['page-1440x900.png', DESKTOP, defaultTimeline],
  ['schedule-picker-1440x900.png', DESKTOP, schedulePicker],
  ['lesson-presenter-1440x900.png', DESKTOP, lessonPresenter],
  ['compare-1440x900.png', DESKTOP, compareRuns],
  ['fit-advice-1440x900.png', DESKTOP, fitAdvice],
  ['page-390x844.png', PHONE, phoneLayout],
];

/** The browser tests' readiness signal (src/app.ts settled), plus a good status. */
function resultShown() {
  return window.proteus?.settled() === true && document.getElementById('status')?.dataset.kind === 'ok';
}

/**
 * The accuracy panel's own end of run (src/accuracy.ts resume): the status says "All N cases
 * simulated." only once the last case returned, and no row is left waiting or failed.
 */
function accuracyDone() {
  const panel = document.getElementById('tab-accuracy');
  const status = document.getElementById('accuracy-status')?.textContent ?? '';
  return /^All \d+ cases simulated\.$/.test(status) && panel !== null && panel.querySelector('.accuracy-pending, .accuracy-failed') === null;
}

/** Waits for `done` in the page, or throws with the page's status and errors. */
async function waitFor(page, done, timeoutMs, what, statusSelector, errors) {
  try {
    await page.waitForFunction(done, null, { timeout: timeoutMs, polling: 500 });
  } catch (e) {
    const status = await page.$eval(statusSelector, (el) => el.textContent).catch(() => '(no status)');
    throw new Error(`the page showed no ${what} within ${timeoutMs / 1000} s (status: ${status}; page errors: ${errors.join(' | ') || 'none'}): ${e.message}`);
  }
  await page.evaluate(() => document.fonts.ready);
}

/**
 * The status after a run starts with its measured wall time ("Simulated in 262 ms · 45 929
 * tasks · 2 of 32 GPUs simulated"), different on every run; where the top bar shows it (the
 * phone layout: measured here, 2 runs gave 262 and 435 ms, so 2 different images) the image
 * would differ. The measured part is left out of the captured page; the rest is the run's own.
 */
async function dropMeasuredTime(page) {
  await page.$eval('#status', (el) => {
    el.textContent = el.textContent.replace(/^Simulated in [^·]*· /, 'Simulated · ');
  });
}

async function capture(page, output, viewport, note) {
  mkdirSync(dirname(output), { recursive: true });
  await dropMeasuredTime(page);
  await page.screenshot({ path: output, animations: 'disabled', caret: 'hide' });
  console.log(`wrote ${output} (${viewport.width}x${viewport.height}; ${note})`);
}

/** The README image: the default scenario once its first result is shown. */
async function shootPage(page, errors) {
  await waitFor(page, resultShown, RESULT_TIMEOUT_MS, 'result', '#status', errors);
  const iteration = await page.$eval('[data-card="iteration_time_s"] .card-value', (el) => el.textContent);
  await capture(page, pageOutput, VIEWPORT, `iteration time ${iteration}`);
}

/**
 * The fidelity/validation.md image: the accuracy tab with every case done, scrolled as the browser test
 * scrolls it (tests/browser/accuracy.test.ts): the tabs at the top, below the sticky header.
 */
async function shootAccuracy(page, errors) {
  await page.setViewportSize(ACCURACY_VIEWPORT);
  await page.click('button[data-tab="accuracy"]');
  await waitFor(page, accuracyDone, ACCURACY_TIMEOUT_MS, 'complete accuracy table', '#accuracy-status', errors);
  await page.evaluate(() => {
    document.querySelector('.tabs').scrollIntoView({ block: 'start' });
    window.scrollBy(0, -document.querySelector('header').getBoundingClientRect().height - 8);
  });
  const all = await page.$eval('#accuracy-group-table tbody tr:last-child', (tr) => Array.from(tr.children, (c) => c.textContent).join(' | '));
  await capture(page, accuracyOutput, ACCURACY_VIEWPORT, `${all}`);
}

/** A state of scripts/page_states.mjs, from the default scenario's first result. */
async function shootState(page, errors, file, options, state) {
  await waitFor(page, resultShown, RESULT_TIMEOUT_MS, 'result', '#status', errors);
  await state(page);
  await page.evaluate(() => document.fonts.ready);
  await capture(page, join(images, file), options.viewport, state.name);
}

/**
 * Opens the page (no fragment: the default scenario) in a browser of its own with a fresh
 * profile, so that no image depends on another's run, with `options` (viewport, touch) and the
 * fixed settings above; runs `shoot(page, errors)`; fails on a page error.
 */
async function inFreshBrowser(url, options, shoot) {
  const profile = mkdtempSync(join(tmpdir(), 'proteus-screenshot-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [...CHROMIUM_FLAGS, ...DETERMINISTIC_FLAGS],
      deviceScaleFactor: 1,
      colorScheme: 'light',
      reducedMotion: 'reduce',
      locale: 'en-US',
      timezoneId: 'UTC',
      ...options,
    });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    await shoot(page, errors);
    if (errors.length > 0) throw new Error(`page errors: ${errors.join(' | ')}`);
  } finally {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

async function main() {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium not found at ${CHROMIUM_PATH}: install Debian's \`chromium\` package or set CHROMIUM=<path to the browser>`);
  }
  // startStaticServer itself refuses a missing dist/ and says to run `npm run build`.
  const server = await startStaticServer(dist, 0);
  try {
    await inFreshBrowser(server.url, { viewport: VIEWPORT }, async (page, errors) => {
      await shootPage(page, errors);
      await shootAccuracy(page, errors);
    });
    for (const [file, options, state] of STATE_IMAGES) {
      await inFreshBrowser(server.url, options, (page, errors) => shootState(page, errors, file, options, state));
    }
  } finally {
    await server.close();
  }
}

main().catch((e) => {
  console.error(`screenshot: ${e.message}`);
  process.exit(1);
});
