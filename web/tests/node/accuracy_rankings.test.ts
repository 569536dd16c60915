// The accuracy panel's rankings are those of `proteus validate`: for the repository's validation
// file, the pairwise rankings the panel computes from validate_json's case rows (in the order
// the panel's jobs finish: cheapest first) equal validate_json's own "rankings", and each
// search-ranking job (the entry and its case in a file of their own) gives validate_json's
// "search_rankings" row for the whole file. Both also agree with the native CLI's printed
// lines ("ranking: ...", "search ranking: ..."), the search's best strategy as the CLI prints it.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { pairRankings, parseValidationFile, validationJobs, type TimeRow } from '../../src/accuracy_model';
import { loadModule, type ProteusModule } from '../support/module';

const CLI = process.env.PROTEUS_CLI ?? resolve(__dirname, '..', '..', '..', 'build', 'bin', 'proteus');
const FILE = resolve(__dirname, '..', '..', '..', 'tests', 'validation', 'published.json');

/** `proteus validate FILE`'s stdout (it exits 1 when a target is missed; the lines are there still). */
function nativeValidate(file: string): string {
  try {
    return execFileSync(CLI, ['validate', file], { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e: any) {
    return String(e.stdout ?? '');
  }
}

describe('accuracy panel rankings against validate_json and the CLI', () => {
  let mod: ProteusModule;
  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`native CLI ${CLI} not found: build it first or set PROTEUS_CLI`);
    mod = await loadModule();
  });

  it('computes validate_json\'s pairwise rankings and runs its search rankings one job each', { timeout: 900_000 }, () => {
    const text = readFileSync(FILE, 'utf8');
    const file = parseValidationFile(text);
    // The whole file but its memory cases (they take no part in a ranking).
    const t0 = performance.now();
    const whole = JSON.parse(mod.validate_json(JSON.stringify({ ...file, memory_cases: [] })));
    const wholeMs = performance.now() - t0;
    expect(whole.ok).toBe(true);
    expect(whole.rankings.length).toBeGreaterThan(0);

    // Rows as the panel gets them: in its jobs' order, not the file's.
    const jobs = validationJobs(file);
    const byId = new Map<string, TimeRow>(whole.cases.map((c: TimeRow) => [c.id, c]));
    const rows = jobs.filter((j) => j.kind === 'time').map((j) => byId.get(j.id)!);
    expect(rows.length).toBe(whole.cases.length);
    expect(pairRankings(file.cases, rows)).toEqual(whole.rankings);

    const searches = jobs.filter((j) => j.kind === 'search');
    expect(searches.length).toBe(whole.search_rankings.length);
    const searchMs: Record<string, number> = {};
    searches.forEach((j, i) => {
      const s0 = performance.now();
      const one = JSON.parse(mod.validate_json(j.file));
      searchMs[j.id] = Math.round(performance.now() - s0);
      expect(one.ok, j.id).toBe(true);
      expect(one.search_rankings, j.id).toEqual([whole.search_rankings[i]]);
    });
    console.log(`validate_json, whole file without memory cases: ${Math.round(wholeMs)} ms; search-ranking jobs (ms): ${JSON.stringify(searchMs)}`);

    // The native CLI's lines, in validate_json's order.
    const out = nativeValidate(FILE).split('\n');
    const pairLines = out.filter((l) => l.startsWith('ranking: '));
    expect(pairLines).toEqual(whole.rankings.map((k: any) => `ranking: ${k.faster} < ${k.slower}${k.kept ? '  kept' : '  NOT KEPT'}${k.gated ? '' : '  (reported)'}`));
    const searchLines = out.filter((l) => l.startsWith('search ranking: '));
    expect(searchLines.length).toBe(whole.search_rankings.length);
    whole.search_rankings.forEach((k: any, i: number) => {
      const line = searchLines[i];
      expect(line.startsWith(`search ranking: ${k.case} < the best of its space`), line).toBe(true);
      if (k.best) expect(line, k.id).toContain(`: ${k.best.summary})`);
      expect(line.endsWith(`${k.kept ? '  kept' : '  NOT KEPT'}${k.gated ? '' : '  (reported)'}`), line).toBe(true);
    });
  });
});
