// Sweep: vary one knob over a list of values, simulate each (no timeline), and plot
// throughput and peak memory against it with uPlot.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Config } from './config_model';
import { h, setChildren } from './dom';
import { CallError, type Engine } from './engine';
import { formatDuration, formatGiB, formatPercent, formatSI } from './format';
import type { Summary } from './result';

export interface Knob {
  path: string;
  label: string;
  values: string;
}

export const KNOBS: Knob[] = [
  { path: 'strategy.micro_batch', label: 'Micro-batch size', values: '1, 2, 4, 8' },
  { path: 'strategy.tp', label: 'Tensor parallel (tp)', values: '1, 2, 4, 8' },
  { path: 'strategy.pp', label: 'Pipeline parallel (pp)', values: '1, 2, 4, 8' },
  { path: 'strategy.cp', label: 'Context parallel (cp)', values: '1, 2, 4' },
  { path: 'cluster.nodes', label: 'Nodes', values: '1, 2, 4, 8, 16' },
  { path: 'training.global_batch', label: 'Global batch', values: '32, 64, 128, 256, 512' },
  { path: 'training.seq_len', label: 'Sequence length', values: '1024, 2048, 4096, 8192' },
  { path: 'strategy.zero', label: 'ZeRO stage', values: '0, 1, 2, 3' },
  { path: 'strategy.virtual_stages', label: 'Virtual stages', values: '1, 2, 4' },
];

interface Point {
  x: number;
  summary: Summary | null;
  error: string | null;
}

/** "1, 2, 4" or "1 2 4" -> [1, 2, 4]; null when something is not a number (at most 24 values). */
export function parseValues(text: string): number[] | null {
  const parts = text.split(/[\s,;]+/).filter(Boolean);
  if (parts.length === 0 || parts.length > 24) return null;
  const out = parts.map(Number);
  return out.every((v) => Number.isFinite(v)) ? out : null;
}

export class SweepView {
  private readonly knob = h('select', { id: 'sweep-knob' }, ...KNOBS.map((k) => h('option', { value: k.path }, k.label)));
  private readonly values = h('input', { id: 'sweep-values', type: 'text', value: KNOBS[0].values, spellcheck: 'false' });
  private readonly runBtn = h('button', { id: 'sweep-run', class: 'primary' }, 'Run sweep');
  private readonly status = h('span', { class: 'sweep-status', 'aria-live': 'polite' });
  private readonly chartHost = h('div', { class: 'sweep-chart' });
  private readonly table = h('div', { class: 'sweep-table' });
  private plot: uPlot | null = null;
  private running = false;
  private points: Point[] = [];

  constructor(
    root: HTMLElement,
    private readonly engine: () => Engine,
    private readonly configFor: (path: string, value: number) => Config,
    private readonly onApply: (path: string, value: number) => void,
  ) {
    this.knob.addEventListener('change', () => {
      this.values.value = KNOBS.find((k) => k.path === this.knob.value)?.values ?? '';
    });
    this.runBtn.addEventListener('click', () => (this.running ? this.cancel() : void this.run()));
    root.append(
      h('p', { class: 'panel-intro' }, 'Vary one knob of the current configuration and see throughput and peak memory move. With “keep all GPUs busy” on, dp follows tp, pp, cp and nodes. Invalid points are listed with the reason.'),
      h(
        'div',
        { class: 'sweep-form' },
        h('label', { for: 'sweep-knob' }, 'Vary'),
        this.knob,
        h('label', { for: 'sweep-values' }, 'over'),
        this.values,
        this.runBtn,
        this.status,
      ),
      this.chartHost,
      this.table,
    );
    new ResizeObserver(() => this.plot?.setSize({ width: this.chartWidth(), height: 300 })).observe(this.chartHost);
  }

  private chartWidth(): number {
    return Math.max(320, this.chartHost.clientWidth || 640);
  }

  private cancel(): void {
    this.running = false;
    this.engine().cancel();
  }

  async run(): Promise<void> {
    const vals = parseValues(this.values.value);
    if (!vals) {
      this.status.textContent = 'Give 1 to 24 numbers, separated by commas.';
      return;
    }
    const path = this.knob.value;
    const label = KNOBS.find((k) => k.path === path)?.label ?? path;
    this.running = true;
    this.runBtn.textContent = 'Cancel';
    this.points = [];
    const t0 = performance.now();
    for (let i = 0; i < vals.length && this.running; ++i) {
      this.status.textContent = `Simulating ${i + 1} of ${vals.length}…`;
      const x = vals[i];
      try {
        const cfg = this.configFor(path, x);
        const res = await this.engine().call({ op: 'simulate', config: JSON.stringify(cfg), timeline: false });
        this.points.push({ x, summary: res.result.summary, error: null });
      } catch (e) {
        if (e instanceof CallError && e.info.code === 'cancelled') break;
        this.points.push({ x, summary: null, error: e instanceof CallError ? (e.info.path ? `${e.info.path}: ${e.message}` : e.message) : String(e) });
      }
      this.draw(label, path);
    }
    const done = this.running;
    this.running = false;
    this.runBtn.textContent = 'Run sweep';
    this.status.textContent = done ? `${this.points.length} points in ${formatDuration((performance.now() - t0) / 1000)}. ${this.verdict(label)}` : 'Cancelled.';
  }

