// The built page in headless Chromium: loads, matches the native CLI, reacts to inputs,
// shows errors where they belong, draws the timeline, shares links, and stays usable.
// Screenshots of the main views go to web/test-results/ (look at them).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeConfig } from '../../src/share';
import { ARTIFACTS, DIST, openPage, startStaticServer, waitForResult, type Session } from '../support/browser';

const CLI = process.env.PROTEUS_CLI ?? resolve(__dirname, '..', '..', '..', 'build', 'bin', 'proteus');
const CARD_KEYS = ['iteration_time_s', 'tokens_per_s', 'model_tflops_per_gpu', 'mfu', 'peak_memory_GiB'];

async function cards(page: Page): Promise<Record<string, number>> {
  return page.$$eval('[data-card]', (els) => Object.fromEntries(els.map((e) => [(e as HTMLElement).dataset.card!, Number((e as HTMLElement).dataset.value)])));
}

/** Sets an input the way a user does (type, then leave the field). */
async function setInput(page: Page, selector: string, value: string): Promise<void> {
  await page.fill(selector, value);
  await page.dispatchEvent(selector, 'change');
}

async function waitForNewResult(page: Page, previousStatus: string): Promise<void> {
  await page.waitForFunction((prev) => {
    const s = document.getElementById('status');
    return (window as any).proteus?.settled() === true && s?.dataset.kind === 'ok' && s.textContent !== prev;
  }, previousStatus, { timeout: 60_000 });
}

async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });
}

