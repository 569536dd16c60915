// Rules that relate fields of different sections (strategy vs model, cluster and batch).
// Each failure names the field a user should change.
#pragma once
#include "proteus/config.h"

namespace proteus::config_detail {

void validate_config(const Config& config);
// Framework semantics (validate_framework.cpp, docs/frameworks.md).
void check_framework(const Config& config);
// What DeepSpeed's engines and Megatron-DeepSpeed run (validate_deepspeed.cpp).
void check_deepspeed(const Config& config);
// strategy.recompute_modules against the model, precision and framework (recompute_modules_check.cpp).
void check_recompute_modules(const Config& config);

}  // namespace proteus::config_detail
