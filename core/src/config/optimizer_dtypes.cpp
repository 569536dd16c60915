// Names of the precision-aware optimizer's state dtypes (strategy_spec.h StateDtype), spelled as
// Megatron-LM's --exp-avg-dtype, --exp-avg-sq-dtype and --main-params-dtype take them.
#include "proteus/strategy_spec.h"

namespace proteus {

const char* to_string(StateDtype d) {
  switch (d) {
    case StateDtype::Fp32:
      return "fp32";
    case StateDtype::Bf16:
      return "bf16";
    case StateDtype::Fp16:
      return "fp16";
    case StateDtype::Fp8:
      return "fp8";
  }
  return "?";
}

bool low_precision_optimizer_states(const StrategySpec& s) {
  return s.exp_avg_dtype != StateDtype::Fp32 || s.exp_avg_sq_dtype != StateDtype::Fp32 ||
         s.main_params_dtype != StateDtype::Fp32;
}

}  // namespace proteus
