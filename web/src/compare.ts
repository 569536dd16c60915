// Compare: pinned runs side by side — a table, bars per metric, and their timelines stacked
// on one shared (lockable) time axis, each labelled with what differs from the other runs.
// Pins can be renamed; they travel in the share link (app.ts writes them).
import type { Config } from './config_model';
import { h, setChildren } from './dom';
import { formatDuration, formatGiB, formatPercent, formatSI } from './format';
import type { SimResult, Summary } from './result';
import { kindColor, PHASE_LETTER, streamLabel } from './timeline/colors';
import { Timeline } from './timeline/timeline';

export interface Pin {
  id: number;
  label: string;
  config: Config;
  result: SimResult;
}

const METRICS: { key: keyof Summary; title: string; fmt: (v: number) => string; better: 'low' | 'high' }[] = [
  { key: 'iteration_time_s', title: 'Iteration time', fmt: formatDuration, better: 'low' },
  { key: 'tokens_per_s', title: 'Tokens/s', fmt: formatSI, better: 'high' },
  { key: 'model_tflops_per_gpu', title: 'TFLOP/s per GPU', fmt: (v) => v.toFixed(0), better: 'high' },
  { key: 'mfu', title: 'MFU', fmt: formatPercent, better: 'high' },
  { key: 'peak_memory_GiB', title: 'Peak memory', fmt: formatGiB, better: 'low' },
  { key: 'bubble_fraction', title: 'Bubble', fmt: formatPercent, better: 'low' },
  { key: 'exposed_comm_fraction', title: 'Exposed comm', fmt: formatPercent, better: 'low' },
];

const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#b07aa1', '#edc948', '#9c755f'];

/** Short names of config fields for difference labels. */
const FIELD_NAMES: Record<string, string> = {
  'training.global_batch': 'global batch',
  'training.seq_len': 'seq len',
  'training.precision': 'precision',
  'cluster.gpu.compute_throughput_fraction': 'GPU compute fraction',
  'strategy.virtual_stages': 'virtual stages',
  'strategy.micro_batch': 'micro-batch',
  'strategy.schedule': 'schedule',
  'strategy.recompute': 'recompute',
  'strategy.zero': 'ZeRO',
  'strategy.dp': 'dp',
  'strategy.tp': 'tp',
  'strategy.pp': 'pp',
  'strategy.cp': 'cp',
  'strategy.ep': 'ep',
  'cluster.nodes': 'nodes',
  'cluster.inter_node.nic_GBps': 'NIC GB/s',
  'cluster.inter_node.nics_per_node': 'NICs/node',
};

function flatten(obj: unknown, prefix = '', out: Map<string, string> = new Map()): Map<string, string> {
  if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
    for (const [k, v] of Object.entries(obj)) if (k !== 'name' && k !== 'description') flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, JSON.stringify(obj));
  return out;
}

/** For each config, "field value" for every field whose value differs between the configs. */
export function differenceLabels(configs: Config[]): string[] {
  const flat = configs.map((c) => {
    const f = flatten(c);
    // A preset given as a string and as {preset: name} are the same cluster/model.
    for (const k of ['cluster', 'model']) if (f.has(k)) f.set(`${k}.preset`, f.get(k)!), f.delete(k);
    return f;
  });
  const keys = new Set(flat.flatMap((f) => [...f.keys()]));
  const differing = [...keys].filter((k) => new Set(flat.map((f) => f.get(k) ?? '∅')).size > 1).sort();
  return flat.map((f) =>
    differing
      .map((k) => {
        const v = f.get(k);
        const name = FIELD_NAMES[k] ?? k.replace(/^(strategy|training)\./, '').replace(/\.preset$/, '').replace(/_/g, ' ');
        return `${name} ${v === undefined ? 'default' : v.replace(/^"|"$/g, '')}`;
      })
      .join(' · '),
  );
}

