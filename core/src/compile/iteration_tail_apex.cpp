// IterationTail's parameter gathers under Apex's DistributedFusedAdam (strategy.distributed_optimizer
// "apex"; apex_param_sync.h, docs/frameworks/data-parallelism.md "Apex's DistributedFusedAdam"):
// NeMo's bucket groups, Apex's pre-forward hooks and Megatron-Core's param_sync_func, turned into
// all-gathers and the waits of the compute stream. The rest of the tail is iteration_tail.cpp.
#include <algorithm>

#include "grad_sync_points.h"
#include "iteration_tail.h"

namespace proteus {

void IterationTail::before_forward(int op, std::vector<int>* deps) {
  if (!apex_sync_) {
    if (param_gather_ready_[op] >= 0) deps->push_back(param_gather_ready_[op]);
    return;
  }
  const int group = apex_group_of_op_[static_cast<size_t>(op)];
  if (group >= 0) apply_apex_steps(apex_sync_->pre_forward(group), deps);
}

// NeMo's buckets for Apex (megatron_gpt_model.py configure_optimizers): one per transformer layer
// of the rank, or per model chunk under the interleaved schedule ("a bucket for each virtual
// pipeline stage"); buckets.reverse(), then buckets[-1].extend(every other parameter): the
// parameters outside the layers (embedding, final norm, output layer) join the rank's first
// layer's (first chunk's) bucket. The key orders the groups: layer, or chunk, in forward order.
void IterationTail::plan_apex_keys() {
  int chunks_here = 0, first_layer = -1, first_chunk = -1;
  for (int c = 0; c < tree_.model_chunks(); ++c) {
    if (!emit_.holds_chunk(c)) continue;
    ++chunks_here;
    if (first_chunk < 0) first_chunk = c;
    for (int op : index_.chunk_ops[c]) {
      const int layer = g_.modules[static_cast<size_t>(g_.ops[static_cast<size_t>(op)].module)].layer;
      if (layer >= 0 && (first_layer < 0 || layer < first_layer)) first_layer = layer;
    }
  }
  apex_per_chunk_ = chunks_here > 1;
  apex_first_key_ = apex_per_chunk_ ? first_chunk : first_layer;
}

int IterationTail::apex_group_key(int op, int chunk) const {
  const int layer = g_.modules[static_cast<size_t>(g_.ops[static_cast<size_t>(op)].module)].layer;
  if (layer < 0) return apex_first_key_;
  return apex_per_chunk_ ? chunk : layer;
}

// The optimizer's order of the groups (apex_param_sync.h): the layers or chunks in forward order,
// the first with the parameters outside the layers; and the group each op's forward reads.
void IterationTail::plan_apex_groups() {
  std::vector<std::pair<int, int>> keyed;  // (key, bucket)
  for (size_t bi = 0; bi < buckets_.size(); ++bi)
    keyed.emplace_back(apex_key_of_bucket_[bi], static_cast<int>(bi));
  std::sort(keyed.begin(), keyed.end());
  apex_bucket_of_group_.clear();
  std::vector<int> group_of_bucket(buckets_.size(), -1);
  for (const auto& [key, bi] : keyed) {
    group_of_bucket[static_cast<size_t>(bi)] = static_cast<int>(apex_bucket_of_group_.size());
    apex_bucket_of_group_.push_back(bi);
  }
  apex_group_of_op_.assign(g_.ops.size(), -1);
  for (int c = 0; c < tree_.model_chunks(); ++c) {
    if (!emit_.holds_chunk(c)) continue;
    for (int op : index_.chunk_ops[c])
      for (const WeightPlan& w : plans_[op].weights) {
        const int bi = bucket_of_tensor_[w.tensor];
        if (!gathered_after_step(w) || bi < 0) continue;
        apex_group_of_op_[static_cast<size_t>(op)] = group_of_bucket[static_cast<size_t>(bi)];
        break;
      }
  }
}

// Megatron-Core's interleaved schedule with NeMo's param_sync_func (grad_sync_points.h): chunks 0
// and 1 before the first pass, each later one before the forward that launches it. A chunk's
// call gathers every group its parameters are in: on the first stage the embedding's, on the
// last the output layer's.
void IterationTail::plan_param_sync(const std::vector<Pass>& passes, const std::vector<int>& chunk_of_local,
                                    int stage) {
  if (!knobs_.apex_param_sync_func || !apex_sync_ || chunk_of_local.size() < 2) return;
  apex_groups_of_local_.assign(chunk_of_local.size(), {});
  for (size_t local = 0; local < chunk_of_local.size(); ++local)
    for (int op : index_.chunk_ops[static_cast<size_t>(chunk_of_local[local])]) {
      const int group = apex_group_of_op_[static_cast<size_t>(op)];
      std::vector<int>& groups = apex_groups_of_local_[local];
      if (group >= 0 && std::find(groups.begin(), groups.end(), group) == groups.end())
        groups.push_back(group);
    }
  apex_launch_before_pass_ = megatron_param_sync_chunks(passes, stage, tree_.stages);
  apply_apex_steps(apex_sync_->sync(apex_groups_of_local_[0]), nullptr);
  apply_apex_steps(apex_sync_->sync(apex_groups_of_local_[1]), nullptr);
}

void IterationTail::begin_pass(int pass) {
  if (pass < 0 || static_cast<size_t>(pass) >= apex_launch_before_pass_.size()) return;
  const int local = apex_launch_before_pass_[static_cast<size_t>(pass)];
  if (local >= 0)
    apply_apex_steps(apex_sync_->sync(apex_groups_of_local_[static_cast<size_t>(local)]), nullptr);
}

// A launch gathers each group after the work the compute stream has queued (Apex's
// comm_stream.wait_stream(main_stream)); a wait holds the compute stream until the gathers are
// done: the forward op that the hook runs before, or, between passes, a task of no work in the
// compute stream's queue.
void IterationTail::apply_apex_steps(const std::vector<ApexSyncStep>& steps, std::vector<int>* deps) {
  for (const ApexSyncStep& step : steps) {
    if (step.kind == ApexSyncStep::kLaunch) {
      std::vector<int> after;
      if (state_.last_compute >= 0) after.push_back(state_.last_compute);
      for (const int g : step.groups)
        apex_gather_of_group_[static_cast<size_t>(g)] =
            emit_param_gather(apex_bucket_of_group_[static_cast<size_t>(g)], after);
      continue;
    }
    std::vector<int> waits;
    for (const int g : step.groups)
      if (apex_gather_of_group_[static_cast<size_t>(g)] >= 0)
        waits.push_back(apex_gather_of_group_[static_cast<size_t>(g)]);
    if (waits.empty()) continue;
    if (deps) {
      deps->insert(deps->end(), waits.begin(), waits.end());
      continue;
    }
    if (apex_wait_work_ < 0) {
      ComputeWork none;
      none.kernels = 0;
      apex_wait_work_ = emit_.exec().add_work(none);
    }
    emit_.compute(
        emit_.compute_task(emit_.exec().label_id("param_sync_wait"), Phase::Sync, -1, apex_wait_work_), waits,
        {});
  }
}

}  // namespace proteus
