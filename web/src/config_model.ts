// The config as the page edits it: plain JSON (DESIGN.md §4), read and written by dotted
// paths. The page keeps what the user chose; defaults come from the core's resolved config.

export type Config = Record<string, any>;

export function getPath(obj: any, path: string): any {
  let cur = obj;
  for (const k of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[k];
  }
  return cur;
}

/** A copy of `config` with `path` set to `value` (undefined deletes it). */
export function setPath(config: Config, path: string, value: unknown): Config {
  const out = structuredClone(config);
  const keys = path.split('.');
  let cur: any = out;
  for (let i = 0; i < keys.length - 1; ++i) {
    const k = keys[i];
    if (cur[k] === null || typeof cur[k] !== 'object' || Array.isArray(cur[k])) cur[k] = {};
    cur = cur[k];
  }
  const last = keys[keys.length - 1];
  if (value === undefined) delete cur[last];
  else cur[last] = value;
  return out;
}

/** A copy of `config` without `path`, and without the objects that removing it leaves empty; a
 * model or cluster entry left as {"preset": name} becomes the name, as the preset list writes it
 * (the core reads both alike: core/src/config/preset_merge.cpp). Unsetting a knob thus gives
 * back the config, and the share link, from before it was set. */
export function unsetPath(config: Config, path: string): Config {
  // Not set (a preset name's field included): nothing to remove, and setPath would replace the name.
  if (getPath(config, path) === undefined) return structuredClone(config);
  const out = setPath(config, path, undefined);
  const keys = path.split('.');
  // Top-level entries stay: a config without its "cluster" is another error than an empty one.
  for (let depth = keys.length - 1; depth > 1; --depth) {
    const parentPath = keys.slice(0, depth).join('.');
    const parent = getPath(out, parentPath);
    if (parent === null || typeof parent !== 'object' || Array.isArray(parent) || Object.keys(parent).length > 0) break;
    deleteKey(out, keys.slice(0, depth));
  }
  const entry = keys[0];
  const e = out[entry];
  if ((entry === 'model' || entry === 'cluster') && e && typeof e === 'object' && !Array.isArray(e) && Object.keys(e).length === 1 && typeof e.preset === 'string') out[entry] = e.preset;
  return out;
}

function deleteKey(obj: any, keys: string[]): void {
  const parent = keys.length > 1 ? getPath(obj, keys.slice(0, -1).join('.')) : obj;
  delete parent[keys[keys.length - 1]];
}

/** The preset name a model/cluster entry refers to ("name" or {"preset": "name", ...}). */
export function presetOf(entry: unknown): string | null {
  if (typeof entry === 'string') return entry;
  if (entry && typeof entry === 'object' && typeof (entry as any).preset === 'string') return (entry as any).preset;
  return null;
}

/** Number of GPUs of a resolved config. */
export function gpuCount(resolved: Config | null): number {
  const c = resolved?.cluster;
  return c ? Number(c.nodes) * Number(c.gpus_per_node) : 0;
}

/** Replica count that keeps dp·tp·pp·cp equal to the GPU count, or null when none does. */
export function fittingDp(gpus: number, strategy: { tp?: number; pp?: number; cp?: number }): number | null {
  const per = (strategy.tp ?? 1) * (strategy.pp ?? 1) * (strategy.cp ?? 1);
  if (!(gpus > 0) || !(per > 0) || gpus % per !== 0) return null;
  return gpus / per;
}

/**
 * A strategy with the knobs of a search row or a fit change replacing the current ones. The core
 * names recompute modules only under selective recompute, and a mixture of experts' expert_tp
 * (tp or 1) wherever the row states it, so the current ones go: recompute modules beside another
 * mode would be refused, an expert_tp of another tp too.
 */
export function mergeStrategy(current: Record<string, unknown> | undefined, knobs: Record<string, unknown>): Record<string, unknown> {
  const { recompute_modules: _, expert_tp: __, ...rest } = current ?? {};
  return { ...rest, ...knobs };
}

/**
 * The config without its recompute modules when nothing in it recomputes selectively: the
 * modules choose what selective recompute recomputes, and the core refuses them beside another
 * mode (the Recompute control switching away from selective must not leave them behind).
 */
export function dropStaleRecomputeModules(config: Config): Config {
  const s = config.strategy;
  if (!s || typeof s !== 'object' || s.recompute_modules === undefined || s.recompute === 'selective') return config;
  const overrides: unknown[] = Array.isArray(s.overrides) ? s.overrides : [];
  if (overrides.some((o) => (o as { recompute?: unknown })?.recompute === 'selective')) return config;
  const { recompute_modules: _, ...rest } = s;
  return { ...config, strategy: rest };
}

/** A short name for a strategy: "TP4 · PP2 · DP4 · mb1 · 1f1b". */
export function strategyLabel(config: Config, resolved?: Config | null): string {
  const s = { ...(resolved?.strategy ?? {}), ...(config.strategy ?? {}) };
  const parts: string[] = [];
  for (const k of ['tp', 'pp', 'dp', 'cp', 'ep'] as const) if ((s[k] ?? 1) > 1 || k === 'dp') parts.push(`${k.toUpperCase()}${s[k] ?? 1}`);
  // MoE parallel folding: the experts whole, the tp ranks in the expert-parallel group.
  if (s.expert_tp === 1 && (s.tp ?? 1) > 1) parts.push('ETP1');
  parts.push(`mb${s.micro_batch ?? 1}`);
  if (s.schedule) parts.push(s.zb_plan ? `${s.schedule} (${s.zb_plan} plan)` : String(s.schedule));
  if (s.zero) parts.push(`ZeRO-${s.zero}`);
  const modules: unknown = s.recompute_modules;
  const named = s.recompute === 'selective' && Array.isArray(modules) && modules.join('+') !== 'core_attn';
  if (s.recompute && s.recompute !== 'none') parts.push(named ? `rc:selective(${(modules as string[]).join('+')})` : `rc:${s.recompute}`);
  return parts.join(' · ');
}
