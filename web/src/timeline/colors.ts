// Colors and names of span kinds and streams, shared by the timeline and its legend.

export interface KindInfo {
  color: string;
  label: string;
  /** One sentence for the legend's tooltip. */
  help: string;
}

export const KINDS: Record<string, KindInfo> = {
  forward: { color: '#4e79a7', label: 'Forward (F)', help: 'The forward pass of a micro-batch through this stage.' },
  backward_input: { color: '#59a14f', label: 'Backward, input grad (B)', help: 'The backward pass that computes gradients for the previous layer.' },
  backward_weight: { color: '#8cc474', label: 'Backward, weight grad (W)', help: 'The backward pass that computes weight gradients (split off by zero-bubble schedules).' },
  backward: { color: '#59a14f', label: 'Backward', help: 'The backward pass of a micro-batch.' },
  recompute: { color: '#b07aa1', label: 'Recompute (R)', help: 'Forward work repeated in the backward pass to rebuild activations that were not kept.' },
  optimizer: { color: '#9c755f', label: 'Optimizer step (O)', help: 'The optimizer updating the weights once per iteration.' },
  sync: { color: '#bab0ac', label: 'Sync (S)', help: 'Waiting for other GPUs.' },
  all_reduce: { color: '#e15759', label: 'All-reduce', help: 'Every GPU of the group ends with the sum of everyone\'s tensor.' },
  all_gather: { color: '#edc948', label: 'All-gather', help: 'Every GPU of the group ends with everyone\'s shards concatenated.' },
  reduce_scatter: { color: '#ff9d9a', label: 'Reduce-scatter', help: 'Sums tensors across the group, each GPU keeping one shard of the sum.' },
  all_to_all: { color: '#d37295', label: 'All-to-all', help: 'Every GPU sends a different piece to every other GPU (expert routing, context parallelism).' },
  send_recv: { color: '#76b7b2', label: 'Send / receive', help: 'Point-to-point transfer of activations or gradients between pipeline stages.' },
  ring_exchange: { color: '#59a0a0', label: 'Ring exchange', help: 'One step of a ring: every GPU passes the block it holds to the next while computing on it (context-parallel attention, tensor-parallel overlap).' },
};

const FALLBACK = ['#86bcb6', '#f1ce63', '#a0cbe8', '#ffbe7d', '#d4a6c8', '#79706e'];

export function kindColor(kind: string): string {
  const k = KINDS[kind];
  if (k) return k.color;
  let h = 0;
  for (let i = 0; i < kind.length; ++i) h = (h * 31 + kind.charCodeAt(i)) >>> 0;
  return FALLBACK[h % FALLBACK.length];
}

export function kindLabel(kind: string): string {
  return KINDS[kind]?.label ?? kind.replace(/_/g, ' ');
}

export const STREAMS: Record<string, string> = {
  compute: 'compute',
  tp_comm: 'TP comm',
  dp_comm: 'DP comm',
  // ZeRO-3 / FSDP parameter all-gathers: their own stream, beside the gradient reduce-scatters
  // (core/include/proteus/exec_graph.h, Stream::ParamComm)
  param_comm: 'param gather',
  pp_comm: 'PP p2p',
};

/** Lanes of a GPU, top to bottom: the order of STREAMS (others after, as they come). */
export const STREAM_ORDER = Object.keys(STREAMS);

export function streamLabel(s: string): string {
  return STREAMS[s] ?? s.replace(/_/g, ' ');
}

/** Short span label: phase letter + micro-batch for compute ("F3"), micro-batch for comm. */
export const PHASE_LETTER: Record<string, string> = {
  forward: 'F',
  backward_input: 'B',
  backward_weight: 'W',
  backward: 'B',
  recompute: 'R',
  optimizer: 'O',
  sync: 'S',
};

/** Memory categories as the result names them, with colors and one-line explanations. */
export const MEMORY: { key: string; label: string; color: string; help: string }[] = [
  { key: 'weights', label: 'Weights', color: '#4e79a7', help: 'The parameters this GPU holds (its shard under TP/PP/ZeRO-3).' },
  { key: 'gradients', label: 'Gradients', color: '#59a14f', help: 'Gradient buffers (sharded from ZeRO-2).' },
  { key: 'optimizer_states', label: 'Optimizer states', color: '#9c755f', help: 'Adam moments and the fp32 master copy (sharded from ZeRO-1).' },
  { key: 'activations', label: 'Activations', color: '#f28e2b', help: 'Tensors saved by the forward pass for the backward pass, per micro-batch in flight.' },
  { key: 'communication_buffers', label: 'Comm buffers', color: '#bab0ac', help: 'Staging buffers of collectives and pipeline transfers.' },
];
