// DualPipeV's per-stage order (deepseek-ai/DualPipe, dualpipe/dualpipev.py, DualPipeV.step).
#pragma once
#include <vector>

#include "proteus/schedule.h"

namespace proteus {

// Stage `rank` of `stages` (chunk 0 = model chunk rank, going down; chunk 1 = model chunk
// 2 * stages - 1 - rank, coming back) over `micro_batches` >= 2 * stages micro-batches.
std::vector<Pass> dualpipe_v_stage(int stages, int micro_batches, int rank);

}  // namespace proteus
