// The search space: one table of strategy knobs (space.cpp), enumerated in a fixed nested
// order so that a candidate's index names it on every machine, thread and shard.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "proteus/config.h"

namespace proteus::search_detail {

// Parallel-degree combinations the GPU count rules out before any candidate exists (for
// example a listed tp that does not divide the GPUs): counted so that an empty space gets an
// error naming the constraint.
struct SpaceEnumeration {
  std::vector<StrategySpec> strategies;
  int64_t mesh_mismatches = 0;
  std::string mesh_mismatch_example;
};

SpaceEnumeration enumerate(const Config& base);

}  // namespace proteus::search_detail
