// What is drawn over the spans: arrows joining the two ends of pipeline transfers, the
// selected span with its dependencies, and the selected time range.
import type { Spans } from '../result';
import type { Frame } from './frame';
import { firstVisible, type LaneIndex } from './lanes';
import { laneKey, type LaneRow } from './rows';
import { AXIS_H } from './theme';

const ARROW = '#1f2630';
const MAX_ARROWS = 1500;

/** Send/receive arrows between the two ends of pipeline transfers in view; returns how many. */
export function drawArrows(
  f: Frame,
  spans: Spans,
  idx: LaneIndex,
  laneRows: Map<number, LaneRow>,
  stageOf: (rank: number) => number,
): number {
  const sp = spans;
  const ppStream = sp.streams.indexOf('pp_comm');
  if (ppStream < 0) return 0;
  const { ctx, scale: s, top, height: h } = f;
  const path = new Path2D();
  const heads = new Path2D();
  let count = 0;
  for (const row of laneRows.values()) {
    if (row.lane.stream !== ppStream) continue;
    const y0 = row.y - top;
    if (y0 + row.h < AXIS_H - 200 || y0 > h + 200) continue;
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
      const other = laneRows.get(laneKey(sp.rank[j], sp.stream[j]));
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
  if (!count) return 0;
  ctx.strokeStyle = 'rgba(31, 38, 48, 0.55)';
  ctx.lineWidth = 1;
  ctx.stroke(path);
  ctx.fillStyle = ARROW;
  ctx.fill(heads);
  return count;
}

/** Span i outlined, and the spans it waits for outlined thinner. */
export function drawSelection(f: Frame, spans: Spans, laneRows: Map<number, LaneRow>, i: number): void {
  const row = laneRows.get(laneKey(spans.rank[i], spans.stream[i]));
  if (!row) return;
  const { ctx, scale: s, top } = f;
  const x0 = Math.max(s.x0 - 2, s.toPx(spans.start[i]));
  const x1 = Math.min(s.x1 + 2, s.toPx(spans.end[i]));
  ctx.strokeStyle = '#111111';
  ctx.lineWidth = 2;
  ctx.strokeRect(x0 - 1, row.y - top, Math.max(2, x1 - x0 + 2), row.h);
  // its dependencies, outlined thinner
  ctx.lineWidth = 1;
  ctx.strokeStyle = '#b3261e';
  for (let d = spans.depOffsets[i]; d < spans.depOffsets[i + 1]; ++d) {
    const j = spans.deps[d];
    const r2 = laneRows.get(laneKey(spans.rank[j], spans.stream[j]));
    if (!r2) continue;
    const a = s.toPx(spans.start[j]);
    const b = s.toPx(spans.end[j]);
    ctx.strokeRect(a - 0.5, r2.y - top + 0.5, Math.max(1, b - a + 1), r2.h - 1);
  }
}

/** The time range [t0, t1] shaded across the rows, with a line at each end. */
export function drawRange(f: Frame, r: { t0: number; t1: number }): void {
  const { ctx, scale: s, height: h } = f;
  const a = s.toPx(r.t0);
  const b = s.toPx(r.t1);
  ctx.fillStyle = 'rgba(37, 99, 201, 0.12)';
  ctx.fillRect(a, AXIS_H, b - a, h - AXIS_H);
  ctx.fillStyle = 'rgba(37, 99, 201, 0.8)';
  ctx.fillRect(Math.round(a), AXIS_H, 1, h - AXIS_H);
  ctx.fillRect(Math.round(b), AXIS_H, 1, h - AXIS_H);
}
