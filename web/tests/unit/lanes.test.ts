import { describe, expect, it } from 'vitest';
import { parseJsonWithPosition } from '../../src/advanced';
import { dropStaleRecomputeModules, fittingDp, getPath, mergeStrategy, setPath, strategyLabel } from '../../src/config_model';
import { controlForPath } from '../../src/controls';
import { spansFromObjects } from '../../src/result';
import { parseValues } from '../../src/sweep';
import { STREAM_ORDER, STREAMS, streamLabel } from '../../src/timeline/colors';
import { buildLanes, firstVisible, laneOrder, spanAt } from '../../src/timeline/lanes';

const objects = [
  { rank: 1, stream: 'compute', name: 'b', kind: 'forward', mb: 0, start_s: 0.0, end_s: 1.0 },
  { rank: 0, stream: 'tp_comm', name: 'ar', kind: 'all_reduce', mb: 0, start_s: 0.5, end_s: 0.6 },
  { rank: 0, stream: 'compute', name: 'f1', kind: 'forward', mb: 1, start_s: 2.0, end_s: 3.0 },
  { rank: 0, stream: 'compute', name: 'f0', kind: 'forward', mb: 0, start_s: 0.0, end_s: 1.0 },
  { rank: 0, stream: 'compute', name: 'opt', kind: 'optimizer', mb: -1, start_s: 3.0, end_s: 3.5 },
];

describe('columnar spans and lanes', () => {
  const spans = spansFromObjects(objects);

  it('interns strings into columns', () => {
    expect(spans.n).toBe(5);
    expect(spans.kinds).toEqual(['forward', 'all_reduce', 'optimizer']);
    expect(spans.streams).toEqual(['compute', 'tp_comm']);
    expect(Array.from(spans.mb)).toEqual([0, 0, 1, 0, -1]);
    expect(spans.start).toBeInstanceOf(Float64Array);
  });

  it('groups spans into lanes by rank then stream order, sorted by start', () => {
    const idx = buildLanes(spans, ['compute', 'tp_comm', 'dp_comm', 'pp_comm']);
    expect(idx.lanes.map((l) => [l.rank, spans.streams[l.stream], l.to - l.from])).toEqual([
      [0, 'compute', 3],
      [0, 'tp_comm', 1],
      [1, 'compute', 1],
    ]);
    expect(Array.from(idx.order.slice(0, 3)).map((i) => objects[i].name)).toEqual(['f0', 'f1', 'opt']);
    expect(idx.maxEnd).toBe(3.5);
  });

  it('orders spans by rank, stream order, start and index, as one comparison sort would', () => {
    // The specification of the order, written as the plain comparison sort it replaces, on
    // spans in random order with ties in start time, unlisted streams and ranks 0..39.
    let seed = 12345;
    const rnd = (m: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % m);
    const streamNames = ['pp_comm', 'compute', 'other', 'tp_comm', 'dp_comm', 'extra'];
    const many = Array.from({ length: 5000 }, (_, i) => {
      const start = rnd(50) / 10; // many equal starts: the index breaks the tie
      return { rank: rnd(40), stream: streamNames[rnd(streamNames.length)], name: `s${i}`, kind: 'forward', mb: 0, start_s: start, end_s: start + 0.05 };
    });
    const sp = spansFromObjects(many);
    const order = ['compute', 'tp_comm', 'dp_comm', 'pp_comm'];
    const streamRank = sp.streams.map((s, i) => (order.indexOf(s) >= 0 ? order.indexOf(s) : order.length + i));
    const want = Array.from({ length: sp.n }, (_, i) => i).sort(
      (a, b) => sp.rank[a] - sp.rank[b] || streamRank[sp.stream[a]] - streamRank[sp.stream[b]] || sp.start[a] - sp.start[b] || a - b,
    );
    expect(Array.from(laneOrder(sp, order))).toEqual(want);
    // and spans already in order (the core's usual output) stay so
    const sorted = spansFromObjects(want.map((i) => many[i]));
    expect(Array.from(laneOrder(sorted, order))).toEqual(want.map((_, k) => k));
  });

  it('finds the first visible span and the span under a time', () => {
    const idx = buildLanes(spans, ['compute']);
    const lane = idx.lanes[0];
    expect(objects[idx.order[firstVisible(idx, lane, 0.5)]].name).toBe('f0'); // f0 covers 0.5
    expect(objects[idx.order[firstVisible(idx, lane, 1.5)]].name).toBe('f1'); // gap: next one
    expect(objects[idx.order[spanAt(idx, lane, 2.5, 0)]].name).toBe('f1');
    expect(spanAt(idx, lane, 1.5, 0.1)).toBe(-1);
    expect(objects[idx.order[spanAt(idx, lane, 1.95, 0.1)]].name).toBe('f1');
  });
});

