// A canvas timeline in the shape of uPlot: `new Timeline(opts, spans, el)`.
// It reads an immutable result (columnar spans, memory curves) and never calls back into
// the simulator. Drawing cost follows pixels, not spans: lanes are binary-searched to the
// visible window, runs of sub-pixel spans collapse into one pixel column, labels appear
// only on spans wide enough to hold them, redraws are coalesced into one per animation
// frame, and the hover cursor and tooltip are DOM elements (moving the mouse never repaints).
//
// Perfetto's habits: click a span to select it (details via onSelect), drag to select a time
// range (onRange), Shift+drag or drag on the time axis to pan, W/S/A/D, search highlights
// matching spans, stage groups collapse on click, a compute-only view; send/receive arrows
// join the two ends of a pipeline transfer and idle time on compute lanes is shaded. Touch:
// one finger pans, two fingers pinch-zoom, a tap selects.
import type { MemoryCurve, Spans } from '../result';
import { buildLanes, firstVisible, lowerBound, spanAt, type Lane, type LaneIndex } from './lanes';
import { STREAM_ORDER } from './colors';
import { formatTick, TimeScale, type TimeBounds } from './time_scale';

export interface TimelineOptions {
  /** Color of a span kind ("forward", "all_reduce", ...). */
  color: (kind: string) => string;
  /** Short text drawn inside span i when it fits (e.g. "F3"); null for none. */
  label?: (spans: Spans, i: number) => string | null;
  /** Rows of the tooltip for span i: [key, value]. */
  tooltip?: (spans: Spans, i: number) => [string, string][];
  /** Stream lanes in this order inside each rank. */
  streamOrder?: string[];
  streamLabel?: (stream: string) => string;
  /** Pipeline stage of a rank (ranks are grouped by stage). */
  stageOf?: (rank: number) => number;
  rankLabel?: (rank: number) => string;
  /** Memory curves drawn under the spans, one track per device, against `capacityGiB`. */
  memory?: { curves: MemoryCurve[]; capacityGiB: number };
  laneHeight?: number;
  memoryHeight?: number;
  gutter?: number;
  /** Largest height of the widget in CSS pixels (taller content scrolls). */
  maxHeight?: number;
  /** Called after the visible window changes. */
  onScale?: (scale: TimeScale) => void;
  /** A second, quieter line under the rank label (e.g. "×1024": GPUs it stands for). */
  rankNote?: (rank: number) => string | null;
  /** Called when a span is selected (its index) or the selection is cleared (-1). */
  onSelect?: (i: number) => void;
  /** The time axis reaches at least this far (a shared axis for runs stacked in compare). */
  tMax?: number;
  /** Start in the compact compute-only view. */
  computeOnly?: boolean;
  /** Called when a time range is selected, or cleared (null). */
  onRange?: (range: { t0: number; t1: number } | null) => void;
}

type Row =
  | { type: 'group'; y: number; h: number; text: string; stage: number; collapsed: boolean }
  | { type: 'lane'; y: number; h: number; lane: Lane; first: boolean; second: boolean; last: boolean; index: number }
  | { type: 'memory'; y: number; h: number; curve: MemoryCurve };

type Label = { x: number; y: number; w: number; h: number; i: number };

const AXIS_H = 26;
const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const FONT_BOLD = '600 11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const MIN_LABEL_PX = 5;
const IDLE_FILL = '#f7e3e1'; // compute lane with nothing running: idle (the bubble)
const ARROW = '#1f2630';
const MAX_ARROWS = 1500;
/** Label families: a run of touching spans of one family and micro-batch gets one label
 * (1F1B's backward is B and W ops interleaved: one "B3", not slivers). */
const FAMILY: Record<string, number> = { forward: 1, backward_input: 2, backward_weight: 2, recompute: 2, backward: 2 };

export class Timeline {
  readonly root: HTMLDivElement;
  private readonly scroller: HTMLDivElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly spacer: HTMLDivElement;
  private readonly cursor: HTMLDivElement;
  private readonly highlight: HTMLDivElement;
  private readonly tip: HTMLDivElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly idx: LaneIndex;
  private rows: Row[] = [];
  private pal = palette();
  private contentH = 0;
  private laneRows = new Map<number, Extract<Row, { type: 'lane' }>>();
  private readonly collapsed = new Set<number>();
  private computeOnly = false;
  private selectedSpan = -1;
  private rangeSel: { t0: number; t1: number } | null = null;
  private match: Uint8Array | null = null;
  private matchList: number[] = [];
  private matchAt = -1;
  private readonly kindFamily: number[];
  private readonly kindDim: string[];
  private readonly spanPos: Uint32Array; // span index -> position in idx.order
  private readonly bounds: TimeBounds;
  private readonly kindColor: string[];
  private readonly kindText: string[];
  private readonly textWidth = new Map<string, number>();
  private readonly memMax: number;
  private readonly capOnScale: boolean;
  private scaleValue: TimeScale;
  private frame = 0;
  private dpr = 1;
  private widthCss = 0;
  private viewH = 0;
  private mouseX = -1;
  private drag: { x: number; y: number; scale: TimeScale; scrollTop: number; moved: boolean; mode: 'pan' | 'range' } | null = null;
  private touch: { ids: number[]; x: number[]; y: number[]; scale: TimeScale; scrollTop: number; moved: boolean } | null = null;
  private readonly resizeObserver: ResizeObserver;
  private readonly cleanup: (() => void)[] = [];
  private readonly gutter: number;

