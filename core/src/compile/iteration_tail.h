// The iteration's tail on one rank, after (or overlapped with) the passes: gradients grouped
// into DDP-like buckets and reduced over the data axes as soon as a bucket's last gradient is
// final (overlap_grad_reduce) or after the last backward; the tied-embedding all-reduce
// across stages; the rank's static memory; the optimizer step; and under ZeRO-1/2 the
// all-gather of the updated parameters, overlapped with the next forward or after the step.
// Every knob comes from the strategy tree (the root node's, or the weight's module's ZeRO stage).
#pragma once
#include <memory>
#include <vector>

#include "apex_param_sync.h"
#include "emitter.h"
#include "op_index.h"
#include "pass_state.h"
#include "proteus/schedule.h"

namespace proteus {

class IterationTail {
 public:
  IterationTail(const ProgramInputs& in, const OpIndex& index, Emitter* emitter, PassState* state,
                CompileStats* stats);

  // Plans this rank's buckets; with overlap_param_gather, emits the parameter gathers the
  // forward will wait for.
  void begin_rank();
  // Before op's forward (not a recompute): the parameter gather it waits for (deps), and under
  // Apex's DistributedFusedAdam what its pre-forward hook launches and waits for.
  void before_forward(int op, std::vector<int>* deps);
  // Apex's hooks still have work: a forward that calls them is unlike the chunk's later forwards.
  bool param_sync_pending() const { return apex_sync_ && !apex_sync_->all_ready(); }
  // Micro-batch mb's gradient of op's weights is done by task w_task; `uses` micro-batches
  // have now computed it. At the boundary (grad_sync at_boundary) the last one makes the
  // weight final; per micro-batch, every one completes a bucket's reduce-scatter.
  void weight_grad_done(int op, int w_task, int mb, int uses);
  // After each pass (last_pass: the index of the group's last pass in the rank's order): the
  // chunks Megatron-Core's schedule launches there (plan_grad_sync); under torch.distributed.pipelining with
  // FSDP2 (fsdp_pp_post_backward), the reductions of the buckets whose gradients the pass made final, issued
  // as PyTorch does after a stage's last backward (docs/frameworks/data-parallelism.md, "FSDP2 under pipeline
  // parallelism").
  void end_pass(int last_pass);
  // Megatron-Core's grad_sync_func: the launch points of this rank's chunks' reductions in its
  // order of passes (after begin_rank; grad_sync_points.h).
  void plan_grad_sync(const std::vector<Pass>& passes, const std::vector<int>& chunk_of_local, int stage);
  // Megatron-Core's interleaved schedule calling Apex's param_sync_func (apex_param_sync_func):
  // the first two chunks before the first pass, the others before the forwards that launch them.
  void plan_param_sync(const std::vector<Pass>& passes, const std::vector<int>& chunk_of_local, int stage);
  // Before pass `pass` of the rank's order: the param_sync_func calls placed there.
  void begin_pass(int pass);
  // After the last pass: remaining reductions, tied weights, optimizer, parameter gathers.
  void finish_rank();

 private:
  struct Bucket {
    std::vector<int> tensors;
    double param_gather_bytes = 0;  // of its ZeRO-1/2 weights (16-bit, or FP8), for the parameter all-gather
    int pending = 0;                // weights not yet final
    std::vector<int> ready_tasks;
    int mb_pending = 0;  // per_micro_batch: weights whose gradient this micro-batch still lacks
    std::vector<int> mb_ready_tasks;
    int copy_in_work = -1;  // its FSDP2 reduce-scatter copy-in (fsdp_reduce_copy_in)
    int chunk = -1;         // the model chunk it holds gradients of (-1: an FSDP unit's)
  };

