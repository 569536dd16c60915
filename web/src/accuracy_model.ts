// The accuracy panel's data, without the page: the validation file (tests/validation/
// published.json, read at build time) split into one small validation file per case, so the
// core's own validate_json (the code behind `proteus validate`) computes each row in the worker
// and rows fill in as their simulations finish; and the per-group mean errors over the rows
// done, counted as validate_json counts them (core/src/api/validate.cpp: mean |error| over
// the cases of a group, a group being the case's GPU type and training precision).

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

export interface ValidationFile {
  about?: string;
  targets?: Record<string, number>;
  cases: ValidationCase[];
  memory_cases?: MemoryCase[];
}

/** One simulation job of the panel: a validation file holding one case (and what it needs). */
export interface Job {
  id: string;
  kind: 'time' | 'memory';
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
  return jobs.map((j, i) => ({ j, i })).sort((a, b) => a.j.cost - b.j.cost || a.i - b.i).map((x) => x.j);
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
