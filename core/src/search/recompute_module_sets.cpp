// The derived recompute-module sets of the search (recompute_module_sets.h). A module that no op
// of the model carries would recompute nothing, so the op graph decides what applies; a set the
// validator refuses (moe_act or layernorm under delayed FP8 scaling) is left out rather than
// enumerated only to be rejected.
#include "recompute_module_sets.h"

#include <algorithm>

#include "proteus/op_graph.h"

namespace proteus::search_detail {

namespace {

constexpr RecomputeModules bit(RecomputeModule m) { return recompute_bit(m); }

constexpr RecomputeModules kLight = bit(RecomputeModule::CoreAttn) | bit(RecomputeModule::MoeAct) |
                                    bit(RecomputeModule::Layernorm) | bit(RecomputeModule::MlaUpProj);
constexpr RecomputeModule kHeavy[] = {RecomputeModule::Mlp, RecomputeModule::Moe,
                                      RecomputeModule::SharedExperts};

// The modules some op of the model runs under (Op::recompute_modules).
RecomputeModules modules_of_model(const Config& base) {
  const OpGraph g = build_op_graph(base.model, base.training, 1);
  RecomputeModules all = 0;
  for (const Op& op : g.ops) all |= op.recompute_modules;
  return all;
}

// Checkpointing the whole MoE layer recomputes its experts' activation too: {moe, moe_act}
// runs what {moe} runs, so one of the two is tried.
RecomputeModules normalised(RecomputeModules set) {
  if (set & bit(RecomputeModule::Moe)) set &= static_cast<RecomputeModules>(~bit(RecomputeModule::MoeAct));
  return set;
}

void add(std::vector<RecomputeModules>* sets, RecomputeModules set) {
  set = normalised(set);
  if (set != 0 && std::find(sets->begin(), sets->end(), set) == sets->end()) sets->push_back(set);
}

}  // namespace

std::vector<RecomputeModules> derived_recompute_module_sets(const Config& base) {
  std::vector<RecomputeModules> sets{base.strategy.recompute_modules};
  const ModelSpec& m = base.model;
  const bool moe_or_mla = m.kind == ModelKind::Transformer && (m.moe.experts > 0 || m.mla.enabled());
  if (!moe_or_mla || base.strategy.framework != Framework::Megatron) return sets;
  RecomputeModules usable = modules_of_model(base);
  if (base.training.precision == Precision::Fp8 && base.training.fp8_recipe == Fp8Recipe::Delayed)
    usable &=
        static_cast<RecomputeModules>(~(bit(RecomputeModule::MoeAct) | bit(RecomputeModule::Layernorm)));
  // A fused attention kernel saves no score matrix: checkpointing the attention core then frees
  // only its softmax statistics, for the price of the attention forward, so core_attn is tried
  // only where attention is unfused (the config's own set may still hold it).
  if (m.flash_attention) usable &= static_cast<RecomputeModules>(~bit(RecomputeModule::CoreAttn));
  const RecomputeModules light = usable & kLight;
  // Every non-empty subset of the light modules, smallest bit patterns first (a fixed order).
  for (unsigned subset = 1; subset <= light; ++subset)
    if ((subset & ~light) == 0) add(&sets, static_cast<RecomputeModules>(subset));
  RecomputeModules every_heavy = 0;
  for (RecomputeModule h : kHeavy)
    if (usable & bit(h)) {
      add(&sets, light | bit(h));
      every_heavy |= bit(h);
    }
  add(&sets, light | every_heavy);
  return sets;
}

}  // namespace proteus::search_detail
