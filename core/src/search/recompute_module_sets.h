// Which sets of Megatron-Core recompute modules (strategy.recompute_modules) the search tries
// under selective recompute when the config's "search" object lists none (docs/search.md,
// "Recompute modules").
#pragma once
#include <vector>
#include "proteus/config.h"

namespace proteus::search_detail {

// The config's own set, and for Megatron-Core MoE or MLA models (whose modules Megatron-Core
// added them for) the sets a practitioner weighs: every combination of the light modules (core
// attention, only with unfused attention, and the output-discarding ones: moe_act, layernorm,
// mla_up_proj), then the heavy checkpoints (mlp, moe, shared_experts) added to all of them, one
// at a time and together. Only modules some op of the model carries; none that the config's FP8
// recipe refuses.
std::vector<RecomputeModules> derived_recompute_module_sets(const Config& base);

}  // namespace proteus::search_detail
