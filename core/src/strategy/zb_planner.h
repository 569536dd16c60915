// The zero-bubble runtime's planners (sail-sg/zero-bubble-pipeline-parallelism), which order
// each stage's F, B and W passes from their times and memory. The runtime plans once at
// F = B = W and, after timing the passes between --zero-bubble-pipeline-timers-start-iter and
// -end-iter (defaults 100 and 110), plans again with the measured times
// (zerobubble/runtime.py, get_zero_bubble_forward_backward_func and update_schedule).
//
// Both planners are greedy list schedulers that play the pipeline in the times given and
// keep the variant whose longest stage (or largest bubble) is smallest. Times and memory are
// integers, as the runtime passes them (GraphConfig asserts int costs): integer arithmetic
// keeps the plans identical natively and in WebAssembly.
#pragma once
#include <cstdint>
#include <vector>
#include "proteus/schedule.h"

namespace proteus {

// ZB-H1 / ZB-2P (--zero-bubble-max-pending-backward k p): auto_schedule.py's heuristic
// (Graph.manual_order over its eight variants, initial_solution; the ILP is disabled there).
struct ZbPlanInputs {
  int stages = 0, micro_batches = 0;
  std::vector<int64_t> cost_f, cost_b, cost_w;  // per stage (the runtime passes the median to all)
  int64_t cost_comm = 1;                        // one pipeline send
  std::vector<int64_t> mem_f, mem_b, mem_w;     // per stage; f + b + w = 0
  std::vector<int64_t> max_mem;                 // per stage
};

// One order per stage (chunk 0 passes). Throws Error("invalid_config", "strategy.schedule")
// when no variant fits the memory limit (the runtime raises "Cannot fit memory").
std::vector<std::vector<Pass>> zb_planned_order(const ZbPlanInputs& in);

// ZB-V (--zero-bubble-v-schedule): v_schedule.py's PipelineGraph.get_v_schedule (try_v_schedule
// with fill_b, fill_f in {true, false}, each refined while its largest stage bubble shrinks).
// The runtime gives it one time per pass kind (the median over stages of each stage's average
// over its two chunks) and the memory approximations of the model (34 h + 5 a s per chunk
// forward, -32 h per W), with max_mem = 2 p f_mem.
struct ZbVPlanInputs {
  int stages = 0, micro_batches = 0;
  int64_t cost_f = 1, cost_b = 1, cost_w = 1, cost_comm = 1;
  int64_t mem_f = 1, mem_b = 0, mem_w = -1, max_mem = 0;
};

// One order per stage; Pass::chunk 0 is the stage's first-half chunk (stage s), 1 its
// second-half chunk (stage 2p - 1 - s). Throws as zb_planned_order does.
std::vector<std::vector<Pass>> zb_v_planned_order(const ZbVPlanInputs& in);

}  // namespace proteus
