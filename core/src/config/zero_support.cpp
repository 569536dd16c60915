// framework_runs_zero (proteus/strategy_spec.h): the ZeRO stages each framework runs.
#include "proteus/strategy_spec.h"

namespace proteus {

bool framework_runs_zero(const StrategySpec& s, int zero) {
  // deepspeed/runtime/pipe/engine.py asserts zero_optimization_stage() < ZeroStageEnum.gradients;
  // Megatron-Core pipelines shard with the distributed optimizer only.
  const bool pipeline_refuses =
      zero >= 2 && s.pp > 1 && (s.framework == Framework::DeepSpeed || s.framework == Framework::Megatron);
  const bool fsdp_refuses = zero == 1 && s.framework == Framework::Fsdp;
  return !pipeline_refuses && !fsdp_refuses;
}

}  // namespace proteus
