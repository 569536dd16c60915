// Messages between the page and the simulation worker.
import type { ColumnsFromModule, CurveColumnsFromModule, ErrorInfo, FitChange, SimAnswer } from './result';

/** Sent first, at once: the worker imports the loader while the page compiles the module. */
export interface LoadMessage {
  type: 'load';
  /** URL of the Emscripten ES module loader (wasm/proteus.js). */
  loaderUrl: string;
}

/** Sent once compiled: the worker instantiates the module with the loader. */
export interface InitMessage {
  type: 'init';
  /** The compiled module (compiled once by the page, shared by every worker). */
  module: WebAssembly.Module;
}

export type Op =
  | { op: 'presets' }
  | { op: 'preset'; kind: 'model' | 'cluster' | 'scenario'; name: string }
  | { op: 'check'; config: string }
  | { op: 'tree'; config: string }
  | { op: 'simulate'; config: string; timeline: boolean }
  /** A scenario preset simulated as the page would send it (pageConfigText): start-up's first run. */
  | { op: 'simulate_scenario'; name: string; timeline: boolean }
  | { op: 'trace'; config: string }
  /** A validation file (one case of tests/validation/published.json), as `proteus validate` reads it. */
  | { op: 'validate'; file: string }
  | { op: 'import'; kind: 'megatron' | 'hf'; text: string; options: string }
  | { op: 'export_megatron'; config: string }
  /** Strategy search, shard `shard` of `shards` (search.ts runs one per worker and merges). */
  | { op: 'search'; config: string; top: number; shard: number; shards: number }
  /** The changes that make a run fit (asked for after the run is shown: it can take a while). */
  | { op: 'fit_advice'; config: string }
  | { op: 'merge_search'; shards: string[] };

export type CallMessage = { type: 'call'; id: number } & Op;

/** What each op answers with when it succeeds. */
export interface Answers {
  presets: PresetList;
  preset: string;
  check: { resolved: Record<string, any> };
  tree: string;
  simulate: SimAnswer;
  /** `config`: the text that was simulated. */
  simulate_scenario: SimAnswer & { config: string };
  trace: string;
  /** validate_json's answer (core/src/api/validate.cpp): cases, not_run, groups, memory_cases. */
  validate: Record<string, any>;
  import: ImportAnswer;
  export_megatron: string;
  /** The search result JSON text (docs/search.md, "Output"). */
  search: string;
  merge_search: string;
  /** fit_changes_json's answer: the changes and the warning lines that name them. */
  fit_advice: { fit_advice: FitChange[]; warnings: string[] };
}

/** A run imported from another tool's text (core/src/api/import_api.cpp, docs/import.md). */
export interface ImportAnswer {
  kind: string;
  config: Record<string, any>;
  /** Read but not applied, with the reason. */
  ignored: string[];
  /** Values the text does not give that the importer chose. */
  assumed: string[];
}

export interface PresetInfo {
  name: string;
  title?: string;
  description?: string;
  [k: string]: unknown;
}

export interface PresetList {
  models: PresetInfo[];
  clusters: PresetInfo[];
  scenarios: PresetInfo[];
  /** The largest text the module reads (api.h max_input_bytes): the page refuses more before sending it. */
  max_input_bytes?: number;
}

export type WorkerReply =
  /** `loaderAt`/`readyAt`: when the loader was imported and the module instantiated (epoch ms). */
  | { type: 'ready'; version: string; loaderAt: number; readyAt: number }
  | { type: 'fatal'; message: string }
  /** How far call `id` (a simulation) is: tasks ended of all its tasks (the core's executor). */
  | { type: 'progress'; id: number; done: number; total: number }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: ErrorInfo };

/** What the WebAssembly module exports (wasm/bindings.cpp): strings in, strings out. */
export interface ProteusModule {
  version(): string;
  presets_json(): string;
  preset_text(kind: string, name: string): string;
  show_json(config: string): string;
  tree_text(config: string): string;
  compile_json(config: string): string;
  simulate_json(config: string, timeline: boolean, memoryCurve: boolean, wallTime: boolean): string;
  chrome_trace_json(config: string): string;
  validate_json(validationText: string): string;
  import_json(kind: string, text: string, options: string): string;
  export_megatron_text(config: string): string;
  max_input_bytes(): number;
  /** One simulation: {result, resolved, timeline?} or {error} (wasm/bindings.cpp). */
  simulate_columns(config: string, timeline: boolean, memoryCurve: boolean, progress: ((done: number, total: number) => void) | null): { error?: string; result?: string; resolved?: string; curves?: CurveColumnsFromModule[]; timeline?: ColumnsFromModule };
  search_json(config: string, top: number, shard: number, shards: number, progress: ((decided: number, candidates: number) => void) | null): string;
  merge_search_json(shards: string[]): string;
  fit_changes_json(config: string, progress: ((decided: number, candidates: number) => void) | null): string;
}
