#include "proteus/simulation.h"

namespace proteus {

CostModel cost_model_of(const Config& config) {
  CostModel cost;
  cost.gpu = config.cluster.gpu;
  cost.precision = config.training.precision;
  cost.fp8_attention = config.training.fp8_attention;
  cost.fp8_recipe = config.training.fp8_recipe;
  cost.attention_kernel = attention_kernel_of(config.strategy);
  cost.causal_attention = config.model.causal;
  cost.fused_attention = config.model.flash_attention;
  return cost;
}

ExecOptions exec_options_of(const Config& config, bool record_memory_curve) {
  ExecOptions options;
  options.max_events = config.simulation.max_events;
  options.record_memory_curve = record_memory_curve;
  options.overlap_iterations = config.strategy.optimizer_post_validation;
  return options;
}

}  // namespace proteus
