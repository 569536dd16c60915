// fp8_weight_casts.h: where each FP8 linear's weights are cast, and what a cast moves.
#include "fp8_weight_casts.h"

#include <algorithm>

#include "fp8_plan.h"

namespace proteus {
namespace {

Fp8WeightCast when_cast(const OpPlan& p, const ParallelConfig& root) {
  const bool fp8 =
      std::any_of(p.weights.begin(), p.weights.end(), [](const WeightPlan& w) { return w.fp8_copy; });
  if (!fp8 || root.fp8_param_gather) return Fp8WeightCast::Never;
  const bool regathered = std::any_of(p.weights.begin(), p.weights.end(),
                                      [](const WeightPlan& w) { return w.fp8_copy && w.zero >= 3; });
  return root.fp8_weight_cache && !regathered ? Fp8WeightCast::FirstForward : Fp8WeightCast::EveryForward;
}

}  // namespace

Fp8WeightCastPlan plan_fp8_weight_casts(const std::vector<OpPlan>& plans, const StrategyTree& tree,
                                        Fp8Recipe recipe) {
  Fp8WeightCastPlan out;
  out.when.assign(plans.size(), Fp8WeightCast::Never);
  out.bytes.assign(plans.size(), 0);
  // Current scaling reads the weight for its amax in a kernel of its own before the cast.
  out.kernels = recipe == Fp8Recipe::Current ? 2 : 1;
  const double per_element = fp8_cast_bytes(recipe, false, false).local;
  for (size_t i = 0; i < plans.size(); ++i) {
    const OpPlan& p = plans[i];
    out.when[i] = when_cast(p, tree.root());
    if (out.when[i] == Fp8WeightCast::Never) continue;
    for (const WeightPlan& w : p.weights)
      if (w.fp8_copy) out.bytes[i] += w.local_params * per_element;
  }
  return out;
}

}  // namespace proteus
