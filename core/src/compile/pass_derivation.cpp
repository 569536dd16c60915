#include "pass_derivation.h"

#include <algorithm>
#include <cmath>

#include "collective_steps.h"
#include "fsdp_copies.h"
#include "iteration_tail.h"
#include "proteus/error.h"
#include "userbuffers.h"

namespace proteus {
namespace {

void add_dep(std::vector<int>* deps, int d) {
  if (d != INT32_MIN) deps->push_back(d);
}

}  // namespace

PassDeriver::PassDeriver(const ProgramInputs& in, const OpIndex& index, Emitter* emitter, PassState* state,
                         IterationTail* tail, CompileStats* stats)
    : g_(in.graph),
      tree_(in.tree),
      plans_(in.plans),
      mesh_(in.tree.mesh),
      index_(index),
      emit_(*emitter),
      state_(*state),
      tail_(*tail),
      stats_(*stats),
      work_ids_(kWorkKinds * in.graph.ops.size(), -1),
      ring_work_ids_(2 * in.graph.ops.size(), -1),
      ub_work_ids_(3 * in.graph.ops.size(), -1),
      async_tp_reduce_work_ids_(in.graph.ops.size(), -1),
      kept_gather_(in.graph.ops.size()),
      copy_out_work_ids_(in.graph.ops.size(), -1),
      cp_merge_work_ids_(2 * in.graph.ops.size(), -1),
      cp_a2a_copy_work_ids_(2 * in.graph.ops.size(), -1),
      amax_(plan_fp8_amax(in.graph, in.plans, in.tree, index)),
      weight_casts_(plan_fp8_weight_casts(in.plans, in.tree, in.training.fp8_recipe)),
      weight_cast_ids_(in.graph.ops.size(), {-1, -1}) {}

// Task (or pending send) after which tensor t is on this rank in layout `want`.
// Returns INT32_MIN when no task is needed (a model input).
int PassDeriver::tensor_in_layout(int mb, Namespace ns, int t, const Layout& want, double move_bytes) {
  const int prod = g_.tensors[t].producer;
  if (prod < 0) return INT32_MIN;
  const bool remote = !emit_.chunk_is_local(plans_[prod].chunk, mb);
  const Layout src = remote ? p2p_layout(plans_[prod].output, g_.tensors[t]) : plans_[prod].output;
  const int* found = state_.provider(mb, provider_key(mb, ns, t, want));
  const int* at_src = state_.provider(mb, provider_key(mb, ns, t, src));
  // A tensor the recompute made again is redistributed again: the replayed forward runs its
  // layer's collectives too (Megatron's CheckpointFunction and torch.utils.checkpoint re-run
  // the layer's code, sequence-parallel all-gathers and reduce-scatters included). One it does
  // not make again (a checkpoint, the Q/K/V of a selectively recomputed attention) is read as
  // the forward left it, in any layout the forward moved it to, except along cp: context
  // parallelism's K/V all-gather and Q/K/V all-to-alls run inside the attention function the
  // replay calls again (TE's AttnFuncWithCPAndKVAllGather / AttnFuncWithCPAndQKVOA2A, PyTorch's
  // context_parallel SDPA), and the forward kept only the local shards.
  if (!found && ns == kRecompute && !at_src && src.placement[kAxisCp] == want.placement[kAxisCp])
    found = state_.provider(mb, provider_key(mb, kFwd, t, want));
  if (found) return *found;
  int src_task;
  if (!at_src && ns == kRecompute) at_src = state_.provider(mb, provider_key(mb, kFwd, t, src));
  if (at_src) {
    src_task = *at_src;
  } else if (remote) {
    src_task = emit_.pending_ref(send_key(emit_.gpu(), t, mb, false));
    state_.set_provider(provider_key(mb, kFwd, t, src), src_task);
  } else {
    throw Error("internal", "", "tensor " + g_.tensors[t].name + " is used before it is produced");
  }
  if (src == want) return src_task;
  int last = src_task;
  std::vector<CollectiveStep> steps = redistribute(src, want, g_.tensors[t].bytes(), mesh_);
  // Op-level checkpointing saves the functional reduce-scatter's result (torch_op_sac.h): the
  // replay reads the forward's.
  if (ns == kRecompute && plans_[prod].op_sac && steps.size() == 1 &&
      steps[0].kind == CollectiveKind::ReduceScatter)
    if (const int* cached = state_.provider(mb, provider_key(mb, kFwd, t, want))) {
      const int task = *cached;  // set_provider may rehash the map `cached` points into
      state_.set_provider(provider_key(mb, ns, t, want), task);
      return task;
    }
  // An FP8 copy is what a gather moves (TE casts before its sequence-parallel all-gather);
  // reductions of partial sums stay 16-bit.
  const bool gathers_only = std::all_of(steps.begin(), steps.end(), [](const CollectiveStep& s) {
    return s.kind == CollectiveKind::AllGather;
  });
  if (move_bytes >= 0 && gathers_only)
    for (CollectiveStep& s : steps) s.bytes *= move_bytes / g_.tensors[t].bytes();
  for (const CollectiveStep& step : steps)
    last = emit_.collective(step.kind, step.axes, step.bytes, Stream::TpComm,
                            ns == kFwd ? Phase::Forward : Phase::Recompute, mb, index_.labels[prod], {last},
                            "activation");
  state_.set_provider(provider_key(mb, ns, t, want), last);
  return last;
}

void PassDeriver::begin_rank() {
  kept_gather_.assign(g_.ops.size(), {});
  weights_cast_.assign(g_.ops.size(), 0);
}

bool PassDeriver::forward_differs_from_later(int chunk) const {
  if (tail_.param_sync_pending()) return true;
  const std::vector<int>& ops = index_.chunk_ops[static_cast<size_t>(chunk)];
  return std::any_of(ops.begin(), ops.end(), [&](int op) {
    return weight_casts_.when[static_cast<size_t>(op)] == Fp8WeightCast::FirstForward &&
           !weights_cast_[static_cast<size_t>(op)];
  });
}

int PassDeriver::fp8_weight_cast(int op, int mb, Namespace ns, const std::vector<int>& deps) {
  const auto i = static_cast<size_t>(op);
  const Fp8WeightCast when = weight_casts_.when[i];
  const bool cast = (when == Fp8WeightCast::EveryForward) ||
                    (when == Fp8WeightCast::FirstForward && ns == kFwd && !weights_cast_[i]);
  if (!cast) return -1;
  weights_cast_[i] = 1;
  auto& [work, label] = weight_cast_ids_[i];
  if (work < 0) {
    ComputeWork w;
    w.op_kind = OpKind::Elementwise;
    w.bytes = weight_casts_.bytes[i];
    w.kernels = weight_casts_.kernels;
    work = emit_.exec().add_work(w);
    ExecGraph& g = emit_.exec();
    label = g.label_id(g.labels[static_cast<size_t>(index_.labels[i])] + ".fp8_weight_cast");
  }
  return emit_.compute(emit_.compute_task(label, ns == kFwd ? Phase::Forward : Phase::Recompute, mb, work),
                       deps, {});
}

// Legacy Megatron-LM's scatter/gather of pipeline tensors (Narayanan et al., SC'21, section
// 4.1; megatron/p2p_communication.py, scatter_gather_tensors_in_pipeline: each tp rank sends
// split_tensor_into_1d_equal_chunks of the tensor, the receiver gather_split_1d_tensor's it
// over tp): a tensor replicated over tp travels as 1/tp slices, and the receiver's
// redistribution to the layout it reads all-gathers them. The slice is taken along the last
// tensor axis no other mesh axis splits; which axis does not change the bytes.
Layout PassDeriver::p2p_layout(const Layout& l, const Tensor& t) const {
  if (!tree_.scatter_gather_p2p || mesh_.size[kAxisTp] <= 1 || l.placement[kAxisTp] != kReplicate) return l;
  for (int axis = static_cast<int>(t.shape.size()) - 1; axis >= 0; --axis) {
    if (std::find(l.placement.begin(), l.placement.end(), axis) != l.placement.end()) continue;
    Layout sliced = l;
    sliced.placement[kAxisTp] = axis;
    return sliced;
  }
  return l;
}

void PassDeriver::note_weight_compute(int task) {
  state_.prev_weight_compute = state_.last_weight_compute;
  state_.last_weight_compute = task;
}

// ZeRO-3: gather an op's weights before each use (one all-gather per op, as FSDP gathers a
// module's flat parameter); the gathered copy is freed when its user ends. The gathers run on
// their own stream (ParamComm), apart from the gradient reduce-scatters, and are prefetched:
// a gather waits only for the weight-using compute two before its user, as FSDP's rate
// limiter keeps two gathered units in flight (PyTorch FSDP notes, "FSDP Prefetch Nuances").
// The all-gathers of an op's sharded weights (storage to use) on the parameter stream, after
// task `after` (-1: none). Returns the last, -1 when nothing is sharded; *gathered_bytes: the
// gathered copy, *moved_bytes: what the gathers move per rank.
int PassDeriver::gather_weights(int op, int mb, Phase phase, int after, double* gathered_bytes,
                                double* moved_bytes) {
  std::vector<CollectiveStep> merged;
  *gathered_bytes = *moved_bytes = 0;
  add_weight_gather_steps(op, &merged, gathered_bytes, moved_bytes);
  return emit_weight_gathers(merged, mb, phase, after, index_.labels[op]);
}

// The collective steps that bring op's sharded weights from storage to use, added to *merged;
// *gathered_bytes and *moved_bytes grow by the gathered copy and what the gathers move per rank.
void PassDeriver::add_weight_gather_steps(int op, std::vector<CollectiveStep>* merged, double* gathered_bytes,
                                          double* moved_bytes) const {
  for (const WeightPlan& w : plans_[op].weights) {
    if (w.storage == w.use) continue;
    // The gathered copy: 16-bit, or FP8 plus the transpose its GEMMs make (same 2 bytes).
    *gathered_bytes += w.local_params * index_.weight_bytes;
    const double element_bytes =
        gather_bytes_per_element(w, index_.weight_bytes, tree_.root().fp8_param_gather);
    *moved_bytes += w.local_params * element_bytes;
    add_steps(merged, redistribute(w.storage, w.use, g_.tensors[w.tensor].elements() * element_bytes, mesh_));
  }
}

// The steps on the parameter stream, one after another, after task `after` (-1: none); the last
// task, -1 when there are none.
int PassDeriver::emit_weight_gathers(const std::vector<CollectiveStep>& steps, int mb, Phase phase, int after,
                                     int label) {
  if (steps.empty()) return -1;
  std::vector<int> gdeps;
  if (after >= 0) gdeps.push_back(after);
  for (const CollectiveStep& step : steps)
    gdeps = {emit_.collective(step.kind, step.axes, step.bytes, Stream::ParamComm, phase, mb, label, gdeps,
                              "weight")};
  return gdeps.back();
}

int PassDeriver::zero3_gathers(int op, int mb, Phase phase, std::vector<int>* deps,
                               std::vector<MemEvent>* frees, bool keep_gathered) {
  double gathered_bytes = 0, moved_bytes = 0;
  int last = gather_weights(op, mb, phase, state_.prev_weight_compute, &gathered_bytes, &moved_bytes);
  if (last < 0) return -1;
  if (tree_.root().fsdp2_copies) last = fsdp_copy_out(op, mb, phase, last, moved_bytes);
  deps->push_back(last);
  if (keep_gathered)
    kept_gather_[static_cast<size_t>(op)] = {last, mb, gathered_bytes, 0};
  else
    frees->push_back({MemCategory::Weights, true, -gathered_bytes});
  pending_weight_alloc_.push_back({MemCategory::Weights, false, gathered_bytes});
  return last;
}

// FSDP2 gathers by unit (OpIndex::fsdp_units), each unit's parameters in one all-gather group
// per pass: the forward unshards a block in its pre-forward hook and the next block's gather is
// issued while this one computes (implicit forward prefetch: the CPU runs ahead, all-gathers on
// their own stream); the backward unshards a block in FSDPParamGroup.pre_backward, before its
// recompute, and prefetches the next one in backward order (_backward_prefetch). At a unit's
// first op in the pass (forward: its first, backward: its last) its gathers are issued unless a
// prefetch issued them, and the next unit's, and kept; each op's copy-out runs before it
// (FSDPParamGroup.wait_for_unshard). The gathered copies are allocated with the next compute task.
void PassDeriver::fsdp_unit_gathers(int op, int mb, bool forward) {
  const int u = index_.unit_of_op[op];
  if (u < 0) return;
  const std::vector<int>& ops = index_.fsdp_units[static_cast<size_t>(u)];
  if (op != (forward ? ops.front() : ops.back())) return;
  const Phase phase = forward ? Phase::Forward : Phase::BackwardInput;
  prefetch_unit_gathers(u, mb, phase);
  for (const int next : index_.fsdp_prefetch_units(u, forward)) prefetch_unit_gathers(next, mb, phase);
}

// FSDP2 all-gathers a parameter group at once (foreach_all_gather: the group's shards copied into
// one buffer, one all_gather_into_tensor), so the unit's ops not yet gathered for this
// micro-batch share one collective per step.
void PassDeriver::prefetch_unit_gathers(int unit, int mb, Phase phase) {
  std::vector<CollectiveStep> merged;
  std::vector<std::pair<int, std::pair<double, double>>> members;  // op, (gathered, moved) bytes
  for (int r : index_.fsdp_units[static_cast<size_t>(unit)]) {
    if (kept_for(kept_gather_[static_cast<size_t>(r)], mb)) continue;
    double gathered_bytes = 0, moved_bytes = 0;
    const size_t before = merged.size();
    add_weight_gather_steps(r, &merged, &gathered_bytes, &moved_bytes);
    if (gathered_bytes > 0 || merged.size() > before) members.push_back({r, {gathered_bytes, moved_bytes}});
  }
  if (members.empty()) return;
  const int last =
      emit_weight_gathers(merged, mb, phase, state_.prev_weight_compute, index_.labels[members[0].first]);
  if (last < 0) return;
  // Megatron-FSDP never releases its root within an iteration: gathered by the first
  // micro-batch, it serves every other.
  const int kept_mb = index_.gather_kept_for_iteration(unit) ? kEveryMicroBatch : mb;
  for (const auto& [r, bytes] : members) {
    kept_gather_[static_cast<size_t>(r)] = {last, kept_mb, bytes.first, bytes.second};
    prefetched_alloc_.push_back({MemCategory::Weights, false, bytes.first});
  }
}

// FSDP2's root unit keeps its gathered weights through the backward; its post-backward, in the
// root's final backward callback, frees them after the backward of the unit's first op (the
// embedding): OpIndex::frees_gather_at_root_post_backward. Megatron-FSDP's root, kept for the
// whole iteration (kEveryMicroBatch), is not freed here.
void PassDeriver::root_post_backward_frees(int op, int mb, std::vector<MemEvent>* mem) {
  if (!index_.frees_gather_at_root_post_backward(op)) return;
  const std::vector<int>& unit = index_.fsdp_units[static_cast<size_t>(index_.unit_of_op[op])];
  if (op != unit.front()) return;
  for (int r : unit) {
    KeptGather& kept = kept_gather_[static_cast<size_t>(r)];
    if (kept.task < 0 || kept.mb != mb) continue;
    mem->push_back({MemCategory::Weights, true, -kept.bytes});
    kept = {};
  }
}

// The gather kept for op's micro-batch mb (a recompute's or a prefetch's), its copy-out emitted
// now when the prefetch left it; -1 when none is kept.
int PassDeriver::use_kept_gather(int op, int mb, Phase phase) {
  KeptGather& kept = kept_gather_[static_cast<size_t>(op)];
  if (!kept_for(kept, mb)) return -1;
  if (kept.copy_out_bytes > 0) {
    kept.task = fsdp_copy_out(op, mb, phase, kept.task, kept.copy_out_bytes);
    kept.copy_out_bytes = 0;
  }
  return kept.task;
}

// FSDP2's all-gather copy-out (fsdp_copies.h): on the compute stream once the gather is done,
// before the op that uses the weights. One work per op, shared by micro-batches and ranks.
int PassDeriver::fsdp_copy_out(int op, int mb, Phase phase, int gather, double moved_bytes) {
  return side_task(
      &copy_out_work_ids_[static_cast<size_t>(op)], [&] { return fsdp_copy_out_bytes(moved_bytes); },
      "fsdp_all_gather_copy_out", phase, mb, gather);
}

int PassDeriver::side_task(int* work_slot, const std::function<double()>& bytes, const char* label,
                           Phase phase, int mb, int after) {
  if (*work_slot < 0) {
    ComputeWork w;
    w.op_kind = OpKind::Elementwise;
    w.bytes = bytes();
    *work_slot = emit_.exec().add_work(w);
  }
  return emit_.compute(emit_.compute_task(emit_.exec().label_id(label), phase, mb, *work_slot), {after}, {});
}

// Index of an op's forward (0), input-gradient (1) or weight-gradient (2) work, or of its
// op-level checkpointing replays (kPartialReplay, kCachedReplay), in ExecGraph::works, added on
// first use: all micro-batches and ranks share it.
int PassDeriver::work_id(int op, int which) {
  int& id = work_ids_[static_cast<size_t>(kWorkKinds * op + which)];
  if (id < 0) {
    const OpPlan& p = plans_[op];
    id = emit_.exec().add_work(which == kPartialReplay ? partial_replay_work(p)
                               : which == 0            ? p.fwd
                               : which == 1            ? p.bwd_input
                                                       : p.bwd_weight);
  }
  return id;
}

// The unsaved share of a partly saved op's forward (torch_op_sac.h): its GEMMs are equal halves
// along the output (wk and wv, w1 and w3), so the replay is that share of them. Where the op is
// timed as its separate kernels (linear_kernels.h: gemm_kernel_share of them, each of its shape)
// the replay runs that share of the kernels; else a GEMM of that share of N.
ComputeWork PassDeriver::partial_replay_work(const OpPlan& p) {
  ComputeWork w = p.fwd;
  const double share = 1 - p.sac_saved_share;
  w.flops *= share;
  w.bytes *= share;
  w.side_bytes *= share;
  if (w.gemm_kernel_share > 1) {
    w.gemm_kernel_share *= share;
    w.kernels = std::max(1, static_cast<int>(std::lround(w.kernels * share)));
  } else if (w.gemm_n > 0) {
    w.gemm_n = std::max<int64_t>(1, std::llround(static_cast<double>(w.gemm_n) * share));
  }
  return w;
}

bool PassDeriver::is_ring_attention(int op) const {
  return g_.ops[op].kind == OpKind::Attention && mesh_.size[kAxisCp] > 1 &&
         (tree_.nodes[g_.ops[op].module].config.cp_comm_type == CpCommType::P2p ||
          tree_.nodes[g_.ops[op].module].config.cp_comm_type == CpCommType::A2aP2p);
}

// One block of a ring of `cp` ranks: the attention of the local queries against one cp-th of
// the keys (causal load balancing gives every rank equal work per block: TE splits the sequence
// into 2*cp chunks, rank r holding chunks r and 2cp-1-r).
int PassDeriver::ring_block_work(int op, int which, int cp) {
  int& id = ring_work_ids_[static_cast<size_t>(2 * op + which)];
  if (id < 0) {
    ComputeWork w = which == 0 ? plans_[op].fwd : plans_[op].bwd_input;
    w.flops /= cp;
    w.bytes /= cp;
    w.side_bytes /= cp;
    w.gemm_n = std::max<int64_t>(1, (w.gemm_n + cp - 1) / cp);
    id = emit_.exec().add_work(w);
  }
  return id;
}

// A ring around `axis` of n ranks: n blocks of work; before block i the shard of the rank i steps
// back arrives, sent while block i-1 computes (each step forwards what the previous received).
// A step is a ring exchange of `shard_bytes` per rank (one hop's latency: TE posts one
// send/receive pair per step). Returns the last block; *last_step is the last transfer.
int PassDeriver::ring_compute(int op, int mb, Phase phase, const std::vector<int>& deps,
                              const std::vector<MemEvent>& mem, const Ring& ring, int* last_step) {
  const int n = ring.group.empty() ? mesh_.size[ring.axis] : static_cast<int>(ring.group.size());
  const int label = index_.labels[op];
  const std::vector<MemEvent> none;
  int last = emit_.compute(emit_.compute_task(label, phase, mb, ring.block_work), deps, n == 1 ? mem : none);
  int step = -1;
  for (int i = 1; i < n; ++i) {
    step = emit_.collective(CollectiveKind::RingExchange, axis_bit(ring.axis), ring.shard_bytes,
                            Stream::TpComm, phase, mb, label, step < 0 ? deps : std::vector<int>{step},
                            ring.purpose, ring.group);
    last =
        emit_.compute(emit_.compute_task(label, phase, mb, ring.block_work), {step}, i + 1 == n ? mem : none);
  }
  if (last_step) *last_step = step;
  return last;
}

// Context parallelism, cp_comm_type p2p (TE AttnFuncWithCPAndKVP2P): cp attention blocks around
// the cp ring (ring_compute), each step the local K/V shard B; the backward passes K/V and the
// partial dK/dV: twice the bytes per step. Under tp_comm_overlap a GEMM fed by a tensor-parallel
// all-gather (`tp_ring`: the shard each rank holds) runs as TE's ring exchange: tp chunks, one
// shard arriving over the tp ring before each (copy engine, no SM margin).
int PassDeriver::compute_op(int op, int mb, Phase phase, int which, const std::vector<int>& deps,
                            const std::vector<MemEvent>& mem, double tp_ring_shard_bytes, int* last_step) {
  if (tp_ring_shard_bytes > 0)
    return ring_compute(op, mb, phase, deps, mem,
                        {kAxisTp, tp_ring_shard_bytes, ub_chunk_work(op, which, 0), kUserbuffersPurpose},
                        last_step);
  const bool torch_cp = tree_.root().torch_cp;
  if (is_torch_gather_attention(op) && (which == 0 || which == 1)) {
    const double kv_bytes = attention_kv_bytes(op);
    const int last = torch_gather_attention(op, mb, phase, which, deps, mem, kv_bytes);
    return torch_cp_merge(op, mb, phase, which, last, kv_bytes);
  }
  if (!is_ring_attention(op)) {
    const int t =
        emit_.compute(emit_.compute_task(index_.labels[op], phase, mb, work_id(op, which)), deps, mem);
    return torch_cp ? t : te_cp_copy_work(op, mb, phase, which, t);
  }
  const Op& o = g_.ops[op];
  const double kv_bytes = attention_kv_bytes(op);
  if (tree_.nodes[o.module].config.cp_comm_type == CpCommType::A2aP2p)
    return hierarchical_cp_attention(op, mb, phase, which, deps, mem, kv_bytes);
  // The backward passes K/V and dK/dV each step; PyTorch's dK/dV travel in fp32 (convert_to_f32).
  const double step_bytes = which == 0 ? kv_bytes : (torch_cp ? 3 : 2) * kv_bytes;
  int last = ring_compute(
      op, mb, phase, deps, mem,
      {kAxisCp, step_bytes, ring_block_work(op, which, mesh_.size[kAxisCp]), "activation"}, nullptr);
  if (!torch_cp) return te_cp_ring_work(op, mb, phase, which, mesh_.size[kAxisCp], kv_bytes, last);
  // PyTorch's all-to-all rotater sends dK/dV after every step, the last step's too: the local
  // shard's gradient arrives after it (_templated_ring_attention_backward's final next_buffer).
  if (which == 1) last = torch_dkv_transfer(op, mb, phase, kv_bytes, {last});
  return torch_cp_merge(op, mb, phase, which, last, kv_bytes);
}

// Op-level checkpointing (torch_op_sac.h): a wholly saved op's replay is served from the
// cache, no kernel; its consumers read the forward's output. What its backward keeps from the
// replay (its saved inputs, made again by the ops before it) is allocated here, and its weights
// are gathered here for the backward, as for the ops replayed (FSDP2 gathers the block's
// parameters before the block's backward, recompute included). An attention fed by
// TorchTitan's repeat_kv runs that copy again: SDPA's backward needs its repeated inputs, and
// the policy saves SDPA's outputs, not the copy's (OpPlan::repeat_kv_copy_bytes).
void PassDeriver::replay_from_cache(int op, int mb) {
  int& id = work_ids_[static_cast<size_t>(kWorkKinds * op + kCachedReplay)];
  if (id < 0) {
    ComputeWork cached;
    cached.op_kind = plans_[op].fwd.op_kind;
    cached.kernels = 0;
    cached.side_bytes = plans_[op].repeat_kv_copy_bytes;
    id = emit_.exec().add_work(cached);
  }
  std::vector<int> deps;
  std::vector<MemEvent> mem = prefetched_alloc_;
  prefetched_alloc_.clear();
  pending_weight_alloc_.clear();
  if (const int kept = use_kept_gather(op, mb, Phase::Recompute); kept >= 0)
    deps.push_back(kept);
  else
    zero3_gathers(op, mb, Phase::Recompute, &deps, &mem, true);
  if (const double keep = index_.replay_alloc(op); keep > 0)
    mem.push_back({MemCategory::Activations, true, keep});
  mem.insert(mem.begin(), pending_weight_alloc_.begin(), pending_weight_alloc_.end());
  state_.last_compute =
      emit_.compute(emit_.compute_task(index_.labels[op], Phase::Recompute, mb, id), deps, mem);
}

// Activation memory a task allocates as it starts and frees as it ends.
void PassDeriver::hold_while_running(std::vector<MemEvent>* mem, double bytes) {
  if (bytes <= 0) return;
  mem->push_back({MemCategory::Activations, false, bytes});
  mem->push_back({MemCategory::Activations, true, -bytes});
}

void PassDeriver::forward_op(int op, int mb, Namespace ns) {
  const Op& o = g_.ops[op];
  const OpPlan& p = plans_[op];
  if (ns == kFwd) fsdp_unit_gathers(op, mb, true);
  if (ns == kRecompute && index_.replay_served_from_cache(op)) return replay_from_cache(op, mb);
  // ... and a partly saved one (Llama's kv_proj: wk again, wv from the cache) runs the rest.
  const bool partial_replay = ns == kRecompute && index_.seg_of_op[op] >= 0 && p.sac_saved_share > 0;
  std::vector<int> deps;
  double ring_shard_bytes = 0;
  size_t ring_input = 0;
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    if (!partial_replay && ring_shard_bytes == 0 &&
        (ring_shard_bytes = ring_exchange_input(op, mb, ns, k, &deps)) > 0) {
      ring_input = k;
      continue;
    }
    const int t = o.inputs[k].tensor;
    add_dep(&deps, tensor_in_layout(mb, ns, t, p.input_required[k], input_move_bytes(g_.tensors[t], p, k)));
  }
  if (ns == kFwd) tail_.before_forward(op, &deps);
  const Phase phase = ns == kFwd ? Phase::Forward : Phase::Recompute;
  if (p.fp8_amax_tp_fwd) current_amax_reduction(op, mb, phase, &deps);
  std::vector<MemEvent> mem;
  pending_weight_alloc_.clear();
  // Under full recompute the replayed forward's gather serves the backward that follows it:
  // two gathers per micro-batch (forward; recompute + backward), as FSDP and DeepSpeed do.
  const bool for_backward = ns == kRecompute && index_.seg_of_op[op] >= 0;
  if (const int kept = for_backward || ns == kFwd ? use_kept_gather(op, mb, phase) : -1; kept >= 0) {
    deps.push_back(kept);
    if (ns == kFwd && !index_.keeps_gather_to_backward(op)) {  // FSDP2's reshard_after_forward
      KeptGather& used = kept_gather_[static_cast<size_t>(op)];
      mem.push_back({MemCategory::Weights, true, -used.bytes});
      used = {};
    }
  } else {
    zero3_gathers(op, mb, phase, &deps, &mem, for_backward);
  }
  mem.insert(mem.end(), prefetched_alloc_.begin(), prefetched_alloc_.end());
  prefetched_alloc_.clear();
  const double keep = (ns == kFwd) ? index_.fwd_alloc(op) : index_.replay_alloc(op);
  if (keep > 0) mem.push_back({MemCategory::Activations, true, keep});
  mem.insert(mem.begin(), pending_weight_alloc_.begin(), pending_weight_alloc_.end());
  hold_while_running(&mem, gathered_kv_bytes(op) + p.fwd_transient_bytes);
  Layout scattered;
  const bool rs_cached = ns == kRecompute && p.op_sac;  // the reduce-scatter's result is saved
  const double rs_bytes =
      ring_shard_bytes > 0 || partial_replay || rs_cached ? 0 : pipelined_rs_target(op, &scattered);
  int gathered = -1, reduced = -1;
  fp8_weight_cast(op, mb, ns, deps);
  const int id = rs_bytes > 0 ? pipelined_reduce_scatter(op, mb, phase, deps, mem, rs_bytes, &reduced)
                              : compute_op(op, mb, phase, partial_replay ? kPartialReplay : 0, deps, mem,
                                           ring_shard_bytes, &gathered);
  if (gathered >= 0)  // the other GEMMs reading the input use the gathered copy
    state_.set_provider(provider_key(mb, ns, o.inputs[ring_input].tensor, p.input_required[ring_input]),
                        gathered);
  if (reduced >= 0) state_.set_provider(provider_key(mb, ns, o.output.tensor, scattered), reduced);
  if (p.has_weights()) note_weight_compute(id);
  state_.last_compute = id;
  if (ns == kFwd && emit_.is_stats_rank() && mb == 0)
    stats_.activation_bytes_per_microbatch_per_stage[emit_.stage()] += keep;
  if (o.output.tensor < 0) return;
  const int out = o.output.tensor;
  state_.set_provider(provider_key(mb, ns, out, p.output), id);
  if (index_.consumers[out].empty()) {
    // A model output with partial sums (the vocab-parallel loss) is reduced where it is made.
    Layout whole = p.output;
    for (int& pl : whole.placement)
      if (pl == kPartial) pl = kReplicate;
    if (!(whole == p.output)) tensor_in_layout(mb, ns, out, whole);
    return;
  }
  if (ns == kRecompute) replay_cp_output_exchange(op, mb);
  if (ns != kFwd) return;
  // Send to every other rank's chunk that consumes it (once per chunk).
  std::vector<int> sent;
  for (const auto& [c_op, k] : index_.consumers[out]) {
    const int c = plans_[c_op].chunk;
    if (emit_.chunk_is_local(c, mb) || std::find(sent.begin(), sent.end(), c) != sent.end()) continue;
    sent.push_back(c);
    emit_.send(emit_.gpu_of_chunk(c, mb), out, mb, false,
               tensor_bytes_per_rank(g_.tensors[out], p2p_layout(p.output, g_.tensors[out]), mesh_),
               index_.labels[op], id, plans_[op].chunk);
  }
}

