// Megatron-Core's blocking pipeline point-to-point (docs/design.md §4, docs/frameworks/pipeline.md
// "Pipeline point-to-point"). Private to the compiler.
//
// Megatron's schedules exchange activations and gradients in calls of
// megatron/core/pipeline_parallel/p2p_communication.py (`_communicate`): one call after a pass
// posts the sends of what the passes since the last call produced and the receives of what the
// passes up to the next call need (batch_isend_irecv), waits on all of them (wait_on_reqs) and
// synchronises the device (batch_p2p_sync). An NCCL send completes only once its peer has posted
// the matching receive, and a receive starts after the work queued before it (ProcessGroupNCCL
// waits on the current stream). So, for each pipeline send S:
//   - S starts once the sender reaches its call (the last compute task of the pass before it)
//     and the receiver reaches the call that receives it (the last compute task of the pass
//     before that call);
//   - the sender's first compute task after its call, and the receiver's first compute task
//     after its call, wait for S to end.
// Where the calls are (schedules.py): forward_backward_pipelining_without_interleaving has one
// after every forward and every backward (send_forward_recv_backward, send_backward_recv_forward
// in the steady state); forward_backward_pipelining_with_interleaving without overlap_p2p_comm
// has one after every warm-up forward and every cool-down backward, and in the steady state one
// after each forward-backward pair (send_forward_backward_recv_forward_backward).
#pragma once
#include <utility>
#include <vector>

#include "proteus/exec_graph.h"
#include "proteus/schedule.h"

namespace proteus {

// The tasks one pass of a stage's schedule emitted: [first, end) in ExecGraph::tasks.
struct PassSpan {
  int first = 0, end = 0;
  PassKind kind = PassKind::F;
};

// calls[i]: whether Megatron makes a p2p call after pass i of a stage's order. Every pass has one,
// except, with `paired_steady_state` (the interleaved schedule), a forward followed by a
// backward once the stage has left its warm-up (a backward ran before its last forward); a stage
// whose every forward is in the warm-up (fewer micro-batches than it keeps in flight) has one
// after every pass, as Megatron's all_warmup_microbatches path does.
std::vector<bool> megatron_p2p_calls(const std::vector<PassKind>& order, bool paired_steady_state);

// Adds the dependencies above to every pipeline send of exec (`sends`; `receives` pairs each
// with a task that waits for it), each rank's passes given by spans_by_rank[rank] in program
// order.
void add_blocking_p2p(std::vector<std::vector<PassSpan>> spans_by_rank, bool paired_steady_state,
                      const std::vector<int>& sends, const std::vector<std::pair<int, int>>& receives,
                      ExecGraph* exec);

// Shared with torch_lockstep_p2p.h. kNoTask: none.
constexpr int kNoTask = -1;
// The last compute task of a pass (kNoTask: the pass ran no compute).
int last_compute(const ExecGraph& g, const PassSpan& s);
// The rank's first compute task from task id `from` on (kNoTask: none).
int first_compute_from(const ExecGraph& g, int rank, int from);
// The earliest task of another rank that waits on each send, by send task id (kNoTask: none).
std::vector<int> first_consumers(const ExecGraph& g, const std::vector<std::pair<int, int>>& receives);
// Adds (task, the task it now waits for) pairs to the graph's dependencies, dropping repeats.
void merge_added_deps(std::vector<std::pair<int, int>> added, ExecGraph* exec);

}  // namespace proteus
