#include "iteration_tail.h"

#include <algorithm>
#include <map>

#include "collective_steps.h"
#include "fsdp_copies.h"
#include "grad_sync_points.h"
#include "proteus/strategy_spec.h"
#include "proteus/units.h"

namespace proteus {
namespace {

constexpr double kFp8AmaxBytes = 4;  // one fp32 amax per FP8 weight

// Bytes per gradient element: fp32 main gradients, or 16-bit with grad_reduce_in_fp32 false
// (Megatron --grad-reduce-in-bf16, NeMo optim.grad_sync_dtype bf16, FSDP2 reduce_dtype bf16).
double grad_bytes(const ParallelConfig& knobs) { return grad_bytes_per_element(knobs.grad_reduce_in_fp32); }
// PyTorch DDP's first bucket is 1 MB (dist._DEFAULT_FIRST_BUCKET_BYTES); later ones grad_bucket_MB.
constexpr double kDdpFirstBucketMB = 1;

}  // namespace

IterationTail::IterationTail(const ProgramInputs& in, const OpIndex& index, Emitter* emitter,
                             PassState* state, CompileStats* stats)
    : g_(in.graph),
      tree_(in.tree),
      plans_(in.plans),
      mesh_(in.tree.mesh),
      knobs_(in.tree.root()),
      index_(index),
      emit_(*emitter),
      state_(*state),
      stats_(*stats) {}

// ZeRO-1/2 keep 1/d of the updated weights after the step; they are gathered again. ZeRO-3
// gathers before each use instead (pass_derivation.h).
bool IterationTail::gathered_after_step(const WeightPlan& w) { return w.zero >= 1 && w.zero < 3; }

void IterationTail::begin_rank() {
  param_gather_ready_.assign(g_.ops.size(), -1);
  grad_sync_tasks_.clear();
  post_backward_buckets_.clear();
  held_buckets_.clear();
  for (std::vector<int>& w : accumulate_work_) w.assign(g_.tensors.size(), -1);
  plan_buckets();
  apex_sync_.reset();
  apex_launch_before_pass_.clear();
  if (knobs_.apex_distributed_adam) plan_apex_groups();
  if (!knobs_.overlap_param_gather) return;
  if (!knobs_.apex_distributed_adam) {
    param_gathers(true);
    return;
  }
  std::vector<bool> needs_gather;
  for (const int bi : apex_bucket_of_group_) needs_gather.push_back(param_gather_axes(bi) != 0);
  apex_sync_ = std::make_unique<ApexParamSync>(needs_gather);
  apex_gather_of_group_.assign(apex_bucket_of_group_.size(), -1);
}

// torch.distributed.pipelining with FSDP2 (PyTorch of late 2024, what TorchTitan's
// docs/performance.md ran): PipelineStage.backward_maybe_with_nosync runs every backward under
// set_requires_gradient_sync(False) and set_reshard_after_backward(False), and after the stage's
// last backward calls post_backward on each of its parameter groups in turn (run_post_backward).
// Each post_backward first makes the current stream wait for the previous group's reduce-scatter
// (FSDPParamGroup.post_backward: current_stream().wait_event(comm_ctx.reduce_scatter_state.event)),
// then copies its gradients in on the current stream and issues its reduce-scatter. So the
// stage's reductions run one after another once its last backward is done, and the compute
// stream (with the input-gradient send queued after it) waits for all but the last.
void IterationTail::end_pass(int last_pass) {
  if (knobs_.megatron_grad_sync_func) launch_chunks_after(last_pass);
  int previous = -1;  // the chain's last reduction
  for (const int bi : post_backward_buckets_) {
    std::vector<int> deps = buckets_[static_cast<size_t>(bi)].ready_tasks;
    if (previous >= 0) deps.push_back(previous);
    const size_t before = grad_sync_tasks_.size();
    reduce_bucket(bi, deps);
    if (grad_sync_tasks_.size() > before)
      previous = grad_sync_tasks_.back();  // none without data parallelism
  }
  post_backward_buckets_.clear();
}

void IterationTail::finish_rank() {
  if (!knobs_.overlap_grad_reduce && knobs_.grad_sync == GradSync::AtBoundary)
    for (size_t bi = 0; bi < buckets_.size(); ++bi)
      reduce_bucket(static_cast<int>(bi), {state_.last_compute});
  for (const int bi : held_buckets_)
    reduce_bucket(bi, {state_.last_compute});  // none held past the last pass
  held_buckets_.clear();
  tied_weight_reduce();
  static_memory_and_optimizer();
  fp8_weight_amax_reduction();
  if (!knobs_.overlap_param_gather) param_gathers(false);
}

// The parameter group whose gradients op's fill as one bucket, -1: buckets by size. FSDP2's
// units all; Megatron-FSDP's layers, while its other parameters (unit 0: embedding, final
// norm, output layer) are split by the bucket size like DDP's (_get_parameter_groups splits
// the groups without an FSDP unit at suggested_bucket_size, megatron_fsdp/param_and_grad_buffer.py).
int IterationTail::grad_unit_of_op(int op) const {
  const int unit = index_.unit_of_op[op];
  if (unit >= 0 && knobs_.megatron_fsdp && index_.fsdp_unit_is_root[static_cast<size_t>(unit)]) return -1;
  return unit;
}

// Weight tensors of this stage in reverse registration order (backward order of the stage's
// chunks, last chunk first), grouped into DDP-like buckets. A weight is registered by its first
// use in the forward: Megatron's _ParamAndGradBuffer and PyTorch DDP bucket the parameters in
// reverse `module.parameters()` order, so a tied embedding, registered by the embedding and read
// again by the output layer, falls into the last bucket (gathered first for the forward), not
// the first.
void IterationTail::plan_buckets() {
  buckets_.clear();
  bucket_of_tensor_.assign(g_.tensors.size(), -1);
  uses_left_.assign(g_.tensors.size(), 0);
  // Which weight plan describes each tensor: its first use, the one that registers it (tied
  // uses share layouts per stage).
  weight_plan_of_tensor_.assign(g_.tensors.size(), nullptr);
  for (int c = 0; c < tree_.model_chunks(); ++c) {
    if (!emit_.holds_chunk(c)) continue;
    for (int op : index_.chunk_ops[c])
      for (const WeightPlan& w : plans_[op].weights)
        if (!weight_plan_of_tensor_[w.tensor]) weight_plan_of_tensor_[w.tensor] = &w;
  }
  const double cap = knobs_.grad_bucket_MB * kBytesPerMB;
  const double first_cap = knobs_.ddp_first_bucket ? kDdpFirstBucketMB * kBytesPerMB : cap;
  double filled = 0;
  const bool per_mb = knobs_.grad_sync == GradSync::PerMicroBatch;
  std::vector<int> bucket_of_unit(index_.fsdp_units.size(), -1);
  int size_bucket = -1;  // the bucket filling up to the cap
  std::map<int, int> apex_bucket_of_key;
  apex_key_of_bucket_.clear();
  if (knobs_.apex_distributed_adam) plan_apex_keys();
  for (int c = tree_.model_chunks() - 1; c >= 0; --c) {
    if (!emit_.holds_chunk(c)) continue;
    // A new bucket per chunk: per micro-batch (one pass each), and where Megatron-Core launches
    // a chunk's reductions from its schedule (it wraps each model chunk in its own DDP, whose
    // buffers and buckets are the chunk's).
    bool new_chunk = per_mb || knobs_.megatron_grad_sync_func;
    for (auto it = index_.chunk_ops[c].rbegin(); it != index_.chunk_ops[c].rend(); ++it) {
      for (const WeightPlan& w : plans_[*it].weights) {
        ++uses_left_[w.tensor];
        if (weight_plan_of_tensor_[w.tensor] != &w) continue;  // bucketed at its registering use
        int bi = -1;
        if (const int unit = grad_unit_of_op(*it); unit >= 0) {
          // FSDP2 reduce-scatters a parameter group (OpIndex::fsdp_units) at once, in its
          // post-backward: a layer's when its backward is done, the root's at the end.
          if (bucket_of_unit[unit] < 0) {
            bucket_of_unit[unit] = static_cast<int>(buckets_.size());
            buckets_.push_back({});
          }
          bi = bucket_of_unit[unit];
        } else if (knobs_.apex_distributed_adam) {
          const int key = apex_group_key(*it, c);
          const auto [at, fresh] = apex_bucket_of_key.try_emplace(key, static_cast<int>(buckets_.size()));
          if (fresh) {
            buckets_.push_back({});
            buckets_.back().chunk = c;
            apex_key_of_bucket_.push_back(key);
          }
          bi = at->second;
        } else {
          if (size_bucket < 0 || new_chunk || filled >= (size_bucket == 0 ? first_cap : cap)) {
            size_bucket = static_cast<int>(buckets_.size());
            buckets_.push_back({});
            buckets_.back().chunk = c;
            filled = 0;
            new_chunk = false;
          }
          bi = size_bucket;
        }
        Bucket& b = buckets_[static_cast<size_t>(bi)];
        bucket_of_tensor_[w.tensor] = bi;
        b.tensors.push_back(w.tensor);
        if (gathered_after_step(w))
          b.param_gather_bytes +=
              w.local_params * gather_bytes_per_element(w, index_.weight_bytes, knobs_.fp8_param_gather);
        ++b.pending;
        filled += w.local_params * grad_bytes(knobs_);
      }
    }
  }
  uses_per_mb_ = uses_left_;
  mb_uses_left_ = uses_left_;
  for (Bucket& b : buckets_) b.mb_pending = static_cast<int>(b.tensors.size());
}

void IterationTail::weight_grad_done(int op, int w_task, int mb, int uses) {
  if (fsdp_accumulates()) fsdp_accumulate(op, w_task, mb, uses);
  if (knobs_.bf16_optimizer) bf16_optimizer_accumulate(op, w_task, mb);
  if (autograd_accumulates() && uses > 1) autograd_accumulate(op, w_task, mb);
  if (knobs_.grad_sync == GradSync::PerMicroBatch)
    micro_batch_grad_done(op, w_task, mb);
  else if (uses == tree_.micro_batches_per_copy())  // DualPipe: each copy runs half of them
    weights_final(op, w_task);
}

// DeepSpeed ZeRO-2/3 and FSDP outside no_sync: a bucket is reduce-scattered as soon as this
// micro-batch's gradients of all its weights exist (DeepSpeed reduce_independent_p_g_buckets_
// and_remove_grads, FSDP's post-backward hook), on every micro-batch. Buckets never span two
// chunks in this mode, so a bucket completes within one pass and the pass stays a template.
void IterationTail::micro_batch_grad_done(int op, int w_task, int mb) {
  for (const WeightPlan& w : plans_[op].weights) {
    if (--mb_uses_left_[w.tensor] > 0) continue;
    mb_uses_left_[w.tensor] = uses_per_mb_[w.tensor];
    const int bi = bucket_of_tensor_[w.tensor];
    Bucket& b = buckets_[bi];
    b.mb_ready_tasks.push_back(w_task);
    if (--b.mb_pending > 0) continue;
    b.mb_pending = static_cast<int>(b.tensors.size());
    reduce_bucket(bi, b.mb_ready_tasks, Phase::BackwardWeight, mb);
    b.mb_ready_tasks.clear();
  }
}

// FSDP2 outside gradient sync (every micro-batch under torch.distributed.pipelining) keeps the
// unsharded gradient across micro-batches. With a reduce dtype wider than the parameters' (fp32
// under TorchTitan), FSDPParamGroup.post_backward moves autograd's 16-bit gradient into an fp32
// accumulator: FSDPParam.to_accumulated_grad_if_needed casts the first (read 2, write 4 bytes per
// element), accumulate_unsharded_grad_if_needed adds the later ones (read 4 + 2, write 4). With
// the parameters' dtype, autograd's AccumulateGrad adds each later gradient in place (read 2 + 2,
// write 2). On the current (compute) stream, after the weight's gradient.
bool IterationTail::fsdp_accumulates() const {
  return knobs_.fsdp_pp_post_backward && tree_.micro_batches_per_copy() > 1;
}

void IterationTail::fsdp_accumulate(int op, int w_task, int mb, int uses) {
  const double param = index_.weight_bytes, reduce = grad_bytes(knobs_);
  const bool first = uses == 1;
  const bool widened = reduce > param;
  if (first && !widened) return;  // autograd keeps the first gradient as it is
  const double per_element = widened ? (first ? param + reduce : reduce + param + reduce) : 3 * param;
  for (const WeightPlan& w : plans_[op].weights)
    accumulate_task(w, first ? 0 : 1, per_element, "fsdp_grad_accumulate", w_task, mb);
}

// One weight's gradient accumulation kernel after its gradient task w_task: memory-bound,
// per_element bytes per element of the rank's weight, on the compute stream. Its work is made
// once per tensor and slot (first use, later ones) and shared by the micro-batches.
int IterationTail::accumulate_task(const WeightPlan& w, int slot, double per_element, const char* label,
                                   int w_task, int mb) {
  int& work = accumulate_work_[slot][static_cast<size_t>(w.tensor)];
  if (work < 0) {
    ComputeWork cw;
    cw.op_kind = OpKind::Elementwise;
    cw.bytes = w.local_params * per_element;
    work = emit_.exec().add_work(cw);
  }
  const Task t = emit_.compute_task(emit_.exec().label_id(label), Phase::BackwardWeight, mb, work);
  return emit_.compute(t, {w_task}, {});
}

// DeepSpeed's BF16_Optimizer after every micro-batch's backward (BF16_Optimizer.update_hp_grads,
// which the pipeline engine calls after each BackwardPass): for each parameter
// hp_grad.add_(lp.grad.to(float32)), the cast reading the bf16 gradient and writing an fp32 copy
// (2 + 4 bytes per element), the add reading both and writing the buffer (4 + 4 + 4): 18 bytes,
// on the compute stream. The buffer is zeroed after every step, so the first micro-batch pays it
// too. Once per tensor: autograd sums a tied weight's uses into one gradient first. Timed after
// each weight's gradient rather than after the whole backward (the same kernels; DeepSpeed's
// immediate_grad_update hooks run them there).
void IterationTail::bf16_optimizer_accumulate(int op, int w_task, int mb) {
  const double per_element = index_.weight_bytes + 4 + 3 * 4;
  for (const WeightPlan& w : plans_[op].weights) {
    if (weight_plan_of_tensor_[w.tensor] != &w) continue;
    // Inside the backward pass's call (_exec_backward_pass): what follows on the compute stream,
    // the input gradient's send and the boundary's all-reduce, waits for it.
    state_.last_compute = accumulate_task(w, 0, per_element, "bf16_optimizer_grad_accumulate", w_task, mb);
  }
}

// DeepSpeed's FP16_Optimizer (zero 0) and ZeRO-1 leave the gradients to autograd until the
// boundary (ZeRO-1's hooks reduce only there; docs/frameworks/data-parallelism.md, "Gradient
// dtype"): from the second micro-batch on, AccumulateGrad adds the weight-gradient GEMM's new
// tensor into param.grad in place, reading both and writing one in the module's 16-bit dtype
// (2 + 2 + 2 bytes per element), on the compute stream right after the gradient. ZeRO-2/3 reduce
// every micro-batch into their partition instead (grad_sync per_micro_batch).
bool IterationTail::autograd_accumulates() const {
  return knobs_.autograd_grad_accumulation && knobs_.grad_sync == GradSync::AtBoundary &&
         tree_.micro_batches_per_copy() > 1;
}

void IterationTail::autograd_accumulate(int op, int w_task, int mb) {
  for (const WeightPlan& w : plans_[op].weights)
    state_.last_compute =
        accumulate_task(w, 1, 3 * index_.weight_bytes, "autograd_grad_accumulate", w_task, mb);
}

void IterationTail::weights_final(int op, int w_task) {
  for (const WeightPlan& w : plans_[op].weights) {
    if (--uses_left_[w.tensor] > 0) continue;
    Bucket& b = buckets_[bucket_of_tensor_[w.tensor]];
    b.ready_tasks.push_back(w_task);
    if (--b.pending > 0 || !knobs_.overlap_grad_reduce) continue;
    const int bi = bucket_of_tensor_[w.tensor];
    if (knobs_.fsdp_pp_post_backward)
      post_backward_buckets_.push_back(bi);
    else if (holds_until_launched(b))
      held_buckets_.push_back(bi);
    else
      reduce_bucket(bi, b.ready_tasks);
  }
}

// Megatron-Core's grad_sync_func (grad_sync_points.h): where this rank's schedule launches each
// of its chunks' reductions.
void IterationTail::plan_grad_sync(const std::vector<Pass>& passes, const std::vector<int>& chunk_of_local,
                                   int stage) {
  if (!knobs_.megatron_grad_sync_func) return;
  chunks_after_pass_.assign(passes.size(), {});
  chunk_launched_.assign(static_cast<size_t>(tree_.model_chunks()), false);
  const GradSyncPoints points =
      megatron_grad_sync_points(passes, stage, tree_.schedule == Schedule::Interleaved1F1B);
  sync_on_ready_ = points.on_ready;
  for (size_t i = 0; i < passes.size(); ++i)
    for (int local : points.chunks_after_pass[i])
      chunks_after_pass_[i].push_back(chunk_of_local[static_cast<size_t>(local)]);
}

// A bucket whose gradients are final waits for its chunk's launch (grad_sync_func), unless the
// hooks launch it (the first stage under 1F1B) or its chunk was launched already.
bool IterationTail::holds_until_launched(const Bucket& b) const {
  return knobs_.megatron_grad_sync_func && !sync_on_ready_ && b.chunk >= 0 &&
         !chunk_launched_[static_cast<size_t>(b.chunk)];
}

// start_grad_sync of each chunk launched after pass `last_pass`: its final buckets, in the order
// they filled, each after all the work queued on the compute stream (NCCL's stream waits for it).
void IterationTail::launch_chunks_after(int last_pass) {
  if (last_pass < 0 || static_cast<size_t>(last_pass) >= chunks_after_pass_.size()) return;
  for (const int chunk : chunks_after_pass_[static_cast<size_t>(last_pass)]) {
    chunk_launched_[static_cast<size_t>(chunk)] = true;
    std::vector<int> still_held;
    for (const int bi : held_buckets_) {
      if (buckets_[static_cast<size_t>(bi)].chunk != chunk) {
        still_held.push_back(bi);
        continue;
      }
      std::vector<int> deps = buckets_[static_cast<size_t>(bi)].ready_tasks;
      if (state_.last_compute >= 0) deps.push_back(state_.last_compute);
      reduce_bucket(bi, deps);
    }
    held_buckets_ = std::move(still_held);
  }
}

void IterationTail::reduce_bucket(int bi, const std::vector<int>& deps, Phase phase, int mb) {
  Bucket& b = buckets_[bi];
  // Sum the steps of every weight per (kind, axes): one collective each.
  std::vector<CollectiveStep> merged;
  for (int t : b.tensors) {
    const WeightPlan& w = *weight_plan_of_tensor_[t];
    add_steps(&merged,
              redistribute(w.grad, w.grad_target, g_.tensors[t].elements() * grad_bytes(knobs_), mesh_));
  }
  const int label = emit_.exec().label_id("grad_bucket_" + std::to_string(bi));
  const std::vector<int> copied =
      knobs_.fsdp2_copies ? std::vector<int>{fsdp_reduce_copy_in(bi, deps, phase, mb)} : deps;
  for (const CollectiveStep& s : merged)
    grad_sync_tasks_.push_back(
        emit_.collective(s.kind, s.axes, s.bytes, Stream::DpComm, phase, mb, label, copied, "gradient"));
}

// FSDP2's reduce-scatter copy-in (fsdp_copies.h): the bucket's unsharded gradients into the
// fp32 send buffer, on the compute stream once they exist. One work per bucket.
int IterationTail::fsdp_reduce_copy_in(int bi, const std::vector<int>& deps, Phase phase, int mb) {
  Bucket& b = buckets_[bi];
  if (b.copy_in_work < 0) {
    double elements = 0;
    for (int t : b.tensors) elements += weight_plan_of_tensor_[t]->local_params;  // unsharded over dp
    ComputeWork w;
    w.op_kind = OpKind::Elementwise;
    // Under pipelining with several micro-batches the gradients come from the fp32 accumulator
    // (fsdp_accumulate) when the reduce dtype is wider.
    const double read =
        fsdp_accumulates() ? std::max(index_.weight_bytes, grad_bytes(knobs_)) : index_.weight_bytes;
    w.bytes = fsdp_reduce_copy_in_bytes(elements, read, grad_bytes(knobs_));
    b.copy_in_work = emit_.exec().add_work(w);
  }
  const Task t =
      emit_.compute_task(emit_.exec().label_id("fsdp_reduce_scatter_copy_in"), phase, mb, b.copy_in_work);
  return emit_.compute(t, deps, {});
}

// A weight used by ops on several stages (tied input/output embedding) keeps a copy per stage;
// their gradients are summed across those stages (Megatron's embedding group), one all-reduce
// per weight. Under DualPipe every weight of a rank is also held by its pair (copy A's stage r
// is copy B's stage p-1-r), and the two copies' gradients are summed before the step, as
// deepseek-ai/DualPipe's example does (examples/example_dualpipe.py: p.grad += the pair's
// gradient, gathered over the pipeline group; modelled as the all-reduce of the pair that sum
// is): one all-reduce of all the rank's gradients over the pair, the tied embedding's included.
void IterationTail::tied_weight_reduce() {
  struct Reduction {
    std::vector<int> stages;
    double bytes = 0;
  };
  std::vector<Reduction> reductions;
  for (size_t t = 0; t < g_.tensors.size(); ++t) {
    if (!weight_plan_of_tensor_[t]) continue;
    const std::vector<int>& stages = index_.weight_stages[t];
    if (stages.size() < 2) continue;
    const WeightPlan& w = *weight_plan_of_tensor_[t];
    const double bytes = static_cast<double>(g_.tensors[t].elements()) / w.grad_target.shard_factor(mesh_) *
                         grad_bytes(knobs_);
    auto same = std::find_if(reductions.begin(), reductions.end(),
                             [&](const Reduction& r) { return r.stages == stages; });
    if (tree_.copies > 1 && same != reductions.end())
      same->bytes += bytes;
    else
      reductions.push_back({stages, bytes});
  }
  const char* purpose = tree_.copies > 1 ? "model_copies" : "tied_embedding";
  for (const Reduction& r : reductions) {
    std::vector<int> group;
    auto c = mesh_.coords_of(emit_.gpu());
    for (int s : r.stages) {
      c[kAxisPp] = s;
      group.push_back(mesh_.gpu_of(c));
    }
    std::vector<int> deps = grad_sync_tasks_;
    if (deps.empty() && state_.last_compute >= 0) deps.push_back(state_.last_compute);
    grad_sync_tasks_.push_back(emit_.collective(CollectiveKind::AllReduce, axis_bit(kAxisPp), r.bytes,
                                                Stream::DpComm, Phase::Sync, -1,
                                                emit_.exec().label_id(purpose), deps, purpose, group));
  }
}

double IterationTail::data_replication(const WeightPlan& w) const {
  double f = 1;
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (w.data_axes_replicated & (1u << a)) f *= mesh_.size[a];
  return f;
}

void IterationTail::static_memory_and_optimizer() {
  std::array<double, kNumMemCategories> bytes{};
  double opt_params = 0, fp8_cast_params = 0, grad_params = 0;
  for (size_t t = 0; t < g_.tensors.size(); ++t) {
    const WeightPlan* w = weight_plan_of_tensor_[t];
    if (!w) continue;
    const double d = data_replication(*w);
    const double p = w->local_params;
    const int zero = w->zero;
    // fp8_param_gather with ZeRO-1/2: the weights exist only as FP8 (Megatron's fp8_model_init;
    // the fp32 main copy is the optimizer's), with their transpose: the 1 + 1 bytes below.
    const bool fp8_only = w->fp8_copy && zero < 3 && knobs_.fp8_param_gather;
    // FSDP2 fully sharded under mixed precision: the parameter at rest is the fp32 shard, which
    // is also what the optimizer updates (counted with its states as the master); the 16-bit
    // copies exist only while gathered (torch _fully_shard/_fsdp_param.py: sharded_param keeps
    // the module's dtype, MixedPrecisionPolicy.param_dtype applies to the all-gather).
    const bool shard_is_master = zero >= 3 && knobs_.torch_optimizer && index_.weight_bytes < 4;
    if (!fp8_only && !shard_is_master)
      bytes[static_cast<int>(MemCategory::Weights)] += p * index_.weight_bytes / (zero >= 3 ? d : 1);
    // FP8: Transformer Engine's FP8 weight copy and its transpose, 1 + 1 bytes, made from the
    // 16-bit weights in the forward (fp8_weight_casts.h). With fp8_param_gather the step's
    // traffic keeps 4 bytes per parameter for the shard's cast and the gathered weight's
    // transpose (docs/frameworks/fp8.md "FP8 weight casts").
    if (w->fp8_copy && zero < 3) {
      bytes[static_cast<int>(MemCategory::Weights)] += p * 2;
      if (knobs_.fp8_param_gather) fp8_cast_params += p;
    }
    // Gradients stay whole until the boundary (Megatron's fp32 grad buffer, FSDP's no_sync);
    // reduced every micro-batch, only the shard survives (DeepSpeed ZeRO-2/3).
    const bool grads_sharded = zero >= 2 && knobs_.grad_sync == GradSync::PerMicroBatch;
    bytes[static_cast<int>(MemCategory::Gradients)] += p * grad_bytes(knobs_) / (grads_sharded ? d : 1);
    // BF16_Optimizer keeps autograd's bf16 gradients beside its fp32 buffer (the pipeline engine
    // calls update_hp_grads(clear_lp_grads=False); the next backward frees them first).
    if (knobs_.bf16_optimizer) bytes[static_cast<int>(MemCategory::Gradients)] += p * index_.weight_bytes;
    grad_params += p;
    bytes[static_cast<int>(MemCategory::OptimizerStates)] += p * index_.opt_state_bytes / (zero >= 1 ? d : 1);
    opt_params += p / (zero >= 1 ? d : 1);
  }
  emit_.exec().ranks[emit_.rank()].static_bytes = bytes;
  if (emit_.is_stats_rank()) stats_.static_bytes_per_stage[emit_.stage()] = bytes;
  // The optimizer step: memory-bound over the parameters this rank updates.
  Task t;
  t.kind = TaskKind::Compute;
  t.phase = Phase::Optimizer;
  t.stream = Stream::Compute;
  t.rank = emit_.rank();
  t.label = emit_.exec().label_id("optimizer");
  t.stage = emit_.stage();
  ComputeWork step;
  step.op_kind = OpKind::Elementwise;
  // The step reads each gradient once: 4 bytes in opt_traffic_bytes, 2 when they are 16-bit.
  // FSDP2 casts the reduced shard to the fp32 parameter's dtype (torch_optimizer) either way.
  const double grad_read_saving =
      knobs_.torch_optimizer ? 0 : grad_bytes_per_element(true) - grad_bytes(knobs_);
  step.bytes = opt_params * (index_.opt_traffic_bytes - grad_read_saving) + fp8_cast_params * 4;
  // BF16_Optimizer.step ends with clear_hp_grads: the whole fp32 buffer zeroed, 4 bytes written.
  if (knobs_.bf16_optimizer) step.bytes += grad_params * 4;
  step.flops = opt_params * 10;  // a handful of flops per parameter (Adam: ~10)
  t.work = emit_.exec().add_work(step);
  std::vector<int> deps = grad_sync_tasks_;
  if (state_.last_compute >= 0) deps.push_back(state_.last_compute);
  // Transformer Engine's FusedAdam holds fp32 copies of its 16- and 8-bit states while it steps.
  const double transient = opt_params * index_.opt_transient_bytes;
  std::vector<MemEvent> mem;
  if (transient > 0)
    mem = {{MemCategory::OptimizerStates, false, transient},
           {MemCategory::OptimizerStates, true, -transient}};
  state_.last_compute = emit_.compute(t, deps, mem);
}

// strategy.fp8_param_gather: after the step each rank casts its shard of the FP8 weights, and the
// shards' amaxes are all-reduced (MAX) over the data-parallel group in one call, one fp32 per
// weight: TE tensor/utils.py cast_master_weights_to_fp8 (packed_amaxes,
// all_reduce(op=MAX, group)), called by Megatron's fp8_utils.quantize_param_shard with the
// distributed optimizer's data-parallel group; torchao's precompute_float8_dynamic_scale_for_fsdp
// likewise reduces all weights' amaxes at once. Synchronous: the compute stream waits, and the
// parameter all-gather follows it.
void IterationTail::fp8_weight_amax_reduction() {
  if (!knobs_.fp8_param_gather) return;
  double amaxes = 0;
  AxisMask axes = 0;
  for (int c = 0; c < tree_.model_chunks(); ++c) {
    if (!emit_.holds_chunk(c)) continue;
    for (int op : index_.chunk_ops[c]) {
      amaxes += plans_[op].fp8_module_gemms;
      for (const WeightPlan& w : plans_[op].weights)
        if (w.fp8_copy) axes |= w.data_axes_replicated;
    }
  }
  if (amaxes == 0 || axes == 0) return;
  std::vector<int> deps;
  if (state_.last_compute >= 0) deps.push_back(state_.last_compute);
  state_.last_compute =
      emit_.collective(CollectiveKind::AllReduce, axes, amaxes * kFp8AmaxBytes, Stream::Compute,
                       Phase::Optimizer, -1, emit_.exec().label_id("fp8_weight_amax"), deps, "fp8_amax");
}

// ZeRO-1/2: after the step each rank holds 1/d of the updated weights; all-gather them.
void IterationTail::param_gathers(bool at_start) {
  std::vector<int> gather_of_bucket(buckets_.size(), -1);
  // Buckets are numbered in backward order; the forward needs the last one first. Megatron
  // gathers them in that order, each bucket's gather dispatched when the previous one's is
  // waited on (ParamAndGradBucketGroup.finish_param_sync -> next_param_gather_bucket_group),
  // so they run back to back on the data-parallel stream while the forward proceeds.
  for (size_t n = 0; n < buckets_.size(); ++n) {
    const size_t bi = buckets_.size() - 1 - n;
    std::vector<int> deps;
    if (!at_start && state_.last_compute >= 0) deps.push_back(state_.last_compute);
    gather_of_bucket[bi] = emit_param_gather(static_cast<int>(bi), deps);
  }
  if (!at_start) return;
  // Overlapped with the forward (Megatron's overlap_param_gather): each op's forward waits
  // for the all-gather of its weights' bucket.
  for (int c = 0; c < tree_.model_chunks(); ++c) {
    if (!emit_.holds_chunk(c)) continue;
    for (int op : index_.chunk_ops[c])
      for (const WeightPlan& w : plans_[op].weights) {
        const int task = gather_of_bucket[bucket_of_tensor_[w.tensor]];
        if (task >= 0) param_gather_ready_[op] = std::max(param_gather_ready_[op], task);
      }
  }
}

// The data axes bucket bi's ZeRO-1/2 weights are gathered over after the step (0: none).
AxisMask IterationTail::param_gather_axes(int bi) const {
  AxisMask axes = 0;
  for (int t : buckets_[static_cast<size_t>(bi)].tensors)
    if (gathered_after_step(*weight_plan_of_tensor_[t]))
      axes |= weight_plan_of_tensor_[t]->data_axes_replicated;
  return axes;
}

// The all-gather of bucket bi's updated ZeRO-1/2 weights over their data axes (-1: none to gather).
int IterationTail::emit_param_gather(int bi, const std::vector<int>& deps) {
  const Bucket& b = buckets_[static_cast<size_t>(bi)];
  const AxisMask axes = param_gather_axes(bi);
  if (!axes) return -1;
  return emit_.collective(CollectiveKind::AllGather, axes, b.param_gather_bytes, Stream::DpComm, Phase::Sync,
                          -1, emit_.exec().label_id("param_gather_" + std::to_string(bi)), deps, "weight");
}

}  // namespace proteus
