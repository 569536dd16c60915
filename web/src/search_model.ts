// The page's strategy search, the parts without a DOM: the config a search runs, the
// live merge of finished shards, the Pareto front and the tp x pp heat map
// (docs/search.md; the core's merge_search_json gives the final result).
import { mergeStrategy } from './config_model';

/** A ranked candidate of the search result JSON (docs/search.md, "Output"). */
export interface Candidate {
  index: number;
  strategy: Record<string, unknown> & { tp: number; pp: number; dp: number };
  iteration_time_s: number;
  mfu: number;
  peak_memory_GiB: number;
}

export interface SearchCounts {
  enumerated: number;
  /** Every candidate of the shard: invalid, over memory, pruned, simulated or failed. */
  evaluated: number;
  invalid: number;
  no_fit_bound: number;
  pruned_time: number;
  simulated: number;
  no_fit_simulated: number;
  failed: number;
  [k: string]: number;
}

export interface SearchResult {
  ranked: Candidate[];
  counts: SearchCounts;
  memory_budget_GiB: number;
}

/** The knobs the form restricts (a config's "search" object; docs/config.md). */
export const SEARCH_KNOBS = ['tp', 'pp', 'cp', 'micro_batch', 'zero', 'recompute', 'recompute_modules', 'schedule'] as const;
export type SearchKnob = (typeof SEARCH_KNOBS)[number];
const TEXT_KNOBS: ReadonlySet<string> = new Set(['recompute', 'schedule']);
/** A knob's list: numbers, names, or (recompute_modules) sets of module names. */
export type KnobList = (number | string)[] | string[][];

/**
 * "1, 2, 4" -> [1, 2, 4]; "" -> null (every value); an error message when malformed. Recompute
 * modules are sets joined by '+': "core_attn, moe_act+layernorm" -> [["core_attn"], ["moe_act",
 * "layernorm"]] (the core checks the names).
 */
export function parseList(knob: SearchKnob, text: string): KnobList | null | string {
  const parts = text.split(/[\s,;]+/).filter(Boolean);
  if (parts.length === 0) return null;
  if (knob === 'recompute_modules') {
    const sets = parts.map((p) => p.split('+').filter(Boolean));
    if (sets.some((set) => set.length === 0)) return 'search.recompute_modules: give module names joined by + (moe_act+layernorm)';
    return sets;
  }
  if (TEXT_KNOBS.has(knob)) return parts;
  const out = parts.map(Number);
  if (!out.every((v) => Number.isInteger(v) && v >= 0)) return `search.${knob}: give whole numbers separated by commas`;
  return out;
}

/**
 * The config a search runs: the current config with a "search" object (lists for the knobs
 * given, every value for the others) and the memory reserve (a fraction). The current
 * strategy supplies only the knobs the search does not vary, so its searched knobs go.
 */
export function searchConfig(config: Record<string, any>, lists: Partial<Record<SearchKnob, KnobList>>, reserve: number): Record<string, any> {
  const out = structuredClone(config);
  const search: Record<string, unknown> = { memory_reserve: reserve };
  for (const [k, v] of Object.entries(lists)) if (v) search[k] = v;
  out.search = search;
  if (out.strategy && typeof out.strategy === 'object') {
    for (const k of ['dp', 'tp', 'pp', 'cp', 'ep', 'expert_tp', 'micro_batch', 'schedule', 'virtual_stages', 'sequence_parallel', 'zero', 'recompute', 'stage_layers']) delete out.strategy[k];
    // The config's recompute modules are the set the search starts from; a config may hold them
    // only beside selective recompute (each candidate then sets its own recompute).
    if (out.strategy.recompute_modules !== undefined) out.strategy.recompute = 'selective';
  }
  return out;
}

/** The config a ranked row stands for: the current config with the row's strategy. */
export function configWithStrategy(config: Record<string, any>, strategy: Record<string, unknown>): Record<string, any> {
  const out = structuredClone(config);
  delete out.search;
  out.strategy = mergeStrategy(out.strategy, strategy);
  return out;
}

function faster(a: Candidate, b: Candidate): number {
  return a.iteration_time_s !== b.iteration_time_s ? a.iteration_time_s - b.iteration_time_s : a.index - b.index;
}

/** The best `top` of the shards finished so far (what the table shows while others run). */
export function liveRanking(shards: SearchResult[], top: number): Candidate[] {
  return shards.flatMap((s) => s.ranked).sort(faster).slice(0, top);
}

/** Candidates no other beats on both time and memory, fastest first. */
export function paretoFront(rows: Candidate[]): Candidate[] {
  const front: Candidate[] = [];
  let leastMemory = Infinity;
  for (const r of [...rows].sort(faster)) {
    if (r.peak_memory_GiB < leastMemory) {
      front.push(r);
      leastMemory = r.peak_memory_GiB;
    }
  }
  return front;
}

export interface HeatMap {
  tps: number[];
  pps: number[];
  /** best[i][j]: the fastest iteration time (s) among rows with tp = tps[i], pp = pps[j]; null if none. */
  best: (number | null)[][];
}

/** Best iteration time per (tp, pp) among the rows. */
export function heatMap(rows: Candidate[]): HeatMap {
  const tps = [...new Set(rows.map((r) => r.strategy.tp))].sort((a, b) => a - b);
  const pps = [...new Set(rows.map((r) => r.strategy.pp))].sort((a, b) => a - b);
  const best = tps.map(() => pps.map((): number | null => null));
  for (const r of rows) {
    const i = tps.indexOf(r.strategy.tp), j = pps.indexOf(r.strategy.pp);
    if (best[i][j] === null || r.iteration_time_s < best[i][j]!) best[i][j] = r.iteration_time_s;
  }
  return { tps, pps, best };
}

/**
 * "tp 4 · pp 8 · dp 32 · mb 2 · interleaved-1f1b v12 · SP · ZeRO 1 · selective", with the recompute
 * modules when they are not Megatron's default: "selective (moe_act, layernorm)".
 */
export function strategyText(s: Record<string, any>): string {
  const parts = [`tp ${s.tp}`, `pp ${s.pp}`, `dp ${s.dp}`];
  if (s.cp > 1) parts.push(`cp ${s.cp}`);
  if (s.ep > 1) parts.push(`ep ${s.ep}`);
  if (s.expert_tp === 1 && s.tp > 1) parts.push('expert tp 1');
  parts.push(`mb ${s.micro_batch}`);
  if (s.pp > 1) parts.push(s.schedule === 'interleaved-1f1b' ? `${s.schedule} v${s.virtual_stages}` : String(s.schedule));
  if (s.sequence_parallel) parts.push('SP');
  const modules: string[] = Array.isArray(s.recompute_modules) ? s.recompute_modules : [];
  const namedModules = modules.length > 0 && !(modules.length === 1 && modules[0] === 'core_attn');
  parts.push(`ZeRO ${s.zero}`, namedModules ? `${s.recompute} (${modules.join(', ')})` : String(s.recompute));
  return parts.join(' · ');
}

/**
 * The search's progress over its shards: candidates decided (invalid, over memory, simulated,
 * failed; a finished shard all of its own) of the candidates the shards have reported.
 */
export function searchProgressText(decided: number[], candidates: number[], shardsDone: number, shards: number): { fraction: number; text: string } {
  const d = decided.reduce((a, b) => a + b, 0);
  const c = candidates.reduce((a, b) => a + b, 0);
  const fraction = c > 0 ? d / c : 0;
  return { fraction, text: `${d.toLocaleString('en-US')} of ${c.toLocaleString('en-US')} candidates decided, ${shardsDone} of ${shards} shards done…` };
}