  // ZeRO-1/2 weights: gathered again after the step (ZeRO-3 gathers before each use instead).
  static bool gathered_after_step(const WeightPlan& w);
  void plan_buckets();
  int grad_unit_of_op(int op) const;
  void weights_final(int op, int w_task);
  // FSDP2 keeps the unsharded gradient across micro-batches (pipelining, more than one).
  bool fsdp_accumulates() const;
  void fsdp_accumulate(int op, int w_task, int mb, int uses);
  // DeepSpeed's BF16_Optimizer casts and adds every micro-batch's gradients into its fp32 buffer.
  void bf16_optimizer_accumulate(int op, int w_task, int mb);
  // DeepSpeed's other optimizers: autograd adds each later micro-batch's gradient into param.grad.
  bool autograd_accumulates() const;
  void autograd_accumulate(int op, int w_task, int mb);
  int accumulate_task(const WeightPlan& w, int slot, double per_element, const char* label, int w_task,
                      int mb);
  void micro_batch_grad_done(int op, int w_task, int mb);
  bool holds_until_launched(const Bucket& b) const;
  void launch_chunks_after(int last_pass);
  void reduce_bucket(int bi, const std::vector<int>& deps, Phase phase = Phase::Sync, int mb = -1);
  int fsdp_reduce_copy_in(int bi, const std::vector<int>& deps, Phase phase, int mb);
  void tied_weight_reduce();
  double data_replication(const WeightPlan& w) const;
  void static_memory_and_optimizer();
  void fp8_weight_amax_reduction();
  void param_gathers(bool at_start);
  // Apex's DistributedFusedAdam (apex_param_sync.h): its bucket groups in the optimizer's order,
  // and the steps of one of its calls (deps: the forward op's, or nullptr between passes, where the
  // compute stream's wait is a task of its own).
  void plan_apex_keys();
  int apex_group_key(int op, int chunk) const;
  void plan_apex_groups();
  void apply_apex_steps(const std::vector<ApexSyncStep>& steps, std::vector<int>* deps);
  AxisMask param_gather_axes(int bi) const;
  int emit_param_gather(int bi, const std::vector<int>& deps);

  const OpGraph& g_;
  const StrategyTree& tree_;
  const std::vector<OpPlan>& plans_;
  const Mesh& mesh_;
  const ParallelConfig& knobs_;  // the root node's
  const OpIndex& index_;
  Emitter& emit_;
  PassState& state_;
  CompileStats& stats_;

  std::vector<int> param_gather_ready_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_tensor_;
  std::vector<int> uses_left_;
  std::vector<int> uses_per_mb_, mb_uses_left_;  // per_micro_batch: ops using each weight
  std::vector<const WeightPlan*> weight_plan_of_tensor_;
  std::vector<int> grad_sync_tasks_;
  std::vector<int> post_backward_buckets_;  // final in this pass, reduced at its end (end_pass)
  // grad_sync_func (plan_grad_sync): the model chunks launched after each pass, which are
  // launched, whether the hooks launch buckets as they fill, and the final buckets held until
  // their chunk's launch, in the order they filled.
  std::vector<std::vector<int>> chunks_after_pass_;
  std::vector<bool> chunk_launched_;
  bool sync_on_ready_ = true;
  std::vector<int> held_buckets_;
  std::vector<int> accumulate_work_[2];  // accumulation work per tensor: first use, later ones
  // Apex: each group's bucket (optimizer order), each op's group (-1: none), each group's gather
  // task, the groups of each local chunk, the local chunk launched before each pass (-1: none).
  std::vector<int> apex_bucket_of_group_, apex_group_of_op_, apex_gather_of_group_;
  std::vector<std::vector<int>> apex_groups_of_local_;
  std::vector<int> apex_launch_before_pass_;
  std::vector<int> apex_key_of_bucket_;  // apex_group_key of each bucket's weights
  bool apex_per_chunk_ = false;          // a group per model chunk (this rank holds several)
  int apex_first_key_ = -1;              // the rank's first layer (chunk): the other weights join it
  std::unique_ptr<ApexParamSync> apex_sync_;
  int apex_wait_work_ = -1;
};

}  // namespace proteus