// A replayed attention under context parallelism with all-to-alls (TE's
// AttnFuncWithCPAndQKVOA2A) sends its output back to the sequence split inside the function, so
// the replay runs that exchange again even where no consumer is replayed (selective recompute).
void PassDeriver::replay_cp_output_exchange(int op, int mb) {
  const OpPlan& p = plans_[op];
  const int out = g_.ops[op].output.tensor;
  for (const auto& [c_op, k] : index_.consumers[out]) {
    const Layout& want = plans_[c_op].input_required[k];
    if (emit_.chunk_is_local(plans_[c_op].chunk, mb) &&
        want.placement[kAxisCp] != p.output.placement[kAxisCp])
      tensor_in_layout(mb, kRecompute, out, want);
  }
}

// Gradient of op's output in the layout its backward needs: contributions of all consumers,
// summed locally per layout, each redistributed. Under tp_comm_overlap, an all-gather over tp
// feeding op's data-gradient GEMM is left to that GEMM's ring exchange (proj_dgrad / fc2_dgrad):
// *ring_shard_bytes gets the shard per rank; a reduce-scatter over tp of a userbuffers GEMM's
// input gradient is TE's bulk overlap with its weight-gradient GEMM (qkv_wgrad / fc1_wgrad).
void PassDeriver::output_grad_deps(int op, int mb, std::vector<int>* deps, double* ring_shard_bytes) {
  const Op& o = g_.ops[op];
  const int out = o.output.tensor;
  if (out < 0) return;
  const Layout& want = plans_[op].output_grad_required;
  struct Group {
    Layout layout;
    std::vector<int> tasks;
    bool userbuffers = false;  // made by a GEMM under tp_comm_overlap
  };
  std::vector<Group> groups;
  auto add = [&](const Layout& l, int task, int from_op) {
    // TE's bulk kernels; PyTorch's async TP leaves a gradient's reduce-scatter to NCCL.
    const bool ub = from_op >= 0 && uses_userbuffers(from_op) &&
                    !tree_.nodes[g_.ops[from_op].module].config.torch_async_tp;
    for (Group& gr : groups)
      if (gr.layout == l) {
        gr.tasks.push_back(task);
        gr.userbuffers = gr.userbuffers || ub;
        return;
      }
    groups.push_back({l, {task}, ub});
  };
  std::vector<int> remote_chunks;
  for (const auto& [c_op, k] : index_.consumers[out]) {
    const int c = plans_[c_op].chunk;
    if (emit_.chunk_is_local(c, mb)) {
      const int* grad = state_.grad_provider(mb, grad_key(mb, out, c_op));
      if (!grad) throw Error("internal", "", "gradient of " + g_.tensors[out].name + " missing");
      add(plans_[c_op].input_grad[k], *grad, c_op);
    } else if (std::find(remote_chunks.begin(), remote_chunks.end(), c) == remote_chunks.end()) {
      remote_chunks.push_back(c);
      add(p2p_layout(plans_[c_op].input_grad[k], g_.tensors[out]),
          emit_.pending_ref(send_key(emit_.gpu(), out, mb, true)), -1);
    }
  }
  for (const Group& gr : groups) {
    const std::vector<int>& tasks = gr.tasks;
    if (gr.layout == want) {
      deps->insert(deps->end(), tasks.begin(), tasks.end());
      continue;
    }
    auto steps = redistribute(gr.layout, want, g_.tensors[out].bytes(), mesh_);
    // A sequence-parallel gather of the gradient moves TE's FP8 copy for an FP8 linear.
    const bool tp_gather = is_single(steps, CollectiveKind::AllGather, axis_bit(kAxisTp));
    const double ratio = output_grad_gather_bytes(g_.tensors[out], plans_[op]) / g_.tensors[out].bytes();
    if (tp_gather) steps.front().bytes *= ratio;
    if (ring_shard_bytes && *ring_shard_bytes == 0 && uses_userbuffers(op) && tp_gather) {
      *ring_shard_bytes = tensor_bytes_per_rank(g_.tensors[out], gr.layout, mesh_) * ratio;
      deps->insert(deps->end(), tasks.begin(), tasks.end());
      continue;
    }
    std::vector<int> d = tasks;
    for (const CollectiveStep& step : steps)
      d = {emit_.collective(
          step.kind, step.axes, step.bytes, Stream::TpComm, Phase::BackwardInput, mb, index_.labels[op], d,
          gr.userbuffers && step.axes == axis_bit(kAxisTp) ? kUserbuffersPurpose : "activation")};
    deps->insert(deps->end(), d.begin(), d.end());
  }
}

