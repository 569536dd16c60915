// A canvas timeline in the shape of uPlot: `new Timeline(opts, spans, el)`.
// It reads an immutable result (columnar spans, memory curves) and never calls back into
// the simulator. Redraws are coalesced into one per animation frame, and the hover cursor
// and tooltip are DOM elements (moving the mouse never repaints).
//
// Perfetto's habits: click a span to select it (details via onSelect), drag to select a time
// range (onRange), Shift+drag or drag on the time axis to pan, W/S/A/D, search highlights
// matching spans, stage groups collapse on click, a compute-only view; send/receive arrows
// join the two ends of a pipeline transfer and idle time on compute lanes is shaded. Touch:
// one finger pans, two fingers pinch-zoom, a tap selects.
//
// This class holds the view's state (window, selection, layout) and coordinates the rest:
// rows.ts lays out the rows; render.ts paints a frame with lane_paint.ts, labels.ts,
// memory_track.ts, overlays.ts and axis.ts; hit_test.ts finds what is under a point;
// hover.ts shows the tooltip; input.ts and touch.ts turn mouse, keys and fingers into calls.
import { h } from '../dom';
import type { Spans } from '../result';
import { STREAM_ORDER } from './colors';
import { textWidths, type Frame } from './frame';
import { rowUnder, spanUnder } from './hit_test';
import { HoverLayer, type HoverView } from './hover';
import { listenInput } from './input';
import { labelFamilies } from './labels';
import type { LaneData } from './lane_paint';
import { buildLanes, type LaneIndex } from './lanes';
import { memoryHeader, memoryScale, type MemoryScale } from './memory_track';
import type { TimelineOptions } from './options';
import { renderFrame } from './render';
import { laneKey, layoutRows, type LaneRow, type Row } from './rows';
import { SpanSearch } from './search';
import { AXIS_H, kindPaint, palette } from './theme';
import { TimeScale, type TimeBounds } from './time_scale';

export type { TimelineOptions } from './options';

export class Timeline {
  readonly root: HTMLDivElement;
  private readonly scroller: HTMLDivElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly spacer: HTMLDivElement;
  private readonly hoverLayer = new HoverLayer();
  private readonly ctx: CanvasRenderingContext2D;
  private readonly measure: (text: string) => number;
  private readonly idx: LaneIndex;
  private readonly lanes: LaneData;
  private readonly finder: SpanSearch;
  private readonly memory: MemoryScale;
  private readonly bounds: TimeBounds;
  private readonly stageOf: (rank: number) => number;
  private readonly gutter: number;
  private rows: Row[] = []; // named so: the browser tests count timeline['rows']
  private laneRows = new Map<number, LaneRow>();
  private contentH = 0;
  private readonly collapsed = new Set<number>();
  private computeOnly = false;
  private selectedSpan = -1;
  private rangeSel: { t0: number; t1: number } | null = null;
  private scaleValue: TimeScale;
  private frame = 0;
  private dpr = 1;
  private widthCss = 0;
  private viewH = 0;
  private readonly resizeObserver: ResizeObserver;
  private readonly cleanup: (() => void)[] = [];

  constructor(
    private readonly opts: TimelineOptions,
    readonly spans: Spans,
    el: HTMLElement,
  ) {
    this.gutter = opts.gutter ?? 168;
    this.stageOf = opts.stageOf ?? (() => 0);
    this.idx = buildLanes(spans, opts.streamOrder ?? STREAM_ORDER);
    const memEnd = Math.max(0, ...(opts.memory?.curves ?? []).map((c) => (c.t.length ? c.t[c.t.length - 1] : 0)));
    const tMax = Math.max(this.idx.maxEnd, memEnd, opts.tMax ?? 0) || 1;
    this.computeOnly = opts.computeOnly ?? false;
    this.bounds = { min: 0, max: tMax, minSpan: Math.max(tMax * 1e-7, 1e-9) };
    const paint = kindPaint(spans.kinds, opts.color);
    this.lanes = { opts, spans, idx: this.idx, paint, family: labelFamilies(spans.kinds), bounds: this.bounds };
    this.finder = new SpanSearch(spans);
    this.memory = memoryScale(opts.memory);
    this.layout();

    this.root = h('div', { class: 'tl' });
    this.root.tabIndex = 0;
    this.root.setAttribute('role', 'img');
    this.root.setAttribute('aria-label', 'Timeline of the simulated iteration: one row per GPU and stream. Zoom with the mouse wheel or W/S, pan with A/D or Shift+drag, drag to select a time range, click a span for its details.');
    this.scroller = h('div', { class: 'tl-scroll' });
    this.canvas = h('canvas', { class: 'tl-canvas' });
    this.spacer = h('div', { class: 'tl-spacer' });
    this.scroller.append(this.canvas, this.spacer);
    this.root.append(this.scroller, this.hoverLayer.cursor, this.hoverLayer.highlight, this.hoverLayer.tip);
    el.append(this.root);
    const ctx = this.canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('canvas 2D is not available');
    this.ctx = ctx;
    this.measure = textWidths(ctx);

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
    const n = this.finder.find(query);
    this.requestDraw();
    return n;
  }

