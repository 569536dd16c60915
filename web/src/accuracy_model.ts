// The accuracy panel's data, without the page: the validation file (tests/validation/
// published.json, read at build time) split into one small validation file per case, so the
// core's own validate_json (the code behind `proteus validate`) computes each row in the worker
// and rows fill in as their simulations finish; and the per-group mean errors over the rows
// done, counted as validate_json counts them (core/src/api/validate.cpp: mean |error| over
// the cases of a group, a group being the case's GPU type and training precision); and the
// rankings validate_json gives beside the errors: the pairwise rankings of the rows done
// (same pairing rule as validate.cpp) and one job per "search_rankings" entry, whose own
// validate_json call searches the entry's space (core/src/api/search_rankings.cpp).

export interface ValidationCase {
  id: string;
  gpu?: string;
  source?: string;
  config?: Record<string, any>;
  expect?: { iteration_time_s?: number };
  reported_only?: string;
  needs?: string;
}

export interface MemoryCase {
  id: string;
  source?: string;
  same_config_as: string;
  expect_GiB: Record<string, number>;
  [k: string]: unknown;
}

/** A "search_rankings" entry: the case's configuration against the best found in `search`. */
export interface SearchRankingEntry {
  id: string;
  case: string;
  source?: string;
  search: Record<string, unknown>;
  published_ratio: number;
  reported_only?: string;
}

export interface ValidationFile {
  about?: string;
  targets?: Record<string, number>;
  cases: ValidationCase[];
  memory_cases?: MemoryCase[];
  search_rankings?: SearchRankingEntry[];
}

/** One simulation job of the panel: a validation file holding one case (and what it needs). */
export interface Job {
  id: string;
  kind: 'time' | 'memory' | 'search';
  /** The text sent to validate_json. */
  file: string;
  /** The config a click on the row loads. */
  config: Record<string, any>;
  /** Micro-batches per iteration times GPUs / 8: orders the jobs, cheapest first (below). */
  cost: number;
}

/** A simulated time case, as validate_json's "cases" rows give it. */
export interface TimeRow {
  id: string;
  group: string;
  source: string;
  published_s: number;
  predicted_s: number;
  error_pct: number;
  gated: boolean;
  /** The simulated peak per GPU, and whether it is over the GPU's memory (the published run fitted). */
  peak_memory_GiB: number;
  oom: boolean;
}

/** A pairwise ranking, as validate_json's "rankings" rows give it. */
export interface PairRanking {
  faster: string;
  slower: string;
  published_ratio: number;
  predicted_ratio: number;
  kept: boolean;
  gated: boolean;
}

/** A search ranking, as validate_json's "search_rankings" rows give it (no best: nothing else fits). */
export interface SearchRankingRow {
  id: string;
  case: string;
  published_ratio: number;
  predicted_ratio?: number;
  kept: boolean;
  best: { strategy: Record<string, any>; summary: string; iteration_time_s: number } | null;
  gated: boolean;
}

export interface GroupMean {
  group: string;
  cases: number;
  mape_pct: number;
  max_abs_error_pct: number;
}

export function parseValidationFile(text: string): ValidationFile {
  const file = JSON.parse(text) as ValidationFile;
  if (!file || !Array.isArray(file.cases)) throw new Error('tests/validation/published.json: "cases" must be an array');
  return file;
}

/**
 * How long a case takes, roughly, to order the jobs (rows fill cheapest first; the 530B and
 * 1T runs with hundreds of micro-batches over thousands of GPUs come last): the executor's
 * work grows with micro-batches per iteration and with the ranks simulated. Only the order
 * depends on it, never a figure.
 */
export function costOf(config: Record<string, any>): number {
  const s = config.strategy ?? {};
  const t = config.training ?? {};
  const c = config.cluster ?? {};
  const microBatches = (Number(t.global_batch) || 1) / ((Number(s.micro_batch) || 1) * (Number(s.dp) || 1));
  const gpus = (Number(c.nodes) || 1) * (Number(c.gpus_per_node) || 8);
  return microBatches * (gpus / 8);
}

/** The cases that validate_json lists without simulating ("needs": what the simulator lacks). */
export function notRunCases(file: ValidationFile): { id: string; gpu: string; needs: string }[] {
  return file.cases.filter((c) => c.needs !== undefined).map((c) => ({ id: c.id, gpu: c.gpu ?? '', needs: c.needs! }));
}

/**
 * One job per time case with a published iteration time and per memory case, cheapest first.
 * A memory case's file carries the case whose config it shares (validate_json resolves
 * same_config_as within the file).
 */
