// The page states that docs/images shows, as the steps a visitor takes to reach them. The
// browser test tests/browser/features.test.ts drives the page through these steps and checks
// it between them; scripts/screenshot.mjs (npm run screenshot) drives the same steps and writes
// the images. One module, so that each image shows a state the tests check, and only that
// script writes docs/images (the tests keep their screenshots in web/test-results).
//
// Each state starts on the default scenario with its first result shown (a fresh visit, or
// page.goto of the page's address without a fragment). `onStep(name)` is awaited after the
// named steps, so that a test can check the page there; the script passes none.

/** The viewports the images are named after; the tests run at the same sizes. */
export const DESKTOP = { viewport: { width: 1440, height: 900 } };
export const PHONE = { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true };

const RUN_TIMEOUT_MS = 120_000; // one simulation; a loaded 2-core machine is slow
const DRAWER_SLIDE_MS = 300; // the phone drawer slides in 0.2 s (src/style.css): done by then
const noCheck = async () => {};

/** Waits until the page shows a result and nothing runs (src/app.ts settled; before the app is up, not yet). */
export async function waitForResult(page, timeout = 60_000) {
  await page.waitForFunction(() => window.proteus?.settled() === true, null, { timeout });
}

/** How many simulations the page has run (src/app.ts counts them: one per change). */
export function simulationCount(page) {
  return page.evaluate(() => window.proteus.simulationCount());
}

/** Waits for a simulation after the first `previousCount`, ended, with a good status. */
export async function waitForNew(page, previousCount) {
  await page.waitForFunction(
    (n) => window.proteus.simulationCount() > n && window.proteus.settled() && document.getElementById('status')?.dataset.kind === 'ok',
    previousCount,
    { timeout: RUN_TIMEOUT_MS },
  );
}

/**
 * Sets a control as a visitor does and waits for the run it starts: focus it (as a click
 * would: the page leaves a focused field as typed), then pick the option of a <select>, or
 * type into an input and leave it (the change event).
 */
export async function changeControl(page, selector, value) {
  const n = await simulationCount(page);
  await page.focus(selector);
  if ((await page.$eval(selector, (e) => e.tagName)) === 'SELECT') await page.selectOption(selector, value);
  else {
    await page.fill(selector, value);
    await page.dispatchEvent(selector, 'change');
  }
  await waitForNew(page, n);
}

function scrollTo(page, selector, block) {
  return page.$eval(selector, (e, b) => e.scrollIntoView({ block: b }), block);
}

/** page-1440x900.png: the default scenario's first result, the timeline at the top. */
export async function defaultTimeline(page) {
  await waitForResult(page);
  await scrollTo(page, '.tl', 'start');
}

/**
 * schedule-picker-1440x900.png: global batch 8 (2 micro-batches per pipeline), then DualPipeV
 * (needs 2 x pp micro-batches: the picker raises the batch to 16), interleaved 1F1B (2 virtual
 * stages) and back to 1F1B (1 again); the schedule section at the top. onStep: each schedule.
 */
export async function schedulePicker(page, onStep = noCheck) {
  await changeControl(page, '#ctl-training-global_batch', '8');
  for (const schedule of ['dualpipe-v', 'interleaved-1f1b', '1f1b']) {
    await changeControl(page, '#ctl-strategy-schedule', schedule);
    await onStep(schedule);
  }
  await scrollTo(page, '#sec-schedule', 'start');
}

/**
 * Step `step` (from 0) of lesson `id`: chosen in the lesson menu for step 0, otherwise Next
 * from step - 1. Waits for the step's own run (the result shown is of the config the step
 * set) or for its error, which ends the wait at once for the caller to report.
 */
export async function showLessonStep(page, id, step) {
  if (step === 0) await page.selectOption('#lesson', id);
  else await page.click('#lesson-next');
  await page.waitForFunction(
    ([lesson, n]) => {
      const panel = document.getElementById('lesson-panel');
      const app = window.proteus;
      const status = document.getElementById('status')?.dataset.kind;
      if (panel?.dataset.lesson !== lesson || panel.dataset.step !== String(n)) return false;
      if (status === 'error') return true;
      return app.current?.config === app.config && app.settled() && status === 'ok' && /lesson=/.test(location.hash);
    },
    [id, step],
    { timeout: RUN_TIMEOUT_MS },
  );
}

/**
 * lesson-presenter-1440x900.png: the last lesson of the menu at its second-to-last step, in
 * presenter mode (the browser test reaches the same step after walking every lesson, back
 * twice and forward once).
 */
export async function lessonPresenter(page) {
  const id = await page.$eval('#lesson', (s) => s.options[s.options.length - 1].value);
  await showLessonStep(page, id, 0);
  const steps = Number(/of (\d+)/.exec(await page.textContent('.lesson-count'))[1]);
  for (let step = 1; step <= steps - 2; ++step) await showLessonStep(page, id, step);
  await page.click('#presenter');
}

/**
 * compare-1440x900.png: the default run pinned, global batch 64 pinned, the compare tab (both
 * pins and the current run on one time axis), zoomed in once with W, the first pin renamed
 * "before"; the tab at the top. onStep: 'compare' (tab open), 'zoomed'.
 */
export async function compareRuns(page, onStep = noCheck) {
  await page.click('#pin');
  await changeControl(page, '#ctl-training-global_batch', '64');
  await page.click('#pin');
  await page.click('.tabs button[data-tab="compare"]');
  await onStep('compare');
  await page.focus('.compare-tl .tl');
  await page.keyboard.press('w');
  await onStep('zoomed');
  await page.fill('.pin-name >> nth=0', 'before');
  await page.dispatchEvent('.pin-name >> nth=0', 'change');
  await scrollTo(page, '#tab-compare', 'start');
}

/**
 * fit-advice-1440x900.png: Mixtral 8x7B with every expert on every GPU (ep 1), over the GPU's
 * memory (~180 GiB per GPU), and the changes that fit, centred.
 */
export async function fitAdvice(page) {
  await changeControl(page, '#scenario', 'mixtral-8x7b-ep');
  await changeControl(page, '#ctl-strategy-ep', '1');
  await page.waitForSelector('.fit-advice', { timeout: RUN_TIMEOUT_MS }); // asked for after the run is shown
  await scrollTo(page, '.fit-advice', 'center');
}

/**
 * page-390x844.png (PHONE): the first result after the controls' drawer was opened and
 * closed again with Escape. onStep: 'loaded', 'drawer open'.
 */
export async function phoneLayout(page, onStep = noCheck) {
  await waitForResult(page);
  await onStep('loaded');
  await page.click('#drawer-toggle');
  await page.waitForTimeout(DRAWER_SLIDE_MS);
  await onStep('drawer open');
  await page.keyboard.press('Escape');
  await page.waitForTimeout(DRAWER_SLIDE_MS);
}
