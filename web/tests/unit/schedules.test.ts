import { describe, expect, it } from 'vitest';
import { ALL_CONTROLS } from '../../src/controls';
import { explainZbPlan, isZeroBubble, pickSchedule, SCHEDULES, ZB_PLANS, zbPlanOf } from '../../src/schedules';

// The default scenario's strategy: pp 2, dp 4, micro-batch 1 (core/presets/scenarios/default.json).
const base = { training: { global_batch: 128 }, strategy: { pp: 2, dp: 4, micro_batch: 1, schedule: '1f1b', virtual_stages: 1 } };

describe('schedule picker', () => {
  it('lists every named schedule the core accepts (docs/config.md strategy.schedule), each explained', () => {
    expect(SCHEDULES.map((s) => s.value)).toEqual(['gpipe', '1f1b', 'interleaved-1f1b', 'zb-h1', 'zb-h2', 'zb-v', 'dualpipe-v', 'dualpipe']);
    for (const s of SCHEDULES) expect(s.explain.length).toBeGreaterThan(30);
  });

  it('sets virtual stages for interleaving and back to 1 for the others', () => {
    expect(pickSchedule(base, null, 'interleaved-1f1b').strategy.virtual_stages).toBe(2);
    const inter = { ...base, strategy: { ...base.strategy, schedule: 'interleaved-1f1b', virtual_stages: 3 } };
    expect(pickSchedule(inter, null, 'zb-v').strategy.virtual_stages).toBe(1); // zb-v's two chunks are its own
    expect(pickSchedule(inter, null, 'interleaved-1f1b').strategy.virtual_stages).toBe(3); // kept
  });

  it('raises the global batch to what the schedule needs, and only then', () => {
    // 8 / (dp 4 × micro-batch 1) = 2 micro-batches per pipeline
    const small = { ...base, training: { global_batch: 8 } };
    expect(pickSchedule(small, null, 'interleaved-1f1b').training.global_batch).toBe(8); // 2 % pp 2 == 0
    expect(pickSchedule(small, null, 'dualpipe-v').training.global_batch).toBe(16); // 2 × pp = 4 micro-batches × dp 4
    const odd = { ...base, training: { global_batch: 12 } }; // 3 micro-batches
    expect(pickSchedule(odd, null, 'interleaved-1f1b').training.global_batch).toBe(16); // 4 = next multiple of pp
    expect(pickSchedule(odd, null, '1f1b').training.global_batch).toBe(12);
    // DualPipe: an even number, at least 2 × pp = 4: 3 -> 4 micro-batches (16); 5 -> 6 (24); 6 stays
    expect(pickSchedule(odd, null, 'dualpipe').training.global_batch).toBe(16);
    expect(pickSchedule({ ...base, training: { global_batch: 20 } }, null, 'dualpipe').training.global_batch).toBe(24);
    expect(pickSchedule({ ...base, training: { global_batch: 24 } }, null, 'dualpipe').training.global_batch).toBe(24);
    // ZB-V planned from pass times (the default): 1 or at least pp micro-batches. pp 4, dp 2:
    // 2 -> 4 micro-batches (global batch 8); 1 stays; under zb_plan "unit" 2 stays.
    const deep = { ...base, strategy: { ...base.strategy, pp: 4, dp: 2 } };
    expect(pickSchedule({ ...deep, training: { global_batch: 4 } }, null, 'zb-v').training.global_batch).toBe(8);
    expect(pickSchedule({ ...deep, training: { global_batch: 2 } }, null, 'zb-v').training.global_batch).toBe(2);
    const unit = { ...deep, strategy: { ...deep.strategy, zb_plan: 'unit' }, training: { global_batch: 4 } };
    expect(pickSchedule(unit, null, 'zb-v').training.global_batch).toBe(4);
    const fsdp = { ...deep, strategy: { ...deep.strategy, framework: 'fsdp' }, training: { global_batch: 4 } };
    expect(pickSchedule(fsdp, null, 'zb-v').training.global_batch).toBe(4); // PyTorch's static order
    // values the config leaves out come from the resolved config
    const bare = { strategy: { schedule: '1f1b' } };
    expect(pickSchedule(bare, base, 'dualpipe-v').training?.global_batch).toBeUndefined(); // 32 ≥ 4
  });

  it('has a zb_plan control shown for the zero-bubble schedules only, each choice explained', () => {
    const spec = ALL_CONTROLS.find((c) => c.path === 'strategy.zb_plan')!;
    // right after the schedule, whose explanations and default rule it shares
    expect(ALL_CONTROLS[ALL_CONTROLS.indexOf(spec) - 1].path).toBe('strategy.schedule');
    expect(spec.options!.map(([v]) => v)).toEqual(['', 'profiled', 'unit']); // '' leaves it unset
    for (const p of ZB_PLANS) expect(spec.optionTitles![p.value].length).toBeGreaterThan(30);
    const shown = SCHEDULES.filter((s) => spec.shownWhen!({ strategy: { schedule: s.value } }, null)).map((s) => s.value);
    expect(shown).toEqual(['zb-h1', 'zb-h2', 'zb-v']);
    expect(shown.every(isZeroBubble)).toBe(true);
    // the schedule the config leaves to its default comes from the resolved config
    expect(spec.shownWhen!({}, { strategy: { schedule: 'zb-v' } })).toBe(true);
    expect(spec.shownWhen!({}, { strategy: { schedule: '1f1b' } })).toBe(false);
  });

  it("resolves an unset zb_plan to the framework's default, and says which", () => {
    expect(zbPlanOf({}, null)).toBe('profiled'); // megatron when nothing says
    expect(zbPlanOf({}, { strategy: { framework: 'megatron' } })).toBe('profiled');
    expect(zbPlanOf({}, { strategy: { framework: 'fsdp' } })).toBe('unit');
    expect(zbPlanOf({ strategy: { framework: 'deepspeed' } }, { strategy: { framework: 'megatron' } })).toBe('unit');
    expect(zbPlanOf({ strategy: { zb_plan: 'unit' } }, null)).toBe('unit');
    expect(explainZbPlan('', {}, { strategy: { framework: 'megatron' } })).toMatch(/megatron plays “profiled/);
    expect(explainZbPlan('', { strategy: { framework: 'fsdp' } }, null)).toMatch(/fsdp plays “unit times/);
    expect(explainZbPlan('unit', {}, null)).toBe(ZB_PLANS[2].explain);
  });

  it('unsets zb_plan when the schedule leaves the zero-bubble ones, and keeps it among them', () => {
    const zb = { ...base, strategy: { ...base.strategy, schedule: 'zb-h1', zb_plan: 'unit' } };
    for (const s of SCHEDULES) {
      const picked = pickSchedule(zb, null, s.value);
      expect('zb_plan' in picked.strategy, s.value).toBe(isZeroBubble(s.value));
      if (isZeroBubble(s.value)) expect(picked.strategy.zb_plan).toBe('unit');
    }
    expect(zb.strategy.zb_plan).toBe('unit'); // the config given is not changed
  });
});
