// The accuracy panel's bookkeeping (src/accuracy_model.ts): one job per case, cheapest first,
// and the group means counted as core/src/api/validate.cpp counts them.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { costOf, groupMeans, notRunCases, parseValidationFile, validationJobs, type TimeRow } from '../../src/accuracy_model';

const FILE = resolve(__dirname, '..', '..', '..', 'tests', 'validation', 'published.json');

const row = (id: string, group: string, error_pct: number): TimeRow => ({ id, group, source: '', published_s: 1, predicted_s: 1 + error_pct / 100, error_pct, gated: true });

describe('accuracy panel model', () => {
  it('averages |error| per group and over all rows, groups in byte order like std::map', () => {
    // H100 bf16: |-30| and |+10| -> mean 20, worst 30; A100 fp16: |+4| -> 4; all: (30+10+4)/3.
    const { groups, all } = groupMeans([row('a', 'H100 bf16', -30), row('b', 'A100 fp16', 4), row('c', 'H100 bf16', 10)]);
    expect(groups.map((g) => g.group)).toEqual(['A100 fp16', 'H100 bf16']);
    expect(groups[1]).toEqual({ group: 'H100 bf16', cases: 2, mape_pct: 20, max_abs_error_pct: 30 });
    expect(groups[0].mape_pct).toBe(4);
    expect(all.cases).toBe(3);
    expect(all.mape_pct).toBeCloseTo(44 / 3, 12);
    expect(all.max_abs_error_pct).toBe(30);
    expect(groupMeans([]).all).toEqual({ group: 'all', cases: 0, mape_pct: 0, max_abs_error_pct: 0 });
  });

  it('orders by micro-batches per iteration times GPUs / 8', () => {
    // 1536 / (1 x 8) = 192 micro-batches over 128 nodes of 8 GPUs: 192 x 128 = 24576.
    expect(costOf({ training: { global_batch: 1536 }, strategy: { micro_batch: 1, dp: 8 }, cluster: { nodes: 128 } })).toBe(24576);
    // 4 GPUs of one node: 32 / (1 x 4) = 8 micro-batches x 4/8.
    expect(costOf({ training: { global_batch: 32 }, strategy: { micro_batch: 1, dp: 4 }, cluster: { nodes: 1, gpus_per_node: 4 } })).toBe(4);
  });

  it('makes one job per simulated case of the repository file, cheapest first, and lists the rest', () => {
    const file = parseValidationFile(readFileSync(FILE, 'utf8'));
    const jobs = validationJobs(file);
    const timed = file.cases.filter((c) => c.needs === undefined && c.config && c.expect?.iteration_time_s !== undefined);
    const memory = file.memory_cases ?? [];
    expect(jobs.filter((j) => j.kind === 'time').map((j) => j.id).sort()).toEqual(timed.map((c) => c.id).sort());
    expect(jobs.filter((j) => j.kind === 'memory').map((j) => j.id).sort()).toEqual(memory.map((m) => m.id).sort());
    for (let i = 1; i < jobs.length; ++i) expect(jobs[i].cost).toBeGreaterThanOrEqual(jobs[i - 1].cost);
    // Each job's file holds exactly its case (and, for memory, the case it shares a config with).
    for (const j of jobs) {
      const f = JSON.parse(j.file);
      if (j.kind === 'time') expect(f.cases.map((c: any) => c.id)).toEqual([j.id]);
      else expect(f.memory_cases.map((m: any) => m.id)).toEqual([j.id]);
      expect(f.cases[0].config).toEqual(j.config);
    }
    const notRun = notRunCases(file);
    expect(notRun.length).toBe(file.cases.filter((c) => c.needs !== undefined).length);
    for (const c of notRun) expect(c.needs.length).toBeGreaterThan(0);
  });

  it('names the memory case whose same_config_as is missing', () => {
    expect(() => validationJobs({ cases: [], memory_cases: [{ id: 'm', same_config_as: 'nope', expect_GiB: { x: 1 } }] })).toThrow(/memory case m: same_config_as "nope"/);
  });
});