void PassDeriver::backward_op(int op, int mb, bool split_w) {
  const Op& o = g_.ops[op];
  const OpPlan& p = plans_[op];
  fsdp_unit_gathers(op, mb, false);  // before the unit's recompute, as FSDP2's pre_backward
  // Recompute what the backward needs: the recompute groups due here (recompute_groups.h),
  // then the full-recompute segment or the attention core.
  for (int gi : index_.groups.triggered_by[op])
    for (int r : index_.groups.groups[gi].ops) forward_op(r, mb, kRecompute);
  const int seg = index_.seg_of_op[op];
  if (seg >= 0 && index_.segments[seg].ops.back() == op)
    for (int r : index_.segments[seg].ops) forward_op(r, mb, kRecompute);
  else if (seg < 0 && index_.drops_extra(op))
    forward_op(op, mb, kRecompute);

  std::vector<int> grad_deps;
  double ring_shard_bytes = 0;
  output_grad_deps(op, mb, &grad_deps, &ring_shard_bytes);
  std::vector<int> deps = grad_deps;
  if (const int out = te_cp_a2a_saved_output_exchange(op, mb); out >= 0) deps.push_back(out);
  if (p.fp8_amax_tp_bwd) current_amax_reduction(op, mb, Phase::BackwardInput, &deps);
  std::vector<MemEvent> mem;
  pending_weight_alloc_.clear();
  if (const int task = use_kept_gather(op, mb, Phase::BackwardInput); task >= 0) {
    // gathered by this micro-batch's recompute (or prefetched for it, or kept from the forward)
    deps.push_back(task);
    if (!index_.frees_gather_at_root_post_backward(op)) {
      mem.push_back({MemCategory::Weights, true, -kept_gather_[static_cast<size_t>(op)].bytes});
      kept_gather_[static_cast<size_t>(op)] = {};
    }
  } else {
    zero3_gathers(op, mb, Phase::BackwardInput, &deps, &mem);
  }
  root_post_backward_frees(op, mb, &mem);
  if (!index_.input_needed_by_w(op)) regather_inputs(op, mb, Phase::BackwardInput, &deps);
  mem.insert(mem.begin(), pending_weight_alloc_.begin(), pending_weight_alloc_.end());
  mem.insert(mem.end(), prefetched_alloc_.begin(), prefetched_alloc_.end());
  prefetched_alloc_.clear();
  const double held = index_.held(op);
  const bool w_here = index_.has_w(op);
  if (!w_here && held > 0) mem.push_back({MemCategory::Activations, true, -held});
  hold_while_running(&mem, 2 * gathered_kv_bytes(op) + p.bwd_transient_bytes);
  int gathered = -1;
  const int b = compute_op(op, mb, Phase::BackwardInput, 1, deps, mem, ring_shard_bytes, &gathered);
  if (gathered >= 0) grad_deps.push_back(gathered);  // the weight gradient reads the gathered gradient
  state_.last_compute = b;
  if (p.has_weights()) note_weight_compute(b);
  for (size_t k = 0; k < o.inputs.size(); ++k)
    state_.set_grad_provider(grad_key(mb, o.inputs[k].tensor, op), b);
  // Gradients of inputs produced on another rank go back to it once per tensor. As in
  // Megatron's schedules, the send is issued when the backward step of the chunk returns
  // (after its weight gradients too, unless the schedule splits them off): see end_backward_pass.
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    const int t = o.inputs[k].tensor;
    const int prod = g_.tensors[t].producer;
    if (prod < 0 || emit_.chunk_is_local(plans_[prod].chunk, mb)) continue;
    int first_consumer = -1;
    for (const auto& [c_op, kk] : index_.consumers[t])
      if (plans_[c_op].chunk == p.chunk) {
        first_consumer = c_op;
        break;
      }
    if (first_consumer != op) continue;
    pending_grad_sends_.push_back(
        {t, prod, tensor_bytes_per_rank(g_.tensors[t], p2p_layout(p.input_grad[k], g_.tensors[t]), mesh_),
         index_.labels[op]});
  }
  if (w_here) {
    if (split_w) {
      state_.set_w_grad_deps(wkey(mb, op), grad_deps);
    } else {
      weight_grad(op, mb, grad_deps);
      // PyTorch autograd: the node (MmBackward) returns its input gradient with its weight
      // gradient, so DTensor's collective on that gradient is issued after both.
      if (tree_.nodes[o.module].config.dtensor_tp)
        for (size_t k = 0; k < o.inputs.size(); ++k)
          state_.set_grad_provider(grad_key(mb, o.inputs[k].tensor, op), state_.last_compute);
    }
  } else if (p.has_weights()) {
    tail_.weight_grad_done(op, b, mb, state_.count_weight_use(op));
  }
}

