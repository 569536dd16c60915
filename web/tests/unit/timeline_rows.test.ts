import { describe, expect, it } from 'vitest';
import { spansFromObjects, type MemoryCurve } from '../../src/result';
import { rowAtY, rowUnder, spanUnder } from '../../src/timeline/hit_test';
import { buildLanes } from '../../src/timeline/lanes';
import { laneKey, layoutRows, type LaneRow, type Row, type RowOptions } from '../../src/timeline/rows';
import { AXIS_H } from '../../src/timeline/theme';
import { TimeScale } from '../../src/timeline/time_scale';

// Four GPUs in two pipeline stages (ranks 0-1, 2-3); rank 0 also has a tensor-parallel lane.
const span = (rank: number, stream: string, start: number, end: number) => ({ rank, stream, name: 'op', kind: 'forward', mb: 0, start_s: start, end_s: end });
const spans = spansFromObjects([
  span(0, 'compute', 1, 2),
  span(0, 'tp_comm', 2, 3),
  span(1, 'compute', 0, 1),
  span(2, 'compute', 3, 4),
  span(3, 'compute', 4, 5),
]);
const idx = buildLanes(spans, ['compute', 'tp_comm']);
const curve = (rank: number): MemoryCurve => ({ rank, t: new Float64Array([0]), gib: new Float64Array([1]) });
const options = (o: Partial<RowOptions> = {}): RowOptions => ({
  laneHeight: 16,
  memoryHeight: 44,
  stageOf: (r) => r >> 1,
  computeOnly: false,
  collapsed: new Set(),
  ...o,
});
const describeRow = (r: Row) => (r.type === 'group' ? r.text : r.type === 'lane' ? `GPU ${r.lane.rank} ${spans.streams[r.lane.stream]}` : `memory ${r.curve.rank}`);

describe('timeline rows', () => {
  it('puts a header over each stage and a lane per GPU and stream, in stage order', () => {
    const { rows, laneRows } = layoutRows(spans, idx, options());
    expect(rows.map(describeRow)).toEqual([
      '▾ Pipeline stage 0',
      'GPU 0 compute',
      'GPU 0 tp_comm',
      'GPU 1 compute',
      '▾ Pipeline stage 1',
      'GPU 2 compute',
      'GPU 3 compute',
    ]);
    expect(laneRows.size).toBe(5);
    expect(laneRows.get(laneKey(0, spans.streams.indexOf('tp_comm')))).toBe(rows[2]);
  });

  it('marks each lane first, second and last among its GPU lanes, and stacks rows without overlap', () => {
    const { rows, contentH } = layoutRows(spans, idx, options());
    const lanes = rows.filter((r): r is LaneRow => r.type === 'lane');
    expect(lanes.map((l) => [l.first, l.second, l.last])).toEqual([
      [true, false, false],
      [false, true, true],
      [true, false, true],
      [true, false, true],
      [true, false, true],
    ]);
    expect(lanes.map((l) => l.index)).toEqual([0, 1, 2, 3, 4]);
    expect(rows[0].y).toBeGreaterThan(AXIS_H);
    for (let i = 1; i < rows.length; ++i) expect(rows[i].y).toBeGreaterThanOrEqual(rows[i - 1].y + rows[i - 1].h);
    const lastRow = rows[rows.length - 1];
    expect(contentH).toBeGreaterThan(lastRow.y + lastRow.h);
  });

  it('hides a collapsed stage behind its header, which counts the GPUs hidden', () => {
    const open = layoutRows(spans, idx, options());
    const { rows, contentH } = layoutRows(spans, idx, options({ collapsed: new Set([1]) }));
    expect(rows.map(describeRow)).toEqual([
      '▾ Pipeline stage 0',
      'GPU 0 compute',
      'GPU 0 tp_comm',
      'GPU 1 compute',
      '▸ Pipeline stage 1 (2 GPUs hidden)',
    ]);
    expect(contentH).toBeLessThan(open.contentH);
  });

  it('names a single stage after all GPUs', () => {
    const { rows } = layoutRows(spans, idx, options({ stageOf: () => 0 }));
    expect(rows.filter((r) => r.type === 'group').map(describeRow)).toEqual(['▾ All GPUs (one pipeline stage)']);
  });

  it('adds memory tracks last, by stage then rank; the compute-only view drops them and the other streams', () => {
    const memory = { curves: [curve(3), curve(1), curve(2), curve(0)], header: 'Memory' };
    const full = layoutRows(spans, idx, options({ memory }));
    expect(full.rows.slice(7).map(describeRow)).toEqual(['Memory', 'memory 0', 'memory 1', 'memory 2', 'memory 3']);
    const compute = layoutRows(spans, idx, options({ memory, computeOnly: true }));
    expect(compute.rows.map(describeRow)).toEqual([
      '▾ Pipeline stage 0',
      'GPU 0 compute',
      'GPU 1 compute',
      '▾ Pipeline stage 1',
      'GPU 2 compute',
      'GPU 3 compute',
    ]);
    expect(compute.laneRows.size).toBe(4);
  });
});

describe('timeline hit testing', () => {
  const { rows } = layoutRows(spans, idx, options());

  it('finds the row under a content y, edges included, and nothing in the gaps or below', () => {
    for (const r of rows) {
      expect(rowUnder(rows, r.y + 1)).toBe(r);
      expect(rowUnder(rows, r.y + r.h / 2)).toBe(r);
      expect(rowUnder(rows, r.y + r.h)).toBe(r);
    }
    // a header touches its first lane: the shared edge is the header's
    expect(rows[0].y + rows[0].h).toBe(rows[1].y);
    expect(rowUnder(rows, rows[1].y)).toBe(rows[0]);
    // lanes are 16 px with a 2 px gap between lanes of one GPU
    const lane = rows[1];
    expect(rows[2].y - (lane.y + lane.h)).toBe(2);
    expect(rowUnder(rows, lane.y + lane.h + 1)).toBeUndefined();
    expect(rowUnder(rows, 0)).toBeUndefined();
    const last = rows[rows.length - 1];
    expect(rowUnder(rows, last.y + last.h + 1)).toBeUndefined();
    expect(rowAtY(rows, last.y + last.h + 1)).toBe(rows.length);
  });

  it('rowAtY gives the first row not entirely above y (where drawing starts)', () => {
    expect(rowAtY(rows, 0)).toBe(0);
    expect(rowAtY(rows, rows[3].y + 1)).toBe(3);
    expect(rowAtY(rows, rows[3].y + rows[3].h + 1)).toBe(4);
  });

  it('finds a span under a pixel within a slack given in pixels', () => {
    const lane = idx.lanes.find((l) => l.rank === 0 && spans.streams[l.stream] === 'compute')!;
    const s = new TimeScale(0, 10, 0, 100); // 10 px per second; the span covers x 10..20
    expect(idx.order[spanUnder(idx, lane, s, 15, 0)]).toBe(0);
    expect(spanUnder(idx, lane, s, 22, 3)).toBe(lane.from); // 2 px past its end
    expect(spanUnder(idx, lane, s, 22, 1)).toBe(-1);
    // zoomed in 10 times, the same 3 px reach ten times less far in time
    const zoomed = new TimeScale(1.5, 2.5, 0, 100); // 100 px per second; the span ends at x 50
    expect(spanUnder(idx, lane, zoomed, 52, 3)).toBe(lane.from);
    expect(spanUnder(idx, lane, zoomed, 54, 3)).toBe(-1);
  });
});
