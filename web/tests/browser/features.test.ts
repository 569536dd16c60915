// The page's teaching and analysis features in headless Chromium: one simulation per change,
// controls that show the resolved config (first load and a link in a fresh context), span
// and range selection, search, lessons (every step, back/forward, presenter mode), stacked
// compare on a locked axis, the phone layout, the 405B scenario's trace and panning speed,
// and an axe-core accessibility run. Screenshots go to web/test-results/ only: the states that
// docs/images shows are driven by scripts/page_states.mjs, which `npm run screenshot` drives too.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_CONTROLS } from '../../src/controls';
import { LESSONS } from '../../src/lessons';
import { fractionToPercent } from '../../src/percent';
import { SCHEDULES } from '../../src/schedules';
import { encodeConfig } from '../../src/share';
import { ARTIFACTS, axeViolations, openPage, startSession, waitForResult, type Session } from '../support/browser';
import {
  DESKTOP,
  PHONE,
  changeControl,
  compareRuns,
  defaultTimeline,
  fitAdvice,
  phoneLayout,
  schedulePicker,
  showLessonStep,
  waitForNew,
  // @ts-expect-error plain ESM helper without types
} from '../../scripts/page_states.mjs';

const CLI = process.env.PROTEUS_CLI ?? resolve(__dirname, '..', '..', '..', 'build', 'bin', 'proteus');

async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });
}