void PassDeriver::end_backward_pass(int mb) {
  for (const GradSend& gs : pending_grad_sends_)
    emit_.send(emit_.gpu_of_chunk(plans_[gs.producer].chunk, mb), gs.tensor, mb, true, gs.bytes, gs.label,
               state_.last_compute, plans_[gs.producer].chunk);
  pending_grad_sends_.clear();
}

// Inputs the backward reads that were kept as a shard (op_plan.h, input_saved) are gathered
// again, once per tensor and micro-batch, on the tensor-parallel stream; the task that needs
// them waits, the input-gradient GEMM does not (Megatron overlaps this all-gather with it).
void PassDeriver::regather_inputs(int op, int mb, Phase phase, std::vector<int>* deps) {
  const Op& o = g_.ops[op];
  const OpPlan& p = plans_[op];
  if (!o.saves_inputs) return;
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    if (p.input_saved[k] == p.input_required[k]) continue;
    // Also after a full-recompute replay, which gathered it for its forward GEMM: that GEMM
    // kept the shard too (Megatron's LinearWithGradAccumulationAndAsyncCommunication and TE's
    // Linear save the local input and gather it again in their backward).
    const int t = o.inputs[k].tensor;
    const uint64_t key = provider_key(mb, kFwd, t, p.input_required[k]);
    const int* known = state_.regathered(mb, key);
    int gathered = known ? *known : -1;
    if (!known) {
      std::vector<int> d;
      for (const CollectiveStep& step :
           redistribute(p.input_saved[k], p.input_required[k], input_move_bytes(g_.tensors[t], p, k), mesh_))
        d = {emit_.collective(
            step.kind, step.axes, step.bytes, Stream::TpComm, phase, mb, index_.labels[op], d,
            uses_userbuffers(op) && step.axes == axis_bit(kAxisTp) ? kUserbuffersPurpose : "activation")};
      gathered = d.empty() ? -1 : d.front();
      state_.set_regathered(key, gathered);
    }
    if (gathered >= 0) deps->push_back(gathered);
  }
}

