// The search's progress through the WebAssembly binding (wasm/bindings.cpp search_json, the
// worker's 'search' call): told (candidates decided, the shard's candidates) as the search
// goes, never more decided than there are, and the result the same with or without it.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadModule, type ProteusModule } from '../support/module';

// A small space of the default scenario (Llama 3 8B on 4 DGX H100): every knob but two fixed.
const SPACE = { tp: [2, 4], pp: [1, 2], cp: [1], zero: [1], recompute: ['none'], schedule: ['1f1b'] };

describe('search progress in WebAssembly', () => {
  let mod: ProteusModule;
  let config: string;
  beforeAll(async () => {
    mod = await loadModule();
    const base = JSON.parse(mod.preset_text('scenario', 'default'));
    config = JSON.stringify({ ...base, search: SPACE });
  });

  it('reports decided of candidates per shard, and does not change the result', () => {
    const told: [number, number][] = [];
    const withProgress = mod.search_json(config, 3, 1, 2, (d: number, c: number) => told.push([d, c]));
    const without = mod.search_json(config, 3, 1, 2, null);
    expect(withProgress).toBe(without);
    const result = JSON.parse(without);
    expect(result.ranked.length).toBeGreaterThan(0);
    expect(told.length).toBeGreaterThanOrEqual(2); // after the check, then after each wave
    let last = -1;
    for (const [d, c] of told) {
      expect(d).toBeLessThanOrEqual(c);
      expect(d).toBeGreaterThanOrEqual(last);
      last = d;
    }
    // The shard's candidates: all it evaluated; those not decided at the end were pruned.
    const n = result.counts;
    const [d, c] = told[told.length - 1];
    expect(c).toBe(n.evaluated);
    expect(c - d).toBe(n.pruned_time);
  });
});
