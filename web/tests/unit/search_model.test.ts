import { describe, expect, it } from 'vitest';
import { configWithStrategy, heatMap, liveRanking, paretoFront, parseList, searchConfig, searchProgressText, strategyText, type Candidate, type SearchResult } from '../../src/search_model';

function row(index: number, tp: number, pp: number, time: number, mem: number): Candidate {
  return { index, strategy: { dp: 64 / (tp * pp), tp, pp }, iteration_time_s: time, mfu: 0.5, peak_memory_GiB: mem };
}

describe('search model', () => {
  it('reads knob lists: numbers, names, empty = every value, errors name the knob', () => {
    expect(parseList('tp', '1, 2 4')).toEqual([1, 2, 4]);
    expect(parseList('recompute', 'selective,full')).toEqual(['selective', 'full']);
    expect(parseList('pp', '  ')).toBeNull();
    expect(parseList('zero', '1, x')).toBe('search.zero: give whole numbers separated by commas');
    expect(parseList('recompute_modules', 'core_attn, moe_act+layernorm')).toEqual([['core_attn'], ['moe_act', 'layernorm']]);
    expect(parseList('recompute_modules', '+')).toBe('search.recompute_modules: give module names joined by + (moe_act+layernorm)');
  });

  it('builds the search config: lists and reserve in "search", searched knobs out of the strategy', () => {
    const base = { preset: 'x', strategy: { tp: 8, pp: 16, overlap_grad_reduce: true } };
    const c = searchConfig(base, { tp: [4, 8] }, 0.05);
    expect(c.search).toEqual({ memory_reserve: 0.05, tp: [4, 8] });
    expect(c.strategy).toEqual({ overlap_grad_reduce: true });
    expect(base.strategy.tp).toBe(8); // the page's config is untouched
    const used = configWithStrategy(c, { tp: 4, pp: 8, dp: 2 });
    expect(used.search).toBeUndefined();
    expect(used.strategy).toEqual({ overlap_grad_reduce: true, tp: 4, pp: 8, dp: 2 });
  });

  it('keeps the recompute modules valid: the search starts from them, a row replaces them', () => {
    const base = { preset: 'x', strategy: { recompute: 'selective', recompute_modules: ['moe_act'], tp: 2 } };
    const c = searchConfig(base, {}, 0);
    expect(c.strategy).toEqual({ recompute: 'selective', recompute_modules: ['moe_act'] });
    // A row without selective recompute names no modules: the current ones must not remain.
    expect(configWithStrategy(c, { tp: 4, recompute: 'full' }).strategy).toEqual({ recompute: 'full', tp: 4 });
    const selective = configWithStrategy(c, { recompute: 'selective', recompute_modules: ['core_attn', 'layernorm'] });
    expect(selective.strategy.recompute_modules).toEqual(['core_attn', 'layernorm']);
  });

  it('names recompute modules in the row text only when they are not the default', () => {
    const row = { tp: 1, pp: 2, dp: 8, ep: 8, micro_batch: 1, schedule: '1f1b', zero: 1, recompute: 'selective' };
    expect(strategyText({ ...row, recompute_modules: ['core_attn'] })).toMatch(/ZeRO 1 · selective$/);
    expect(strategyText({ ...row, recompute_modules: ['moe_act', 'layernorm'] })).toMatch(/selective \(moe_act, layernorm\)$/);
  });

  it('names MoE parallel folding in the row text, and the search varies it', () => {
    const row = { tp: 2, pp: 1, dp: 4, ep: 8, expert_tp: 1, micro_batch: 1, schedule: '1f1b', zero: 1, recompute: 'none' };
    expect(strategyText(row)).toBe('tp 2 · pp 1 · dp 4 · ep 8 · expert tp 1 · mb 1 · ZeRO 1 · none');
    expect(strategyText({ ...row, ep: 4, expert_tp: 2 })).not.toMatch(/expert tp/);
    const c = searchConfig({ preset: 'x', strategy: { tp: 2, ep: 8, expert_tp: 1 } }, {}, 0);
    expect(c.strategy).toEqual({});
  });

  it('merges finished shards live: the fastest first, index breaks ties, at most top', () => {
    const a: SearchResult = { ranked: [row(4, 1, 1, 2.0, 10), row(8, 1, 1, 3.0, 5)], counts: {} as any, memory_budget_GiB: 80 };
    const b: SearchResult = { ranked: [row(1, 1, 1, 2.0, 12), row(3, 1, 1, 2.5, 9)], counts: {} as any, memory_budget_GiB: 80 };
    expect(liveRanking([a, b], 3).map((r) => r.index)).toEqual([1, 4, 3]);
  });

  it('Pareto front: a candidate stays unless another is both faster and smaller', () => {
    // (time s, memory GiB): A (10, 70), B (11, 50), C (12, 60) -- beaten by B on both, D (13, 40).
    const rows = [row(0, 1, 1, 10, 70), row(1, 1, 1, 11, 50), row(2, 1, 1, 12, 60), row(3, 1, 1, 13, 40)];
    expect(paretoFront(rows).map((r) => r.index)).toEqual([0, 1, 3]);
  });

  it('heat map: the best time per tp x pp, empty cells null', () => {
    const rows = [row(0, 4, 8, 19, 70), row(1, 4, 8, 18.5, 75), row(2, 8, 4, 19.2, 54), row(3, 8, 8, 20, 40)];
    const m = heatMap(rows);
    expect(m.tps).toEqual([4, 8]);
    expect(m.pps).toEqual([4, 8]);
    expect(m.best).toEqual([
      [null, 18.5],
      [19.2, 20],
    ]);
  });
});

describe('search progress over shards', () => {
  it('sums what the shards reported; a shard not yet heard from adds nothing', () => {
    const p = searchProgressText([30, 0], [100, 0], 0, 2);
    expect(p.fraction).toBeCloseTo(0.3, 12);
    expect(p.text).toBe('30 of 100 candidates decided, 0 of 2 shards done…');
    expect(searchProgressText([100, 1500], [100, 3000], 1, 2).text).toBe('1,600 of 3,100 candidates decided, 1 of 2 shards done…');
    expect(searchProgressText([0, 0], [0, 0], 0, 2).fraction).toBe(0);
  });
});