  constructor(
    private readonly opts: TimelineOptions,
    readonly spans: Spans,
    el: HTMLElement,
  ) {
    this.gutter = opts.gutter ?? 168;
    this.idx = buildLanes(spans, opts.streamOrder ?? STREAM_ORDER);
    this.kindColor = spans.kinds.map((k) => opts.color(k));
    this.kindText = this.kindColor.map(textColorOn);
    this.kindDim = this.kindColor.map((c) => mix(c, '#ffffff', 0.78));
    this.kindFamily = spans.kinds.map((k, i) => FAMILY[k] ?? 10 + i);
    this.spanPos = new Uint32Array(spans.n);
    for (let k = 0; k < spans.n; ++k) this.spanPos[this.idx.order[k]] = k;
    const memEnd = Math.max(0, ...(opts.memory?.curves ?? []).map((c) => (c.t.length ? c.t[c.t.length - 1] : 0)));
    const tMax = Math.max(this.idx.maxEnd, memEnd, opts.tMax ?? 0) || 1;
    this.computeOnly = opts.computeOnly ?? false;
    this.bounds = { min: 0, max: tMax, minSpan: Math.max(tMax * 1e-7, 1e-9) };
    // Memory tracks: scaled to the highest peak so the shape shows; the capacity line is
    // drawn when it is near enough to be on the same scale.
    let peakAll = 0;
    for (const c of opts.memory?.curves ?? []) for (let i = 0; i < c.gib.length; ++i) peakAll = Math.max(peakAll, c.gib[i]);
    const cap = opts.memory?.capacityGiB ?? 0;
    this.capOnScale = cap > 0 && cap <= peakAll * 1.6;
    this.memMax = Math.max(peakAll * 1.12, this.capOnScale ? cap * 1.04 : 0) || 1;
    this.layout();

    this.root = div('tl');
    this.root.tabIndex = 0;
    this.root.setAttribute('role', 'img');
    this.root.setAttribute('aria-label', 'Timeline of the simulated iteration: one row per GPU and stream. Zoom with the mouse wheel or W/S, pan with A/D or Shift+drag, drag to select a time range, click a span for its details.');
    this.scroller = div('tl-scroll');
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'tl-canvas';
    this.spacer = div('tl-spacer');
    this.cursor = div('tl-cursor');
    this.highlight = div('tl-highlight');
    this.tip = div('tl-tip');
    this.scroller.append(this.canvas, this.spacer);
    this.root.append(this.scroller, this.cursor, this.highlight, this.tip);
    el.append(this.root);
    const ctx = this.canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('canvas 2D is not available');
    this.ctx = ctx;

    this.scaleValue = new TimeScale(0, tMax, this.gutter, this.gutter + 100);
    this.resize();
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(this.root);
    this.listen();
    this.publishScale();
  }

  /** The visible time window and its pixels (immutable). */
  get scale(): TimeScale {
    return this.scaleValue;
  }

  /** Shows [t0, t1] (clamped to the data). */
  setWindow(t0: number, t1: number): void {
    this.setScale(this.scaleValue.window(t0, t1, this.bounds));
  }

  zoom(factor: number, px?: number): void {
    const x = px ?? (this.scaleValue.x0 + this.scaleValue.x1) / 2;
    this.setScale(this.scaleValue.zoomAt(x, factor, this.bounds));
  }

  pan(fractionOfWidth: number): void {
    this.setScale(this.scaleValue.panBy(-fractionOfWidth * this.scaleValue.width, this.bounds));
  }

  reset(): void {
    this.setWindow(this.bounds.min, this.bounds.max);
  }

  /** Selects span i (-1: none) and reports it through onSelect. */
  select(i: number): void {
    this.selectedSpan = i >= 0 && i < this.spans.n ? i : -1;
    this.root.dataset.selected = String(this.selectedSpan);
    this.opts.onSelect?.(this.selectedSpan);
    this.requestDraw();
  }

  get selected(): number {
    return this.selectedSpan;
  }

  /** Selects the time range [t0, t1] (null clears it) and reports it through onRange. */
  setRange(range: { t0: number; t1: number } | null): void {
    this.rangeSel = range && range.t1 > range.t0 ? { t0: range.t0, t1: range.t1 } : null;
    this.root.dataset.range = this.rangeSel ? `${this.rangeSel.t0},${this.rangeSel.t1}` : '';
    this.opts.onRange?.(this.rangeSel);
    this.requestDraw();
  }

  /** Highlights spans whose name contains `query` (case-insensitive); returns how many. */
  search(query: string): number {
    const q = query.trim().toLowerCase();
    this.matchList = [];
    this.matchAt = -1;
    if (!q) {
      this.match = null;
      this.requestDraw();
      return 0;
    }
    const m = new Uint8Array(this.spans.names.length);
    this.spans.names.forEach((n, i) => (m[i] = n.toLowerCase().includes(q) ? 1 : 0));
    this.match = m;
    // Matches in time order, for "next".
    for (let i = 0; i < this.spans.n; ++i) if (m[this.spans.name[i]]) this.matchList.push(i);
    this.matchList.sort((a, b) => this.spans.start[a] - this.spans.start[b] || a - b);
    this.requestDraw();
    return this.matchList.length;
  }

  /** Selects the next search match (dir -1: the previous), zooming to it when off screen. */
  nextMatch(dir = 1): number {
    const n = this.matchList.length;
    if (!n) return -1;
    this.matchAt = (this.matchAt + dir + n) % n;
    const i = this.matchList[this.matchAt];
    this.reveal(i);
    this.select(i);
    return i;
  }

  /** Brings span i into view (time window and vertical scroll). */
  reveal(i: number): void {
    const s = this.scaleValue;
    const a = this.spans.start[i];
    const b = this.spans.end[i];
    if (a < s.t0 || b > s.t1) {
      const w = Math.max(s.span, (b - a) * 4);
      const w2 = Math.min(w, this.bounds.max - this.bounds.min);
      this.setWindow(Math.max(this.bounds.min, (a + b) / 2 - w2 / 2), Math.max(this.bounds.min, (a + b) / 2 - w2 / 2) + w2);
    }
    const row = this.laneRows.get(laneKey(this.spans.rank[i], this.spans.stream[i]));
    if (row && (row.y < this.scroller.scrollTop + AXIS_H || row.y + row.h > this.scroller.scrollTop + this.viewH)) this.scroller.scrollTop = Math.max(0, row.y - AXIS_H - 40);
  }

  /** Redraws (after a theme change). */
  redraw(): void {
    this.requestDraw();
  }

  /** Only compute lanes (a compact view of the schedule). */
  setComputeOnly(on: boolean): void {
    if (on === this.computeOnly) return;
    this.computeOnly = on;
    this.relayout();
  }

