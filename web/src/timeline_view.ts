// The timeline tab: legend, zoom buttons, and the Timeline widget for one result.
import { h, setChildren } from './dom';
import { formatDuration } from './format';
import type { SimResult } from './result';
import { KINDS, kindColor, kindLabel, PHASE_LETTER, streamLabel } from './timeline/colors';
import { Timeline } from './timeline/timeline';
import { formatTick } from './timeline/time_scale';

export class TimelineView {
  timeline: Timeline | null = null;
  private readonly legend = h('ul', { class: 'legend tl-legend' });
  private readonly range = h('span', { class: 'tl-range', 'aria-live': 'polite' });
  private readonly host = h('div', { class: 'tl-host' });
  private readonly empty = h('p', { class: 'empty' }, 'Run a simulation to see its timeline.');

  constructor(root: HTMLElement) {
    const btn = (label: string, title: string, f: () => void) => h('button', { class: 'icon-btn', title, 'aria-label': title, onclick: f }, label);
    const toolbar = h(
      'div',
      { class: 'tl-toolbar' },
      h(
        'div',
        { class: 'tl-zoom' },
        btn('−', 'Zoom out (S)', () => this.timeline?.zoom(1 / 1.5)),
        btn('+', 'Zoom in (W)', () => this.timeline?.zoom(1.5)),
        btn('⤢', 'Show the whole iteration (0 or double-click)', () => this.timeline?.reset()),
        this.range,
      ),
      h('span', { class: 'tl-hint' }, 'Wheel or W/S: zoom · drag or A/D: pan · hover a span for details'),
    );
    root.append(
      h(
        'p',
        { class: 'panel-intro' },
        'One row per simulated GPU (GPUs that behave identically are simulated once: “×16” stands for 16 of them), grouped by pipeline stage, with a lane per stream: compute, tensor-parallel, data-parallel and pipeline communication. Labels give the pass and the micro-batch (F3: forward of micro-batch 3).',
      ),
      toolbar,
      this.legend,
      this.host,
      this.empty,
    );
  }

  show(r: SimResult): void {
    this.timeline?.destroy();
    this.timeline = null;
    const spans = r.spans;
    this.empty.hidden = spans.n > 0;
    this.empty.textContent = 'This result has no timeline.';
    setChildren(
      this.legend,
      ...spans.kinds.map((k) => {
        const sw = h('span', { class: 'swatch' });
        sw.style.background = kindColor(k);
        return h('li', { title: KINDS[k]?.help ?? k }, sw, kindLabel(k));
      }),
    );
    if (spans.n === 0) return;
    const stage = new Map(r.devices.map((d) => [d.rank, d.stage]));
    const mult = new Map(r.devices.map((d) => [d.rank, d.multiplicity ?? 1]));
    this.timeline = new Timeline(
      {
        color: kindColor,
        streamLabel,
        stageOf: (rank) => stage.get(rank) ?? 0,
        rankLabel: (rank) => `GPU ${rank}${(mult.get(rank) ?? 1) > 1 ? ` ×${mult.get(rank)}` : ''}`,
        label: (s, i) => {
          const kind = s.kinds[s.kind[i]];
          const mb = s.mb[i];
          const letter = PHASE_LETTER[kind];
          if (letter) return mb >= 0 ? `${letter}${mb}` : letter;
          // Pipeline transfers carry a micro-batch; TP/DP collectives are too many to label.
          return kind === 'send_recv' && mb >= 0 ? String(mb) : null;
        },
        tooltip: (s, i) => {
          const rows: [string, string][] = [
            ['', s.names[s.name[i]]],
            ['kind', kindLabel(s.kinds[s.kind[i]])],
          ];
          if (s.mb[i] >= 0) rows.push(['micro-batch', String(s.mb[i])]);
          rows.push(
            ['GPU', `${s.rank[i]} (${streamLabel(s.streams[s.stream[i]])})`],
            ['start', formatDuration(s.start[i])],
            ['duration', formatDuration(s.end[i] - s.start[i])],
          );
          return rows;
        },
        memory: r.curves.length ? { curves: r.curves, capacityGiB: r.summary.memory_capacity_GiB } : undefined,
        onScale: (sc) => {
          this.range.textContent = `${formatTick(sc.t0, sc.span / 100)} – ${formatTick(sc.t1, sc.span / 100)} (${formatDuration(sc.span)} shown)`;
        },
      },
      spans,
      this.host,
    );
  }
}
