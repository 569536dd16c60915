// The zero-bubble plan the page shows (pipeline_plan.ts), from results of the WebAssembly core:
// its pass times are those of the unit-time play (the first play the runtime's timers measure,
// derived here from that play's own timeline), and the order shown for each stage is the order
// that stage's GPU plays in the run's timeline.
import { beforeAll, describe, expect, it } from 'vitest';
import { setPath } from '../../src/config_model';
import { planRows, runtimeMedian } from '../../src/pipeline_plan';
import { parseResult, type SimResult } from '../../src/result';
import { pickSchedule } from '../../src/schedules';
import { loadModule, type ProteusModule } from '../support/module';

/** Pass letters of the compute spans; recomputation belongs to the backward that needs it. */
const LETTER: Record<string, string> = { forward: 'F', backward_input: 'B', recompute: 'B', backward_weight: 'W' };

/** Compute spans of `rank` grouped by pass and micro-batch, in the order they start. */
function passes(r: SimResult, rank: number): { pass: string; start: number; end: number }[] {
  const s = r.spans;
  const out: { pass: string; start: number; end: number }[] = [];
  const idx = [...Array(s.n).keys()].filter((i) => s.rank[i] === rank && s.streams[s.stream[i]] === 'compute' && LETTER[s.kinds[s.kind[i]]] && s.mb[i] >= 0);
  idx.sort((a, b) => s.start[a] - s.start[b]);
  for (const i of idx) {
    const pass = LETTER[s.kinds[s.kind[i]]] + s.mb[i];
    const last = out[out.length - 1];
    if (last && last.pass === pass) last.end = Math.max(last.end, s.end[i]);
    else out.push({ pass, start: s.start[i], end: s.end[i] });
  }
  return out;
}

/** A stage order without chunks (ZB-V's two chunks of one pass run back to back collapse). */
function withoutChunks(order: string): string[] {
  const out: string[] = [];
  for (const p of order.split(/[ &]/)) {
    const q = p.split('.')[0];
    if (out[out.length - 1] !== q) out.push(q);
  }
  return out;
}

describe('the zero-bubble plan from the core', () => {
  let mod: ProteusModule;
  let base: Record<string, any>;
  const simulate = (config: Record<string, any>): SimResult => {
    const out = mod.simulate_columns(JSON.stringify(config), true, false, null);
    expect(out.error, out.error).toBeUndefined();
    const parsed = parseResult(out.result!, out.timeline, out.curves);
    if (!parsed.ok) throw new Error(parsed.error.message);
    return parsed.result;
  };
  const pick = (config: Record<string, any>, schedule: string) => pickSchedule(config, JSON.parse(mod.show_json(JSON.stringify(config))), schedule);
  beforeAll(async () => {
    mod = await loadModule();
    base = JSON.parse(mod.preset_text('scenario', 'default')); // Llama 3 8B, pp 2, dp 4, 32 micro-batches
  });

  it('shows the pass times the unit-time play measured, and the planner input as the runtime median', () => {
    const zb = pick(base, 'zb-h1'); // framework megatron: zb_plan "profiled" by default
    const planned = simulate(zb);
    const plan = planned.pipelinePlan!;
    expect(plan).not.toBeNull();
    const unit = simulate(setPath(zb, 'strategy.zb_plan', 'unit'));
    expect(unit.pipelinePlan).toBeNull(); // nothing re-planned, nothing to show
    // The first play is the unit-time order: each stage's mean span of a pass, over micro-batches.
    const stages = [...new Set(unit.devices.map((d) => d.stage))].sort();
    expect(plan.forwardMs.length).toBe(stages.length);
    for (const stage of stages) {
      const rank = unit.devices.find((d) => d.stage === stage)!.rank;
      const ps = passes(unit, rank);
      const meanMs = (letter: string) => {
        const own = ps.filter((p) => p.pass[0] === letter);
        return (1e3 * own.reduce((t, p) => t + p.end - p.start, 0)) / own.length;
      };
      expect(plan.forwardMs[stage]).toBeCloseTo(meanMs('F'), 9);
      expect(plan.backwardInputMs[stage]).toBeCloseTo(meanMs('B'), 9);
      expect(plan.backwardWeightMs[stage]).toBeCloseTo(meanMs('W'), 9);
    }
    // B holds what W lacks (attention's backward has no weights; selective recomputation is
    // counted with B), so B > W; a pipeline transfer is far shorter than a pass.
    for (let s = 0; s < stages.length; ++s) {
      expect(plan.backwardInputMs[s]).toBeGreaterThan(plan.backwardWeightMs[s]);
      expect(plan.sendMs).toBeLessThan(plan.forwardMs[s] / 10);
    }
    const rows = planRows(plan);
    expect(rows.map((r) => r.stage)).toEqual([...stages.map(String), 'planner input']);
    expect(Number(rows[rows.length - 1].f)).toBeCloseTo(runtimeMedian(plan.forwardMs), 1);
    // pp 2: sorted[2 // 2] is the larger of the two stages' times.
    expect(runtimeMedian(plan.forwardMs)).toBe(Math.max(...plan.forwardMs));
  });

  it("shows for each stage the order its GPU plays (zb-h1 at pp 2, zb-v at pp 4)", () => {
    const deep = setPath(setPath(setPath(base, 'strategy.pp', 4), 'strategy.dp', 2), 'training.global_batch', 16);
    for (const [name, config] of [
      ['zb-h1', pick(base, 'zb-h1')],
      ['zb-v', pick(deep, 'zb-v')],
    ] as const) {
      const r = simulate(config);
      const plan = r.pipelinePlan!;
      const rows = planRows(plan).slice(0, -1);
      const m = Number(config.training.global_batch) / Number(config.strategy.dp);
      const chunks = name === 'zb-v' ? 2 : 1;
      for (const d of r.devices) {
        const row = rows[d.stage];
        expect(row.order, `${name} stage ${d.stage}`).toBe(plan.stageOrders[d.stage]);
        expect(passes(r, d.rank).map((p) => p.pass), `${name} GPU ${d.rank}`).toEqual(withoutChunks(row.order));
        // Every micro-batch's F, B and W once per chunk; warm-up: the forwards before the first B.
        const tokens = row.order.split(' ');
        for (const letter of 'FBW') expect(tokens.filter((t) => t[0] === letter).length).toBe(m * chunks);
        expect(Number(row.warmup)).toBe(tokens.findIndex((t) => t[0] === 'B'));
      }
    }
  });
});
