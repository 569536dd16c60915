// PyTorch's multi-stage pipeline runtime as TorchTitan ran it (torch.distributed.pipelining,
// PyTorch of late 2024 to early 2025: torch 1963fc8 of 2024-12-23 is TorchTitan's
// docs/performance.md version). Private to the compiler.
//
// ScheduleInterleaved1F1B was a PipelineScheduleMulti, whose _step_microbatches walks the rank's
// `pipeline_order` one time step at a time: the step's pass (or nothing: the order holds None
// slots so that every rank's steps line up), then one batch_isend_irecv of the pass's sends and
// the receives of what the neighbouring ranks' passes at the same time step send it, and a
// wait on all of them before the next step. A send therefore starts once both ranks have
// reached time step t, and neither goes on to a later step before it ends. The order is
// `_get_1f1b_rank_ops` of ScheduleInterleaved1F1B._calculate_single_rank_operations:
//   rank r: r empty steps; `warmup` forwards, warmup = min((v-1)·g + 2(p-1-r), v·m) with
//   g = m / max(1, m / p) micro-batches per round; empty steps up to step v·p + 2(p-1-r);
//   one forward and one backward per step while forwards remain; then, per remaining
//   backward, an empty step and the backward.
// (Later PyTorch runs it as a _PipelineScheduleRuntime with sends and receives of their own.)
#pragma once
#include <utility>
#include <vector>

#include "blocking_p2p.h"
#include "proteus/exec_graph.h"
#include "proteus/schedule.h"

namespace proteus {

// One entry of a rank's pipeline_order: a pass of a local chunk, or an empty step (chunk < 0).
struct TorchStep {
  PassKind kind = PassKind::F;
  int chunk = -1;  // local chunk (0..v-1), -1: an empty step
  int micro_batch = -1;
};

// ScheduleInterleaved1F1B's pipeline_order for one rank (p ranks, v chunks each, m micro-batches).
std::vector<TorchStep> torch_interleaved_order(int pp, int chunks_per_stage, int micro_batches, int rank);

// The time step of each pass of `order` (a stage's passes, in issue order) in that rank's
// pipeline_order; throws std::logic_error where the passes differ from it.
std::vector<int> torch_interleaved_steps(const PipelineSchedule& schedule, int stage);

// Adds the waits of the lock-step exchange to every pipeline send: it starts after the sender's
// and the receiver's compute up to its time step and after each one's previous exchange, and
// both ranks' compute after that step waits for it. steps_by_rank[r][i]: the time step of pass i
// of spans_by_rank[r].
void add_lockstep_p2p(const std::vector<std::vector<PassSpan>>& spans_by_rank,
                      const std::vector<std::vector<int>>& steps_by_rank, const std::vector<int>& sends,
                      const std::vector<std::pair<int, int>>& receives, ExecGraph* exec);

}  // namespace proteus
