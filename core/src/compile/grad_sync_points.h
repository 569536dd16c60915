// Where Megatron-Core's pipeline schedules launch the data-parallel gradient reductions when
// they are given grad_sync_func (align_grad_reduce, on by default: Megatron-LM's training.py
// sets config.grad_sync_func = [chunk.start_grad_sync ...] under overlap_grad_reduce; NeMo's
// fwd_bwd_step does the same under optim.overlap_grad_sync). Under no_sync the DDP hooks then
// launch nothing; the schedule calls start_grad_sync for a whole model chunk, which issues all
// of the chunk's buckets at once (docs/frameworks/data-parallelism.md, "When Megatron-Core
// launches the reductions"):
// - interleaved (forward_backward_pipelining_with_interleaving, backward_step_helper): after
//   backward k, the chunk whose last micro-batch was backward k - pipeline_parallel_rank, "to
//   launch asynchronous communication at the same time across the pipeline-parallel group";
//   chunks not launched by the last backward are launched after it;
// - 1F1B (forward_backward_pipelining_without_interleaving): the first stage enables the hooks
//   before its last backward (buckets launched as they fill); the other stages launch all their
//   reductions after the last backward, in the pipeline's drain.
#pragma once
#include <vector>

#include "proteus/schedule.h"

namespace proteus {

struct GradSyncPoints {
  bool on_ready = false;  // the DDP hooks launch each bucket as it fills (first stage, 1F1B)
  // Per pass of the stage's order: the stage's chunks (pipeline order, Pass::chunk) whose
  // reductions are launched right after that pass.
  std::vector<std::vector<int>> chunks_after_pass;
};

// The launch points of one stage's order (its passes; a backward pass is a whole backward).
GradSyncPoints megatron_grad_sync_points(const std::vector<Pass>& passes, int stage, bool interleaved);

// Where the interleaved schedule calls param_sync_func (NeMo's with Apex's DistributedFusedAdam;
// Megatron-Core's own only under align_param_gather): chunks 0 and 1 before the first pass
// ("Synchronize params for first two model chunks"), then in forward_step_helper before forward k
// (the stage's k-th forward) the chunk after the one whose first micro-batch is k +
// pipeline_parallel_rank (is_first_microbatch_for_model_chunk: within the first p x v forwards, a
// multiple of p), when that is chunk 2 .. v - 1. Per pass of the stage's order: the chunk
// (Pass::chunk) launched before it, -1 for none.
std::vector<int> megatron_param_sync_chunks(const std::vector<Pass>& passes, int stage, int stages);

}  // namespace proteus