describe('stream labels', () => {
  it('names every stream the core writes, ZeRO-3 parameter gathers included, in lane order', () => {
    // core/src/compile/exec_graph.cpp to_string(Stream): compute, tp_comm, dp_comm, pp_comm, param_comm
    for (const s of ['compute', 'tp_comm', 'dp_comm', 'pp_comm', 'param_comm']) expect(Object.keys(STREAMS)).toContain(s);
    expect(streamLabel('param_comm')).toBe('param gather');
    // parameter gathers sit beside the gradient traffic (DP), above the pipeline transfers
    expect(STREAM_ORDER.indexOf('param_comm')).toBe(STREAM_ORDER.indexOf('dp_comm') + 1);
  });
});

describe('config helpers', () => {
  it('reads and writes dotted paths without touching the original', () => {
    const c = { strategy: { tp: 4 } };
    const d = setPath(c, 'strategy.pp', 2);
    expect(c).toEqual({ strategy: { tp: 4 } });
    expect(getPath(d, 'strategy.pp')).toBe(2);
    expect(getPath(setPath(d, 'strategy.tp', undefined), 'strategy')).toEqual({ pp: 2 });
    expect(getPath(setPath({ cluster: 'dgx-h100' }, 'cluster.nodes', 2), 'cluster')).toEqual({ nodes: 2 });
  });

  it('fits dp to the GPU count', () => {
    expect(fittingDp(32, { tp: 4, pp: 2 })).toBe(4);
    expect(fittingDp(32, { tp: 3, pp: 2 })).toBeNull();
    expect(fittingDp(8, { tp: 8 })).toBe(1);
  });

  it('names a strategy briefly', () => {
    expect(strategyLabel({ strategy: { tp: 4, pp: 2, dp: 4, micro_batch: 1, schedule: '1f1b', zero: 1 } })).toBe('TP4 · PP2 · DP4 · mb1 · 1f1b · ZeRO-1');
    // a zero-bubble plan given in the config is named (unset: the framework's default)
    expect(strategyLabel({ strategy: { pp: 2, dp: 4, schedule: 'zb-h1', zb_plan: 'unit' } })).toBe('PP2 · DP4 · mb1 · zb-h1 (unit plan)');
    // recompute modules are named when they are not Megatron's default (the attention core)
    expect(strategyLabel({ strategy: { dp: 8, recompute: 'selective', recompute_modules: ['core_attn'] } })).toBe('DP8 · mb1 · rc:selective');
    expect(strategyLabel({ strategy: { dp: 8, recompute: 'selective', recompute_modules: ['moe_act', 'layernorm'] } })).toBe('DP8 · mb1 · rc:selective(moe_act+layernorm)');
    // MoE parallel folding is named; expert_tp equal to tp is the default layout
    expect(strategyLabel({ strategy: { tp: 2, dp: 4, ep: 8, expert_tp: 1 } })).toBe('TP2 · DP4 · EP8 · ETP1 · mb1');
    expect(strategyLabel({ strategy: { tp: 2, dp: 4, ep: 4, expert_tp: 2 } })).toBe('TP2 · DP4 · EP4 · mb1');
  });

  it('drops recompute modules once nothing recomputes selectively', () => {
    const full = { preset: 'x', strategy: { recompute: 'full', recompute_modules: ['moe_act'], tp: 2 } };
    expect(dropStaleRecomputeModules(full).strategy).toEqual({ recompute: 'full', tp: 2 });
    expect(full.strategy.recompute_modules).toEqual(['moe_act']); // the page's config is untouched
    const selective = { strategy: { recompute: 'selective', recompute_modules: ['moe_act'] } };
    expect(dropStaleRecomputeModules(selective)).toBe(selective);
    // An override that recomputes selectively still uses them.
    const override = { strategy: { recompute: 'none', recompute_modules: ['moe_act'], overrides: [{ path: 'layers.*', recompute: 'selective' }] } };
    expect(dropStaleRecomputeModules(override)).toBe(override);
  });

  it('merges a row or fit change into the strategy: the current recompute modules go with it', () => {
    const current = { tp: 2, overlap_grad_reduce: false, recompute: 'selective', recompute_modules: ['moe_act'] };
    expect(mergeStrategy(current, { tp: 1, recompute: 'full' })).toEqual({ tp: 1, overlap_grad_reduce: false, recompute: 'full' });
    expect(mergeStrategy(current, { recompute: 'selective', recompute_modules: ['moe'] }).recompute_modules).toEqual(['moe']);
    expect(current.recompute_modules).toEqual(['moe_act']); // the page's config is untouched
    // A row states a mixture of experts' expert_tp: the config's own (folded) must not survive
    // into a row that omits it (a dense layout the row's tp would refuse).
    expect(mergeStrategy({ tp: 2, ep: 8, expert_tp: 1 }, { tp: 4, ep: 2 })).toEqual({ tp: 4, ep: 2 });
    expect(mergeStrategy({ tp: 2, ep: 4 }, { tp: 2, ep: 8, expert_tp: 1 })).toEqual({ tp: 2, ep: 8, expert_tp: 1 });
  });

  it('puts an error next to the control its path names', () => {
    expect(controlForPath('strategy.tp')).toBe('strategy.tp');
    expect(controlForPath('cluster.nodes')).toBe('cluster.nodes');
    expect(controlForPath('cluster.gpu.memory_GiB')).toBe('cluster');
    expect(controlForPath('model.layers')).toBe('model');
    expect(controlForPath('strategy')).toBeNull();
    expect(controlForPath('strategy.overrides[0].stage')).toBeNull();
  });

  it('parses sweep values', () => {
    expect(parseValues('1, 2 4;8')).toEqual([1, 2, 4, 8]);
    expect(parseValues('1, two')).toBeNull();
    expect(parseValues('')).toBeNull();
  });

  it('names the line and column of a JSON syntax error', () => {
    const r = parseJsonWithPosition('{\n  "a": 1,\n  "b": }');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/line 3/);
  });
});

describe('JSON errors', () => {
  it('finds the first error with line and column', async () => {
    const { findJsonError } = await import('../../src/json_error');
    expect(findJsonError('{"a": [1, 2, {"b": null}], "c": "x\\n", "d": -1.5e3}')).toBeNull();
    expect(findJsonError('{\n  "a": 1,\n  "b": }')).toMatchObject({ line: 3, column: 8 });
    expect(findJsonError('{"a": 1,}')?.message).toMatch(/trailing comma/);
    expect(findJsonError('{a: 1}')?.message).toMatch(/key/);
    expect(findJsonError('{"a": tru}')).toMatchObject({ line: 1, column: 7 });
    expect(findJsonError('{"a": 1} x')?.message).toMatch(/after the end/);
    expect(findJsonError('"abc')?.message).toMatch(/unterminated/);
  });
});
