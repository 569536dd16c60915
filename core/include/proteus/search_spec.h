// The strategy search's space: the config's optional "search" object (docs/search.md). Each
// list restricts one knob of the strategy; an empty list means every value that is valid for
// the model, the cluster and the batch. The config's "strategy" object, if any, supplies the
// knobs the search does not vary (overlap switches, bucket size).
#pragma once
#include <cstdint>
#include <vector>
#include "proteus/strategy_spec.h"

namespace proteus {

struct SearchSpec {
  std::vector<int64_t> dp, tp, pp, cp, ep, virtual_stages, micro_batch, zero;
  std::vector<int64_t> sequence_parallel;  // 0 / 1
  std::vector<Recompute> recompute;
  std::vector<Schedule> schedule;
  // Sets of Megatron-Core recompute modules to try under selective recompute (each non-empty);
  // empty: the sets search/recompute_module_sets.h derives for the model.
  std::vector<RecomputeModules> recompute_modules;
  // MoE parallel folding to try where tp > 1: 0 keeps the experts split like the dense MLP
  // (expert_tp = tp, the config's "tp"), 1 folds the tp ranks into expert parallelism
  // (expert_tp 1). Empty: both.
  std::vector<int64_t> expert_tp;
  // Fraction of each GPU's memory a candidate must leave free to count as fitting (allocator
  // fragmentation, NCCL buffers, the CUDA context): 0.05 keeps 5%.
  double memory_reserve = 0;
};

}  // namespace proteus