function getPath(obj: any, path: string): any {
  return path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

/** Every control against the resolved config; returns the mismatches. */
async function controlMismatches(page: Page, resolved: any): Promise<string[]> {
  const bad: string[] = [];
  for (const c of ALL_CONTROLS) {
    if (c.kind === 'model' || c.kind === 'cluster') continue;
    const want = getPath(resolved, c.path);
    const id = `#ctl-${c.path.replace(/\./g, '-')}`;
    const got = await page.$eval(id, (e) => ((e as HTMLInputElement).type === 'checkbox' ? (e as HTMLInputElement).checked : (e as HTMLInputElement).value));
    // a select the resolved config leaves out (zb_plan: the framework's default) shows its '' option;
    // a percentage it leaves out (GPU compute: the core's default, the whole of it) shows 100
    const ok =
      c.kind === 'bool'
        ? got === Boolean(want)
        : c.kind === 'int' || c.kind === 'number'
          ? Number(got) === Number(want)
          : c.kind === 'percent'
            ? Number(got) === (want === undefined ? 100 : fractionToPercent(want))
            : want === undefined
              ? got === ''
              : String(got) === String(want);
    if (!ok) bad.push(`${c.path}: shows ${JSON.stringify(got)}, runs with ${JSON.stringify(want)}`);
  }
  return bad;
}

describe('teaching and analysis features', () => {
  let s: Session;
  let page: Page;

  beforeAll(async () => {
    ({ session: s, page } = await openPage(DESKTOP));
  });
  afterAll(async () => {
    await s?.close();
  });

  it('shows cards and timeline from one simulation, and simulates once per change', async () => {
    await defaultTimeline(page);
    // Start-up, step by step (ms after navigation; scripts/startup-bench.mjs takes medians of
    // fresh visits). The targets (cards <= 1000 ms, timeline <= 1500 ms, idle machine) are printed.
    const b: Record<string, number> = await page.evaluate(() => (window as any).proteus.startupBreakdown());
    console.log(
      `first cards ${Math.round(b.cards)} ms, full timeline ${Math.round(b.timeline)} ms after navigation; ` + Object.entries(b).map(([k, v]) => `${k} ${Math.round(v)}`).join(' · '),
    );
    expect(b.cards).toBeLessThanOrEqual(b.timeline);
    expect(await page.evaluate(() => (window as any).proteus.simulationCount())).toBe(1);
    await shot(page, 'f01-default');
    for (const [sel, value] of [
      ['#ctl-strategy-tp', '2'],
      ['#ctl-training-global_batch', '64'],
      ['#ctl-strategy-recompute', 'full'],
      ['#ctl-cluster-gpu-compute_throughput_fraction', '91'],
    ]) {
      const n = await page.evaluate(() => (window as any).proteus.simulationCount());
      await changeControl(page, sel, value);
      await page.waitForTimeout(300); // nothing else starts afterwards
      expect(await page.evaluate(() => (window as any).proteus.simulationCount()), sel).toBe(n + 1);
    }
    // A change event that leaves the config as it is simulates nothing: the browser fires one
    // when a typed-in field loses focus, after the page has already run its value (a race that
    // counted two simulations for one change under load).
    const n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.dispatchEvent('#ctl-training-global_batch', 'change');
    await page.focus('#ctl-strategy-tp');
    await page.dispatchEvent('#ctl-strategy-tp', 'change');
    await page.waitForTimeout(400);
    expect(await page.evaluate(() => (window as any).proteus.simulationCount())).toBe(n);
  });

  it('fills every control from the resolved config, on first load and from a link in a fresh browser', async () => {
    const resolved = JSON.parse(execFileSync(CLI, ['show', 'default'], { encoding: 'utf8' }));
    const fresh = await startSession(DESKTOP);
    try {
      const first = await fresh.newPage();
      await waitForResult(first);
      expect(await controlMismatches(first, resolved)).toEqual([]);
      // the link of the page as it is now (tp 2, global batch 64, full recompute, GPU compute
      // 91%), in a fresh browser
      expect(getPath(await page.evaluate(() => (window as any).proteus.config), 'cluster.gpu.compute_throughput_fraction')).toBe(0.91);
      const link = page.url();
      const cfg = await page.evaluate(() => JSON.stringify((window as any).proteus.config));
      const file = join(ARTIFACTS, 'link-config.json');
      writeFileSync(file, cfg);
      const want = JSON.parse(execFileSync(CLI, ['show', file], { encoding: 'utf8' }));
      const other = await fresh.context.newPage();
      await other.goto(link);
      await waitForResult(other);
      expect(want.cluster.gpu.compute_throughput_fraction).toBe(0.91);
      expect(await other.inputValue('#ctl-cluster-gpu-compute_throughput_fraction')).toBe('91');
      expect(await controlMismatches(other, want)).toEqual([]);
      expect(await controlMismatches(page, want)).toEqual([]);
    } finally {
      await fresh.close();
    }
  });

  it('picks a schedule from all the core accepts, each explained, and fixes the knobs it needs', async () => {
    await page.goto(s.url);
    await waitForResult(page);
    const options = await page.$$eval('#ctl-strategy-schedule option', (os) => os.map((o) => [(o as HTMLOptionElement).value, (o as HTMLOptionElement).title]));
    expect(options.map(([v]) => v)).toEqual(SCHEDULES.map((x) => x.value));
    for (const [, title] of options) expect(title.length).toBeGreaterThan(30);
    // default: dp 4, micro-batch 1, pp 2; global batch 8 = 2 micro-batches per pipeline
    await schedulePicker(page, async (schedule: string) => {
      if (schedule === 'dualpipe-v') {
        // DualPipeV needs 2 x pp = 4 micro-batches: the picker raised the global batch to 16
        expect(await page.evaluate(() => (window as any).proteus.config.training.global_batch)).toBe(16);
        expect(await page.inputValue('#ctl-training-global_batch')).toBe('16');
        expect(await page.evaluate(() => (window as any).proteus.resolved.strategy.schedule)).toBe('dualpipe-v');
        expect(await page.textContent('[data-path="strategy.schedule"] .ctl-explain')).toMatch(/DeepSeek-V3/);
      } else {
        // interleaving: 2 virtual stages; back to 1F1B: 1 again
        expect(await page.inputValue('#ctl-strategy-virtual_stages')).toBe(schedule === 'interleaved-1f1b' ? '2' : '1');
      }
    });
    await shot(page, 'f00-schedule-picker');
  });

  it('plans zero-bubble schedules from measured pass times or unit times, shows the plan, and keeps the choice in the link', async () => {
    await page.goto(s.url);
    await waitForResult(page);
    const box = '[data-path="strategy.zb_plan"]';
    const count = () => page.evaluate(() => (window as any).proteus.simulationCount());
    expect(await page.isHidden(box)).toBe(true); // 1F1B: the zero-bubble runtime plans nothing
    expect(await page.isHidden('.pipeline-plan')).toBe(true);
    let n = await count();
    await page.focus('#ctl-strategy-schedule');
    await page.selectOption('#ctl-strategy-schedule', 'zb-h1');
    await waitForNew(page, n);
    expect(await page.isVisible(box)).toBe(true);
    expect(await page.inputValue('#ctl-strategy-zb_plan')).toBe(''); // framework default: unset
    expect(await page.textContent(`${box} .ctl-explain`)).toMatch(/megatron plays “profiled/);
    // The plan: a row per stage (F, B, W ms, warm-up, the order), the planner's input last.
    const plan = await page.evaluate(() => (window as any).proteus.current.result.pipelinePlan);
    expect(plan.stageOrders.length).toBe(2);
    await page.waitForSelector('.pipeline-plan table', { state: 'visible' });
    expect(await page.$$eval('.pipeline-plan thead th[scope="col"]', (t) => t.map((e) => e.textContent))).toEqual(['Stage', 'F (ms)', 'B (ms)', 'W (ms)', 'Warm-up F', 'Planned order']);
    expect(await page.$$eval('.pipeline-plan tbody tr', (r) => r.length)).toBe(2);
    expect(await page.$$eval('.pipeline-plan .plan-order', (c) => c.map((e) => e.textContent))).toEqual(plan.stageOrders);
    expect(await page.getAttribute('.pipeline-plan .plan-order', 'aria-label')).toBe('Stage 0 planned order');
    expect(await page.textContent('.pipeline-plan tfoot')).toMatch(/Planner input.*send [\d.]+ ms/);
    // a long order scrolls inside its cell, not the page
    expect(await page.$eval('.pipeline-plan .plan-order', (e) => e.scrollWidth > e.clientWidth)).toBe(true);
    expect(await page.$eval('.pipeline-plan', (e) => e.getBoundingClientRect().right <= document.documentElement.clientWidth)).toBe(true);
    await page.$eval('.pipeline-plan', (e) => e.scrollIntoView({ block: 'center' }));
    await shot(page, 'f02-zero-bubble-plan');
    expect(await axeViolations(page, 'tab-timeline'), 'light').toEqual([]);
    await page.click('#theme');
    expect(await axeViolations(page, 'tab-timeline'), 'dark').toEqual([]);
    await page.click('#theme');
    // unit times: one simulation, no plan to show; the choice is in the link
    n = await count();
    await page.selectOption('#ctl-strategy-zb_plan', 'unit');
    await waitForNew(page, n);
    expect(await page.evaluate(() => (window as any).proteus.config.strategy.zb_plan)).toBe('unit');
    expect(await page.textContent(`${box} .ctl-explain`)).toMatch(/F = B = W/);
    expect(await page.isHidden('.pipeline-plan')).toBe(true);
    const other = await s.context.newPage();
    await other.goto(page.url());
    await waitForResult(other);
    expect(await other.inputValue('#ctl-strategy-zb_plan')).toBe('unit');
    expect(await other.evaluate(() => (window as any).proteus.resolved.strategy.zb_plan)).toBe('unit');
    await other.close();
    // back to the framework default: the field leaves the config
    n = await count();
    await page.selectOption('#ctl-strategy-zb_plan', '');
    await waitForNew(page, n);
    expect(await page.evaluate(() => 'zb_plan' in (window as any).proteus.config.strategy)).toBe(false);
    // leaving the zero-bubble schedules unsets it (the core refuses it with 1F1B) and hides it
    n = await count();
    await page.selectOption('#ctl-strategy-zb_plan', 'unit');
    await waitForNew(page, n);
    n = await count();
    await page.selectOption('#ctl-strategy-schedule', '1f1b');
    await waitForNew(page, n);
    expect(await page.evaluate(() => 'zb_plan' in (window as any).proteus.config.strategy)).toBe(false);
    expect(await page.isHidden(box)).toBe(true);
    // a link that keeps it with 1F1B: the control shows, with the core's error and a fix
    const config = await page.evaluate(() => (window as any).proteus.config);
    const bad = await s.newPage('#' + encodeConfig({ ...config, strategy: { ...config.strategy, zb_plan: 'unit' } }));
    await bad.waitForSelector(`${box} .ctl-error:not([hidden])`, { timeout: 60_000 });
    expect(await bad.isVisible(box)).toBe(true);
    expect(await bad.textContent(`${box} .ctl-error`)).toMatch(/zb_plan chooses how the zero-bubble runtime/);
    await bad.click(`${box} .fix-btn`);
    await waitForResult(bad);
    expect(await bad.evaluate(() => 'zb_plan' in (window as any).proteus.config.strategy)).toBe(false);
    expect(await bad.isHidden(box)).toBe(true);
    await bad.close();
  });

  it('selects a span (details with bytes, group, link, bandwidth, dependencies) and a range (time per category)', async () => {
    await page.goto(s.url);
    await waitForResult(page);
    await page.$eval('.tl', (e) => e.scrollIntoView({ block: 'start' }));
    const box = (await (await page.$('.tl-canvas'))!.boundingBox())!;
    // click spans along the first compute lane until one is selected
    let selected = -1;
    for (let x = box.width * 0.3; x < box.width - 20 && selected < 0; x += 9) {
      await page.mouse.click(box.x + x, box.y + 26 + 4 + 18 + 8);
      selected = await page.$eval('.tl', (e) => Number((e as HTMLElement).dataset.selected ?? -1));
    }
    expect(selected).toBeGreaterThanOrEqual(0);
    expect(await page.textContent('.tl-details')).toMatch(/duration[\s\S]*waits for/);
    // a collective: bytes, group, link, achieved bandwidth
    const coll = await page.evaluate(() => {
      const sp = (window as any).proteus.timelineView().timeline.spans;
      for (let i = 0; i < sp.n; ++i) if (sp.group[i] > 1 && sp.nodes[i] > 1) return i;
      return -1;
    });
    expect(coll).toBeGreaterThanOrEqual(0);
    await page.evaluate((i) => (window as any).proteus.timelineView().selectSpan(i), coll);
    const details = (await page.textContent('.tl-details')) ?? '';
    expect(details).toMatch(/bytes/);
    expect(details).toMatch(/group\d+ GPUs/);
    expect(details).toMatch(/network between \d+ nodes/);
    expect(details).toMatch(/GB\/s/);
    await shot(page, 'f02-span-details');
    // drag across the middle of the timeline: time per category in the range
    await page.keyboard.press('Escape');
    await page.mouse.move(box.x + box.width * 0.35, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + 60, { steps: 5 });
    await page.mouse.up();
    const range = await page.$eval('.tl', (e) => (e as HTMLElement).dataset.range ?? '');
    expect(range).toMatch(/^[\d.e-]+,[\d.e-]+$/);
    const kinds = await page.$$eval('.tl-range-table tbody tr', (r) => r.map((x) => (x as HTMLElement).dataset.kind));
    expect(kinds).toContain('forward');
    expect(await page.textContent('.tl-details')).toMatch(/Compute lanes idle/);
    await shot(page, 'f03-range');
  });

  it('searches spans by name and jumps to matches', async () => {
    await page.fill('.tl-search', 'mlp');
    expect(await page.textContent('.tl-matches')).toMatch(/^[1-9]\d* matches$/);
    await page.focus('.tl-search');
    await page.keyboard.press('Enter');
    const name = await page.evaluate(() => {
      const tl = (window as any).proteus.timelineView().timeline;
      return tl.spans.names[tl.spans.name[tl.selected]];
    });
    expect(name).toMatch(/mlp/);
    await page.fill('.tl-search', '');
    await page.dispatchEvent('.tl-search', 'input');
  });

  it('collapses lanes and shows a compute-only view; labels never overlap at 1,024 GPUs', async () => {
    const rows = () => page.evaluate(() => (window as any).proteus.timelineView().timeline['rows'].length);
    const all = await rows();
    await page.check('#tl-compute-only');
    expect(await rows()).toBeLessThan(all);
    await page.uncheck('#tl-compute-only');
    await page.click('text=Collapse stages');
    expect(await rows()).toBeLessThan(all);
    const { fitText } = await import('../../src/timeline/labels');
    // "GPU 1024" next to "compute" in the gutter: cut to the room, never drawn over it
    const w = (t: string) => t.length * 7;
    expect(fitText('GPU 1024', 168 - 8 - w('compute') - 14, w)).toBe('GPU 1024');
    expect(w(fitText('GPU 1024 ×1024 GPUs', 60, w))).toBeLessThanOrEqual(60);
  });

  it('walks every lesson step, with back/forward and presenter mode', { timeout: 600_000 }, async () => {
    for (const lesson of LESSONS) {
      for (let step = 0; step < lesson.steps.length; ++step) {
        await showLessonStep(page, lesson.id, step); // an invalid step ends the wait and fails below
        expect(await page.$eval('#status', (e) => `${(e as HTMLElement).dataset.kind}: ${e.textContent}`), `${lesson.id} step ${step + 1}`).toMatch(/^ok: /);
        // the knobs the step sets are in the config that ran
        const st = lesson.steps[step];
        for (const [path, v] of Object.entries(st.set)) expect(await page.evaluate((p) => p.split('.').reduce((o: any, k) => o?.[k], (window as any).proteus.config), path), `${lesson.id} ${step} ${path}`).toEqual(v);
        expect(page.url()).toContain(`lesson=${lesson.id}&step=${step + 1}`);
        expect(await page.$$eval('.lesson-highlight', (e) => e.length)).toBe(1);
        expect(await page.getAttribute('.lesson-ref', 'href')).toMatch(/^https:\/\//);
      }
    }
    // back twice and forward once through the last lesson's steps
    const last = LESSONS[LESSONS.length - 1];
    await page.goBack();
    await page.waitForFunction((n) => document.getElementById('lesson-panel')?.dataset.step === String(n), last.steps.length - 2);
    await page.goBack();
    await page.waitForFunction((n) => document.getElementById('lesson-panel')?.dataset.step === String(n), last.steps.length - 3);
    await page.goForward();
    await page.waitForFunction((n) => document.getElementById('lesson-panel')?.dataset.step === String(n), last.steps.length - 2);
    await page.waitForTimeout(400); // the step's run starts after the input debounce
    await waitForResult(page);
    // presenter mode: large type, side panel hidden, in the link
    await page.click('#presenter');
    expect(await page.isVisible('#sidebar')).toBe(false);
    const px = await page.$eval('.lesson-text', (e) => parseFloat(getComputedStyle(e).fontSize));
    expect(px).toBeGreaterThanOrEqual(20);
    expect(page.url()).toContain('present=1');
    await shot(page, 'f04-presenter'); // the state of lessonPresenter (scripts/page_states.mjs)
    await page.click('#presenter');
    await page.selectOption('#lesson', '');
  });

  it('stacks pinned runs on one locked time axis, names their differences, and keeps renamed pins in the link', async () => {
    await page.goto(s.url);
    await waitForResult(page);
    // the default run and global batch 64 pinned, the compare tab, W once, the first pin renamed
    const tlEnds = () => page.$$eval('.compare-tl .tl', (e) => e.map((x) => Number((x as HTMLElement).dataset.t1)));
    let ends: number[] = [];
    await compareRuns(page, async (step: string) => {
      if (step === 'compare') {
        expect(await page.$$eval('.compare-tl', (e) => e.length)).toBe(3);
        const diffs = await page.$$eval('.compare-table .pin-diff', (e) => e.map((x) => x.textContent));
        expect(diffs[0]).toMatch(/global batch 128/);
        expect(diffs[1]).toMatch(/global batch 64/);
        ends = await tlEnds();
        expect(new Set(ends).size).toBe(1); // one shared axis
      } else {
        const after = await tlEnds(); // zoomed in: still one axis, a shorter window
        expect(new Set(after).size).toBe(1);
        expect(after[0]).toBeLessThan(ends[0]);
      }
    });
    expect(page.url()).toMatch(/[#&]p=/);
    expect(page.url()).toMatch(/tab=compare/);
    await shot(page, 'f05-compare');
    const other = await s.context.newPage();
    await other.goto(page.url());
    await other.waitForFunction(() => document.querySelectorAll('.compare-table .pin-name').length === 2, null, { timeout: 120_000 });
    expect(await other.$eval('.pin-name', (e) => (e as HTMLInputElement).value)).toBe('before');
    expect(await other.isVisible('#tab-compare')).toBe(true);
    await other.close();
  });

  it('has network knobs, adjusts dependent knobs, offers one-click fixes, and keeps a memory reserve', async () => {
    await page.goto(s.url);
    await waitForResult(page);
    const cfg = (p: string) => page.evaluate((q) => q.split('.').reduce((o: any, k) => o?.[k], (window as any).proteus.config), p);
    const card = (k: string) => page.$eval(`[data-card="${k}"]`, (e) => Number((e as HTMLElement).dataset.value));
    const t0 = await card('iteration_time_s');
    let n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.fill('#ctl-cluster-inter_node-nic_GBps', '3');
    await page.dispatchEvent('#ctl-cluster-inter_node-nic_GBps', 'change');
    await waitForNew(page, n);
    expect(await cfg('cluster.inter_node.nic_GBps')).toBe(3);
    expect(await card('iteration_time_s')).toBeGreaterThan(t0); // a slower network, a slower iteration
    n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.fill('#ctl-cluster-inter_node-nics_per_node', '1');
    await page.dispatchEvent('#ctl-cluster-inter_node-nics_per_node', 'change');
    await waitForNew(page, n);
    expect(await cfg('cluster.inter_node.nics_per_node')).toBe(1);
    // GPU compute as a percentage of the preset's: 91% (an H100 at 500 W) writes 0.91 and slows
    // the iteration; 120% gets the core's error on the control; 100% writes nothing
    const gpu = '#ctl-cluster-gpu-compute_throughput_fraction';
    expect(await page.inputValue(gpu)).toBe('100');
    expect(await page.getAttribute(gpu, 'inputmode')).toBe('decimal');
    const t1 = await card('iteration_time_s');
    n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.fill(gpu, '91');
    await page.dispatchEvent(gpu, 'change');
    await waitForNew(page, n);
    expect(await cfg('cluster.gpu.compute_throughput_fraction')).toBe(0.91);
    expect(await card('iteration_time_s')).toBeGreaterThan(t1);
    await page.fill(gpu, '120');
    await page.dispatchEvent(gpu, 'change');
    const gpuError = '[data-error-for="cluster.gpu.compute_throughput_fraction"]';
    await page.waitForSelector(`${gpuError}:not([hidden])`, { timeout: 60_000 });
    expect(await page.textContent(gpuError)).toMatch(/compute_throughput_fraction must be at most 1, got 1.2/);
    expect(await axeViolations(page, 'controls'), 'controls with the GPU compute error').toEqual([]);
    n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.fill(gpu, '100');
    await page.dispatchEvent(gpu, 'change');
    await waitForNew(page, n);
    expect(await page.isHidden(gpuError)).toBe(true);
    expect(await page.evaluate(() => (window as any).proteus.config.cluster)).toEqual({ preset: 'dgx-h100', nodes: 4, inter_node: { nic_GBps: 3, nics_per_node: 1 } });
    expect(await card('iteration_time_s')).toBe(t1);
    // interleaving needs virtual stages > 1, and leaving it sets them back to 1
    n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.selectOption('#ctl-strategy-schedule', 'interleaved-1f1b');
    await waitForNew(page, n);
    expect(await cfg('strategy.virtual_stages')).toBe(2);
    expect(await page.inputValue('#ctl-strategy-virtual_stages')).toBe('2');
    n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.selectOption('#ctl-strategy-schedule', '1f1b');
    await waitForNew(page, n);
    expect(await cfg('strategy.virtual_stages')).toBe(1);
    // dp 3 leaves GPUs out: the error offers "Set dp = 4"
    await page.fill('#ctl-strategy-dp', '3');
    await page.dispatchEvent('#ctl-strategy-dp', 'change');
    await page.waitForSelector('.fix-btn', { timeout: 60_000 });
    expect(await page.textContent('.fix-btn')).toMatch(/dp = 4/);
    n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.click('.fix-btn');
    await waitForNew(page, n);
    expect(await cfg('strategy.dp')).toBe(4);
    // 17 GiB with 70 GiB kept free does not fit an 80 GiB GPU
    await page.fill('#reserve', '70');
    await page.dispatchEvent('#reserve', 'change');
    expect(await page.getAttribute('[data-card="peak_memory_GiB"]', 'data-fit')).toBe('reserve');
    expect(await page.textContent('#warnings')).toMatch(/does not fit with the reserve/);
    expect(page.url()).toMatch(/[#&]r=70/);
    await page.fill('#reserve', '2');
    await page.dispatchEvent('#reserve', 'change');
    expect(await page.getAttribute('[data-card="peak_memory_GiB"]', 'data-fit')).toBe('fits');
  });

  it('offers the changes that fit when a run is out of memory, and applies one with a click', { timeout: 300_000 }, async () => {
    // Mixtral 8x7B with every expert on every GPU (ep 1) needs ~180 GiB per GPU (lessons.test.ts):
    // the core returns up to three strategy changes that fit, each simulated.
    await page.goto(s.url);
    await waitForResult(page);
    await fitAdvice(page);
    const r = await page.evaluate(() => (window as any).proteus.current.result);
    expect(r.summary.oom).toBe(true);
    expect(r.fitAdvice.length).toBeGreaterThanOrEqual(1);
    expect(r.fitAdvice.length).toBeLessThanOrEqual(3);
    const items = await page.$$eval('.fit-advice li', (e) => e.map((x) => x.textContent ?? ''));
    expect(items.length).toBe(r.fitAdvice.length);
    expect(items[0]).toContain(r.fitAdvice[0].change);
    // shown once: the core's "To fit: ..." warning lines give way to the block with buttons
    const warnings = await page.$$eval('#warnings .warnings li', (e) => e.map((x) => x.textContent ?? ''));
    expect(r.warnings.filter((w: string) => w.startsWith('To fit:')).length).toBe(r.fitAdvice.length);
    expect(warnings.filter((w) => w.startsWith('To fit:'))).toEqual([]);
    await shot(page, 'f11-fit-advice');
    const n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.click('.fit-advice li:first-child .fit-apply');
    await waitForNew(page, n);
    const after = await page.evaluate(() => ({ strategy: (window as any).proteus.config.strategy, summary: (window as any).proteus.current.result.summary }));
    for (const [k, v] of Object.entries(r.fitAdvice[0].strategy)) expect(after.strategy[k], k).toEqual(v);
    // the advice's own simulation of this strategy: the same time and memory, and it fits
    expect(after.summary.oom).toBe(false);
    expect(after.summary.iteration_time_s).toBeCloseTo(r.fitAdvice[0].iteration_time_s, 9);
    expect(after.summary.peak_memory_GiB).toBeCloseTo(r.fitAdvice[0].peak_memory_GiB, 9);
    expect(await page.$$eval('.fit-advice', (e) => e.length)).toBe(0);
  });

  it('shows a run that does not fit at once and looks for the changes that fit after it; a new run stops that', { timeout: 300_000 }, async () => {
    // DeepSeek-V3's layout at micro-batch 2 does not fit, and its advice takes tens of bounded
    // simulations (docs/search.md): the page shows the run first, with a note of how far the
    // search for changes that fit is, and a change of the config stops that search.
    await page.goto(s.url);
    await waitForResult(page);
    await changeControl(page, '#scenario', 'deepseek-v3-h800');
    const n = await page.evaluate(() => (window as any).proteus.simulationCount());
    await page.focus('#ctl-strategy-micro_batch');
    await page.fill('#ctl-strategy-micro_batch', '2');
    await page.dispatchEvent('#ctl-strategy-micro_batch', 'change');
    await page.waitForFunction(
      (k) =>
        (window as any).proteus.simulationCount() > k &&
        !document.body.classList.contains('running') &&
        document.body.classList.contains('advising') &&
        document.getElementById('status')?.dataset.kind === 'ok',
      n,
      { timeout: 120_000 },
    );
    expect(await page.getAttribute('[data-card="peak_memory_GiB"]', 'data-fit')).toBe('oom');
    expect(await page.textContent('#warnings')).toMatch(/Out of memory/);
    await page.waitForFunction(() => /Looking for changes that fit… \d+ of \d+ candidates decided/.test(document.querySelector('.fit-advice-pending')?.textContent ?? ''), null, { timeout: 60_000 });
    expect(await page.$$eval('.fit-advice', (e) => e.length)).toBe(0);
    // Back to micro-batch 1: that run fits; the search for the other one is stopped, not shown later.
    await changeControl(page, '#ctl-strategy-micro_batch', '1');
    expect(await page.evaluate(() => document.body.classList.contains('advising'))).toBe(false);
    expect(await page.getAttribute('[data-card="peak_memory_GiB"]', 'data-fit')).not.toBe('oom');
    await page.waitForTimeout(1000);
    expect(await page.$$eval('.fit-advice, .fit-advice-pending', (e) => e.length)).toBe(0);
  });

  it('closes the share box with Escape', async () => {
    await page.click('#share');
    expect(await page.isVisible('#share-box')).toBe(true);
    await page.keyboard.press('Escape');
    expect(await page.isVisible('#share-box')).toBe(false);
  });

  it('switches to dark colors and back', async () => {
    await page.click('#theme');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    expect(bg).toBe('rgb(17, 22, 29)');
    await page.waitForTimeout(200);
    await shot(page, 'f10-dark');
    await page.click('#theme');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('light');
  });

  it('writes the 405B Chrome trace faster than it simulates, and pans it at 30 frames per second or more', { timeout: 300_000 }, async () => {
    await page.click('.tabs button[data-tab="timeline"]');
    const n = await page.evaluate(() => (window as any).proteus.simulationCount());
    // every status text shown during the run (the core's progress becomes a percentage)
    await page.evaluate(() => {
      const el = document.getElementById('status')!;
      const seen: string[] = ((window as any).statusTexts = []);
      new MutationObserver(() => seen.push(el.textContent ?? '')).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await page.selectOption('#scenario', 'llama3-405b-16k');
    await waitForNew(page, n);
    const progress: [number, number][] = await page.evaluate(() => (window as any).proteus.progressSeen);
    const tasks = await page.evaluate(() => (window as any).proteus.current.result.stats.tasks);
    const texts: string[] = await page.evaluate(() => (window as any).statusTexts);
    console.log(`405B progress: ${progress.length} reports of ${tasks} tasks; status texts: ${texts.filter((t) => /%/.test(t)).slice(0, 3).join(' | ')} …`);
    expect(progress.length).toBeGreaterThan(10); // ~100 reports, one per 1% of the tasks
    expect(progress.length).toBeLessThanOrEqual(101);
    for (let i = 1; i < progress.length; ++i) expect(progress[i][0]).toBeGreaterThan(progress[i - 1][0]);
    expect(progress.every(([, total]) => total === tasks)).toBe(true);
    expect(progress[progress.length - 1][0]).toBe(tasks);
    expect(texts.some((t) => /^Simulating… \d+% · /.test(t) && !/^Simulating… 100%/.test(t))).toBe(true);
    const simMs = await page.evaluate(() => (window as any).proteus.lastSimulateMs);
    const [d] = await Promise.all([page.waitForEvent('download'), page.click('#dl-trace')]);
    const traceMs = await page.evaluate(() => (window as any).proteus.timing.lastTraceMs);
    const trace = JSON.parse(readFileSync((await d.path())!, 'utf8'));
    expect(trace.traceEvents.length).toBeGreaterThan(1000);
    // The target (writing the trace adds less time than the simulation takes) is a
    // speed figure: printed, with a sanity bound four times wider (the machine is shared).
    const met = traceMs < simMs ? 'met' : 'NOT met on this run';
    console.log(`405B: simulation ${Math.round(simMs)} ms in wasm, Chrome trace from the result ${Math.round(traceMs)} ms (${trace.traceEvents.length} events); target trace < simulation: ${met}`);
    expect(traceMs).toBeLessThan(4 * simMs);
    expect(await page.evaluate(() => (window as any).proteus.simulationCount())).toBe(n + 1);
    // panning: 60 frames, each a pan and a full redraw, timed by the browser's own frames
    await page.$eval('.tl', (e) => e.scrollIntoView({ block: 'start' }));
    const fps = await page.evaluate(
      () =>
        new Promise<number>((done) => {
          const tl = (window as any).proteus.timelineView().timeline;
          tl.setWindow(0, tl.scale.t1 / 4);
          let frames = 0;
          const t0 = performance.now();
          const step = () => {
            tl.pan(0.01);
            tl.drawNow();
            if (++frames < 60) requestAnimationFrame(step);
            else done((frames * 1000) / (performance.now() - t0));
          };
          requestAnimationFrame(step);
        }),
    );
    // Target >= 30 frames per second: printed; the assertion is a sanity bound (a third of it).
    console.log(`405B timeline panning: ${fps.toFixed(1)} frames per second; target >= 30: ${fps >= 30 ? 'met' : 'NOT met on this run'}`);
    expect(fps).toBeGreaterThanOrEqual(10);
    await shot(page, 'f06-405b');
  });

  it('passes axe-core (contrast, names, keyboard) and every control is reachable with Tab', async () => {
    await page.goto(s.url);
    await waitForResult(page);
    expect(await axeViolations(page), 'light').toEqual([]);
    // and in dark colors (every text against its dark background)
    await page.click('#theme');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    expect(await axeViolations(page), 'dark').toEqual([]);
    await page.click('#theme');
    const reached = new Set<string>();
    await page.focus('#scenario');
    for (let i = 0; i < 160; ++i) {
      await page.keyboard.press('Tab');
      const id = await page.evaluate(() => document.activeElement?.id ?? '');
      if (id) reached.add(id);
    }
    // controls shown only for some settings (zb_plan: zero-bubble schedules) are left out while hidden
    const [config, resolved] = await page.evaluate(() => [(window as any).proteus.config, (window as any).proteus.resolved]);
    const shown = ALL_CONTROLS.filter((c) => !c.shownWhen || c.shownWhen(config, resolved));
    expect(shown.length).toBe(ALL_CONTROLS.length - 1); // the default scenario's 1F1B hides zb_plan
    const missing = shown.map((c) => `ctl-${c.path.replace(/\./g, '-')}`).filter((id) => !reached.has(id));
    expect(missing).toEqual([]);
  });

  it('fits a phone: drawer, tabs that scroll, nothing sideways at 390 and 360 px, touch on the timeline', async () => {
    const phone = await startSession(PHONE);
    try {
      const p = await phone.newPage();
      const wide = async () => {
        const [over, who] = await p.evaluate(() => {
          const W = document.documentElement.clientWidth;
          const who: string[] = [];
          for (const e of document.querySelectorAll('body *')) {
            const r = e.getBoundingClientRect();
            if (r.right > W + 0.5 && r.width > 0 && !e.closest('.tabs')) who.push(`${e.tagName}.${e.className} ${Math.round(r.left)}–${Math.round(r.right)}`);
          }
          who.push(`W=${W} body=${document.body.scrollWidth} html=${document.documentElement.scrollWidth}`);
          return [document.documentElement.scrollWidth - W, who.slice(0, 12)] as const;
        });
        if (over > 0) console.log('wider than the screen:', who);
        return over;
      };
      // loaded: nothing sideways, the controls in the closed drawer; then the drawer opened
      // (the controls show) and closed with Escape
      await phoneLayout(p, async (step: string) => {
        if (step === 'loaded') expect(await wide()).toBeLessThanOrEqual(0);
        expect(await p.isVisible('#ctl-strategy-tp')).toBe(step === 'drawer open');
        if (step === 'drawer open') await shot(p, 'f07-phone-drawer');
      });
      expect(await p.isVisible('#ctl-strategy-tp')).toBe(false);
      const header = await p.$eval('.topbar', (e) => e.getBoundingClientRect().height);
      console.log(`phone header ${Math.round(header)} px`);
      await shot(p, 'f08-phone');
      // touch: a tap on a span selects it
      await p.$eval('.tl', (e) => e.scrollIntoView({ block: 'start' }));
      const box = (await (await p.$('.tl-canvas'))!.boundingBox())!;
      let sel = -1;
      for (let x = box.width * 0.45; x < box.width - 10 && sel < 0; x += 6) {
        await p.touchscreen.tap(box.x + x, box.y + 26 + 4 + 18 + 8);
        sel = await p.$eval('.tl', (e) => Number((e as HTMLElement).dataset.selected ?? -1));
      }
      expect(sel).toBeGreaterThanOrEqual(0);
      await shot(p, 'f09-phone-timeline');
      await p.setViewportSize({ width: 360, height: 740 });
      await p.waitForTimeout(300);
      expect(await wide()).toBeLessThanOrEqual(0);
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });

  it('logs no errors', () => {
    expect(s.errors).toEqual([]);
  });
});
