// "Find the best strategy": the core's exact strategy search (docs/search.md) in a pool of
// Web Workers, one WebAssembly instance each: worker k runs shard k of n (search_json) and
// the core's merge_search_json combines them into what one machine would give. Progress per
// finished shard, the table filling in from the shards done so far, cancel (the workers are
// terminated; the page's own simulation worker is not touched), "Use" and a share link per
// row, a Pareto scatter (uPlot) and a tp x pp heat map.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Config } from './config_model';
import { h, setChildren } from './dom';
import { CallError, type Engine } from './engine';
import { formatDuration, formatGiB, formatPercent } from './format';
import { heatMap, liveRanking, paretoFront, parseList, SEARCH_KNOBS, searchConfig, searchProgressText, strategyText, type Candidate, type KnobList, type SearchKnob, type SearchResult } from './search_model';
import { shareUrl } from './share';

const KNOB_LABELS: Record<SearchKnob, string> = {
  tp: 'tp',
  pp: 'pp',
  cp: 'cp',
  micro_batch: 'micro-batch',
  zero: 'ZeRO',
  recompute: 'recompute',
  recompute_modules: 'recompute modules',
  schedule: 'schedule',
};

export class SearchView {
  private readonly inputs = new Map<SearchKnob, HTMLInputElement>();
  private readonly reserve = h('input', { id: 'search-reserve', type: 'number', min: 0, max: 90, step: 1, value: 5 });
  private readonly top = h('input', { id: 'search-top', type: 'number', min: 1, max: 100, step: 1, value: 20 });
  private readonly runBtn = h('button', { id: 'search-run', class: 'primary' }, 'Find the best strategy');
  private readonly progress = h('progress', { id: 'search-progress', max: 1, value: 0, hidden: true });
  private readonly status = h('span', { id: 'search-status', class: 'sweep-status', 'aria-live': 'polite' });
  private readonly table = h('div', { id: 'search-table', class: 'sweep-table' });
  private readonly link = h('input', { id: 'search-link', type: 'text', readonly: true, hidden: true, 'aria-label': 'Share link of the chosen row' });
  private readonly chartHost = h('div', { class: 'sweep-chart', id: 'search-pareto' });
  private readonly heat = h('div', { id: 'search-heat' });
  private pool: Engine[] = [];
  private running = false;
  private plot: uPlot | null = null;
  private base: Config = {};
  /** Last search: wall time (ms) and the merged result, for tests and the status line. */
  last: { ms: number; result: SearchResult } | null = null;

  constructor(
    root: HTMLElement,
    private readonly newEngine: () => Engine,
    private readonly currentConfig: () => Config,
    private readonly onUse: (config: Config) => void,
  ) {
    const defaults: Partial<Record<SearchKnob, string>> = { cp: '1', micro_batch: '1, 2', zero: '0, 1', recompute: 'selective, full' };
    const fields = SEARCH_KNOBS.map((k) => {
      const placeholder = k === 'recompute_modules' ? 'derived (MoE, MLA)' : 'every value';
      const input = h('input', { id: `search-${k}`, type: 'text', value: defaults[k] ?? '', placeholder, spellcheck: 'false' });
      this.inputs.set(k, input);
      return h('label', { class: 'search-knob' }, `${KNOB_LABELS[k]} `, input);
    });
    this.runBtn.addEventListener('click', () => (this.running ? this.cancel() : void this.run()));
    root.append(
      h('p', { class: 'panel-intro' }, 'Searches every valid combination of the listed values (empty: every value) for the fastest strategy that fits, exactly as `proteus search` does: bounds prune, the rest is simulated. Runs in one worker per core.'),
      h('div', { class: 'sweep-form search-form' }, ...fields, h('label', { for: 'search-reserve' }, 'memory reserve %'), this.reserve, h('label', { for: 'search-top' }, 'top'), this.top, this.runBtn, this.progress, this.status),
      this.table,
      this.link,
      this.chartHost,
      this.heat,
    );
  }

