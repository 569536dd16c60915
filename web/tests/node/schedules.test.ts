// The schedule picker against the core: it lists exactly the schedules the core accepts (the
// names its own error message lists for an unknown one), and picking any of them from the
// default scenario, even with too few micro-batches, gives a config the core compiles.
import { beforeAll, describe, expect, it } from 'vitest';
import { setPath } from '../../src/config_model';
import { controlForPath } from '../../src/controls';
import { isZeroBubble, pickSchedule, SCHEDULES } from '../../src/schedules';
import { loadModule, type ProteusModule } from '../support/module';

describe('schedule picker against the core', () => {
  let mod: ProteusModule;
  let base: Record<string, any>;
  beforeAll(async () => {
    mod = await loadModule();
    base = JSON.parse(mod.preset_text('scenario', 'default'));
  });

  it('offers every schedule the core accepts, and only those', () => {
    const bad = JSON.parse(mod.show_json(JSON.stringify(setPath(base, 'strategy.schedule', 'no-such-schedule'))));
    expect(bad.ok).toBe(false);
    expect(bad.error.path).toBe('strategy.schedule');
    // "schedule "no-such-schedule" is not one of: gpipe, 1f1b, ..."
    const accepted = String(bad.error.message).split('one of:')[1].split(',').map((x) => x.trim());
    expect(SCHEDULES.map((s) => s.value)).toEqual(accepted);
  });

  it('leaves a config the core compiles after picking any schedule, however few the micro-batches', () => {
    // default: dp 4, micro-batch 1, pp 2. global batch 8 = 2 micro-batches per pipeline (too
    // few for DualPipeV, 2*pp = 4); 12 = 3 (not a multiple of pp for interleaving).
    for (const gb of [8, 12, 128]) {
      let from = setPath(base, 'training.global_batch', gb);
      for (const s of SCHEDULES) {
        const resolved = JSON.parse(mod.show_json(JSON.stringify(from)));
        const picked = pickSchedule(from, resolved, s.value);
        const compiled = JSON.parse(mod.compile_json(JSON.stringify(picked)));
        expect(compiled.ok, `global batch ${gb}, ${s.value}: ${compiled.error?.path}: ${compiled.error?.message}`).toBe(true);
        from = picked; // the next pick starts from this one (virtual stages set, batch raised)
      }
    }
    // pp 4 on the same GPUs with 2 micro-batches: zb-v (planned from pass times) needs 4.
    const deep = setPath(setPath(setPath(base, 'strategy.pp', 4), 'strategy.dp', 2), 'training.global_batch', 4);
    const picked = pickSchedule(deep, JSON.parse(mod.show_json(JSON.stringify(deep))), 'zb-v');
    const compiled = JSON.parse(mod.compile_json(JSON.stringify(picked)));
    expect(compiled.ok, `${compiled.error?.path}: ${compiled.error?.message}`).toBe(true);
  });

  it('keeps zb_plan only where the core accepts it: picking any schedule from zb-h1 with zb_plan set compiles', () => {
    for (const plan of ['profiled', 'unit']) {
      const zb = setPath(setPath(base, 'strategy.schedule', 'zb-h1'), 'strategy.zb_plan', plan);
      expect(JSON.parse(mod.compile_json(JSON.stringify(zb))).ok).toBe(true);
      for (const s of SCHEDULES) {
        const picked = pickSchedule(zb, JSON.parse(mod.show_json(JSON.stringify(zb))), s.value);
        const compiled = JSON.parse(mod.compile_json(JSON.stringify(picked)));
        expect(compiled.ok, `${plan} -> ${s.value}: ${compiled.error?.path}: ${compiled.error?.message}`).toBe(true);
        if (isZeroBubble(s.value)) {
          // the resolved config gives the choice back as it was set
          expect(JSON.parse(mod.show_json(JSON.stringify(picked))).strategy.zb_plan).toBe(plan);
          continue;
        }
        // kept off the zero-bubble schedules, the core refuses it, and its error goes to the zb_plan control
        const refused = JSON.parse(mod.compile_json(JSON.stringify(setPath(picked, 'strategy.zb_plan', plan))));
        expect(refused.ok, s.value).toBe(false);
        expect(refused.error.path).toBe('strategy.zb_plan');
        expect(controlForPath(refused.error.path)).toBe('strategy.zb_plan');
      }
    }
  });

  it('names the unit-time order in its error for zb-v with too few micro-batches (the page offers it as the fix)', () => {
    // pp 4, dp 2, global batch 4: 2 micro-batches, between 1 and pp
    const deep = setPath(setPath(setPath(setPath(base, 'strategy.pp', 4), 'strategy.dp', 2), 'training.global_batch', 4), 'strategy.schedule', 'zb-v');
    const bad = JSON.parse(mod.compile_json(JSON.stringify(deep)));
    expect(bad.ok).toBe(false);
    expect(bad.error.path).toBe('strategy.schedule');
    expect(bad.error.message).toContain('zb_plan "unit"'); // app.ts fixFor matches this
    expect(JSON.parse(mod.compile_json(JSON.stringify(setPath(deep, 'strategy.zb_plan', 'unit')))).ok).toBe(true);
  });
});
