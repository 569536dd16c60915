// The accuracy panel's bookkeeping (src/accuracy_model.ts): one job per case, cheapest first,
// then one per search ranking; the group means counted as core/src/api/validate.cpp counts
// them; and its pairwise rankings paired as validate.cpp pairs them.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { costOf, groupMeans, notRunCases, pairRankings, parseValidationFile, validationJobs, type TimeRow, type ValidationCase } from '../../src/accuracy_model';

const FILE = resolve(__dirname, '..', '..', '..', 'tests', 'validation', 'published.json');

const row = (id: string, group: string, error_pct: number): TimeRow => ({ id, group, source: '', published_s: 1, predicted_s: 1 + error_pct / 100, error_pct, gated: true, peak_memory_GiB: 0, oom: false });

// A case of a 7B model on one node of 8 GPUs; `training` and `strategy` override the defaults.
const config = (training: Record<string, unknown> = {}, strategy: Record<string, unknown> = {}, model = 'llama2-7b') => ({
  model,
  cluster: { gpu: 'H100', nodes: 1, gpus_per_node: 8 },
  training: { seq_len: 4096, global_batch: 128, precision: 'bf16', ...training },
  strategy: { tp: 2, pp: 1, dp: 4, micro_batch: 1, ...strategy },
});
const timed = (id: string, published_s: number, predicted_s: number, gated = true): TimeRow => ({
  id,
  group: 'H100 bf16',
  source: '',
  published_s,
  predicted_s,
  error_pct: ((predicted_s - published_s) / published_s) * 100,
  gated,
  peak_memory_GiB: 0,
  oom: false,
});

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
    const cases = jobs.filter((j) => j.kind !== 'search');
    for (let i = 1; i < cases.length; ++i) expect(cases[i].cost).toBeGreaterThanOrEqual(cases[i - 1].cost);
    // The search rankings after every case, in the file's order.
    expect(jobs.slice(cases.length).map((j) => j.id)).toEqual((file.search_rankings ?? []).map((e) => e.id));
    // Each job's file holds exactly its case (and, for memory, the case it shares a config with).
    for (const j of jobs) {
      const f = JSON.parse(j.file);
      if (j.kind === 'time') expect(f.cases.map((c: any) => c.id)).toEqual([j.id]);
      else if (j.kind === 'memory') expect(f.memory_cases.map((m: any) => m.id)).toEqual([j.id]);
      else {
        // A search ranking's file: the entry and its case with the published time validate_json simulates.
        expect(f.search_rankings.map((e: any) => e.id)).toEqual([j.id]);
        expect(f.cases.map((c: any) => c.id)).toEqual([f.search_rankings[0].case]);
        expect(f.cases[0].expect.iteration_time_s).toBeGreaterThan(0);
      }
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

describe('pairwise rankings', () => {
  // Hand-made cases: a and b differ in strategy only, c in precision (and FP8 recipe) only,
  // d in the model, e in the global batch (a training setting: not ranked against the others).
  const cases: ValidationCase[] = [
    { id: 'a', config: config({}, { tp: 2, dp: 4 }) },
    { id: 'b', config: config({}, { tp: 4, dp: 2 }) },
    { id: 'c', config: config({ precision: 'fp8', fp8_recipe: 'delayed' }) },
    { id: 'd', config: config({}, {}, 'llama2-13b') },
    { id: 'e', config: config({ global_batch: 256 }) },
  ];

  it('keeps a pair whose published faster is predicted faster, with both ratios slower / faster', () => {
    // Published a 2 s, b 3 s; predicted a 2.2 s, b 2.9 s: a stays faster.
    const p = pairRankings(cases, [timed('a', 2, 2.2), timed('b', 3, 2.9)]);
    expect(p).toEqual([{ faster: 'a', slower: 'b', published_ratio: 1.5, predicted_ratio: 2.9 / 2.2, kept: true, gated: true }]);
  });

  it('reports a reversed pair as not kept, the faster case the published faster whatever the file order', () => {
    // Published b 2 s faster than a 3 s; predicted b 3.1 s slower than a 3.0 s.
    const p = pairRankings(cases, [timed('a', 3, 3.0), timed('b', 2, 3.1)]);
    expect(p.map((x) => [x.faster, x.slower, x.kept])).toEqual([['b', 'a', false]]);
    expect(p[0].predicted_ratio).toBe(3.0 / 3.1); // below 1: the order reversed
  });

  it('pairs a precision-only difference, and neither a different model nor a different training setting', () => {
    const p = pairRankings(cases, [timed('a', 2, 2), timed('c', 1.5, 1.6), timed('d', 3, 3), timed('e', 4, 4)]);
    expect(p.map((x) => `${x.faster}<${x.slower}`)).toEqual(['c<a']);
  });

  it('skips equal published times, and pairs gated only when both cases are', () => {
    expect(pairRankings(cases, [timed('a', 2, 2), timed('b', 2, 3)])).toEqual([]);
    expect(pairRankings(cases, [timed('a', 2, 2), timed('b', 3, 3, false)])[0].gated).toBe(false);
  });

  it('pairs only the rows done, in the order of the file, whatever the order rows arrive in', () => {
    const rows = [timed('c', 1.5, 1.6), timed('b', 3, 3), timed('a', 2, 2)];
    expect(pairRankings(cases, rows).map((x) => `${x.faster}<${x.slower}`)).toEqual(['a<b', 'c<a', 'c<b']);
    expect(pairRankings(cases, rows.slice(0, 1))).toEqual([]);
  });
});