  /** Collapses or expands a pipeline stage's lanes. */
  toggleStage(stage: number, collapse?: boolean): void {
    const c = collapse ?? !this.collapsed.has(stage);
    if (c) this.collapsed.add(stage);
    else this.collapsed.delete(stage);
    this.relayout();
  }

  /** Collapses every stage but the first `keep` (a long pipeline fits on screen). */
  collapseFrom(keep: number): void {
    for (const r of this.rows) if (r.type === 'group' && r.stage >= keep) this.collapsed.add(r.stage);
    this.relayout();
  }

  private relayout(): void {
    this.layout();
    this.widthCss = -1; // force resize
    this.resize();
  }

  destroy(): void {
    cancelAnimationFrame(this.frame);
    this.resizeObserver.disconnect();
    for (const f of this.cleanup) f();
    this.root.remove();
  }

  /** Draws synchronously now (for measurements; interactions use requestDraw). */
  drawNow(): void {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.draw();
  }

  /** Schedules one redraw on the next animation frame (many calls, one draw). */
  requestDraw(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  private setScale(s: TimeScale): void {
    if (s.t0 === this.scaleValue.t0 && s.t1 === this.scaleValue.t1 && s.x0 === this.scaleValue.x0 && s.x1 === this.scaleValue.x1) return;
    this.scaleValue = s;
    this.hideHover();
    this.publishScale();
    this.requestDraw();
  }

  private publishScale(): void {
    this.root.dataset.t0 = String(this.scaleValue.t0);
    this.root.dataset.t1 = String(this.scaleValue.t1);
    this.opts.onScale?.(this.scaleValue);
  }

  // ---- layout -------------------------------------------------------------------------

  private layout(): void {
    this.rows = [];
    this.laneRows.clear();
    const laneH = this.opts.laneHeight ?? 16;
    const stageOf = this.opts.stageOf ?? (() => 0);
    const byStage = new Map<number, Lane[]>();
    const computeStream = this.spans.streams.indexOf('compute');
    for (const lane of this.idx.lanes) {
      if (this.computeOnly && lane.stream !== computeStream) continue;
      const s = stageOf(lane.rank);
      if (!byStage.has(s)) byStage.set(s, []);
      byStage.get(s)!.push(lane);
    }
    const stages = [...byStage.keys()].sort((a, b) => a - b);
    let y = AXIS_H + 4;
    let index = 0;
    for (const s of stages) {
      const lanes = byStage.get(s)!;
      const collapsed = this.collapsed.has(s);
      const gpus = new Set(lanes.map((l) => l.rank)).size;
      const title = stages.length > 1 || s > 0 ? `Pipeline stage ${s}` : 'All GPUs (one pipeline stage)';
      this.rows.push({ type: 'group', y, h: 18, text: `${collapsed ? '▸' : '▾'} ${title}${collapsed ? ` (${gpus} GPU${gpus > 1 ? 's' : ''} hidden)` : ''}`, stage: s, collapsed });
      y += 18;
      if (collapsed) {
        y += 2;
        continue;
      }
      for (let i = 0; i < lanes.length; ++i) {
        const first = i === 0 || lanes[i - 1].rank !== lanes[i].rank;
        const last = i === lanes.length - 1 || lanes[i + 1].rank !== lanes[i].rank;
        const second = !first && lanes[i - 1].rank === lanes[i].rank && (i === 1 || lanes[i - 2].rank !== lanes[i].rank);
        const row = { type: 'lane' as const, y, h: laneH, lane: lanes[i], first, second, last, index: index++ };
        this.rows.push(row);
        this.laneRows.set(laneKey(lanes[i].rank, lanes[i].stream), row);
        y += laneH + 2 + (last ? 6 : 0);
      }
    }
    const curves = this.opts.memory?.curves ?? [];
    if (curves.length && !this.computeOnly) {
      y += 6;
      const cap = fmtNum(this.opts.memory!.capacityGiB);
      this.rows.push({ type: 'group', y, h: 18, text: `Memory in use per GPU, 0 – ${fmtNum(this.memMax)} GiB (${this.capOnScale ? `dashed: capacity ${cap} GiB` : `capacity ${cap} GiB is above the scale`})`, stage: -1, collapsed: false });
      y += 18;
      const mh = this.opts.memoryHeight ?? 44;
      const sorted = [...curves].sort((a, b) => stageOf(a.rank) - stageOf(b.rank) || a.rank - b.rank);
      for (const c of sorted) {
        this.rows.push({ type: 'memory', y, h: mh, curve: c });
        y += mh + 6;
      }
    }
    this.contentH = y + 4;
  }

  private resize(): void {
    const w = Math.max(200, Math.floor(this.root.clientWidth || 800));
    const maxH = this.opts.maxHeight ?? 560;
    const h = Math.min(this.contentH, maxH);
    const dpr = window.devicePixelRatio || 1;
    if (w === this.widthCss && h === this.viewH && dpr === this.dpr) return;
    this.widthCss = w;
    this.viewH = h;
    this.dpr = dpr;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    this.scroller.style.height = `${h}px`;
    this.spacer.style.height = `${Math.max(0, this.contentH - h)}px`;
    this.scaleValue = this.scaleValue.withRange(Math.min(this.gutter, Math.max(120, Math.round(w * 0.3))), w - 12);
    this.publishScale();
    this.draw();
  }

  // ---- drawing --------------------------------------------------------------------------

  private draw(): void {
    this.pal = palette();
    const ctx = this.ctx;
    const s = this.scaleValue;
    const w = this.widthCss;
    const h = this.viewH;
    const top = this.scroller.scrollTop;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = this.pal.bg;
    ctx.fillRect(0, 0, w, h);

    // rows (below the axis), clipped to the area under the axis
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, w, h - AXIS_H);
    ctx.clip();
    const ticks = s.ticks(Math.min(90, Math.max(48, s.width / 4))); // narrow (phone): labels closer
    // Spans go into one path per kind (filled once per frame; kinds dimmed by a search get
    // their own paths), labels are drawn last.
    const K = this.kindColor.length;
    const paths: (Path2D | undefined)[] = new Array(2 * K);
    const labels: Label[] = [];
    const firstRow = this.rowAtY(top + AXIS_H);
    for (let r = Math.max(0, firstRow); r < this.rows.length; ++r) {
      const row = this.rows[r];
      const y = row.y - top;
      if (y > h) break;
      if (y + row.h < AXIS_H) continue;
      if (row.type === 'group') this.drawGroup(row, y);
      else if (row.type === 'lane') this.drawLane(row, y, paths, labels);
      else this.drawMemory(row, y);
    }
    ctx.beginPath();
    ctx.rect(s.x0, AXIS_H, s.width, h - AXIS_H);
    ctx.clip();
    // vertical grid lines, over the lane backgrounds and under the spans
    ctx.fillStyle = 'rgba(31, 38, 48, 0.07)';
    for (const t of ticks.values) ctx.fillRect(Math.round(s.toPx(t)), AXIS_H, 1, h - AXIS_H);
    for (let k = 0; k < paths.length; ++k) {
      const p = paths[k];
      if (!p) continue;
      ctx.fillStyle = k < K ? this.kindColor[k] : this.kindDim[k - K];
      ctx.fill(p);
    }
    this.drawLabels(labels);
    this.drawArrows(top, h);
    this.drawSelection(top);
    this.drawRange(h);
    ctx.restore();
    this.drawAxis(ticks);
  }