// Matmul and convolution backward needs the input for the weight gradient only.
void PassDeriver::weight_grad(int op, int mb, const std::vector<int>& grad_deps) {
  const double held = index_.held(op);
  std::vector<MemEvent> mem;
  if (held > 0) mem.push_back({MemCategory::Activations, true, -held});
  std::vector<int> deps = grad_deps;
  if (index_.input_needed_by_w(op)) regather_inputs(op, mb, Phase::BackwardWeight, &deps);
  const int w = emit_.compute(
      emit_.compute_task(index_.labels[op], Phase::BackwardWeight, mb, work_id(op, 2)), deps, mem);
  state_.last_compute = w;
  tail_.weight_grad_done(op, w, mb, state_.count_weight_use(op));
}

// Delayed scaling: TE reduce_and_update_fp8_tensors with async_op=False, after everything the
// compute stream ran before it (the exit of the chunk's fp8_autocast, or the end of the backward
// of its first FP8 module); the compute stream waits for it, so it sits in the compute queue.
void PassDeriver::delayed_amax_reduction(int chunk, int mb, bool forward) {
  const size_t c = static_cast<size_t>(chunk);
  if (amax_.axes == 0) return;
  if (amax_label_ < 0) amax_label_ = emit_.exec().label_id("fp8_amax_reduction");
  std::vector<int> deps;
  if (state_.last_compute >= 0) deps.push_back(state_.last_compute);
  state_.last_compute = emit_.collective(
      CollectiveKind::AllReduce, amax_.axes, forward ? amax_.forward_bytes[c] : amax_.backward_bytes[c],
      Stream::Compute, forward ? Phase::Forward : Phase::BackwardInput, mb, amax_label_, deps, "fp8_amax");
}