  /** One sentence on the best point that fits in memory. */
  private verdict(label: string): string {
    const fits = this.points.filter((p) => p.summary && !p.summary.oom);
    if (fits.length === 0) return this.points.some((p) => p.summary) ? 'No point fits in GPU memory.' : 'No point is a valid configuration.';
    const best = fits.reduce((a, b) => (b.summary!.tokens_per_s > a.summary!.tokens_per_s ? b : a));
    return `Fastest that fits in memory: ${label.toLowerCase()} = ${best.x} (${formatSI(best.summary!.tokens_per_s)} tokens/s, ${formatGiB(best.summary!.peak_memory_GiB)}).`;
  }

  private draw(label: string, path: string): void {
    const pts = this.points;
    const xs = pts.map((p) => p.x);
    const tput = pts.map((p) => (p.summary ? p.summary.tokens_per_s : null));
    const mem = pts.map((p) => (p.summary ? p.summary.peak_memory_GiB : null));
    const cap = pts.map((p) => (p.summary ? p.summary.memory_capacity_GiB : null));
    const data: uPlot.AlignedData = [xs, tput, mem, cap];
    this.plot?.destroy();
    this.plot = new uPlot(
      {
        width: this.chartWidth(),
        height: 300,
        title: `Throughput and peak memory against ${label.toLowerCase()}`,
        scales: { x: { time: false, distr: 2 }, tok: { auto: true, range: (_u, _min, max) => [0, (max || 1) * 1.1] }, mem: { auto: true, range: (_u, _min, max) => [0, (max || 1) * 1.3] } }, // apart from the throughput line
        axes: [
          { label, scale: 'x', values: (_u, ticks) => ticks.map((t) => String(t)) },
          { label: 'tokens / s', scale: 'tok', values: (_u, ticks) => ticks.map((t) => formatSI(t)), size: 60 },
          { label: 'peak memory per GPU (GiB)', scale: 'mem', side: 1, grid: { show: false }, size: 60 },
        ],
        series: [
          { label },
          { label: 'Throughput', scale: 'tok', stroke: '#4e79a7', width: 2, points: { size: 7 }, value: (_u, v) => (v == null ? '–' : `${formatSI(v)} tokens/s`) },
          { label: 'Peak memory', scale: 'mem', stroke: '#f28e2b', width: 2, points: { size: 7 }, value: (_u, v) => (v == null ? '–' : formatGiB(v)) },
          { label: 'GPU capacity', scale: 'mem', stroke: '#d1242f', dash: [6, 4], width: 1, points: { show: false }, value: (_u, v) => (v == null ? '–' : formatGiB(v)) },
        ],
      },
      data,
      this.chartHost,
    );
    const rows = pts.map((p) =>
      h(
        'tr',
        { class: p.error ? 'invalid' : p.summary?.oom ? 'oom' : '' },
        h('td', { class: 'num' }, String(p.x)),
        ...(p.summary
          ? [
              h('td', { class: 'num' }, formatDuration(p.summary.iteration_time_s)),
              h('td', { class: 'num' }, formatSI(p.summary.tokens_per_s)),
              h('td', { class: 'num' }, formatPercent(p.summary.mfu)),
              h('td', { class: 'num' }, formatGiB(p.summary.peak_memory_GiB), p.summary.oom ? h('span', { class: 'badge oom' }, 'OOM') : null),
              h('td', { class: 'num' }, formatPercent(p.summary.bubble_fraction)),
            ]
          : [h('td', { colspan: 5, class: 'err' }, p.error ?? '')]),
        // An invalid point cannot be loaded (its error is in the row).
        h('td', null, h('button', { class: 'small', disabled: Boolean(p.error), title: p.error ? 'This value is invalid for the current configuration' : 'Load this value', onclick: () => this.onApply(path, p.x) }, 'Use')),
      ),
    );
    setChildren(
      this.table,
      h(
        'table',
        { class: 'compare-table' },
        h('thead', null, h('tr', null, ...[label, 'Iteration', 'Tokens/s', 'MFU', 'Peak memory', 'Bubble', ''].map((t, i) => h('th', { class: i > 0 && i < 6 ? 'num' : i === 0 ? 'num' : '' }, t)))),
        h('tbody', null, ...rows),
      ),
    );
  }
}