  /** Selects the next search match (dir -1: the previous), zooming to it when off screen. */
  nextMatch(dir = 1): number {
    const i = this.finder.next(dir);
    if (i < 0) return -1;
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
    this.hoverLayer.hide();
    this.publishScale();
    this.requestDraw();
  }

  private publishScale(): void {
    this.root.dataset.t0 = String(this.scaleValue.t0);
    this.root.dataset.t1 = String(this.scaleValue.t1);
    this.opts.onScale?.(this.scaleValue);
  }

  private layout(): void {
    const o = this.opts;
    const memory = o.memory && { curves: o.memory.curves, header: memoryHeader(this.memory) };
    const { rows, laneRows, contentH } = layoutRows(this.spans, this.idx, {
      laneHeight: o.laneHeight ?? 16,
      memoryHeight: o.memoryHeight ?? 44,
      stageOf: this.stageOf,
      computeOnly: this.computeOnly,
      collapsed: this.collapsed,
      memory,
    });
    this.rows = rows;
    this.laneRows = laneRows;
    this.contentH = contentH;
  }

  private relayout(): void {
    this.layout();
    this.widthCss = -1; // force resize
    this.resize();
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

  private draw(): void {
    const f: Frame = {
      ctx: this.ctx,
      scale: this.scaleValue,
      top: this.scroller.scrollTop,
      width: this.widthCss,
      height: this.viewH,
      pal: palette(),
      measure: this.measure,
    };
    const arrows = renderFrame(f, this.dpr, {
      lanes: this.lanes,
      rows: this.rows,
      laneRows: this.laneRows,
      match: this.finder.match,
      selected: this.selectedSpan,
      range: this.rangeSel,
      arrows: !this.computeOnly,
      stageOf: this.stageOf,
      memory: this.memory,
      rankName: (rank) => this.rankName(rank),
    });
    if (arrows) this.root.dataset.arrows = String(arrows);
  }

  private listen(): void {
    const target = {
      timeline: this,
      scroller: this.scroller,
      canvas: this.canvas,
      bounds: this.bounds,
      setScale: (s: TimeScale) => this.setScale(s),
      click: (x: number, y: number) => this.clickAt(x, y),
      hover: (x: number, y: number) => this.hoverLayer.at(this.hoverView(), x, y),
      hideHover: () => this.hoverLayer.hide(),
      hasRange: () => this.rangeSel !== null,
    };
    listenInput(target, this.cleanup);
  }

  private rankName(rank: number): string {
    return this.opts.rankLabel?.(rank) ?? `GPU ${rank}`;
  }

  private hoverView(): HoverView {
    return {
      scale: this.scaleValue,
      rows: this.rows,
      top: this.scroller.scrollTop,
      width: this.widthCss,
      height: this.viewH,
      spans: this.spans,
      idx: this.idx,
      tooltip: this.opts.tooltip,
    };
  }

  /** A click (or tap) at canvas pixel (x, y): a group header toggles, a span is selected. */
  private clickAt(x: number, y: number): void {
    const row = y < AXIS_H ? undefined : rowUnder(this.rows, y + this.scroller.scrollTop);
    if (!row) return this.select(-1);
    if (row.type === 'group') {
      if (row.stage >= 0) this.toggleStage(row.stage);
      return;
    }
    if (row.type !== 'lane' || x < this.scaleValue.x0) return;
    this.setRange(null);
    const k = spanUnder(this.idx, row.lane, this.scaleValue, x, 4);
    this.select(k >= 0 ? this.idx.order[k] : -1);
  }
}
