// DualPipe's F&B overlap on one rank (schedule.h, Pass::with_previous): the forward of one
// micro-batch and the backward (and weight gradient) of another, emitted one after the other,
// are re-ordered so that each one's communication hides behind the other's compute.
//
// The executor runs one in-order compute stream per rank, as the GPU does; DeepSeek-V3
// (technical report section 3.2.1, Figure 4) overlaps a pair by splitting each chunk into
// attention, all-to-all dispatch, MLP and all-to-all combine and interleaving the two
// chunks' pieces by hand. Here the same happens generically: the two task lists are merged,
// each keeping its own order, switching to the other list whenever the next compute task
// would wait for a collective of its own list issued since the last switch. Compute is then
// the sum of both (as on the GPU, which does not run the two chunks' kernels any faster);
// communication of one runs while the other computes. What is approximated: SM sharing
// between a running all-to-all and the compute beside it (DeepSeek dedicates 20 SMs to
// communication) is not charged, and the interleaving is at task granularity, not DeepSeek's
// hand-tuned order.
#pragma once
#include "proteus/exec_graph.h"

namespace proteus {

// Re-orders rank `rank`'s queue entries of tasks [first, end) (everything this rank emitted
// since `first`): tasks [first, split) are one side (the forward), [split, end) the other.
// Every queue of the rank takes the same merged order, so the program stays free of waits in
// a cycle; dependencies are untouched.
void overlap_group(ExecGraph* exec, int rank, int first, int split, int end);

}  // namespace proteus