  /** Send/receive arrows between the two ends of pipeline transfers in view. */
  private drawArrows(top: number, h: number): void {
    const sp = this.spans;
    const ppStream = sp.streams.indexOf('pp_comm');
    if (ppStream < 0 || this.computeOnly) return;
    const s = this.scaleValue;
    const ctx = this.ctx;
    const stageOf = this.opts.stageOf ?? (() => 0);
    const path = new Path2D();
    const heads = new Path2D();
    let count = 0;
    for (const row of this.laneRows.values()) {
      if (row.lane.stream !== ppStream) continue;
      const y0 = row.y - top;
      if (y0 + row.h < AXIS_H - 200 || y0 > h + 200) continue;
      const idx = this.idx;
      for (let k = firstVisible(idx, row.lane, s.t0); k < row.lane.to && idx.start[k] < s.t1; ++k) {
        const i = idx.order[k];
        const j = sp.peer[i];
        if (j < 0) continue;
        // Draw each pair once, from the sender: activations go down the pipeline in the
        // forward pass, gradients up in the backward pass.
        const forward = sp.phases[sp.phase[i]] === 'forward';
        const si = stageOf(sp.rank[i]);
        const sj = stageOf(sp.rank[j]);
        if (si === sj ? i > j : forward ? si > sj : si < sj) continue;
        const other = this.laneRows.get(laneKey(sp.rank[j], sp.stream[j]));
        if (!other) continue;
        const xa = s.toPx(sp.start[i]);
        const xb = s.toPx(sp.end[j]);
        if (Math.max(xa, xb) < s.x0 || Math.min(xa, xb) > s.x1) continue;
        const ya = y0 + row.h / 2;
        const yb = other.y - top + other.h / 2;
        path.moveTo(xa, ya);
        path.lineTo(xb, yb);
        const ang = Math.atan2(yb - ya, xb - xa);
        heads.moveTo(xb, yb);
        heads.lineTo(xb - 6 * Math.cos(ang - 0.45), yb - 6 * Math.sin(ang - 0.45));
        heads.lineTo(xb - 6 * Math.cos(ang + 0.45), yb - 6 * Math.sin(ang + 0.45));
        heads.closePath();
        if (++count >= MAX_ARROWS) break;
      }
      if (count >= MAX_ARROWS) break;
    }
    if (!count) return;
    ctx.strokeStyle = 'rgba(31, 38, 48, 0.55)';
    ctx.lineWidth = 1;
    ctx.stroke(path);
    ctx.fillStyle = ARROW;
    ctx.fill(heads);
    this.root.dataset.arrows = String(count);
  }

