// A canvas timeline in the shape of uPlot: `new Timeline(opts, spans, el)`.
// It reads an immutable result (columnar spans, memory curves) and never calls back into
// the simulator. Drawing cost follows pixels, not spans: lanes are binary-searched to the
// visible window, runs of sub-pixel spans collapse into one pixel column, labels appear
// only on spans wide enough to hold them, redraws are coalesced into one per animation
// frame, and the hover cursor and tooltip are DOM elements (moving the mouse never repaints).
import type { MemoryCurve, Spans } from '../result';
import { buildLanes, firstVisible, lowerBound, spanAt, type Lane, type LaneIndex } from './lanes';
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
}

type Row =
  | { type: 'group'; y: number; h: number; text: string }
  | { type: 'lane'; y: number; h: number; lane: Lane; first: boolean; last: boolean; index: number }
  | { type: 'memory'; y: number; h: number; curve: MemoryCurve };

type Label = { x: number; y: number; w: number; h: number; i: number };

const AXIS_H = 26;
const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const FONT_BOLD = '600 11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const MIN_LABEL_PX = 5;

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
  private readonly rows: Row[] = [];
  private readonly contentH: number;
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
  private drag: { x: number; y: number; scale: TimeScale; scrollTop: number; moved: boolean } | null = null;
  private readonly resizeObserver: ResizeObserver;
  private readonly cleanup: (() => void)[] = [];
  private readonly gutter: number;

  constructor(
    private readonly opts: TimelineOptions,
    readonly spans: Spans,
    el: HTMLElement,
  ) {
    this.gutter = opts.gutter ?? 168;
    this.idx = buildLanes(spans, opts.streamOrder ?? ['compute', 'tp_comm', 'dp_comm', 'pp_comm']);
    this.kindColor = spans.kinds.map((k) => opts.color(k));
    this.kindText = this.kindColor.map(textColorOn);
    const memEnd = Math.max(0, ...(opts.memory?.curves ?? []).map((c) => (c.t.length ? c.t[c.t.length - 1] : 0)));
    const tMax = Math.max(this.idx.maxEnd, memEnd) || 1;
    this.bounds = { min: 0, max: tMax, minSpan: Math.max(tMax * 1e-7, 1e-9) };
    // Memory tracks: scaled to the highest peak so the shape shows; the capacity line is
    // drawn when it is near enough to be on the same scale.
    let peakAll = 0;
    for (const c of opts.memory?.curves ?? []) for (let i = 0; i < c.gib.length; ++i) peakAll = Math.max(peakAll, c.gib[i]);
    const cap = opts.memory?.capacityGiB ?? 0;
    this.capOnScale = cap > 0 && cap <= peakAll * 1.6;
    this.memMax = Math.max(peakAll * 1.12, this.capOnScale ? cap * 1.04 : 0) || 1;
    this.contentH = this.layout();

    this.root = div('tl');
    this.root.tabIndex = 0;
    this.root.setAttribute('role', 'img');
    this.root.setAttribute('aria-label', 'Timeline of the simulated iteration: one row per GPU and stream. Zoom with the mouse wheel or W/S, pan by dragging or with A/D.');
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

  private layout(): number {
    const laneH = this.opts.laneHeight ?? 16;
    const stageOf = this.opts.stageOf ?? (() => 0);
    const byStage = new Map<number, Lane[]>();
    for (const lane of this.idx.lanes) {
      const s = stageOf(lane.rank);
      if (!byStage.has(s)) byStage.set(s, []);
      byStage.get(s)!.push(lane);
    }
    const stages = [...byStage.keys()].sort((a, b) => a - b);
    let y = AXIS_H + 4;
    let index = 0;
    for (const s of stages) {
      this.rows.push({ type: 'group', y, h: 18, text: stages.length > 1 || s > 0 ? `Pipeline stage ${s}` : 'All GPUs (one pipeline stage)' });
      y += 18;
      const lanes = byStage.get(s)!;
      for (let i = 0; i < lanes.length; ++i) {
        const first = i === 0 || lanes[i - 1].rank !== lanes[i].rank;
        const last = i === lanes.length - 1 || lanes[i + 1].rank !== lanes[i].rank;
        this.rows.push({ type: 'lane', y, h: laneH, lane: lanes[i], first, last, index: index++ });
        y += laneH + 2 + (last ? 6 : 0);
      }
    }
    const curves = this.opts.memory?.curves ?? [];
    if (curves.length) {
      y += 6;
      const cap = fmtNum(this.opts.memory!.capacityGiB);
      this.rows.push({ type: 'group', y, h: 18, text: `Memory in use per GPU, 0 – ${fmtNum(this.memMax)} GiB (${this.capOnScale ? `dashed: capacity ${cap} GiB` : `capacity ${cap} GiB is above the scale`})` });
      y += 18;
      const mh = this.opts.memoryHeight ?? 44;
      const sorted = [...curves].sort((a, b) => stageOf(a.rank) - stageOf(b.rank) || a.rank - b.rank);
      for (const c of sorted) {
        this.rows.push({ type: 'memory', y, h: mh, curve: c });
        y += mh + 6;
      }
    }
    return y + 4;
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
    this.scaleValue = this.scaleValue.withRange(this.gutter, w - 12);
    this.publishScale();
    this.draw();
  }

  // ---- drawing --------------------------------------------------------------------------

  private draw(): void {
    const ctx = this.ctx;
    const s = this.scaleValue;
    const w = this.widthCss;
    const h = this.viewH;
    const top = this.scroller.scrollTop;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, w, h);

    // rows (below the axis), clipped to the area under the axis
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, w, h - AXIS_H);
    ctx.clip();
    const ticks = s.ticks(90);
    // vertical grid lines
    ctx.fillStyle = '#eef0f3';
    for (const t of ticks.values) ctx.fillRect(Math.round(s.toPx(t)), AXIS_H, 1, h - AXIS_H);
    // Spans go into one path per kind (filled once per frame), labels are drawn last.
    const paths: (Path2D | undefined)[] = new Array(this.kindColor.length);
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
    for (let k = 0; k < paths.length; ++k) {
      const p = paths[k];
      if (!p) continue;
      ctx.fillStyle = this.kindColor[k];
      ctx.fill(p);
    }
    this.drawLabels(labels);
    ctx.restore();
    this.drawAxis(ticks);
  }

  private drawGroup(row: Extract<Row, { type: 'group' }>, y: number): void {
    const ctx = this.ctx;
    ctx.fillStyle = '#f6f7f9';
    ctx.fillRect(0, y, this.widthCss, row.h);
    ctx.fillStyle = '#2b3340';
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
    if (row.first) {
      ctx.font = FONT_BOLD;
      ctx.fillStyle = '#1f2630';
      ctx.fillText(this.opts.rankLabel?.(lane.rank) ?? `GPU ${lane.rank}`, 8, y + row.h / 2 + 0.5);
    }
    ctx.font = FONT;
    ctx.fillStyle = '#6b7480';
    ctx.textAlign = 'right';
    ctx.fillText(this.opts.streamLabel?.(streamName) ?? streamName, this.gutter - 8, y + row.h / 2 + 0.5);
    ctx.textAlign = 'left';
    // lane background
    ctx.fillStyle = row.index % 2 ? '#fafbfc' : '#f4f6f8';
    ctx.fillRect(s.x0, y, s.width, row.h);

    const idx = this.idx;
    const order = idx.order;
    const kind = this.spans.kind;
    const mbs = this.spans.mb;
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
      const key = kind[i] * 1_000_003 + (mbs[i] + 1);
      if (key === runKey && x0 - runX1 < 2) {
        if (x1 > runX1) runX1 = x1;
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
      if (x1 - x0 >= 1) {
        const wide = x1 - x0 > 8;
        put(kind[i], x0, wide ? x1 - 1 : x1, !wide); // a 1 px gap separates wide spans
        extend(i, x0, x1);
        ++k;
      } else {
        // Sub-pixel: fill this pixel column once and skip every span that starts inside it.
        const col = Math.floor(x0);
        put(kind[i], col, col + 1, true);
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
    ctx.fillStyle = '#1f2630';
    ctx.fillText(this.opts.rankLabel?.(c.rank) ?? `GPU ${c.rank}`, 8, y + 9);
    let peak = 0;
    for (let i = 0; i < c.gib.length; ++i) peak = Math.max(peak, c.gib[i]);
    ctx.font = FONT;
    ctx.fillStyle = '#6b7480';
    ctx.fillText(`peak ${fmtNum(peak)} GiB`, 8, y + 25);
    ctx.fillStyle = '#f4f6f8';
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
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, this.widthCss, AXIS_H);
    ctx.fillStyle = '#d5d9df';
    ctx.fillRect(0, AXIS_H - 1, this.widthCss, 1);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    ctx.fillStyle = '#3d4651';
    for (const t of ticks.values) {
      const x = Math.round(s.toPx(t));
      ctx.fillRect(x, AXIS_H - 6, 1, 5);
      const text = formatTick(t, ticks.step);
      if (x + 3 + this.measure(text) <= this.widthCss - 2) ctx.fillText(text, x + 3, AXIS_H / 2 - 2);
    }
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, s.x0 - 1, AXIS_H - 1);
    ctx.fillStyle = '#6b7480';
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
      this.drag = { x: e.clientX, y: e.clientY, scale: this.scaleValue, scrollTop: this.scroller.scrollTop, moved: false };
      this.root.focus({ preventScroll: true });
      e.preventDefault();
    });
    const move = (e: MouseEvent) => {
      if (!this.drag) return;
      const dx = e.clientX - this.drag.x;
      const dy = e.clientY - this.drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 2) this.drag.moved = true;
      this.setScale(this.drag.scale.panBy(dx, this.bounds));
      this.scroller.scrollTop = this.drag.scrollTop - dy;
      this.canvas.style.cursor = 'grabbing';
    };
    const up = () => {
      this.drag = null;
      this.canvas.style.cursor = '';
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
    this.cleanup.push(() => window.removeEventListener('mousemove', move), () => window.removeEventListener('mouseup', up));
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
      else return;
      e.preventDefault();
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
