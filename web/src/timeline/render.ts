// One frame of the timeline, layer by layer: the rows under the axis (stage headers, lane
// gutters and backgrounds, memory tracks); then, clipped to the time area, the grid, the
// spans, their labels, the transfer arrows, the selection and the selected range; the axis last.
import { axisTicks, drawAxis, drawGrid } from './axis';
import type { Frame } from './frame';
import { rowAtY } from './hit_test';
import { drawLabels, type Label } from './labels';
import { drawGroup, drawLane, fillKindPaths, type KindPaths, type LaneData } from './lane_paint';
import { drawMemory, type MemoryScale } from './memory_track';
import { drawArrows, drawRange, drawSelection } from './overlays';
import type { LaneRow, Row } from './rows';
import { AXIS_H } from './theme';

/** What a frame shows, besides the window and the theme (in the Frame). */
export interface Scene {
  lanes: LaneData;
  rows: readonly Row[];
  laneRows: Map<number, LaneRow>;
  /** Span names a search matched (null: no search). */
  match: Uint8Array | null;
  /** The selected span (-1: none) and time range (null: none). */
  selected: number;
  range: { t0: number; t1: number } | null;
  /** Transfer arrows are drawn (not in the compute-only view). */
  arrows: boolean;
  stageOf: (rank: number) => number;
  memory: MemoryScale;
  rankName: (rank: number) => string;
}

/** Paints the frame at `dpr` device pixels per CSS pixel; returns how many transfer arrows it drew. */
export function renderFrame(f: Frame, dpr: number, scene: Scene): number {
  const { ctx, scale: s, width: w, height: h } = f;
  const { spans, opts, paint } = scene.lanes;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = f.pal.bg;
  ctx.fillRect(0, 0, w, h);

  // rows (below the axis), clipped to the area under the axis
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, AXIS_H, w, h - AXIS_H);
  ctx.clip();
  const ticks = axisTicks(s);
  // Spans go into one path per kind (filled once per frame; kinds dimmed by a search get
  // their own paths), labels are drawn last.
  const paths: KindPaths = new Array(2 * paint.fill.length);
  const labels: Label[] = [];
  drawRows(f, scene, paths, labels);
  ctx.beginPath();
  ctx.rect(s.x0, AXIS_H, s.width, h - AXIS_H);
  ctx.clip();
  drawGrid(f, ticks);
  fillKindPaths(ctx, paths, paint);
  if (opts.label && labels.length) drawLabels(f, labels, spans, opts.label, paint.text);
  const arrows = scene.arrows ? drawArrows(f, spans, scene.lanes.idx, scene.laneRows, scene.stageOf) : 0;
  if (scene.selected >= 0) drawSelection(f, spans, scene.laneRows, scene.selected);
  if (scene.range) drawRange(f, scene.range);
  ctx.restore();
  drawAxis(f, ticks);
  return arrows;
}

/** The rows in view, from the first under the axis to the last above the bottom. */
function drawRows(f: Frame, scene: Scene, paths: KindPaths, labels: Label[]): void {
  const rows = scene.rows;
  for (let r = Math.max(0, rowAtY(rows, f.top + AXIS_H)); r < rows.length; ++r) {
    const row = rows[r];
    const y = row.y - f.top;
    if (y > f.height) break;
    if (y + row.h < AXIS_H) continue;
    if (row.type === 'group') drawGroup(f, row, y);
    else if (row.type === 'lane') drawLane(f, scene.lanes, row, y, scene.match, paths, labels);
    else drawMemory(f, row.curve, y, row.h, scene.rankName(row.curve.rank), scene.memory, scene.lanes.bounds.max);
  }
}
