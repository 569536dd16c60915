// Every kind of work the core reports has a colour, a label and a help text in the timeline's
// legend (web/src/timeline/colors.ts), so a kind added to the core (a phase, a collective) cannot
// reach the page as an unnamed fallback colour. The result's breakdown lists every phase and every
// collective kind, used or not.
import { beforeAll, describe, expect, it } from 'vitest';
import { KINDS } from '../../src/timeline/colors';
import { loadModule, type ProteusModule } from '../support/module';

type Breakdown = { compute_by_phase_s: Record<string, number>; comm_by_collective_s: Record<string, number> };

describe('the legend names every kind the core reports', () => {
  let mod: ProteusModule;
  beforeAll(async () => {
    mod = await loadModule();
  });

  it('has an entry for each phase and collective kind of a result', () => {
    const result = JSON.parse(mod.simulate_json(mod.preset_text('scenario', 'default'), false, false, false));
    expect(result.ok).toBe(true);
    const b = result.breakdown as Breakdown;
    const kinds = [...Object.keys(b.compute_by_phase_s), ...Object.keys(b.comm_by_collective_s)];
    expect(kinds).toContain('ring_exchange');
    for (const kind of kinds) {
      expect(KINDS[kind], `legend entry for "${kind}"`).toBeDefined();
      expect(KINDS[kind].label.length).toBeGreaterThan(0);
      expect(KINDS[kind].help.length).toBeGreaterThan(0);
    }
  });
});
