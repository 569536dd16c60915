// The GPU compute control against the real core (WebAssembly): a run at 91% (an H100 at 500 W,
// docs/fidelity/gemm.md "Power limits") spends 1/0.91 of the default's time in GEMMs and the same in
// communication and memory-bound kernels; 100% writes nothing; out-of-range percentages get the
// core's error, placed on the control.
import { beforeAll, describe, expect, it } from 'vitest';
import { setPath, unsetPath } from '../../src/config_model';
import { controlForPath } from '../../src/controls';
import { percentToFraction } from '../../src/percent';
import { loadModule, type ProteusModule } from '../support/module';

const PATH = 'cluster.gpu.compute_throughput_fraction';

type Breakdown = { compute_by_op_kind_s: Record<string, number>; comm_by_collective_s: Record<string, number> };

describe('GPU compute percentage against the core', () => {
  let mod: ProteusModule;
  let base: Record<string, any>;
  const simulate = (config: unknown) => JSON.parse(mod.simulate_json(JSON.stringify(config), false, false, false));
  beforeAll(async () => {
    mod = await loadModule();
    base = JSON.parse(mod.preset_text('scenario', 'default')); // Llama 3 8B, 4 DGX H100, TP4 PP2 DP4
  });

  it('at 91% slows GEMMs by 1/0.91 and leaves communication and memory-bound kernels alone', () => {
    const full = simulate(base);
    const capped = simulate(setPath(base, PATH, percentToFraction(91)));
    expect(full.ok && capped.ok).toBe(true);
    const a: Breakdown = full.breakdown;
    const b: Breakdown = capped.breakdown;
    // Compute-bound: the time scales with 1/fraction, less its kernel launches (and any GEMM bound
    // by memory), which keep their time: 1.094 here.
    const matmul = b.compute_by_op_kind_s.matmul / a.compute_by_op_kind_s.matmul;
    expect(Math.abs(matmul * 0.91 - 1), `matmul ratio ${matmul}`).toBeLessThanOrEqual(0.01);
    // Links do not change with the SM clock; a collective's time moves only by what it
    // overlaps (the contention model), well under a per mille here.
    for (const [k, s] of Object.entries(a.comm_by_collective_s)) expect(b.comm_by_collective_s[k], k).toBeCloseTo(s, 3);
    const comm = (x: Breakdown) => Object.values(x.comm_by_collective_s).reduce((p, q) => p + q, 0);
    expect(Math.abs(comm(b) / comm(a) - 1)).toBeLessThanOrEqual(0.001);
    // Memory-bound kernels keep HBM's clock.
    for (const k of ['norm', 'elementwise']) expect(Math.abs(b.compute_by_op_kind_s[k] / a.compute_by_op_kind_s[k] - 1), k).toBeLessThanOrEqual(0.001);
    expect(capped.summary.iteration_time_s).toBeGreaterThan(full.summary.iteration_time_s);
  });

  it('at 100% writes no override: the run is the default one, byte for byte', () => {
    const set = setPath(base, PATH, percentToFraction(91));
    const back = unsetPath(set, PATH);
    expect(back).toEqual(base);
    expect(mod.simulate_json(JSON.stringify(back), false, false, false)).toBe(mod.simulate_json(JSON.stringify(base), false, false, false));
  });

  it('gives the core’s error for an out-of-range percentage, on the control', () => {
    for (const percent of [0, -5, 120]) {
      const r = simulate(setPath(base, PATH, percentToFraction(percent)));
      expect(r.ok, `${percent}%`).toBe(false);
      expect(r.error.path).toBe(PATH);
      expect(r.error.message).toMatch(/compute_throughput_fraction/);
      expect(controlForPath(r.error.path)).toBe(PATH);
    }
  });
});