  private showProgress(decided: number[], candidates: number[], shardsDone: number, shards: number): void {
    const p = searchProgressText(decided, candidates, shardsDone, shards);
    this.progress.value = p.fraction;
    this.status.textContent = p.text;
  }

  private workers(): number {
    return Math.max(1, Math.min(navigator.hardwareConcurrency || 2, 8));
  }

  private cancel(): void {
    this.running = false;
    for (const e of this.pool) e.dispose();
    this.pool = [];
    this.runBtn.textContent = 'Find the best strategy';
    this.progress.hidden = true;
    this.status.textContent = 'Cancelled.';
  }

  /** Reads the form; null (and a message) when a list is malformed. */
  private lists(): Partial<Record<SearchKnob, KnobList>> | null {
    const out: Partial<Record<SearchKnob, KnobList>> = {};
    for (const [k, input] of this.inputs) {
      const v = parseList(k, input.value);
      if (typeof v === 'string') {
        this.status.textContent = v;
        return null;
      }
      if (v) out[k] = v;
    }
    return out;
  }

  async run(): Promise<void> {
    const lists = this.lists();
    const reserve = Number(this.reserve.value) / 100, top = Math.round(Number(this.top.value));
    if (!lists) return;
    if (!(reserve >= 0 && reserve <= 0.9) || !(top >= 1 && top <= 100)) {
      this.status.textContent = 'The memory reserve is 0 to 90 % and top 1 to 100.';
      return;
    }
    this.base = this.currentConfig();
    const text = JSON.stringify(searchConfig(this.base, lists, reserve));
    const n = this.workers();
    this.pool = Array.from({ length: n }, () => this.newEngine());
    this.running = true;
    this.runBtn.textContent = 'Cancel';
    this.progress.hidden = false;
    this.progress.value = 0;
    this.link.hidden = true;
    this.status.textContent = `Searching in ${n} workers…`;
    delete this.status.dataset.ms;
    const t0 = performance.now();
    const texts: string[] = new Array(n);
    const done: SearchResult[] = [];
    // Per shard: candidates decided so far and the shard's share (the workers' progress reports).
    const decided: number[] = new Array(n).fill(0);
    const candidates: number[] = new Array(n).fill(0);
    const pool = this.pool;
    try {
      await Promise.all(
        pool.map(async (engine, k) => {
          const tell = (d: number, c: number) => {
            if (!this.running || pool !== this.pool) return;
            decided[k] = d;
            candidates[k] = c;
            this.showProgress(decided, candidates, done.length, n);
          };
          texts[k] = await engine.call({ op: 'search', config: text, top, shard: k, shards: n }, tell);
          if (!this.running || pool !== this.pool) return;
          const shard: SearchResult = JSON.parse(texts[k]);
          done.push(shard);
          decided[k] = candidates[k] = shard.counts.evaluated; // a finished shard: all its own decided
          this.showProgress(decided, candidates, done.length, n);
          this.draw(liveRanking(done, top));
        }),
      );
      const merged: SearchResult = JSON.parse(await pool[0].call({ op: 'merge_search', shards: texts }));
      const ms = performance.now() - t0;
      this.last = { ms, result: merged };
      this.status.dataset.ms = String(Math.round(ms));
      this.draw(merged.ranked);
      const c = merged.counts;
      this.status.textContent = `${c.enumerated} candidates in ${formatDuration(ms / 1000)}: ${c.invalid} invalid, ${c.no_fit_bound} do not fit (bound), ${c.pruned_time} pruned (time bound), ${c.simulated} simulated.`;
    } catch (e) {
      if (pool !== this.pool || (e instanceof CallError && e.info.code === 'cancelled')) return;
      this.status.textContent = e instanceof CallError ? (e.info.path ? `${e.info.path}: ${e.message}` : e.message) : String(e);
      setChildren(this.table);
    } finally {
      if (pool === this.pool) {
        for (const e of pool) e.dispose();
        this.pool = [];
        this.running = false;
        this.runBtn.textContent = 'Find the best strategy';
        this.progress.hidden = true;
      }
    }
  }

