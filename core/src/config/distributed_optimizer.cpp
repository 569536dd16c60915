// strategy.distributed_optimizer (strategy_spec.h DistributedOptimizer): its names, where it acts,
// and a derived strategy without a use for it.
#include "proteus/strategy_spec.h"

namespace proteus {

const char* to_string(DistributedOptimizer d) {
  switch (d) {
    case DistributedOptimizer::Megatron:
      return "megatron";
    case DistributedOptimizer::Apex:
      return "apex";
  }
  return "?";
}

bool distributed_optimizer_applies(const StrategySpec& s) {
  return s.framework == Framework::Megatron && s.zero == 1;
}

void forget_distributed_optimizer_where_it_does_not_apply(StrategySpec* strategy) {
  if (!distributed_optimizer_applies(*strategy))
    strategy->distributed_optimizer = DistributedOptimizer::Megatron;
}

}  // namespace proteus
