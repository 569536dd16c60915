// Start-up benchmark: opens the built page (web/dist) N times, each in a fresh headless
// Chromium profile (nothing cached, as a first visit), and prints when each start-up step
// finished, in ms after navigation, run by run and as medians. The issue's target (#17): the
// default scenario's first cards <= 1000 ms and full timeline <= 1500 ms, idle machine.
//   node scripts/startup-bench.mjs [runs=7] [DIST...]    (after `npm run build`; DIST: web/dist)
// With several DIST folders (builds to compare) the runs alternate between them, so that
// each sees the same machine load, and each gets its own medians.
// Steps (the page's proteus.timing, worker times converted to the page's clock):
//   fetched   the .wasm response's headers arrived     compiled  WebAssembly.Module ready
//   loader    the worker imported the Emscripten loader ready     module instantiated in the worker
//   presets   the preset list reached the page          posted    the first simulation was posted
//   simStart/simEnd  the wasm call ran in the worker    parsed    the worker parsed its result
//   reply     its answer reached the page
//   cards     the frame that paints the cards          timeline  the timeline drawn
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startStaticServer } from './static-server.mjs';

const web = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const runs = Number(process.argv[2] ?? 7);
const STEPS = ['fetched', 'compiled', 'loader', 'ready', 'presets', 'posted', 'simStart', 'simEnd', 'parsed', 'reply', 'cards', 'timeline'];

const dists = process.argv.length > 3 ? process.argv.slice(3).map((d) => resolve(d)) : [join(web, 'dist')];
const servers = await Promise.all(dists.map((d) => startStaticServer(d, 0)));
const rows = dists.map(() => []);
const fmt = (t) => STEPS.map((s) => `${s} ${Math.round(t[s] ?? NaN)}`).join(' · ');
try {
  for (let i = 0; i < runs; ++i) {
    for (let k = 0; k < dists.length; ++k) {
      const t = await openOnce(servers[k].url);
      rows[k].push(t);
      console.log(`${dists.length > 1 ? `[${k}] ` : ''}run ${i + 1}: ${fmt(t)}`);
    }
  }
} finally {
  await Promise.all(servers.map((s) => s.close()));
}
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[(s.length - 1) >> 1] : NaN;
};
dists.forEach((d, k) => {
  const r = rows[k];
  const med = Object.fromEntries(STEPS.map((s) => [s, median(r.map((x) => x[s]))]));
  console.log(`${d}\n  median of ${runs}: ${fmt(med)}`);
  console.log(`  first cards <= 1000 ms in ${r.filter((x) => x.cards <= 1000).length} of ${runs} runs; full timeline <= 1500 ms in ${r.filter((x) => x.timeline <= 1500).length} of ${runs}`);
});

/** One first visit in a fresh profile: the page's start-up breakdown. */
async function openOnce(url) {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-bench-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    // BENCH_JS_FLAGS: V8 flags for experiments (e.g. --liftoff-only), never for the figures.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', ...(process.env.BENCH_JS_FLAGS ? [`--js-flags=${process.env.BENCH_JS_FLAGS}`] : [])],
    viewport: { width: 1440, height: 900 },
  });
  try {
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForFunction(() => window.proteus?.timing?.firstResult !== undefined, null, { timeout: 60_000 });
    return await page.evaluate(() => window.proteus.startupBreakdown());
  } finally {
    await context.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
