// Painting the rows of spans: a stage's header, and a lane's gutter names, background and
// spans. Drawing cost follows pixels, not spans: a lane is binary-searched to the visible
// window, runs of sub-pixel spans collapse into one pixel column, and spans go into one
// path per kind (filled once per frame by the caller; kinds dimmed by a search get their own).
import type { Spans } from '../result';
import type { Frame } from './frame';
import { LabelRuns, fitText, type Label } from './labels';
import { firstVisible, lowerBound, type LaneIndex } from './lanes';
import type { TimelineOptions } from './options';
import type { GroupRow, LaneRow } from './rows';
import { FONT, FONT_BOLD, type KindPaint } from './theme';
import type { TimeBounds } from './time_scale';

/** What lanes are painted from, besides the frame. */
export interface LaneData {
  opts: TimelineOptions;
  spans: Spans;
  idx: LaneIndex;
  paint: KindPaint;
  /** Label family per kind (labels.ts). */
  family: readonly number[];
  bounds: TimeBounds;
}

/** Span paths by kind: [0, K) in the kind's color, [K, 2K) dimmed by a search (K kinds). */
export type KindPaths = (Path2D | undefined)[];

export function drawGroup(f: Frame, row: GroupRow, y: number): void {
  const ctx = f.ctx;
  ctx.fillStyle = f.pal.group;
  ctx.fillRect(0, y, f.width, row.h);
  ctx.fillStyle = f.pal.ink;
  ctx.font = FONT_BOLD;
  ctx.textBaseline = 'middle';
  ctx.fillText(row.text, 8, y + row.h / 2 + 0.5);
}

/**
 * A lane at view y: its names in the gutter, its background, its spans into `paths` and
 * their label places into `labels`. `match` flags the span names a search matched (null: no search).
 */
export function drawLane(
  f: Frame,
  d: LaneData,
  row: LaneRow,
  y: number,
  match: Uint8Array | null,
  paths: KindPaths,
  labels: Label[],
): void {
  const streamName = d.spans.streams[row.lane.stream];
  drawGutter(f, d.opts, row, y, streamName);
  // lane background; on compute lanes the time nothing runs is shaded (idle: the bubble)
  const { ctx, scale: s } = f;
  ctx.fillStyle = row.index % 2 ? f.pal.lane1 : f.pal.lane2;
  ctx.fillRect(s.x0, y, s.width, row.h);
  if (streamName === 'compute') {
    const a = Math.max(s.x0, s.toPx(d.bounds.min));
    const b = Math.min(s.x1, s.toPx(d.idx.maxEnd));
    ctx.fillStyle = f.pal.idle;
    if (b > a) ctx.fillRect(a, y + 1, b - a, row.h - 2);
  }
  drawSpans(f, d, row, y, match, paths, labels);
}

/**
 * The stream label on the right of the gutter, the rank label left of it, cut to the room
 * left (never overlapping); the rank's note ("×1024") on its second lane.
 */
function drawGutter(f: Frame, opts: TimelineOptions, row: LaneRow, y: number, streamName: string): void {
  const { ctx, pal } = f;
  const lane = row.lane;
  ctx.textBaseline = 'middle';
  const gutter = f.scale.x0;
  ctx.font = FONT;
  const streamText = opts.streamLabel?.(streamName) ?? streamName;
  const streamW = f.measure(streamText);
  const room = gutter - 8 - streamW - 10;
  if (row.first) {
    ctx.font = FONT_BOLD;
    ctx.fillStyle = pal.ink;
    const text = fitText(opts.rankLabel?.(lane.rank) ?? `GPU ${lane.rank}`, room, (t) => ctx.measureText(t).width);
    if (text) ctx.fillText(text, 8, y + row.h / 2 + 0.5);
  } else if (row.second) {
    const note = opts.rankNote?.(lane.rank);
    if (note) {
      ctx.font = FONT;
      ctx.fillStyle = pal.ink3;
      const text = fitText(note, room, (t) => ctx.measureText(t).width);
      if (text) ctx.fillText(text, 8, y + row.h / 2 + 0.5);
    }
  }
  ctx.font = FONT;
  ctx.fillStyle = pal.ink3;
  ctx.textAlign = 'right';
  ctx.fillText(streamText, gutter - 8, y + row.h / 2 + 0.5);
  ctx.textAlign = 'left';
}

