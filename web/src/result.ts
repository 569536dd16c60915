// The result object (DESIGN.md §5) as the page sees it, and the conversion of the timeline
// into columnar typed arrays (done in the worker; the page never walks span objects).
import { readPipelinePlan, type PipelinePlan } from './pipeline_plan';

export interface Summary {
  iteration_time_s: number;
  samples_per_s: number;
  tokens_per_s: number;
  model_tflops_per_gpu: number;
  mfu: number;
  hfu: number;
  peak_memory_GiB: number;
  memory_capacity_GiB: number;
  oom: boolean;
  compute_fraction: number;
  exposed_comm_fraction: number;
  bubble_fraction: number;
}

export interface MemoryBreakdown {
  weights: number;
  gradients: number;
  optimizer_states: number;
  activations: number;
  communication_buffers: number;
  [k: string]: number;
}

export interface Device {
  rank: number;
  stage: number;
  multiplicity?: number;
  peak_memory_GiB: number;
  memory_breakdown_GiB: MemoryBreakdown;
  busy_s: Record<string, number>;
  exposed_comm_s?: number;
  end_s?: number;
}

export interface ErrorInfo {
  code: string;
  path: string;
  message: string;
}

/**
 * Spans as columns: span i is (rank[i], stream[i], kind[i], ...). Strings are interned.
 * The core writes them (core/src/report/timeline_columns.cpp); the worker transfers the
 * buffers to the page without copying.
 */
export interface Spans {
  n: number;
  start: Float64Array;
  end: Float64Array;
  rank: Int32Array;
  mb: Int32Array;
  stream: Uint8Array;
  kind: Uint8Array;
  name: Uint32Array;
  /** index into `phases` (forward, backward_input, ...) */
  phase: Uint8Array;
  /** collective: its size S in bytes; compute: bytes moved */
  bytes: Float64Array;
  /** compute: FLOPs; collective: 0 */
  flops: Float64Array;
  /** collective: group size; compute: 0 */
  group: Int32Array;
  /** collective: nodes its group spans; compute: 0 */
  nodes: Int32Array;
  /** send-recv: span index of the matching member on the other rank, -1 if none */
  peer: Int32Array;
  /** CSR: span i waits for deps[depOffsets[i] .. depOffsets[i+1]) */
  depOffsets: Int32Array;
  deps: Int32Array;
  streams: string[];
  kinds: string[];
  names: string[];
  phases: string[];
  /** tasks before the cap (simulation.max_timeline_spans) */
  totalTasks: number;
}

export interface MemoryCurve {
  rank: number;
  t: Float64Array;
  gib: Float64Array;
}

/** What the page holds for one simulation: parsed parts plus the exact result text. */
/** One change of the strategy that makes an out-of-memory run fit (result "fit_advice"). */
export interface FitChange {
  change: string; // "pp 1 -> 8, dp 8 -> 1"
  strategy: Record<string, unknown>; // the whole strategy after the change
  iteration_time_s: number;
  peak_memory_GiB: number;
  mfu: number;
}

export interface SimResult {
  summary: Summary;
  devices: Device[];
  warnings: string[];
  /** Present (up to three, fastest first) only when the run does not fit. */
  fitAdvice: FitChange[];
  /** A zero-bubble schedule planned from measured pass times (zb_plan "profiled"), else null. */
  pipelinePlan: PipelinePlan | null;
  stats: Record<string, number>;
  breakdown: Record<string, unknown>;
  spans: Spans;
  curves: MemoryCurve[];
}

/** What the worker sends for one simulation: the result text as the core wrote it (without
 * the timeline), the resolved config, and the parsed result whose columns were transferred. */
export interface SimAnswer {
  text: string;
  resolved: Record<string, any>;
  result: SimResult;
  /** Milliseconds in the wasm call and in parsing; `startAt`/`endAt`: the call's ends (epoch ms). */
  ms: { simulate: number; parse: number; startAt: number; endAt: number };
}

class Interner {
  readonly list: string[] = [];
  private readonly map = new Map<string, number>();
  id(s: string): number {
    let i = this.map.get(s);
    if (i === undefined) {
      i = this.list.length;
      this.list.push(s);
      this.map.set(s, i);
    }
    return i;
  }
}

interface SpanObject {
  rank: number;
  stream: string;
  name: string;
  kind: string;
  mb: number;
  start_s: number;
  end_s: number;
}

