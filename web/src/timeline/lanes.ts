// Spans grouped into lanes (one per rank and stream) and sorted by start time inside each,
// so the renderer finds the visible spans of a lane by binary search.
import type { Spans } from '../result';

export interface Lane {
  rank: number;
  stream: number; // index into spans.streams
  /** Range [from, to) of this lane's spans in `order`. */
  from: number;
  to: number;
}

export interface LaneIndex {
  lanes: Lane[];
  /** Span indices, grouped by lane, by start time within a lane. */
  order: Uint32Array;
  /** start/end times in `order`'s order (contiguous for binary search). */
  start: Float64Array;
  end: Float64Array;
  /** Largest end time of any span. */
  maxEnd: number;
}

/**
 * Builds lanes: ranks ascending (the caller groups them into stages), streams in
 * `streamOrder` (names not listed come after, in order of first appearance).
 */
export function buildLanes(spans: Spans, streamOrder: readonly string[]): LaneIndex {
  const n = spans.n;
  const order = laneOrder(spans, streamOrder);
  const { rank, stream } = spans;
  const lanes: Lane[] = [];
  const start = new Float64Array(n);
  const end = new Float64Array(n);
  let maxEnd = 0;
  for (let k = 0; k < n; ++k) {
    const i = order[k];
    start[k] = spans.start[i];
    end[k] = spans.end[i];
    if (end[k] > maxEnd) maxEnd = end[k];
    const last = lanes[lanes.length - 1];
    if (!last || last.rank !== rank[i] || last.stream !== stream[i]) lanes.push({ rank: rank[i], stream: stream[i], from: k, to: k + 1 });
    else last.to = k + 1;
  }
  return { lanes, order, start, end, maxEnd };
}

/**
 * Span indices by (rank, stream rank, start, index). A stable counting sort by lane first,
 * then a sort inside the lanes that are not already in time order (the core writes most in
 * order): a comparison sort of all spans took ~100 ms of the page's first timeline.
 */
export function laneOrder(spans: Spans, streamOrder: readonly string[]): Uint32Array {
  const n = spans.n;
  const streamRank = spans.streams.map((s, i) => {
    const k = streamOrder.indexOf(s);
    return k >= 0 ? k : streamOrder.length + i;
  });
  const perRank = streamOrder.length + spans.streams.length;
  const { rank, stream, start: st } = spans;
  const key = new Float64Array(n); // rank * perRank + stream rank: exact below 2^53
  const count = new Map<number, number>();
  for (let i = 0; i < n; ++i) {
    key[i] = rank[i] * perRank + streamRank[stream[i]];
    count.set(key[i], (count.get(key[i]) ?? 0) + 1);
  }
  const keys = [...count.keys()].sort((a, b) => a - b);
  const offset = new Map<number, number>();
  let at = 0;
  for (const k of keys) {
    offset.set(k, at);
    at += count.get(k)!;
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; ++i) {
    const o = offset.get(key[i])!;
    order[o] = i;
    offset.set(key[i], o + 1);
  }
  // Each lane [from, to): indices ascend already (stable placement); sort by start if needed.
  let from = 0;
  for (const k of keys) {
    const to = from + count.get(k)!;
    let sorted = true;
    for (let j = from + 1; j < to && sorted; ++j) sorted = st[order[j - 1]] <= st[order[j]];
    if (!sorted) order.subarray(from, to).sort((a, b) => st[a] - st[b] || a - b);
    from = to;
  }
  return order;
}

/** First index k in [lo, hi) with a[k] >= x (hi when none). */
export function lowerBound(a: Float64Array, x: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First span of the lane that may be visible at t0: spans before it end before t0. */
export function firstVisible(idx: LaneIndex, lane: Lane, t0: number): number {
  // Spans in a stream do not overlap, so the one before the first start >= t0 may cover t0.
  const k = lowerBound(idx.start, t0, lane.from, lane.to);
  return k > lane.from && idx.end[k - 1] > t0 ? k - 1 : k;
}

/** The span of the lane under time t (within `slack` seconds), or -1. Index into `order`. */
export function spanAt(idx: LaneIndex, lane: Lane, t: number, slack: number): number {
  let k = lowerBound(idx.start, t, lane.from, lane.to);
  // candidates: k-1 (started before t) and k (starts just after t)
  let best = -1;
  let bestDist = Infinity;
  for (const c of [k - 1, k, k - 2]) {
    if (c < lane.from || c >= lane.to) continue;
    const d = t < idx.start[c] ? idx.start[c] - t : t > idx.end[c] ? t - idx.end[c] : 0;
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  k = best;
  return k >= 0 && bestDist <= slack ? k : -1;
}
