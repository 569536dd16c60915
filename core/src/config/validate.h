// Rules that relate fields of different sections (strategy vs model, cluster and batch).
// Each failure names the field a user should change.
#pragma once
#include "proteus/config.h"

namespace proteus::config_detail {

void validate_config(const Config& config);
// Framework semantics (validate_framework.cpp, docs/frameworks.md).
void check_framework(const Config& config);
// Ranks of a context-parallel group that exchange heads by all-to-all (a2a: all of cp; a2a+p2p:
// the largest power-of-two part of cp that fits in a node beside tp; otherwise 1).
int cp_a2a_size(const StrategySpec& strategy, int gpus_per_node);

}  // namespace proteus::config_detail
