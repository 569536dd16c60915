// Compare: pinned runs side by side, as a table and as bars per metric.
import type { Config } from './config_model';
import { h, setChildren } from './dom';
import { formatDuration, formatGiB, formatPercent, formatSI } from './format';
import type { Summary } from './result';

export interface Pin {
  id: number;
  label: string;
  config: Config;
  summary: Summary;
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

export class CompareView {
  pins: Pin[] = [];
  private nextId = 1;
  private readonly body = h('div', { class: 'compare-body' });
  current: { label: string; summary: Summary } | null = null;

  constructor(
    root: HTMLElement,
    private readonly onRestore: (pin: Pin) => void,
  ) {
    root.append(
      h('p', { class: 'panel-intro' }, 'Pin a run (the “Pin this run” button above the cards) to keep its numbers, change the strategy, and pin again: the runs line up here. Restore a pin to load its exact inputs.'),
      this.body,
    );
    this.render();
  }

  pin(label: string, config: Config, summary: Summary): void {
    this.pins.push({ id: this.nextId++, label, config: structuredClone(config), summary });
    this.render();
  }

  setCurrent(label: string, summary: Summary | null): void {
    this.current = summary ? { label, summary } : null;
    this.render();
  }

  render(): void {
    type Row = { label: string; summary: Summary; pin?: Pin; color: string };
    const rows: Row[] = this.pins.map((p, i) => ({ label: p.label, summary: p.summary, pin: p, color: COLORS[i % COLORS.length] }));
    if (this.current) rows.push({ label: `${this.current.label} (current, not pinned)`, summary: this.current.summary, color: '#8a939e' });
    if (this.pins.length === 0) {
      setChildren(this.body, h('p', { class: 'empty' }, 'No pinned runs yet.'));
      if (!this.current) return;
    }
    // The best value of each metric is shown in bold.
    const best = new Map<keyof Summary, number>();
    for (const m of METRICS) {
      const vals = rows.map((r) => r.summary[m.key] as number);
      best.set(m.key, m.better === 'low' ? Math.min(...vals) : Math.max(...vals));
    }
    const table = h(
      'table',
      { class: 'compare-table' },
      h('thead', null, h('tr', null, h('th', null, 'Run'), ...METRICS.map((m) => h('th', { class: 'num' }, m.title)), h('th', null, ''))),
      h(
        'tbody',
        null,
        ...rows.map((r) => {
          const sw = h('span', { class: 'swatch' });
          sw.style.background = r.color;
          return h(
            'tr',
            { class: r.pin ? '' : 'current' },
            h('td', { class: 'run-label' }, sw, r.label, r.summary.oom ? h('span', { class: 'badge oom' }, 'OOM') : null),
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
                    },
                  }, '×')
                : null,
            ),
          );
        }),
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
  }
}