export class CompareView {
  pins: Pin[] = [];
  private nextId = 1;
  private readonly body = h('div', { class: 'compare-body' });
  private readonly stack = h('div', { class: 'compare-stack' });
  private readonly lock = h('input', { type: 'checkbox', id: 'compare-lock', checked: true }) as HTMLInputElement;
  private timelines: Timeline[] = [];
  current: { label: string; config: Config; result: SimResult } | null = null;
  /** Called when pins change (added, removed, renamed): the page rewrites its link. */
  onChange: () => void = () => {};

  constructor(
    root: HTMLElement,
    private readonly onRestore: (pin: Pin) => void,
  ) {
    this.lock.addEventListener('change', () => this.renderStack());
    root.append(
      h('p', { class: 'panel-intro' }, 'Pin a run (the “Pin this run” button above the cards) to keep it, change the strategy, and pin again: the runs line up here, their timelines stacked on one time axis. Rename a pin by editing its name; pins travel in the share link.'),
      this.body,
      h('div', { class: 'compare-stack-head' }, h('h3', null, 'Timelines, compute lanes'), h('label', { class: 'tl-check' }, this.lock, 'Lock the time axis (same scale, pan and zoom together)')),
      this.stack,
    );
    this.render();
  }

  pin(label: string, config: Config, result: SimResult): void {
    this.pins.push({ id: this.nextId++, label, config: structuredClone(config), result });
    this.render();
    this.onChange();
  }

  setCurrent(label: string, config: Config, result: SimResult | null): void {
    this.current = result ? { label, config, result } : null;
    this.render();
  }

  private rows(): { label: string; summary: Summary; pin?: Pin; color: string; config: Config; result: SimResult }[] {
    const rows: { label: string; summary: Summary; pin?: Pin; color: string; config: Config; result: SimResult }[] = this.pins.map((p, i) => ({
      label: p.label,
      summary: p.result.summary,
      pin: p,
      color: COLORS[i % COLORS.length],
      config: p.config,
      result: p.result,
    }));
    if (this.current) rows.push({ label: `${this.current.label} (current, not pinned)`, summary: this.current.result.summary, color: '#6b7480', config: this.current.config, result: this.current.result });
    return rows;
  }

