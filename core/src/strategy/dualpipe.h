// The per-stage orders of DualPipeV (deepseek-ai/DualPipe, dualpipe/dualpipev.py, DualPipeV.step)
// and DualPipe (dualpipe/dualpipe.py, DualPipe.step).
#pragma once
#include <vector>

#include "proteus/schedule.h"

namespace proteus {

// Stage `rank` of `stages` (chunk 0 = model chunk rank, going down; chunk 1 = model chunk
// 2 * stages - 1 - rank, coming back) over `micro_batches` >= 2 * stages micro-batches.
std::vector<Pass> dualpipe_v_stage(int stages, int micro_batches, int rank);

// DualPipe's rank `rank` of `stages` (even) over `micro_batches` (even, >= 2 * stages): chunk 0
// = copy A's stage `rank` (micro-batches 0 .. m/2 - 1, fed from rank 0), chunk 1 = copy B's
// stage stages - 1 - rank (micro-batches m/2 .. m - 1, fed from rank stages - 1).
std::vector<Pass> dualpipe_stage(int stages, int micro_batches, int rank);

}  // namespace proteus
