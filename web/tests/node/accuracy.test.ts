// The accuracy panel's rows are what `proteus validate` gives: each job (one case of
// tests/validation/published.json in a file of its own) run through the module's validate_json
// gives the same row as the same cases validated together, and the panel's group means
// (accuracy_model.groupMeans) equal validate_json's "groups" and "all". The cheapest cases
// only: every case is simulated byte-identically with the CLI in validation_parity.test.ts.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { groupMeans, parseValidationFile, validationJobs, type TimeRow } from '../../src/accuracy_model';
import { loadModule, type ProteusModule } from '../support/module';

const FILE = resolve(__dirname, '..', '..', '..', 'tests', 'validation', 'published.json');

describe('accuracy panel against validate_json', () => {
  let mod: ProteusModule;
  beforeAll(async () => {
    mod = await loadModule();
  });

  it('gives per case the rows and group means of the cases validated together', { timeout: 300_000 }, () => {
    const file = parseValidationFile(readFileSync(FILE, 'utf8'));
    const jobs = validationJobs(file);
    const time = jobs.filter((j) => j.kind === 'time').slice(0, 8);
    const memory = jobs.filter((j) => j.kind === 'memory').slice(0, 1);
    expect(time.length).toBe(8);
    const memoryCases = (file.memory_cases ?? []).filter((m) => memory.some((j) => j.id === m.id));
    const bases = file.cases.filter((c) => memoryCases.some((m) => m.same_config_as === c.id) && !time.some((j) => j.id === c.id)).map((c) => ({ ...c, expect: {} }));
    const together = JSON.parse(mod.validate_json(JSON.stringify({ targets: file.targets, cases: [...file.cases.filter((c) => time.some((j) => j.id === c.id)), ...bases], memory_cases: memoryCases })));
    expect(together.ok).toBe(true);
    const rows: TimeRow[] = [];
    for (const j of time) {
      const one = JSON.parse(mod.validate_json(j.file));
      expect(one.ok, j.id).toBe(true);
      expect(one.cases.length).toBe(1);
      expect(one.cases[0], j.id).toEqual(together.cases.find((c: any) => c.id === j.id));
      rows.push(one.cases[0]);
    }
    for (const j of memory) {
      const one = JSON.parse(mod.validate_json(j.file));
      expect(one.memory_cases.length).toBeGreaterThan(0);
      expect(one.memory_cases, j.id).toEqual(together.memory_cases.filter((m: any) => m.id === j.id));
    }
    // validate_json's order of cases is the file's; the panel's, cheapest first: the means
    // do not depend on it up to rounding of the sum.
    const { groups, all } = groupMeans(rows);
    expect(groups.map((g) => g.group)).toEqual(together.groups.map((g: any) => g.group));
    groups.forEach((g, i) => {
      expect(g.cases).toBe(together.groups[i].cases);
      expect(g.mape_pct).toBeCloseTo(together.groups[i].mape_pct, 10);
      expect(g.max_abs_error_pct).toBe(together.groups[i].max_abs_error_pct);
    });
    expect(all.cases).toBe(together.all.cases);
    expect(all.mape_pct).toBeCloseTo(together.all.mape_pct, 10);
  });
});
