// Apex's DistributedFusedAdam under overlap_param_sync (NeMo's optim.name
// distributed_fused_adam, strategy.distributed_optimizer "apex"): which parameter all-gathers one
// rank's calls launch and which ones the compute stream waits for, in the order Apex issues them
// (docs/frameworks/data-parallelism.md, "Apex's DistributedFusedAdam").
//
// The optimizer's step leaves every bucket group SHARDED. Its state per group, as in
// apex/contrib/optimizers/distributed_fused_adam.py:
//   - _start_bucket_param_sync(groups) first finishes whatever is SYNCING (the main stream waits
//     for the communication stream), then all-gathers the SHARDED ones on the communication
//     stream, after everything the main stream has queued (comm_stream.wait_stream(main_stream)).
//   - _finish_bucket_param_sync() makes the main stream wait and marks the SYNCING groups READY.
//   - the pre-forward hook of a parameter (_make_pre_forward_hook): _param_copy(param), which
//     starts and finishes its group unless it is READY, then _try_start_bucket_param_sync()
//     without parameters: when nothing is SYNCING, the first SHARDED group in the optimizer's
//     order is started. So one group is in flight at a time, launched as the previous group's
//     first parameter is read.
//   - Megatron-Core's interleaved schedule calls param_sync_func(model_chunk.parameters()),
//     NeMo's sync_overlap_parameters -> _try_start_bucket_param_sync(params): the chunk's SHARDED
//     groups are started.
// Groups are numbered in the optimizer's order: the step recreates _params_buckets from the last
// bucket id down, and NeMo registers the buckets in backward order, the rank's first layer (or
// model chunk) last with the parameters outside the transformer layers, so that order is the first
// layer's group, then the others in forward order.
#pragma once
#include <vector>

namespace proteus {

// One thing a call does, in order: the compute stream waits for the gathers of `groups`, or one
// all-gather per group is launched after the work the compute stream has queued.
struct ApexSyncStep {
  enum Kind { kWait, kLaunch };
  Kind kind = kWait;
  std::vector<int> groups;
};

class ApexParamSync {
 public:
  // `needs_gather[g]`: whether group g has parameters to gather over some data axis (else it is
  // READY from the start: no data parallelism, nothing in flight).
  explicit ApexParamSync(const std::vector<bool>& needs_gather);
  // The pre-forward hook of a parameter of `group`.
  std::vector<ApexSyncStep> pre_forward(int group);
  // param_sync_func of a model chunk whose parameters are in `groups`.
  std::vector<ApexSyncStep> sync(const std::vector<int>& groups);
  // No group is SHARDED or SYNCING any more: the hooks do nothing from here on.
  bool all_ready() const;

 private:
  enum class Status { Sharded, Syncing, Ready };
  void start(const std::vector<int>& groups, std::vector<ApexSyncStep>* steps);
  void finish(std::vector<ApexSyncStep>* steps);
  std::vector<Status> status_;
};

}  // namespace proteus