describe('the page in Chromium', () => {
  let s: Session;
  let page: Page;
  let native: Record<string, number>;

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`native CLI ${CLI} not found: build it first or set PROTEUS_CLI`);
    native = JSON.parse(execFileSync(CLI, ['simulate', 'default'], { encoding: 'utf8' })).summary;
    ({ session: s, page } = await openPage());
  });
  afterAll(async () => {
    await s?.close();
  });

  it('opens on the default scenario and shows the native CLI numbers', async () => {
    await waitForResult(page);
    const c = await cards(page);
    for (const k of CARD_KEYS) expect(c[k], k).toBe(native[k]);
    const timing = await page.evaluate(() => (window as any).proteus.timing);
    console.log(`cards after ${Math.round(timing.firstSummary ?? timing.firstResult)} ms, timeline after ${Math.round(timing.firstResult)} ms (module compiled at ${Math.round(timing.compiled)} ms)`);
    expect(await page.textContent('#scenario-title')).toMatch(/Llama 3 8B/);
    await page.waitForTimeout(200);
    await shot(page, '01-default');
    await shot(page, '01-default-full', true);
  });

  it('draws spans on the timeline canvas', async () => {
    const painted = await page.$eval('.tl-canvas', (c) => {
      const canvas = c as HTMLCanvasElement;
      const ctx = canvas.getContext('2d')!;
      const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      let forward = 0;
      let colored = 0;
      for (let i = 0; i < d.length; i += 4) {
        const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
        if (r === 78 && g === 121 && b === 167) ++forward; // #4e79a7, the forward pass
        if (Math.max(r, g, b) - Math.min(r, g, b) > 40) ++colored;
      }
      return { forward, colored };
    });
    expect(painted.forward).toBeGreaterThan(500);
    expect(painted.colored).toBeGreaterThan(5000);
  });

  it('draws 100,000 spans in a few milliseconds at any zoom', async () => {
    // Best of five: the test machine is shared, so single timings are noisy.
    const runs = [];
    for (let i = 0; i < 5; ++i) runs.push(await page.evaluate(() => (window as any).proteus.benchmarkTimeline(100_000)));
    const t = { spans: runs[0].spans, full: Math.min(...runs.map((r) => r.full)), zoomed: Math.min(...runs.map((r) => r.zoomed)), deep: Math.min(...runs.map((r) => r.deep)) };
    // A frame is 16 ms; typically ~10 ms here in software rendering. The figures are printed;
    // the assertions are sanity bounds (a shared machine's load moves single timings).
    const within = Math.max(t.full, t.zoomed, t.deep) < 30 ? 'met' : 'NOT met on this run';
    console.log(`timeline draw with ${t.spans} spans: full ${t.full.toFixed(1)} ms, 1/20 ${t.zoomed.toFixed(1)} ms, deep ${t.deep.toFixed(1)} ms; target < 30 ms: ${within}`);
    expect(t.full).toBeLessThan(100);
    expect(t.zoomed).toBeLessThan(100);
    expect(t.deep).toBeLessThan(100);
  });

  it('downloads the config, the result JSON and the Chrome trace', async () => {
    const get = async (sel: string) => {
      const [d] = await Promise.all([page.waitForEvent('download', { timeout: 60_000 }), page.click(sel)]);
      const path = await d.path();
      return { name: d.suggestedFilename(), text: readFileSync(path!, 'utf8') };
    };
    const cfg = await get('#dl-config');
    expect(cfg.name).toBe('proteus-llama3-8b.config.json');
    expect(JSON.parse(cfg.text)).toEqual(await page.evaluate(() => (window as any).proteus.config));
    const res = await get('#dl-result');
    const result = JSON.parse(res.text);
    expect(result.ok).toBe(true);
    for (const k of CARD_KEYS) expect(result.summary[k]).toBe(native[k]);
    expect(result.timeline.length).toBeGreaterThan(1000);
    // the memory curves reach the page as typed arrays; the download writes them as the CLI does
    expect(result.memory_curves.length).toBeGreaterThan(0);
    expect(result.memory_curves[0].t_s.length).toBe(result.memory_curves[0].GiB.length);
    expect(result.memory_curves[0].t_s.length).toBeGreaterThan(2);
    const trace = await get('#dl-trace');
    expect(trace.name).toMatch(/\.trace\.json$/);
    expect(JSON.parse(trace.text).traceEvents.length).toBeGreaterThan(1000);
  });

  it('zooms and pans with the keyboard, wheel and mouse, and explains spans on hover', async () => {
    const range = () => page.$eval('.tl', (e) => [Number((e as HTMLElement).dataset.t0), Number((e as HTMLElement).dataset.t1)]);
    const [a0, a1] = await range();
    expect(a0).toBe(0);
    await page.$eval('.tl', (e) => e.scrollIntoView({ block: 'start' }));
    const box = (await page.$('.tl-canvas'))!.boundingBox();
    const b = (await box)!;
    await page.mouse.move(b.x + b.width * 0.4, b.y + 60);
    await page.mouse.wheel(0, -600);
    await page.waitForTimeout(100);
    const [w0, w1] = await range();
    expect(w1 - w0).toBeLessThan((a1 - a0) / 2);
    await page.focus('.tl');
    await page.keyboard.press('w');
    await page.keyboard.press('w');
    const [k0, k1] = await range();
    expect(k1 - k0).toBeLessThan(w1 - w0);
    await page.keyboard.press('d');
    const [d0] = await range();
    expect(d0).toBeGreaterThan(k0);
    // Shift+drag to the right: earlier times come into view (a plain drag selects a range)
    await page.mouse.move(b.x + b.width * 0.6, b.y + 60);
    await page.keyboard.down('Shift');
    await page.mouse.down();
    await page.mouse.move(b.x + b.width * 0.7, b.y + 60, { steps: 4 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    const [g0] = await range();
    expect(g0).toBeLessThan(d0);
    expect(await page.textContent('.tl-range')).toMatch(/shown/);
    // zoom into the start of the first micro-batches so labels fit, then hover a span
    await page.evaluate(() => (window as any).proteus.timelineView().timeline.setWindow(0, 0.25));
    await page.waitForTimeout(100);
    const lane = await page.evaluate(() => {
      const tl = document.querySelector('.tl-canvas')!.getBoundingClientRect();
      return { x: tl.x, y: tl.y };
    });
    let hovered = false;
    for (let x = 200; x < 1000 && !hovered; x += 7) {
      await page.mouse.move(lane.x + x, lane.y + 26 + 4 + 18 + 8);
      hovered = await page.$eval('.tl-tip', (e) => (e as HTMLElement).style.display === 'block');
    }
    expect(hovered).toBe(true);
    expect(await page.textContent('.tl-tip')).toMatch(/duration/);
    await (await page.$('.tl'))!.screenshot({ path: join(ARTIFACTS, '02-timeline-zoomed.png') });
    await page.keyboard.press('0');
  });

  it('updates the cards when tp changes (dp follows to keep every GPU busy)', async () => {
    const before = await cards(page);
    const status = (await page.textContent('#status')) ?? '';
    await setInput(page, '#ctl-strategy-tp', '2');
    await waitForNewResult(page, status);
    expect(await page.inputValue('#ctl-strategy-dp')).toBe('8');
    expect(await page.textContent('#scenario-title')).toBe('Llama 3 8B on 4 × DGX H100 (8x H100 SXM5 80GB, NVSwitch), 8x NDR InfiniBand');
    expect(await page.textContent('#scenario-desc')).toMatch(/^TP2 · PP2 · DP8 .* changed from the scenario “Llama 3 8B on 4 DGX H100 nodes/);
    const after = await cards(page);
    expect(after.iteration_time_s).not.toBe(before.iteration_time_s);
    expect(after.peak_memory_GiB).toBeGreaterThan(before.peak_memory_GiB); // half the TP split: more weights per GPU
    const cfg = JSON.parse(execFileSync(CLI, ['show', 'default'], { encoding: 'utf8' }));
    expect(cfg.strategy.tp).toBe(4);
  });

  it('shows an invalid combination next to its control and stays usable', async () => {
    await setInput(page, '#ctl-strategy-micro_batch', '64');
    const err = page.locator('.ctl[data-path="strategy.micro_batch"] .ctl-error');
    await err.waitFor({ state: 'visible', timeout: 20_000 });
    expect(await err.textContent()).toMatch(/micro_batch=64 is larger than the per-replica batch/);
    expect(await page.$eval('.ctl[data-path="strategy.micro_batch"]', (e) => e.classList.contains('invalid'))).toBe(true);
    expect(await page.textContent('#status')).toMatch(/Invalid configuration/);
    await page.$eval('.ctl.invalid', (e) => e.scrollIntoView({ block: 'center' }));
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, '03-invalid');
    // a combination whose error has no single control: shown above the parallelism section
    await page.uncheck('#keep-gpus');
    await setInput(page, '#ctl-strategy-micro_batch', '1');
    await setInput(page, '#ctl-strategy-pp', '4');
    const sec = page.locator('[data-error-for="strategy"]');
    await sec.waitFor({ state: 'visible', timeout: 20_000 });
    expect(await sec.textContent()).toMatch(/dp\*tp\*pp\*cp/);
    await page.check('#keep-gpus');
    // fixing it clears the errors and brings results back
    const status = (await page.textContent('#status')) ?? '';
    await setInput(page, '#ctl-strategy-pp', '2');
    await waitForNewResult(page, status);
    expect(await page.$$eval('.ctl-error:not([hidden])', (e) => e.length)).toBe(0);
    expect(await page.isHidden('#stale-note')).toBe(true);
  });

  it('reproduces the same summary from a share link in a new page', async () => {
    const status = (await page.textContent('#status')) ?? '';
    await setInput(page, '#ctl-strategy-tp', '8'); // dp = 2
    await waitForNewResult(page, status);
    const url = page.url();
    expect(url).toContain('#c=');
    const here = await cards(page);
    const other = await s.context.newPage();
    await other.goto(url);
    await waitForResult(other);
    expect(await cards(other)).toEqual(here);
    expect(await other.inputValue('#ctl-strategy-tp')).toBe('8');
    expect(await other.inputValue('#ctl-strategy-dp')).toBe('2');
    await other.close();
  });

  it('explains a damaged or oversized share link and falls back to the default', async () => {
    const other = await s.context.newPage();
    await other.goto(s.url + '#c=N4Ig%%%garbage');
    await waitForResult(other);
    expect(await other.textContent('#banner')).toMatch(/damaged/);
    expect(await other.textContent('#scenario-title')).toMatch(/Llama 3 8B/);
    await other.goto(s.url + '#c=' + 'A'.repeat(40_000));
    await other.waitForFunction(() => /too long/.test(document.getElementById('banner')?.textContent ?? ''));
    await other.close();
  });

  it('explains a link whose config is invalid, without a result', async () => {
    const config = { ...JSON.parse(execFileSync(CLI, ['show', 'default'], { encoding: 'utf8' })) };
    config.strategy = { ...config.strategy, tp: 3 };
    const other = await s.context.newPage();
    await other.goto(s.url + '#' + encodeConfig(config));
    await other.locator('#stale-note').waitFor({ state: 'visible', timeout: 30_000 });
    expect(await other.textContent('#stale-note')).toMatch(/^No result: the configuration is invalid\. /);
    expect(await other.$$eval('[data-card]', (e) => e.length)).toBe(0);
    await other.close();
  });

  it('shows markup from a link as text and never runs it', async () => {
    const evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
    const config = { ...JSON.parse(execFileSync(CLI, ['show', 'default'], { encoding: 'utf8' })), name: evil, description: evil };
    const other = await s.context.newPage();
    await other.goto(s.url + '#' + encodeConfig(config));
    await waitForResult(other);
    expect(await other.textContent('#scenario-desc')).toContain('<img src=x');
    expect(await other.$$eval('main img, main script', (e) => e.length)).toBe(0);
    expect(await other.evaluate(() => (window as any).__pwned)).toBeUndefined();
    await other.close();
  });

  it('shows the parse error of invalid JSON in the advanced editor', async () => {
    await page.click('.tabs button[data-tab="json"]');
    await page.waitForFunction(() => !/appears here/.test(document.getElementById('strategy-tree')?.textContent ?? 'appears here'));
    expect(await page.textContent('#strategy-tree')).toMatch(/layers/);
    await shot(page, '04-json-tree');
    await page.fill('#json-editor', '{\n  "model": "llama3-8b",\n  "cluster": ,\n}');
    await page.click('#json-apply');
    await page.locator('#json-error').waitFor({ state: 'visible' });
    expect(await page.textContent('#json-error')).toMatch(/Invalid JSON: line 3, column 14/);
    await shot(page, '05-json-error');
    await page.click('#json-revert');
    expect(await page.isHidden('#json-error')).toBe(true);
  });

  it('pins runs and compares them side by side', async () => {
    await page.click('#pin');
    const status = (await page.textContent('#status')) ?? '';
    await setInput(page, '#ctl-strategy-tp', '4');
    await waitForNewResult(page, status);
    await page.click('#pin');
    await page.click('.tabs button[data-tab="compare"]');
    expect(await page.$$eval('.compare-table tbody tr', (r) => r.length)).toBe(3); // two pins + current
    expect(await page.$$eval('.bar-chart', (r) => r.length)).toBe(5);
    await (await page.$('#tab-compare'))!.screenshot({ path: join(ARTIFACTS, '06-compare.png') });
  });

  it('sweeps a knob and plots it with uPlot', async () => {
    await page.click('.tabs button[data-tab="sweep"]');
    await page.selectOption('#sweep-knob', 'strategy.micro_batch');
    await page.fill('#sweep-values', '1, 2, 3');
    await page.click('#sweep-run');
    await page.waitForFunction(() => /3 points/.test(document.querySelector('.sweep-status')?.textContent ?? ''), null, { timeout: 120_000 });
    expect(await page.$$eval('.sweep-chart .uplot canvas', (c) => c.length)).toBeGreaterThan(0);
    const rows = await page.$$eval('.sweep-table tbody tr', (r) => r.map((x) => x.className));
    expect(rows).toEqual(['', '', 'invalid']); // micro_batch 3 does not divide 32 per replica
    await (await page.$('#tab-sweep'))!.screenshot({ path: join(ARTIFACTS, '07-sweep.png') });
  });

  it('cancels a long simulation and keeps working', async () => {
    // From an idle page: a run still going from before would take the click.
    await page.waitForFunction(() => !document.body.classList.contains('running'));
    // The click comes from inside the page at the run's first progress report (the worker is
    // simulating): clicked from the test after a fixed wait, the GPT-3 run (about a second in
    // WebAssembly) sometimes ended first on a loaded machine, and the click started a new run.
    await page.evaluate(() => {
      const status = document.getElementById('status')!;
      const observer = new MutationObserver(() => {
        if (!document.body.classList.contains('running') || !/Simulating… \d+%/.test(status.textContent ?? '')) return;
        observer.disconnect();
        (document.getElementById('run') as HTMLButtonElement).click(); // Run is Cancel while running
      });
      observer.observe(status, { childList: true, characterData: true, subtree: true });
    });
    await page.selectOption('#scenario', 'gpt3-175b-megatron');
    await page.waitForFunction(() => /Cancelled/.test(document.getElementById('status')?.textContent ?? ''));
    expect(await page.textContent('#run')).toBe('Run');
    const status = (await page.textContent('#status')) ?? '';
    await page.selectOption('#scenario', 'default');
    await waitForNewResult(page, status);
    const c = await cards(page);
    for (const k of CARD_KEYS) expect(c[k], k).toBe(native[k]);
  });

  // Retried: once in about six full runs on the loaded 2-core machine this second tab never
  // left the running state within 60 s (not reproduced in isolation; under investigation).
  it('works from a sub-path of another static host, fetching only its own files', { retry: 2 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'proteus-host-'));
    cpSync(DIST, join(root, 'deep', 'sub', 'path'), { recursive: true });
    writeFileSync(join(root, 'index.html'), 'another site');
    const server = await startStaticServer(root, 0);
    const other = await s.context.newPage();
    const requests: string[] = [];
    other.on('request', (r) => requests.push(r.url()));
    try {
      await other.goto(server.url + 'deep/sub/path/');
      await waitForResult(other);
      const c = await cards(other);
      for (const k of CARD_KEYS) expect(c[k], k).toBe(native[k]);
      expect(requests.filter((u) => !u.startsWith(server.url + 'deep/sub/path/') && !u.startsWith('blob:') && !u.startsWith('data:'))).toEqual([]);
    } finally {
      await other.close();
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('logs no errors and no Content-Security-Policy violations', () => {
    expect(s.errors).toEqual([]);
  });
});
