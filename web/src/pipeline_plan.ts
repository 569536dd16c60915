// The zero-bubble runtime's plan (the result's "pipeline_plan", strategy.zb_plan "profiled";
// docs/frameworks/pipeline.md "Zero-bubble planning"): the per-stage F, B and W times and the send time
// a first play of the unit-time order measured, and the order of passes each stage got when the
// runtime's planner re-planned from them. This run played that order. The table is drawn by
// pipeline_plan_view.ts; this part has no DOM (the worker parses results with it).
import { sig3 } from './format';

export interface PipelinePlan {
  /** Per pipeline stage, in ms (the mean over micro-batches, both chunks for ZB-V). */
  forwardMs: number[];
  backwardInputMs: number[];
  backwardWeightMs: number[];
  /** The mean pipeline transfer, in ms. */
  sendMs: number;
  /** Per stage: "F0 F1 B0 W0 ..." (".1": the second chunk of a ZB-V stage). */
  stageOrders: string[];
}

function numbers(v: unknown): number[] | null {
  return Array.isArray(v) && v.every((x) => typeof x === 'number') ? (v as number[]) : null;
}

/** The plan of a result JSON's "pipeline_plan", or null when the result has none. */
export function readPipelinePlan(j: unknown): PipelinePlan | null {
  if (!j || typeof j !== 'object') return null;
  const o = j as Record<string, unknown>;
  const f = numbers(o.forward_ms);
  const b = numbers(o.backward_input_ms);
  const w = numbers(o.backward_weight_ms);
  if (!f || !b || !w || typeof o.send_ms !== 'number') return null;
  const orders = Array.isArray(o.stage_orders) ? o.stage_orders.map(String) : [];
  return { forwardMs: f, backwardInputMs: b, backwardWeightMs: w, sendMs: o.send_ms, stageOrders: orders };
}

/** sorted(a)[len(a) // 2]: the runtime's "mid value" of the stages (the upper median for an
 * even count), which its planners take for every stage (core/src/strategy/zb_plan.cpp). */
export function runtimeMedian(a: readonly number[]): number {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
}

/** Forwards a stage runs before its first backward: its warm-up depth (micro-batches whose
 * activations it holds at once before any is freed). */
export function warmupForwards(order: string): number {
  let n = 0;
  for (const pass of order.split(/[ &]/)) {
    if (pass.startsWith('B')) return n;
    if (pass.startsWith('F')) ++n;
  }
  return n;
}

export interface PlanRow {
  stage: string;
  f: string;
  b: string;
  w: string;
  warmup: string;
  order: string;
}

/** The table's rows: one per stage, then the planner's input (the medians). */
export function planRows(plan: PipelinePlan): PlanRow[] {
  const rows: PlanRow[] = plan.forwardMs.map((f, s) => ({
    stage: String(s),
    f: sig3(f),
    b: sig3(plan.backwardInputMs[s]),
    w: sig3(plan.backwardWeightMs[s]),
    warmup: plan.stageOrders[s] !== undefined ? String(warmupForwards(plan.stageOrders[s])) : '',
    order: plan.stageOrders[s] ?? '',
  }));
  rows.push({
    stage: 'planner input',
    f: sig3(runtimeMedian(plan.forwardMs)),
    b: sig3(runtimeMedian(plan.backwardInputMs)),
    w: sig3(runtimeMedian(plan.backwardWeightMs)),
    warmup: '',
    order: '',
  });
  return rows;
}