export function validationJobs(file: ValidationFile): Job[] {
  const byId = new Map(file.cases.map((c) => [c.id, c]));
  const jobs: Job[] = [];
  for (const c of file.cases) {
    if (c.needs !== undefined || !c.config || c.expect?.iteration_time_s === undefined) continue;
    jobs.push({ id: c.id, kind: 'time', file: JSON.stringify({ targets: file.targets, cases: [c] }), config: c.config, cost: costOf(c.config) });
  }
  for (const m of file.memory_cases ?? []) {
    const base = byId.get(m.same_config_as);
    if (!base?.config) throw new Error(`memory case ${m.id}: same_config_as "${m.same_config_as}" names no case with a config`);
    // The base case without its published time: validate_json then only keeps its config.
    const shared = { id: base.id, gpu: base.gpu, config: base.config, expect: {} };
    jobs.push({ id: m.id, kind: 'memory', file: JSON.stringify({ targets: file.targets, cases: [shared], memory_cases: [m] }), config: base.config, cost: costOf(base.config) });
  }
  const sorted = jobs.map((j, i) => ({ j, i })).sort((a, b) => a.j.cost - b.j.cost || a.i - b.i).map((x) => x.j);
  return [...sorted, ...searchJobs(file)];
}

/**
 * One job per "search_rankings" entry, in the file's order, after every case job: each is a
 * strategy search (seconds), and its file holds the entry's case with its published time,
 * which validate_json simulates before searching the entry's space.
 */
export function searchJobs(file: ValidationFile): Job[] {
  const byId = new Map(file.cases.map((c) => [c.id, c]));
  return (file.search_rankings ?? []).map((e) => {
    const c = byId.get(e.case);
    if (!c?.config || c.expect?.iteration_time_s === undefined) throw new Error(`search ranking ${e.id}: case "${e.case}" names no case with a config and a published time`);
    return { id: e.id, kind: 'search', file: JSON.stringify({ targets: file.targets, cases: [c], search_rankings: [e] }), config: c.config, cost: costOf(c.config) };
  });
}

/** JSON equality as nlohmann::json's operator== has it: objects by key whatever the order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => sameJson(x, (b as unknown[])[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && sameJson((a as any)[k], (b as any)[k]));
}

/** A config's training settings less its precision and FP8 recipe (validate.cpp training_but_precision). */
function trainingButPrecision(config: Record<string, any>): unknown {
  const training = config.training ?? {};
  if (typeof training !== 'object' || training === null || Array.isArray(training)) return training;
  const { precision: _p, fp8_recipe: _r, ...rest } = training;
  return rest;
}

/** Same model, cluster and training but for the precision (validate.cpp same_setting). */
export function sameSetting(a: Record<string, any>, b: Record<string, any>): boolean {
  return sameJson(a.model ?? null, b.model ?? null) && sameJson(a.cluster ?? null, b.cluster ?? null) && sameJson(trainingButPrecision(a), trainingButPrecision(b));
}

/**
 * The pairwise rankings of the rows done, as validate_json lists them: every two cases in the
 * file's order (`cases`) with a row each, the same setting (sameSetting) and different
 * published times; kept when the published faster is also predicted faster; gated when both are.
 */
export function pairRankings(cases: ValidationCase[], rows: TimeRow[]): PairRanking[] {
  const rowOf = new Map(rows.map((r) => [r.id, r]));
  const done = cases.filter((c) => c.config && rowOf.has(c.id)).map((c) => ({ config: c.config!, row: rowOf.get(c.id)! }));
  const out: PairRanking[] = [];
  for (let a = 0; a < done.length; ++a)
    for (let b = a + 1; b < done.length; ++b) {
      const x = done[a].row;
      const y = done[b].row;
      if (!sameSetting(done[a].config, done[b].config) || x.published_s === y.published_s) continue;
      const [fast, slow] = x.published_s < y.published_s ? [x, y] : [y, x];
      out.push({
        faster: fast.id,
        slower: slow.id,
        published_ratio: slow.published_s / fast.published_s,
        predicted_ratio: slow.predicted_s / fast.predicted_s,
        kept: fast.predicted_s < slow.predicted_s,
        gated: x.gated && y.gated,
      });
    }
  return out;
}

/** Mean absolute error per group, and over every row ("all"), as validate_json's "groups"/"all". */
export function groupMeans(rows: TimeRow[]): { groups: GroupMean[]; all: GroupMean } {
  const sums = new Map<string, GroupMean>();
  const all: GroupMean = { group: 'all', cases: 0, mape_pct: 0, max_abs_error_pct: 0 };
  const add = (g: GroupMean, e: number) => {
    g.cases += 1;
    g.mape_pct += Math.abs(e); // a sum until the end
    g.max_abs_error_pct = Math.max(g.max_abs_error_pct, Math.abs(e));
  };
  for (const r of rows) {
    if (!sums.has(r.group)) sums.set(r.group, { group: r.group, cases: 0, mape_pct: 0, max_abs_error_pct: 0 });
    add(sums.get(r.group)!, r.error_pct);
    add(all, r.error_pct);
  }
  const mean = (g: GroupMean): GroupMean => ({ ...g, mape_pct: g.cases ? g.mape_pct / g.cases : 0 });
  // validate_json lists groups in std::map order: byte-wise ascending names.
  const groups = [...sums.values()].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0)).map(mean);
  return { groups, all: mean(all) };
}