  render(): void {
    const rows = this.rows();
    if (this.pins.length === 0) {
      setChildren(this.body, h('p', { class: 'empty' }, 'No pinned runs yet.'));
      this.renderStack();
      if (!this.current) return;
    }
    const diffs = differenceLabels(rows.map((r) => r.config));
    // The best value of each metric is shown in bold.
    const best = new Map<keyof Summary, number>();
    for (const m of METRICS) {
      const vals = rows.map((r) => r.summary[m.key] as number);
      best.set(m.key, m.better === 'low' ? Math.min(...vals) : Math.max(...vals));
    }
    const nameCell = (r: (typeof rows)[number], i: number) => {
      const sw = h('span', { class: 'swatch' });
      sw.style.background = r.color;
      const name = r.pin
        ? (h('input', {
            type: 'text',
            class: 'pin-name',
            value: r.label,
            'aria-label': 'Name of this pinned run',
            onchange: (e: Event) => {
              r.pin!.label = (e.target as HTMLInputElement).value.slice(0, 120);
              this.onChange();
              this.renderStack();
            },
          }) as HTMLInputElement)
        : h('span', null, r.label);
      return h('td', { class: 'run-label' }, sw, name, diffs[i] ? h('div', { class: 'pin-diff', 'data-diff': diffs[i] }, diffs[i]) : null, r.summary.oom ? h('span', { class: 'badge oom' }, 'OOM') : null);
    };
    const table = h(
      'table',
      { class: 'compare-table' },
      h('thead', null, h('tr', null, h('th', null, 'Run'), ...METRICS.map((m) => h('th', { class: 'num' }, m.title)), h('th', null, ''))),
      h(
        'tbody',
        null,
        ...rows.map((r, i) =>
          h(
            'tr',
            { class: r.pin ? '' : 'current' },
            nameCell(r, i),
            ...METRICS.map((m) => h('td', { class: `num${best.get(m.key) === (r.summary[m.key] as number) && rows.length > 1 ? ' best' : ''}` }, m.fmt(r.summary[m.key] as number))),
            h(
              'td',
              { class: 'actions' },
              r.pin ? h('button', { class: 'small', onclick: () => this.onRestore(r.pin!) }, 'Restore') : null,
              r.pin
                ? h('button', {
                    class: 'small ghost',
                    title: 'Remove this pin',
                    'aria-label': 'Remove this pin',
                    onclick: () => {
                      this.pins = this.pins.filter((p) => p !== r.pin);
                      this.render();
                      this.onChange();
                    },
                  }, '×')
                : null,
            ),
          ),
        ),
      ),
    );
    const charts = h(
      'div',
      { class: 'compare-bars' },
      ...METRICS.slice(0, 5).map((m) => {
        const vals = rows.map((r) => r.summary[m.key] as number);
        const max = Math.max(...vals, 0) || 1;
        return h(
          'div',
          { class: 'bar-chart' },
          h('h3', null, m.title, h('span', { class: 'better' }, m.better === 'low' ? ' (lower is better)' : ' (higher is better)')),
          ...rows.map((r, i) => {
            const fill = h('div', { class: 'bar-fill' });
            fill.style.width = `${(vals[i] / max) * 100}%`;
            fill.style.background = r.color;
            return h('div', { class: 'bar-row', title: r.label }, h('div', { class: 'bar-track' }, fill), h('span', { class: 'bar-value' }, m.fmt(vals[i])));
          }),
        );
      }),
    );
    setChildren(this.body, table, charts);
    this.renderStack();
  }

  /** The runs' timelines, one above the other, compute lanes only, on one shared axis. */
  private renderStack(): void {
    for (const t of this.timelines) t.destroy();
    this.timelines = [];
    // Only with pins: the current run alone is already on the Timeline tab.
    const rows = this.pins.length ? this.rows().filter((r) => r.result.spans.n > 0) : [];
    const diffs = differenceLabels(rows.map((r) => r.config));
    setChildren(this.stack);
    if (rows.length === 0) return;
    const locked = this.lock.checked;
    const tMax = locked ? Math.max(...rows.map((r) => r.result.summary.iteration_time_s)) : undefined;
    // Starts true: each Timeline reports its first window while it is being built.
    let syncing = true;
    rows.forEach((r, i) => {
      const sw = h('span', { class: 'swatch' });
      sw.style.background = r.color;
      const host = h('div', { class: 'compare-tl', 'data-run': String(i) });
      this.stack.append(h('div', { class: 'compare-tl-head' }, sw, h('b', null, r.label), diffs[i] ? h('span', { class: 'pin-diff' }, ` — ${diffs[i]}`) : null, h('span', { class: 'pin-time' }, ` · ${formatDuration(r.result.summary.iteration_time_s)}`)), host);
      const stage = new Map(r.result.devices.map((d) => [d.rank, d.stage]));
      const tl = new Timeline(
        {
          color: kindColor,
          streamLabel,
          computeOnly: true,
          laneHeight: 12,
          maxHeight: 240,
          gutter: 110,
          tMax,
          stageOf: (rank) => stage.get(rank) ?? 0,
          label: (s, k) => {
            const letter = PHASE_LETTER[s.kinds[s.kind[k]]];
            return letter && s.mb[k] >= 0 ? `${letter}${s.mb[k]}` : null;
          },
          onScale: (sc) => {
            if (!locked || syncing) return;
            syncing = true;
            for (const other of this.timelines) if (other.scale !== sc) other.setWindow(sc.t0, sc.t1);
            syncing = false;
          },
        },
        r.result.spans,
        host,
      );
      this.timelines.push(tl);
    });
    syncing = false;
  }
}