  private drawSelection(top: number): void {
    const i = this.selectedSpan;
    if (i < 0) return;
    const row = this.laneRows.get(laneKey(this.spans.rank[i], this.spans.stream[i]));
    if (!row) return;
    const s = this.scaleValue;
    const x0 = Math.max(s.x0 - 2, s.toPx(this.spans.start[i]));
    const x1 = Math.min(s.x1 + 2, s.toPx(this.spans.end[i]));
    const ctx = this.ctx;
    ctx.strokeStyle = '#111111';
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 - 1, row.y - top, Math.max(2, x1 - x0 + 2), row.h);
    // its dependencies, outlined thinner
    ctx.lineWidth = 1;
    ctx.strokeStyle = '#b3261e';
    for (let d = this.spans.depOffsets[i]; d < this.spans.depOffsets[i + 1]; ++d) {
      const j = this.spans.deps[d];
      const r2 = this.laneRows.get(laneKey(this.spans.rank[j], this.spans.stream[j]));
      if (!r2) continue;
      const a = s.toPx(this.spans.start[j]);
      const b = s.toPx(this.spans.end[j]);
      ctx.strokeRect(a - 0.5, r2.y - top + 0.5, Math.max(1, b - a + 1), r2.h - 1);
    }
  }

  private drawRange(h: number): void {
    const r = this.rangeSel;
    if (!r) return;
    const s = this.scaleValue;
    const ctx = this.ctx;
    const a = s.toPx(r.t0);
    const b = s.toPx(r.t1);
    ctx.fillStyle = 'rgba(37, 99, 201, 0.12)';
    ctx.fillRect(a, AXIS_H, b - a, h - AXIS_H);
    ctx.fillStyle = 'rgba(37, 99, 201, 0.8)';
    ctx.fillRect(Math.round(a), AXIS_H, 1, h - AXIS_H);
    ctx.fillRect(Math.round(b), AXIS_H, 1, h - AXIS_H);
  }

  private drawGroup(row: Extract<Row, { type: 'group' }>, y: number): void {
    const ctx = this.ctx;
    ctx.fillStyle = this.pal.group;
    ctx.fillRect(0, y, this.widthCss, row.h);
    ctx.fillStyle = this.pal.ink;
    ctx.font = FONT_BOLD;
    ctx.textBaseline = 'middle';
    ctx.fillText(row.text, 8, y + row.h / 2 + 0.5);
  }

  private drawLane(row: Extract<Row, { type: 'lane' }>, y: number, paths: (Path2D | undefined)[], labels: Label[]): void {
    const ctx = this.ctx;
    const s = this.scaleValue;
    const lane = row.lane;
    const streamName = this.spans.streams[lane.stream];
    // gutter labels
    ctx.textBaseline = 'middle';
    // The stream label on the right of the gutter, the rank label left of it, cut to the room
    // left (never overlapping); the rank's note ("×1024") on its second lane.
    const gutter = s.x0;
    ctx.font = FONT;
    const streamText = this.opts.streamLabel?.(streamName) ?? streamName;
    const streamW = this.measure(streamText);
    const room = gutter - 8 - streamW - 10;
    if (row.first) {
      ctx.font = FONT_BOLD;
      ctx.fillStyle = this.pal.ink;
      const text = fitText(this.opts.rankLabel?.(lane.rank) ?? `GPU ${lane.rank}`, room, (t) => this.ctx.measureText(t).width);
      if (text) ctx.fillText(text, 8, y + row.h / 2 + 0.5);
    } else if (row.second) {
      const note = this.opts.rankNote?.(lane.rank);
      if (note) {
        ctx.font = FONT;
        ctx.fillStyle = this.pal.ink3;
        const text = fitText(note, room, (t) => this.ctx.measureText(t).width);
        if (text) ctx.fillText(text, 8, y + row.h / 2 + 0.5);
      }
    }
    ctx.font = FONT;
    ctx.fillStyle = this.pal.ink3;
    ctx.textAlign = 'right';
    ctx.fillText(streamText, gutter - 8, y + row.h / 2 + 0.5);
    ctx.textAlign = 'left';
    // lane background; on compute lanes the time nothing runs is shaded (idle: the bubble)
    ctx.fillStyle = row.index % 2 ? this.pal.lane1 : this.pal.lane2;
    ctx.fillRect(s.x0, y, s.width, row.h);
    if (streamName === 'compute') {
      const a = Math.max(s.x0, s.toPx(this.bounds.min));
      const b = Math.min(s.x1, s.toPx(this.idx.maxEnd));
      ctx.fillStyle = this.pal.idle;
      if (b > a) ctx.fillRect(a, y + 1, b - a, row.h - 2);
    }

    const idx = this.idx;
    const order = idx.order;
    const kind = this.spans.kind;
    const mbs = this.spans.mb;
    const names = this.spans.name;
    const match = this.match;
    const K = this.kindColor.length;
    const family = this.kindFamily;
    const bwdInput = this.spans.kinds.indexOf('backward_input');
    const pps = s.pxPerSecond;
    const top = y + 1;
    const hh = row.h - 2;
    const xMin = s.x0 - 2;
    const xMax = s.x1 + 2;
    // Narrow rects of one kind that touch are merged before they go into the path.
    let pk = -1;
    let px0 = 0;
    let px1 = 0;
    const put = (k: number, x0: number, x1: number, merge: boolean) => {
      if (merge && k === pk && x0 <= px1 + 0.01) {
        if (x1 > px1) px1 = x1;
        return;
      }
      if (pk >= 0) (paths[pk] ??= new Path2D()).rect(px0, top, px1 - px0, hh);
      if (merge) {
        pk = k;
        px0 = x0;
        px1 = x1;
      } else {
        pk = -1;
        (paths[k] ??= new Path2D()).rect(x0, top, x1 - x0, hh);
      }
    };
    // Labels go on runs of touching spans of one kind and micro-batch ("F3" over all the
    // ops of micro-batch 3's forward pass), only where the run is wide enough.
    let runKey = -1;
    let runX0 = 0;
    let runX1 = 0;
    let runI = 0;
    const flush = () => {
      if (runKey < 0) return;
      const a = Math.max(runX0, s.x0);
      const b = Math.min(runX1, s.x1);
      if (b - a >= MIN_LABEL_PX + 6) labels.push({ x: a, y, h: row.h, w: b - a, i: runI });
    };
    const extend = (i: number, x0: number, x1: number) => {
      const key = family[kind[i]] * 1_000_003 + (mbs[i] + 1);
      if (key === runKey && x0 - runX1 < 2) {
        if (x1 > runX1) runX1 = x1;
        if (kind[i] === bwdInput && kind[runI] !== bwdInput) runI = i; // B+W ops: "B"
        return;
      }
      flush();
      runKey = key;
      runX0 = x0;
      runX1 = x1;
      runI = i;
    };
    let k = firstVisible(idx, lane, s.t0);
    while (k < lane.to && idx.start[k] < s.t1) {
      const i = order[k];
      const x0 = Math.max(xMin, s.x0 + (idx.start[k] - s.t0) * pps);
      const x1 = Math.min(xMax, s.x0 + (idx.end[k] - s.t0) * pps);
      const pk2 = match && !match[names[i]] ? kind[i] + K : kind[i];
      if (x1 - x0 >= 1) {
        const wide = x1 - x0 > 8;
        put(pk2, x0, wide ? x1 - 1 : x1, !wide); // a 1 px gap separates wide spans
        extend(i, x0, x1);
        ++k;
      } else {
        // Sub-pixel: fill this pixel column once and skip every span that starts inside it.
        const col = Math.floor(x0);
        put(pk2, col, col + 1, true);
        extend(i, col, col + 1);
        const next = lowerBound(idx.start, s.t0 + (col + 1 - s.x0) / pps, k + 1, lane.to);
        // Spans in a stream do not overlap: only the last skipped one can reach past the column.
        k = next > k + 1 && s.x0 + (idx.end[next - 1] - s.t0) * pps > col + 1 ? next - 1 : next;
      }
    }
    put(-1, 0, 0, true);
    flush();
  }

  private drawLabels(labels: Label[]): void {
    if (!this.opts.label || labels.length === 0) return;
    const ctx = this.ctx;
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    let lastFill = '';
    for (const l of labels) {
      const text = this.opts.label(this.spans, l.i);
      if (!text) continue;
      const tw = this.measure(text);
      if (tw + 4 > l.w) continue;
      const fill = this.kindText[this.spans.kind[l.i]];
      if (fill !== lastFill) ctx.fillStyle = lastFill = fill;
      ctx.fillText(text, l.x + (l.w - tw) / 2, l.y + l.h / 2 + 0.5);
    }
  }

  private drawMemory(row: Extract<Row, { type: 'memory' }>, y: number): void {
    const ctx = this.ctx;
    const s = this.scaleValue;
    const c = row.curve;
    const h = row.h;
    const Y = (g: number) => y + h - (g / this.memMax) * (h - 2);
    ctx.textBaseline = 'middle';
    ctx.font = FONT_BOLD;
    ctx.fillStyle = this.pal.ink;
    ctx.fillText(this.opts.rankLabel?.(c.rank) ?? `GPU ${c.rank}`, 8, y + 9);
    let peak = 0;
    for (let i = 0; i < c.gib.length; ++i) peak = Math.max(peak, c.gib[i]);
    ctx.font = FONT;
    ctx.fillStyle = this.pal.ink3;
    ctx.fillText(`peak ${fmtNum(peak)} GiB`, 8, y + 25);
    ctx.fillStyle = this.pal.lane2;
    ctx.fillRect(s.x0, y, s.width, h);
    if (c.t.length === 0) return;
    ctx.save();
    ctx.beginPath();
    ctx.rect(s.x0, y, s.width, h);
    ctx.clip();
    // Step curve (memory holds its value until the next sample), min/max per pixel column.
    const pps = s.pxPerSecond;
    let i0 = lowerBound(c.t, s.t0, 0, c.t.length);
    if (i0 > 0) --i0;
    const i1 = Math.min(c.t.length, lowerBound(c.t, s.t1, i0, c.t.length) + 1);
    const path = new Path2D();
    const base = y + h;
    let x = s.x0 + (c.t[i0] - s.t0) * pps;
    path.moveTo(Math.max(x, s.x0 - 1), base);
    let prevY = Y(c.gib[i0]);
    path.lineTo(Math.max(x, s.x0 - 1), prevY);
    let col = Math.floor(x);
    let colMin = prevY;
    let colMax = prevY;
    for (let i = i0 + 1; i < i1; ++i) {
      x = s.x0 + (c.t[i] - s.t0) * pps;
      const yy = Y(c.gib[i]);
      const cx = Math.floor(x);
      if (cx === col) {
        colMin = Math.min(colMin, yy);
        colMax = Math.max(colMax, yy);
        prevY = yy;
        continue;
      }
      if (colMin !== colMax) {
        path.lineTo(col + 0.5, colMin);
        path.lineTo(col + 0.5, colMax);
      }
      path.lineTo(x, prevY);
      path.lineTo(x, yy);
      col = cx;
      colMin = colMax = prevY = yy;
    }
    const xEnd = Math.min(s.x1 + 1, s.x0 + (this.bounds.max - s.t0) * pps);
    path.lineTo(xEnd, prevY);
    path.lineTo(xEnd, base);
    path.closePath();
    ctx.fillStyle = 'rgba(78, 121, 167, 0.28)';
    ctx.fill(path);
    ctx.strokeStyle = '#4e79a7';
    ctx.lineWidth = 1.25;
    ctx.stroke(path);
    const cap = this.opts.memory!.capacityGiB;
    if (cap > 0 && this.capOnScale) {
      const cy = Math.round(Y(cap)) + 0.5;
      ctx.strokeStyle = peak > cap ? '#d1242f' : '#c0392b';
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(s.x0, cy);
      ctx.lineTo(s.x1, cy);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.restore();
  }

  private drawAxis(ticks: { step: number; values: number[] }): void {
    const ctx = this.ctx;
    const s = this.scaleValue;
    ctx.fillStyle = this.pal.bg;
    ctx.fillRect(0, 0, this.widthCss, AXIS_H);
    ctx.fillStyle = this.pal.rule;
    ctx.fillRect(0, AXIS_H - 1, this.widthCss, 1);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    ctx.fillStyle = this.pal.ink2;
    for (const t of ticks.values) {
      const x = Math.round(s.toPx(t));
      ctx.fillRect(x, AXIS_H - 6, 1, 5);
      const text = formatTick(t, ticks.step);
      if (x + 3 + this.measure(text) <= this.widthCss - 2) ctx.fillText(text, x + 3, AXIS_H / 2 - 2);
    }
    ctx.fillStyle = this.pal.bg;
    ctx.fillRect(0, 0, s.x0 - 1, AXIS_H - 1);
    ctx.fillStyle = this.pal.ink3;
    ctx.fillText('time →', 8, AXIS_H / 2 - 2);
  }

  private measure(text: string): number {
    let w = this.textWidth.get(text);
    if (w === undefined) {
      w = this.ctx.measureText(text).width;
      if (this.textWidth.size < 10_000) this.textWidth.set(text, w);
    }
    return w;
  }

  private rowAtY(y: number): number {
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const r = this.rows[mid];
      if (r.y + r.h < y) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // ---- interaction ------------------------------------------------------------------------

  private listen(): void {
    const on = <K extends keyof HTMLElementEventMap>(el: HTMLElement, type: K, f: (e: HTMLElementEventMap[K]) => void, o?: AddEventListenerOptions) => {
      el.addEventListener(type, f as EventListener, o);
      this.cleanup.push(() => el.removeEventListener(type, f as EventListener, o));
    };
    const localX = (e: MouseEvent) => e.clientX - this.canvas.getBoundingClientRect().left;
    const localY = (e: MouseEvent) => e.clientY - this.canvas.getBoundingClientRect().top;
    on(this.scroller, 'scroll', () => {
      this.hideHover();
      this.requestDraw();
    });
    on(
      this.canvas,
      'wheel',
      (e) => {
        const x = localX(e);
        if (x < this.scaleValue.x0) return; // over the labels: let the page scroll
        e.preventDefault();
        if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
          const d = e.shiftKey ? e.deltaY || e.deltaX : e.deltaX;
          this.setScale(this.scaleValue.panBy(-d, this.bounds));
        } else {
          const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
          this.setScale(this.scaleValue.zoomAt(x, Math.exp((-e.deltaY * unit) / 300), this.bounds));
        }
      },
      { passive: false },
    );
    on(this.canvas, 'mousedown', (e) => {
      if (e.button !== 0) return;
      const pan = e.shiftKey || localY(e) < AXIS_H || localX(e) < this.scaleValue.x0;
      this.drag = { x: e.clientX, y: e.clientY, scale: this.scaleValue, scrollTop: this.scroller.scrollTop, moved: false, mode: pan ? 'pan' : 'range' };
      this.root.focus({ preventScroll: true });
      e.preventDefault();
    });
    const move = (e: MouseEvent) => {
      const d = this.drag;
      if (!d) return;
      const dx = e.clientX - d.x;
      const dy = e.clientY - d.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
      if (!d.moved) return;
      if (d.mode === 'pan') {
        this.setScale(d.scale.panBy(dx, this.bounds));
        this.scroller.scrollTop = d.scrollTop - dy;
        this.canvas.style.cursor = 'grabbing';
      } else {
        const left = this.canvas.getBoundingClientRect().left;
        const a = this.scaleValue.toTime(Math.max(this.scaleValue.x0, Math.min(this.scaleValue.x1, d.x - left)));
        const b = this.scaleValue.toTime(Math.max(this.scaleValue.x0, Math.min(this.scaleValue.x1, e.clientX - left)));
        this.setRange({ t0: Math.min(a, b), t1: Math.max(a, b) });
      }
    };
    const up = (e: MouseEvent) => {
      const d = this.drag;
      this.drag = null;
      this.canvas.style.cursor = '';
      if (d && !d.moved) this.clickAt(e.clientX - this.canvas.getBoundingClientRect().left, e.clientY - this.canvas.getBoundingClientRect().top);
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
    this.cleanup.push(() => window.removeEventListener('mousemove', move), () => window.removeEventListener('mouseup', up));
    this.listenTouch(on);
    on(this.canvas, 'mousemove', (e) => {
      this.mouseX = localX(e);
      if (!this.drag) this.hover(this.mouseX, localY(e));
    });
    on(this.canvas, 'mouseleave', () => {
      this.mouseX = -1;
      this.hideHover();
    });
    on(this.canvas, 'dblclick', () => this.reset());
    on(this.root, 'keydown', (e) => {
      const x = this.mouseX >= this.scaleValue.x0 ? this.mouseX : undefined;
      const k = e.key.toLowerCase();
      if (k === 'w' || k === '+' || k === '=') this.zoom(1.3, x);
      else if (k === 's' || k === '-' || k === '_') this.zoom(1 / 1.3, x);
      else if (k === 'a' || k === 'arrowleft') this.pan(-0.15);
      else if (k === 'd' || k === 'arrowright') this.pan(0.15);
      else if (k === '0' || k === 'home') this.reset();
      else if (k === 'escape' && (this.selectedSpan >= 0 || this.rangeSel)) {
        this.select(-1);
        this.setRange(null);
      } else if (k === 'f' && this.selectedSpan >= 0) {
        const i = this.selectedSpan;
        const pad = (this.spans.end[i] - this.spans.start[i]) * 0.5;
        this.setWindow(this.spans.start[i] - pad, this.spans.end[i] + pad);
      } else return;
      e.preventDefault();
    });
  }

  /** A click (or tap) at canvas pixel (x, y): a group header toggles, a span is selected. */
  private clickAt(x: number, y: number): void {
    const top = this.scroller.scrollTop;
    const cy = y + top;
    const row = this.rows[this.rowAtY(cy)];
    if (y < AXIS_H || !row || cy < row.y || cy > row.y + row.h) {
      this.select(-1);
      return;
    }
    if (row.type === 'group') {
      if (row.stage >= 0) this.toggleStage(row.stage);
      return;
    }
    if (row.type !== 'lane' || x < this.scaleValue.x0) return;
    this.setRange(null);
    const s = this.scaleValue;
    const k = spanAt(this.idx, row.lane, s.toTime(x), 4 / s.pxPerSecond);
    this.select(k >= 0 ? this.idx.order[k] : -1);
  }

  /** Touch: one finger pans (and scrolls the lanes), two fingers pinch-zoom, a tap selects. */
  private listenTouch(on: <K extends keyof HTMLElementEventMap>(el: HTMLElement, type: K, f: (e: HTMLElementEventMap[K]) => void, o?: AddEventListenerOptions) => void): void {
    const snap = (e: TouchEvent) => {
      const left = this.canvas.getBoundingClientRect().left;
      const top = this.canvas.getBoundingClientRect().top;
      const list = [...e.touches];
      this.touch = {
        ids: list.map((t) => t.identifier),
        x: list.map((t) => t.clientX - left),
        y: list.map((t) => t.clientY - top),
        scale: this.scaleValue,
        scrollTop: this.scroller.scrollTop,
        moved: this.touch?.moved ?? false,
      };
    };
    on(this.canvas, 'touchstart', (e) => {
      if (e.touches.length === 1) this.touch = null;
      snap(e);
      e.preventDefault();
    }, { passive: false });
    on(this.canvas, 'touchmove', (e) => {
      const t = this.touch;
      if (!t) return;
      e.preventDefault();
      const left = this.canvas.getBoundingClientRect().left;
      const top = this.canvas.getBoundingClientRect().top;
      const pts = [...e.touches].filter((p) => t.ids.includes(p.identifier));
      if (t.ids.length >= 2 && pts.length >= 2) {
        const a = t.ids.indexOf(pts[0].identifier);
        const b = t.ids.indexOf(pts[1].identifier);
        const d0 = Math.abs(t.x[a] - t.x[b]) || 1;
        const d1 = Math.abs(pts[0].clientX - pts[1].clientX) || 1;
        const mid0 = (t.x[a] + t.x[b]) / 2;
        const mid1 = (pts[0].clientX + pts[1].clientX) / 2 - left;
        t.moved = true;
        this.setScale(t.scale.zoomAt(mid0, d1 / d0, this.bounds).panBy(mid1 - mid0, this.bounds));
      } else if (pts.length === 1) {
        const a = t.ids.indexOf(pts[0].identifier);
        const dx = pts[0].clientX - left - t.x[a];
        const dy = pts[0].clientY - top - t.y[a];
        if (Math.abs(dx) + Math.abs(dy) > 6) t.moved = true;
        if (!t.moved) return;
        this.setScale(t.scale.panBy(dx, this.bounds));
        this.scroller.scrollTop = t.scrollTop - dy;
      }
    }, { passive: false });
    on(this.canvas, 'touchend', (e) => {
      const t = this.touch;
      if (e.touches.length > 0) {
        snap(e);
        return;
      }
      this.touch = null;
      if (t && !t.moved && t.x.length === 1) this.clickAt(t.x[0], t.y[0]);
    });
  }

  private hover(x: number, y: number): void {
    const s = this.scaleValue;
    if (x < s.x0 || x > s.x1 || y < AXIS_H) return this.hideHover();
    const top = this.scroller.scrollTop;
    this.cursor.style.display = 'block';
    this.cursor.style.transform = `translateX(${Math.round(x)}px)`;
    this.cursor.style.height = `${this.viewH - AXIS_H}px`;
    const cy = y + top;
    const r = this.rowAtY(cy);
    const row = this.rows[r];
    if (!row || cy < row.y || cy > row.y + row.h) return this.hideTip();
    if (row.type === 'lane') {
      const t = s.toTime(x);
      const k = spanAt(this.idx, row.lane, t, 3 / s.pxPerSecond);
      if (k < 0) return this.hideTip();
      const i = this.idx.order[k];
      const x0 = Math.max(s.x0, s.toPx(this.idx.start[k]));
      const x1 = Math.min(s.x1, s.toPx(this.idx.end[k]));
      Object.assign(this.highlight.style, {
        display: 'block',
        left: `${x0 - 1}px`,
        top: `${row.y - top}px`,
        width: `${Math.max(1, x1 - x0) + 2}px`,
        height: `${row.h}px`,
      });
      const lines = this.opts.tooltip?.(this.spans, i) ?? [['span', this.spans.names[this.spans.name[i]]]];
      this.showTip(lines, x, row.y - top + row.h);
    } else if (row.type === 'memory') {
      this.highlight.style.display = 'none';
      const c = row.curve;
      const t = s.toTime(x);
      let j = lowerBound(c.t, t, 0, c.t.length);
      if (j >= c.t.length || c.t[j] > t) j -= 1;
      if (j < 0) return this.hideTip();
      this.showTip(
        [
          ['GPU', String(c.rank)],
          ['time', formatTick(t, s.span / 1000)],
          ['memory', `${fmtNum(c.gib[j])} GiB`],
        ],
        x,
        row.y - top + row.h,
      );
    } else this.hideTip();
  }

  private showTip(lines: [string, string][], x: number, y: number): void {
    const tip = this.tip;
    tip.replaceChildren(
      ...lines.map(([k, v]) => {
        const line = div('tl-tip-row');
        const a = document.createElement('span');
        a.className = 'tl-tip-key';
        a.textContent = k;
        const b = document.createElement('span');
        b.textContent = v;
        line.append(a, b);
        return line;
      }),
    );
    tip.style.display = 'block';
    const w = tip.offsetWidth;
    const h = tip.offsetHeight;
    const left = x + 14 + w > this.widthCss ? x - 14 - w : x + 14;
    const top = y + 6 + h > this.viewH ? Math.max(AXIS_H, y - h - 24) : y + 6;
    tip.style.transform = `translate(${Math.round(left)}px, ${Math.round(top)}px)`;
  }

  private hideTip(): void {
    this.tip.style.display = 'none';
    this.highlight.style.display = 'none';
  }

  private hideHover(): void {
    this.cursor.style.display = 'none';
    this.hideTip();
  }
}

/** Canvas colors of the page's theme (the ◐ switch sets data-theme="dark" on <html>). */
function palette() {
  const dark = document.documentElement.dataset.theme === 'dark';
  return dark
    ? { bg: '#1a212b', group: '#222b37', ink: '#e6ebf2', ink2: '#c2cbd6', ink3: '#a3adb9', lane1: '#1f2731', lane2: '#242d38', rule: '#3c4858', idle: '#4a3032' }
    : { bg: '#ffffff', group: '#f6f7f9', ink: '#1f2630', ink2: '#3d4651', ink3: '#5f6873', lane1: '#fafbfc', lane2: '#f4f6f8', rule: '#d5d9df', idle: IDLE_FILL };
}

function laneKey(rank: number, stream: number): number {
  return rank * 64 + stream;
}

/** `text`, cut with an ellipsis to fit `room` pixels ('' when not even one letter fits). */
export function fitText(text: string, room: number, width: (t: string) => number): string {
  if (width(text) <= room) return text;
  for (let n = text.length - 1; n > 0; --n) {
    const t = text.slice(0, n) + '…';
    if (width(t) <= room) return t;
  }
  return '';
}

/** c1 mixed toward c2 by f (0..1), both "#rrggbb". */
function mix(c1: string, c2: string, f: number): string {
  const p = (c: string) => {
    const m = /^#([0-9a-f]{6})$/i.exec(c);
    const v = m ? parseInt(m[1], 16) : 0x888888;
    return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
  };
  const a = p(c1);
  const b = p(c2);
  return '#' + a.map((x, i) => Math.round(x + (b[i] - x) * f).toString(16).padStart(2, '0')).join('');
}

function div(cls: string): HTMLDivElement {
  const d = document.createElement('div');
  d.className = cls;
  return d;
}

function fmtNum(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/** Black or white text, whichever reads better on `color` ("#rrggbb"). */
export function textColorOn(color: string): string {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return '#ffffff';
  const v = parseInt(m[1], 16);
  const r = (v >> 16) & 255;
  const g = (v >> 8) & 255;
  const b = v & 255;
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? '#1b1f24' : '#ffffff';
}
