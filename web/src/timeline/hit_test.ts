// What is under a point of the view: the row at a content y, the span of a lane at a pixel.
import { spanAt, type LaneIndex, type Lane } from './lanes';
import type { Row } from './rows';
import type { TimeScale } from './time_scale';

/** Index of the first row whose bottom is at or below content y (rows.length when none). */
export function rowAtY(rows: readonly Row[], y: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const r = rows[mid];
    if (r.y + r.h < y) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The row that contains content y, or undefined in the gaps between rows and below them. */
export function rowUnder(rows: readonly Row[], y: number): Row | undefined {
  const row = rows[rowAtY(rows, y)];
  return !row || y < row.y || y > row.y + row.h ? undefined : row;
}

/** The lane's span under pixel x, within `slackPx` pixels (an index into idx.order), or -1. */
export function spanUnder(idx: LaneIndex, lane: Lane, s: TimeScale, x: number, slackPx: number): number {
  return spanAt(idx, lane, s.toTime(x), slackPx / s.pxPerSecond);
}