/** Empty span columns for n spans (the name tables are shared, not copied). */
export function allocateSpans(n: number, streams: string[], kinds: string[], names: string[]): Spans {
  return {
    n,
    start: new Float64Array(n),
    end: new Float64Array(n),
    rank: new Int32Array(n),
    mb: new Int32Array(n),
    stream: new Uint8Array(n),
    kind: new Uint8Array(n),
    name: new Uint32Array(n),
    phase: new Uint8Array(n),
    bytes: new Float64Array(n),
    flops: new Float64Array(n),
    group: new Int32Array(n),
    nodes: new Int32Array(n),
    peer: new Int32Array(n).fill(-1),
    depOffsets: new Int32Array(n + 1),
    deps: new Int32Array(0),
    streams,
    kinds,
    names,
    phases: [],
    totalTasks: n,
  };
}

/** The columns object the module's simulate_columns returns (wasm/bindings.cpp): the spans' columns, without their count. */
export type ColumnsFromModule = Omit<Spans, 'n'>;

export function spansFromColumns(c: ColumnsFromModule | undefined): Spans {
  if (!c) return allocateSpans(0, [], [], []);
  return { n: c.start.length, ...c };
}

/** Converts the result's "timeline" array of objects into columns. */
export function spansFromObjects(timeline: readonly SpanObject[] | undefined): Spans {
  const list = timeline ?? [];
  const n = list.length;
  const streams = new Interner();
  const kinds = new Interner();
  const names = new Interner();
  const s = allocateSpans(n, streams.list, kinds.list, names.list);
  for (let i = 0; i < n; ++i) {
    const o = list[i];
    s.start[i] = Number(o.start_s);
    s.end[i] = Number(o.end_s);
    s.rank[i] = Number(o.rank) | 0;
    s.mb[i] = typeof o.mb === 'number' ? o.mb : -1;
    s.stream[i] = Math.min(255, streams.id(String(o.stream)));
    s.kind[i] = Math.min(255, kinds.id(String(o.kind)));
    s.name[i] = names.id(String(o.name));
  }
  return s;
}

/** A memory curve as simulate_columns returns it (the result JSON's "memory_curves" entry). */
export interface CurveColumnsFromModule {
  rank: number;
  t_s: Float64Array;
  GiB: Float64Array;
}

export function curvesFromObjects(curves: readonly { rank: number; t_s: number[]; GiB: number[] }[] | undefined): MemoryCurve[] {
  return (curves ?? []).map((c) => ({ rank: c.rank, t: Float64Array.from(c.t_s ?? []), gib: Float64Array.from(c.GiB ?? []) }));
}

/** The buffers of a SimResult, to transfer (not copy) from the worker. */
export function transferables(r: SimResult): ArrayBuffer[] {
  const s = r.spans;
  const cols = [s.start, s.end, s.rank, s.mb, s.stream, s.kind, s.name, s.phase, s.bytes, s.flops, s.group, s.nodes, s.peer, s.depOffsets, s.deps];
  const out: ArrayBuffer[] = [...new Set(cols.map((a) => a.buffer as ArrayBuffer))];
  for (const c of r.curves) out.push(c.t.buffer as ArrayBuffer, c.gib.buffer as ArrayBuffer);
  return out;
}

/** Parses a result text into a SimResult, or returns the error it carries. `columns`, when
 * given, is the timeline and `curves` the memory curves (the text then has neither). */
export function parseResult(text: string, columns?: ColumnsFromModule, curves?: CurveColumnsFromModule[]): { ok: true; result: SimResult } | { ok: false; error: ErrorInfo } {
  let j: any;
  try {
    j = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: { code: 'internal', path: '', message: `unreadable result: ${String(e)}` } };
  }
  if (!j || j.ok === false) return { ok: false, error: errorOf(j) };
  return {
    ok: true,
    result: {
      summary: j.summary,
      devices: j.devices ?? [],
      warnings: j.warnings ?? [],
      fitAdvice: Array.isArray(j.fit_advice) ? j.fit_advice : [],
      pipelinePlan: readPipelinePlan(j.pipeline_plan),
      stats: j.stats ?? {},
      breakdown: j.breakdown ?? {},
      spans: columns ? spansFromColumns(columns) : spansFromObjects(j.timeline),
      curves: curves ? curves.map((c) => ({ rank: c.rank, t: c.t_s, gib: c.GiB })) : curvesFromObjects(j.memory_curves),
    },
  };
}

/** The error object of an {ok:false} answer, whatever shape it has. */
export function errorOf(j: any): ErrorInfo {
  const e = j && typeof j === 'object' ? j.error : undefined;
  return {
    code: String(e?.code ?? 'internal'),
    path: String(e?.path ?? ''),
    message: String(e?.message ?? 'unknown error'),
  };
}
