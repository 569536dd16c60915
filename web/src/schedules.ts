// The pipeline schedules the core accepts (docs/config.md, strategy.schedule; "explicit" is an
// order given as data, not offered here), each with one line on what it does, and the knobs a
// schedule needs adjusted when it is picked (the core's validation, core/src/config/validate.cpp).
import { getPath, setPath, type Config } from './config_model';

export interface ScheduleInfo {
  value: string;
  label: string;
  /** One line: what the schedule does, and its cost. */
  explain: string;
}

/** In the order of the select; `value` is the core's name (core/src/config/enum_names.cpp). */
export const SCHEDULES: ScheduleInfo[] = [
  { value: 'gpipe', label: 'GPipe', explain: 'All forwards, then all backwards: every micro-batch\'s activations are held at once (Huang et al. 2019).' },
  { value: '1f1b', label: '1F1B', explain: 'One forward, one backward: the same bubble as GPipe, activations of at most pp micro-batches (PipeDream-Flush, Megatron-LM).' },
  { value: 'interleaved-1f1b', label: 'Interleaved 1F1B', explain: 'Several model chunks per GPU (virtual stages): the bubble shrinks by their number, for more pipeline messages (Narayanan et al. 2021).' },
  { value: 'zb-h1', label: 'Zero bubble ZB-H1', explain: 'The backward split into input (B) and weight (W) gradients; W fills the bubble at about 1F1B\'s memory (Qi et al. 2024).' },
  { value: 'zb-h2', label: 'Zero bubble ZB-H2', explain: 'More forwards started early so that W work fills the bubble almost entirely, for more activation memory (Qi et al. 2024).' },
  { value: 'zb-v', label: 'Zero bubble ZB-V', explain: 'Two chunks per GPU placed in a V (stage s holds chunks s and 2pp−1−s), B/W split: a near-zero bubble (Qi et al. 2024); the runtime plans it for 1 or at least pp micro-batches.' },
  { value: 'dualpipe-v', label: 'DualPipeV', explain: 'DeepSeek-V3\'s schedule: two chunks in a V, the forward of one micro-batch overlapped with the backward of another; needs at least 2 × pp micro-batches.' },
  { value: 'dualpipe', label: 'DualPipe', explain: 'DeepSeek-V3\'s two-copy schedule: each rank holds stage r of one model copy and stage pp−1−r of the other, half the micro-batches entering at each end; twice the parameters, needs an even pp and an even number of at least 2 × pp micro-batches.' },
];

/** The schedules the zero-bubble runtime orders itself (strategy.zb_plan applies to these only). */
const ZERO_BUBBLE = new Set(['zb-h1', 'zb-h2', 'zb-v']);

export function isZeroBubble(schedule: unknown): boolean {
  return ZERO_BUBBLE.has(String(schedule));
}

/** The schedule a config runs: its own, else the resolved config's. */
export function scheduleOf(config: Config, resolved: Config | null): string {
  return String(getPath(config, 'strategy.schedule') ?? getPath(resolved, 'strategy.schedule') ?? '');
}

/** The framework whose runtime the config models (megatron when neither config says). */
function frameworkOf(config: Config, resolved: Config | null): string {
  return String(getPath(config, 'strategy.framework') ?? getPath(resolved, 'strategy.framework') ?? 'megatron');
}

/** strategy.zb_plan as the core applies it: the config's, else the framework's default,
 * "profiled" under megatron (the zero-bubble fork re-plans from its timers) and "unit" under
 * fsdp and deepspeed (docs/config.md, docs/frameworks/pipeline.md "Zero-bubble planning"). */
export function zbPlanOf(config: Config, resolved: Config | null): 'profiled' | 'unit' {
  const given = getPath(config, 'strategy.zb_plan');
  if (given === 'profiled' || given === 'unit') return given;
  return frameworkOf(config, resolved) === 'megatron' ? 'profiled' : 'unit';
}