  private draw(rows: Candidate[]): void {
    const use = (r: Candidate) => this.onUse({ ...this.base, strategy: { ...(this.base.strategy ?? {}), ...r.strategy } });
    const showLink = (r: Candidate) => {
      this.link.value = shareUrl(location.href, { ...this.base, strategy: { ...(this.base.strategy ?? {}), ...r.strategy } });
      this.link.hidden = false;
      this.link.select();
    };
    const body = rows.map((r, i) =>
      h(
        'tr',
        null,
        h('td', { class: 'num' }, String(i + 1)),
        h('td', { class: 'num' }, formatDuration(r.iteration_time_s)),
        h('td', { class: 'num' }, formatPercent(r.mfu)),
        h('td', { class: 'num' }, formatGiB(r.peak_memory_GiB)),
        h('td', null, strategyText(r.strategy)),
        h('td', null, h('button', { class: 'small search-use', onclick: () => use(r) }, 'Use'), ' ', h('button', { class: 'small search-share', onclick: () => showLink(r) }, 'Link')),
      ),
    );
    setChildren(
      this.table,
      rows.length === 0
        ? h('p', null, 'Nothing fits yet.')
        : h('table', { class: 'compare-table' }, h('thead', null, h('tr', null, ...['#', 'Iteration', 'MFU', 'Peak memory', 'Strategy', ''].map((t) => h('th', null, t)))), h('tbody', null, ...body)),
    );
    this.drawPareto(rows);
    this.drawHeat(rows);
  }

  /** Time against peak memory; the Pareto front as a line. x must ascend: sorted by memory. */
  private drawPareto(rows: Candidate[]): void {
    this.plot?.destroy();
    this.plot = null;
    if (rows.length === 0) return;
    const byMemory = [...rows].sort((a, b) => a.peak_memory_GiB - b.peak_memory_GiB);
    const front = new Set(paretoFront(rows));
    const data: uPlot.AlignedData = [byMemory.map((r) => r.peak_memory_GiB), byMemory.map((r) => r.iteration_time_s), byMemory.map((r) => (front.has(r) ? r.iteration_time_s : null))];
    this.plot = new uPlot(
      {
        width: Math.max(320, this.chartHost.clientWidth || 640),
        height: 280,
        title: 'Iteration time against peak memory (Pareto front: nothing is both faster and smaller)',
        scales: { x: { time: false } },
        axes: [{ label: 'peak memory per GPU (GiB)' }, { label: 'iteration (s)', size: 60 }],
        series: [{ label: 'GiB' }, { label: 'candidate', stroke: '#4e79a7', paths: () => null, points: { show: true, size: 7 } }, { label: 'Pareto front', stroke: '#e15759', width: 2, spanGaps: true, points: { show: true, size: 9 } }],
      },
      data,
      this.chartHost,
    );
  }

  /** Best time per tp x pp, as a table whose cells shade from fastest (dark) to slowest. */
  private drawHeat(rows: Candidate[]): void {
    if (rows.length === 0) return setChildren(this.heat);
    const m = heatMap(rows);
    const times = m.best.flat().filter((t): t is number => t !== null);
    const lo = Math.min(...times), hi = Math.max(...times);
    const cell = (t: number | null) => {
      if (t === null) return h('td', { class: 'num' }, '–');
      const a = hi > lo ? 1 - (t - lo) / (hi - lo) : 1;
      return h('td', { class: 'num', style: `background: rgba(78, 121, 167, ${(0.15 + 0.7 * a).toFixed(2)})` }, formatDuration(t));
    };
    setChildren(
      this.heat,
      h('h3', null, 'Best iteration time by tp × pp (among the rows above)'),
      h('table', { class: 'compare-table search-heat' }, h('thead', null, h('tr', null, h('th', null, 'tp \\ pp'), ...m.pps.map((p) => h('th', { class: 'num' }, String(p))))), h('tbody', null, ...m.tps.map((tp, i) => h('tr', null, h('th', null, String(tp)), ...m.best[i].map(cell))))),
    );
  }
}
