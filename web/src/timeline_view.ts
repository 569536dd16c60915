// The timeline tab: toolbar (zoom, search, compute-only, collapse), legend, the Timeline
// widget for one result, and the details panel for the selected span or range.
import { h, setChildren } from './dom';
import { formatDuration } from './format';
import { renderPipelinePlan } from './pipeline_plan_view';
import type { SimResult } from './result';
import { clearDetails, rangeDetails, spanDetails } from './timeline_details';
import { KINDS, kindColor, kindLabel, PHASE_LETTER, streamLabel } from './timeline/colors';
import { Timeline } from './timeline/timeline';
import { formatTick } from './timeline/time_scale';

/** Stages beyond this many start collapsed (a long pipeline fits on one screen). */
const OPEN_STAGES = 4;

export class TimelineView {
  timeline: Timeline | null = null;
  private readonly legend = h('ul', { class: 'legend tl-legend' });
  private readonly range = h('span', { class: 'tl-range', 'aria-live': 'polite' });
  private readonly host = h('div', { class: 'tl-host' });
  private readonly details = h('div', { class: 'tl-details', 'aria-live': 'polite' });
  private readonly empty = h('p', { class: 'empty' }, 'Run a simulation to see its timeline.');
  /** The zero-bubble plan the timeline plays, when the result has one. */
  private readonly plan = h('div', { class: 'tl-plan', hidden: true });
  private readonly search = h('input', { type: 'search', class: 'tl-search', placeholder: 'Search spans by name', 'aria-label': 'Search spans by name (Enter: next match)' }) as HTMLInputElement;
  private readonly matches = h('span', { class: 'tl-matches', 'aria-live': 'polite' });
  private readonly computeOnly = h('input', { type: 'checkbox', id: 'tl-compute-only' }) as HTMLInputElement;
  /** Called when the user selects a span or clears it (the page keeps it in the link). */
  onSelect: ((i: number) => void) | null = null;

  constructor(root: HTMLElement) {
    const btn = (label: string, title: string, f: () => void) => h('button', { class: 'icon-btn', title, 'aria-label': title, onclick: f }, label);
    this.search.addEventListener('input', () => {
      const n = this.timeline?.search(this.search.value) ?? 0;
      this.matches.textContent = this.search.value.trim() ? `${n} match${n === 1 ? '' : 'es'}` : '';
    });
    this.search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        this.timeline?.nextMatch(e.shiftKey ? -1 : 1);
        e.preventDefault();
      }
    });
    this.computeOnly.addEventListener('change', () => this.timeline?.setComputeOnly(this.computeOnly.checked));
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
      h('div', { class: 'tl-find' }, this.search, this.matches),
      h('label', { class: 'tl-check' }, this.computeOnly, 'Compute only'),
      h('button', { class: 'small', type: 'button', onclick: () => this.timeline?.collapseFrom(0), title: 'Collapse every pipeline stage (click a stage header to open it)' }, 'Collapse stages'),
      h('span', { class: 'tl-hint' }, 'Wheel or W/S: zoom · A/D or Shift+drag: pan · drag: select a range · click: details'),
    );
    root.append(
      h(
        'p',
        { class: 'panel-intro' },
        'One row per simulated GPU (GPUs that behave identically are simulated once: “×16” stands for 16 of them), grouped by pipeline stage, with a lane per stream: compute, tensor-parallel, data-parallel and pipeline communication. Labels give the pass and the micro-batch (F3: forward of micro-batch 3). Shaded compute time is idle (the bubble); arrows join the two ends of a pipeline transfer.',
      ),
      toolbar,
      this.legend,
      this.host,
      this.details,
      this.plan,
      this.empty,
    );
    clearDetails(this.details);
  }

  show(r: SimResult, selected = -1): void {
    this.timeline?.destroy();
    this.timeline = null;
    const spans = r.spans;
    this.empty.hidden = spans.n > 0;
    this.empty.textContent = 'This result has no timeline.';
    const idle = h('span', { class: 'swatch swatch-idle' });
    setChildren(
      this.legend,
      ...spans.kinds
        .filter((_, k) => spans.kind.includes(k))
        .map((k) => {
          const sw = h('span', { class: 'swatch' });
          sw.style.background = kindColor(k);
          return h('li', { title: KINDS[k]?.help ?? k }, sw, kindLabel(k));
        }),
      h('li', { title: 'A compute lane with nothing running: the GPU waits (pipeline bubble, exposed communication).' }, idle, 'Idle (compute)'),
    );
    clearDetails(this.details);
    setChildren(this.plan, r.pipelinePlan ? renderPipelinePlan(r.pipelinePlan) : null);
    this.plan.hidden = !r.pipelinePlan;
    if (spans.n === 0) return;
    const stage = new Map(r.devices.map((d) => [d.rank, d.stage]));
    const mult = new Map(r.devices.map((d) => [d.rank, d.multiplicity ?? 1]));
    const family = (k: string) => (k === 'backward_weight' || k === 'recompute' ? 'backward_input' : k);
    this.timeline = new Timeline(
      {
        color: kindColor,
        streamLabel,
        stageOf: (rank) => stage.get(rank) ?? 0,
        rankLabel: (rank) => `GPU ${rank}`,
        rankNote: (rank) => ((mult.get(rank) ?? 1) > 1 ? `×${mult.get(rank)} GPUs` : null),
        label: (s, i) => {
          const kind = s.kinds[s.kind[i]];
          const mb = s.mb[i];
          const letter = PHASE_LETTER[kind] ?? PHASE_LETTER[family(kind)];
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
          if (s.group[i] > 0) rows.push(['bytes', `${(s.bytes[i] / 1e6).toFixed(2)} MB · ${s.group[i]} GPUs${s.nodes[i] > 1 ? ` · ${s.nodes[i]} nodes` : ' · one node'}`]);
          rows.push(['', 'click for details']);
          return rows;
        },
        memory: r.curves.length ? { curves: r.curves, capacityGiB: r.summary.memory_capacity_GiB } : undefined,
        onScale: (sc) => {
          this.range.textContent = `${formatTick(sc.t0, sc.span / 100)} – ${formatTick(sc.t1, sc.span / 100)} (${formatDuration(sc.span)} shown)`;
        },
        onSelect: (i) => {
          if (i >= 0) setChildren(this.details, spanDetails(r, i, (j) => this.selectSpan(j)));
          else if (!this.timeline || this.timeline.selected < 0) clearDetails(this.details);
          this.onSelect?.(i);
        },
        onRange: (range) => {
          if (range) setChildren(this.details, rangeDetails(r, range.t0, range.t1));
          else clearDetails(this.details);
        },
      },
      spans,
      this.host,
    );
    const stages = new Set(r.devices.map((d) => d.stage)).size;
    if (stages > OPEN_STAGES) this.timeline.collapseFrom(OPEN_STAGES);
    if (this.computeOnly.checked) this.timeline.setComputeOnly(true);
    if (this.search.value.trim()) this.search.dispatchEvent(new Event('input'));
    if (selected >= 0 && selected < spans.n) this.selectSpan(selected);
  }

  redraw(): void {
    this.timeline?.redraw();
  }

  /** Selects span i and brings it into view. */
  selectSpan(i: number): void {
    if (!this.timeline) return;
    this.timeline.reveal(i);
    this.timeline.select(i);
  }
}
