// The timeline's rows, top to bottom: a header per pipeline stage and under it a lane per GPU
// and stream (none while the stage is collapsed), then a header and a track per GPU for the
// memory curves. Rows sit at fixed content y; scrolling moves the view over them.
import type { MemoryCurve, Spans } from '../result';
import type { Lane, LaneIndex } from './lanes';
import { AXIS_H } from './theme';

export type GroupRow = { type: 'group'; y: number; h: number; text: string; stage: number; collapsed: boolean };
/** first/second/last: the lane's place among its GPU's lanes (the GPU's name goes on the first, its note on the second). */
export type LaneRow = {
  type: 'lane';
  y: number;
  h: number;
  lane: Lane;
  first: boolean;
  second: boolean;
  last: boolean;
  /** Position among the lanes shown (alternate lanes are shaded apart). */
  index: number;
};
export type MemoryRow = { type: 'memory'; y: number; h: number; curve: MemoryCurve };
export type Row = GroupRow | LaneRow | MemoryRow;

export interface RowLayout {
  rows: Row[];
  /** Lane rows shown, by laneKey(rank, stream). */
  laneRows: Map<number, LaneRow>;
  /** Height of all rows and the axis, in CSS pixels. */
  contentH: number;
}

export interface RowOptions {
  laneHeight: number;
  memoryHeight: number;
  stageOf: (rank: number) => number;
  /** Only compute lanes, no memory tracks. */
  computeOnly: boolean;
  collapsed: ReadonlySet<number>;
  /** The memory curves and the text of their header. */
  memory?: { curves: MemoryCurve[]; header: string };
}

const GROUP_H = 18;

export function laneKey(rank: number, stream: number): number {
  return rank * 64 + stream;
}

export function layoutRows(spans: Spans, idx: LaneIndex, o: RowOptions): RowLayout {
  const rows: Row[] = [];
  const laneRows = new Map<number, LaneRow>();
  const byStage = new Map<number, Lane[]>();
  const computeStream = spans.streams.indexOf('compute');
  for (const lane of idx.lanes) {
    if (o.computeOnly && lane.stream !== computeStream) continue;
    const s = o.stageOf(lane.rank);
    if (!byStage.has(s)) byStage.set(s, []);
    byStage.get(s)!.push(lane);
  }
  const stages = [...byStage.keys()].sort((a, b) => a - b);
  let y = AXIS_H + 4;
  let index = 0;
  for (const s of stages) {
    const lanes = byStage.get(s)!;
    const collapsed = o.collapsed.has(s);
    rows.push({ type: 'group', y, h: GROUP_H, text: stageHeader(s, stages.length, lanes, collapsed), stage: s, collapsed });
    y += GROUP_H;
    if (collapsed) {
      y += 2;
      continue;
    }
    for (let i = 0; i < lanes.length; ++i) {
      const first = i === 0 || lanes[i - 1].rank !== lanes[i].rank;
      const last = i === lanes.length - 1 || lanes[i + 1].rank !== lanes[i].rank;
      const second = !first && lanes[i - 1].rank === lanes[i].rank && (i === 1 || lanes[i - 2].rank !== lanes[i].rank);
      const row = { type: 'lane' as const, y, h: o.laneHeight, lane: lanes[i], first, second, last, index: index++ };
      rows.push(row);
      laneRows.set(laneKey(lanes[i].rank, lanes[i].stream), row);
      y += o.laneHeight + 2 + (last ? 6 : 0);
    }
  }
  const curves = o.memory?.curves ?? [];
  if (curves.length && !o.computeOnly) {
    y += 6;
    rows.push({ type: 'group', y, h: GROUP_H, text: o.memory!.header, stage: -1, collapsed: false });
    y += GROUP_H;
    const sorted = [...curves].sort((a, b) => o.stageOf(a.rank) - o.stageOf(b.rank) || a.rank - b.rank);
    for (const c of sorted) {
      rows.push({ type: 'memory', y, h: o.memoryHeight, curve: c });
      y += o.memoryHeight + 6;
    }
  }
  return { rows, laneRows, contentH: y + 4 };
}

function stageHeader(stage: number, stages: number, lanes: Lane[], collapsed: boolean): string {
  const gpus = new Set(lanes.map((l) => l.rank)).size;
  const title = stages > 1 || stage > 0 ? `Pipeline stage ${stage}` : 'All GPUs (one pipeline stage)';
  return `${collapsed ? '▸' : '▾'} ${title}${collapsed ? ` (${gpus} GPU${gpus > 1 ? 's' : ''} hidden)` : ''}`;
}
