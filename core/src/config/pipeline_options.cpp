// Megatron-Core's pipeline options (proteus/strategy_spec.h): where each acts, and a derived
// strategy without a use for them.
#include "proteus/strategy_spec.h"

namespace proteus {

bool overlap_p2p_comm_applies(const StrategySpec& s) {
  return s.framework == Framework::Megatron && s.pp > 1 && s.schedule == Schedule::Interleaved1F1B;
}

bool align_grad_reduce_applies(const StrategySpec& s) {
  return s.framework == Framework::Megatron && s.pp > 1 && s.overlap_grad_reduce && s.zero < 3;
}

void forget_pipeline_options_that_do_not_apply(StrategySpec* strategy) {
  StrategySpec& s = *strategy;
  if (!overlap_p2p_comm_applies(s)) {
    s.overlap_p2p_comm_given = false;
    s.overlap_p2p_comm = true;
  }
  if (!align_grad_reduce_applies(s)) {
    s.align_grad_reduce_given = false;
    s.align_grad_reduce = true;
  }
}

}  // namespace proteus