// Current scaling under sequence parallelism (TE Float8CurrentScalingQuantizer with
// with_amax_reduction over the tp group): the local amax is all-reduced (one fp32) before the
// tensor is cast; the GEMM waits for it, behind the gather of its input or output gradient on
// the tensor-parallel stream (TE runs it before the FP8 gather: same serial chain).
void PassDeriver::current_amax_reduction(int op, int mb, Phase phase, std::vector<int>* deps) {
  if (mesh_.size[kAxisTp] <= 1) return;
  deps->push_back(emit_.collective(CollectiveKind::AllReduce, axis_bit(kAxisTp), 4, Stream::TpComm, phase, mb,
                                   index_.labels[op], *deps, "fp8_amax"));
}

void PassDeriver::build_pass(const Pass& pass, int chunk, bool split_w) {
  const auto& ops = index_.chunk_ops[chunk];
  const int mb = pass.micro_batch;
  const size_t c = static_cast<size_t>(chunk);
  if (pass.kind == PassKind::F) {
    for (int op : ops) {
      forward_op(op, mb, kFwd);
      if (op == amax_.forward_exit_op[c]) delayed_amax_reduction(chunk, mb, true);
    }
  } else if (pass.kind == PassKind::B) {
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      backward_op(*it, mb, split_w);
      if (*it == amax_.backward_op[c]) delayed_amax_reduction(chunk, mb, false);
    }
    end_backward_pass(mb);
  } else {
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      if (index_.has_w(*it)) weight_grad(*it, mb, state_.w_grad_deps(wkey(mb, *it)));
  }
}

}  // namespace proteus