/** The choices of strategy.zb_plan; '' leaves the field unset (the framework's default). */
export const ZB_PLANS: ScheduleInfo[] = [
  { value: '', label: 'framework default', explain: 'Leaves strategy.zb_plan unset: profiled under Megatron (its zero-bubble runtime re-plans), unit times under PyTorch FSDP and DeepSpeed.' },
  { value: 'profiled', label: 'profiled (runtime planner)', explain: 'As the zero-bubble runtime after its timers: a first play measures each stage\'s F, B, W and send times, and its planner re-orders the passes from them (two simulations).' },
  { value: 'unit', label: 'unit times (static order)', explain: 'The order planned with F = B = W (Qi et al.\'s handcrafted schedules), as PyTorch\'s torch.distributed.pipelining runs it.' },
];

/** The line under the zb_plan control: the choice's explanation; for the default, what it
 * resolves to under the config's framework. */
export function explainZbPlan(value: string, config: Config, resolved: Config | null): string {
  const info = ZB_PLANS.find((p) => p.value === value);
  if (!info) return '';
  if (value !== '') return info.explain;
  const framework = frameworkOf(config, resolved);
  const plan = ZB_PLANS.find((p) => p.value === zbPlanOf(config, resolved))!;
  return `Unset: framework ${framework} plays “${plan.label}”. Megatron's zero-bubble runtime re-plans from measured pass times; PyTorch FSDP and DeepSpeed run the static order.`;
}

/** Micro-batches per pipeline: global_batch / (dp × micro_batch). */
function microBatches(gb: number, dp: number, mb: number): number {
  return Math.floor(gb / Math.max(1, dp * mb));
}

/**
 * The config after picking `schedule`, with the knobs that schedule needs: zb_plan unset off the
 * zero-bubble schedules; virtual stages 2
 * for interleaving (1 otherwise: only interleaving reads them); for interleaving a micro-batch
 * count that pp divides, for ZB-V 1 or at least pp micro-batches, for DualPipeV at least 2 × pp micro-batches, for DualPipe an even
 * number of at least 2 × pp (global batch raised to the nearest that works). `resolved` supplies the values the config leaves to defaults.
 */
export function pickSchedule(config: Config, resolved: Config | null, schedule: string): Config {
  const get = (path: string, fallback: number) => Number(getPath(config, path) ?? getPath(resolved, path) ?? fallback);
  let c = setPath(config, 'strategy.schedule', schedule);
  // zb_plan orders only the zero-bubble schedules: the core rejects it with any other.
  if (!isZeroBubble(schedule) && getPath(c, 'strategy.zb_plan') !== undefined) c = setPath(c, 'strategy.zb_plan', undefined);
  const vs = get('strategy.virtual_stages', 1);
  if (schedule === 'interleaved-1f1b' && vs <= 1) c = setPath(c, 'strategy.virtual_stages', 2);
  else if (schedule !== 'interleaved-1f1b' && vs > 1) c = setPath(c, 'strategy.virtual_stages', 1);
  const pp = get('strategy.pp', 1);
  const dp = get('strategy.dp', 1);
  const mb = get('strategy.micro_batch', 1);
  const m = microBatches(get('training.global_batch', 1), dp, mb);
  let want = m;
  if (schedule === 'interleaved-1f1b' && getPath(c, 'strategy.microbatch_group_size') === undefined && m % pp !== 0) want = Math.ceil(m / pp) * pp;
  if (schedule === 'dualpipe-v' && m < 2 * pp) want = 2 * pp;
  // ZB-V as the zero-bubble runtime plans it from pass times (the core's zb_plan "profiled", its
  // default under framework megatron): its planner asserts with 1 < micro-batches < pp.
  if (schedule === 'zb-v' && zbPlanOf(c, resolved) === 'profiled' && m > 1 && m < pp) want = pp;
  // DualPipe: half the micro-batches enter at each end (an even count, at least 2 × pp). An
  // odd pp it cannot fix: the core's error names strategy.pp.
  if (schedule === 'dualpipe') want = Math.max(2 * pp, m + (m % 2));
  if (want !== m) c = setPath(c, 'training.global_batch', want * dp * mb);
  return c;
}

/** The explanation of a schedule by its core name ('' for one the page does not list). */
export function explainSchedule(value: string): string {
  return SCHEDULES.find((s) => s.value === value)?.explain ?? '';
}
