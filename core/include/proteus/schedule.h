// Pipeline schedules: the order in which one physical stage runs the phases of its
// micro-batches (DESIGN.md §3, StrategyTree root). Pure functions of (p, m, v, stage).
//   gpipe:            all forwards, then all backwards.
//   1f1b:             p-s-1 warm-up forwards, then one forward / one backward, then the rest.
//   interleaved-1f1b: Megatron's schedule over v model chunks per stage (needs m % p == 0).
//   zb-h1:            the backward split into B (input grad) and W (weight grad), as in Qi et
//                     al. 2023 ("Zero Bubble Pipeline Parallelism", ZB-H1): the order comes
//                     from playing unit-time passes with B first (the critical path), then F
//                     while fewer than p-s micro-batches await their B (1F1B's limit), then a
//                     pending W, at most p-s-1 of which may wait (so memory stays near 1F1B's).
#pragma once
#include <string>
#include <vector>
#include "proteus/strategy_spec.h"

namespace proteus {

enum class PassKind : uint8_t { F, B, W };  // B = whole backward unless the schedule splits W

struct Pass {
  PassKind kind;
  int micro_batch;
  int chunk;  // model chunk (virtual stage index on this physical stage), 0..v-1
};

// `split_backward` is true for schedules that emit separate W passes (zb-h1).
bool schedule_splits_backward(Schedule schedule);
std::vector<Pass> stage_schedule(Schedule schedule, int stages, int micro_batches, int virtual_stages,
                                 int stage);
std::string to_string(const std::vector<Pass>& passes);  // "F0 F1 B0 ..." ("F0.1" = mb 0 chunk 1)

}  // namespace proteus
