// forget_pipeline_options_that_do_not_apply (proteus/strategy_spec.h): Megatron-Core's pipeline
// options where a derived strategy has no use for them.
#include "proteus/strategy_spec.h"

namespace proteus {

void forget_pipeline_options_that_do_not_apply(StrategySpec* strategy) {
  StrategySpec& s = *strategy;
  const bool megatron_pipeline = s.framework == Framework::Megatron && s.pp > 1;
  if (!(megatron_pipeline && s.schedule == Schedule::Interleaved1F1B)) {
    s.overlap_p2p_comm_given = false;
    s.overlap_p2p_comm = true;
  }
  if (!(megatron_pipeline && s.overlap_grad_reduce && s.zero < 3)) {
    s.align_grad_reduce_given = false;
    s.align_grad_reduce = true;
  }
}

}  // namespace proteus