function drawSpans(
  f: Frame,
  d: LaneData,
  row: LaneRow,
  y: number,
  match: Uint8Array | null,
  paths: KindPaths,
  labels: Label[],
): void {
  const s = f.scale;
  const lane = row.lane;
  const idx = d.idx;
  const order = idx.order;
  const kind = d.spans.kind;
  const names = d.spans.name;
  const K = d.paint.fill.length;
  const pps = s.pxPerSecond;
  const xMin = s.x0 - 2;
  const xMax = s.x1 + 2;
  const rects = new RectBatch(paths, y + 1, row.h - 2);
  const runs = new LabelRuns(d.spans, d.family, s, y, row.h, labels);
  let k = firstVisible(idx, lane, s.t0);
  while (k < lane.to && idx.start[k] < s.t1) {
    const i = order[k];
    const x0 = Math.max(xMin, s.x0 + (idx.start[k] - s.t0) * pps);
    const x1 = Math.min(xMax, s.x0 + (idx.end[k] - s.t0) * pps);
    const pk = match && !match[names[i]] ? kind[i] + K : kind[i];
    if (x1 - x0 >= 1) {
      const wide = x1 - x0 > 8;
      rects.put(pk, x0, wide ? x1 - 1 : x1, !wide); // a 1 px gap separates wide spans
      runs.extend(i, x0, x1);
      ++k;
    } else {
      // Sub-pixel: fill this pixel column once and skip every span that starts inside it.
      const col = Math.floor(x0);
      rects.put(pk, col, col + 1, true);
      runs.extend(i, col, col + 1);
      const next = lowerBound(idx.start, s.t0 + (col + 1 - s.x0) / pps, k + 1, lane.to);
      // Spans in a stream do not overlap: only the last skipped one can reach past the column.
      k = next > k + 1 && s.x0 + (idx.end[next - 1] - s.t0) * pps > col + 1 ? next - 1 : next;
    }
  }
  rects.finish();
  runs.flush();
}

/** Rects of one lane into the kind paths; narrow rects of one kind that touch are merged first. */
class RectBatch {
  private kind = -1;
  private x0 = 0;
  private x1 = 0;

  constructor(
    private readonly paths: KindPaths,
    private readonly top: number,
    private readonly h: number,
  ) {}

  /** Pixels [x0, x1] of kind path k; `merge`: may join the pending rect (narrow spans). */
  put(k: number, x0: number, x1: number, merge: boolean): void {
    if (merge && k === this.kind && x0 <= this.x1 + 0.01) {
      if (x1 > this.x1) this.x1 = x1;
      return;
    }
    if (this.kind >= 0) (this.paths[this.kind] ??= new Path2D()).rect(this.x0, this.top, this.x1 - this.x0, this.h);
    if (merge) {
      this.kind = k;
      this.x0 = x0;
      this.x1 = x1;
    } else {
      this.kind = -1;
      (this.paths[k] ??= new Path2D()).rect(x0, this.top, x1 - x0, this.h);
    }
  }

  /** Adds the pending rect (call once after the lane's last span). */
  finish(): void {
    this.put(-1, 0, 0, true);
  }
}

/** Fills each kind's path once, in the kind's color (or its dimmed color). */
export function fillKindPaths(ctx: CanvasRenderingContext2D, paths: KindPaths, paint: KindPaint): void {
  const K = paint.fill.length;
  for (let k = 0; k < paths.length; ++k) {
    const p = paths[k];
    if (!p) continue;
    ctx.fillStyle = k < K ? paint.fill[k] : paint.dim[k - K];
    ctx.fill(p);
  }
}
