// framework_runs_zero (proteus/strategy_spec.h): the ZeRO stages each framework runs, and the
// stage DeepSpeed's BF16_Optimizer shards its optimizer states at.
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

bool deepspeed_bf16_optimizer(const StrategySpec& s, Precision precision) {
  return s.framework == Framework::DeepSpeed && precision == Precision::Bf16 && s.grad_accum_in_fp32 &&
         s.zero <= 1;
}

bool deepspeed_can_overlap_grad_reduce(const StrategySpec& s) {
  const bool bf16_optimizer_at_zero1 = s.zero == 1 && s.grad_accum_in_fp32;
  return s.zero == 3 || (s.zero >= 1 && s.pp == 1 && !bf16_optimizer_at_zero1);
}

bool deepspeed_gathers_weights_in_step(const StrategySpec& s, Precision precision) {
  return s.framework == Framework::DeepSpeed &&
         (s.zero == 1 || s.zero == 2 || deepspeed_bf16_optimizer(s, precision));
}

void forget_overlaps_deepspeed_lacks(StrategySpec* strategy, Precision precision) {
  StrategySpec& s = *strategy;
  if (s.framework != Framework::DeepSpeed) return;
  if (s.grad_accum_in_fp32 && s.zero >= 2)
    s.grad_accum_in_fp32_given = false;  // ZeRO-2/3: the ZeRO optimizer
  if (s.overlap_grad_reduce && !deepspeed_can_overlap_grad_reduce(s)) s.overlap_grad_reduce_given = false;
  if (s.overlap_param_gather && deepspeed_gathers_weights_in_step(s, precision))
    s.overlap_param_gather_given = false;
}

int optimizer_state_zero(const StrategySpec& s, Precision precision) {
  return deepspeed_bf16_optimizer(s, precision) ? 1 : s.zero;
}

}  // namespace proteus
