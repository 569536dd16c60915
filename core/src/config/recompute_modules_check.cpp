// strategy.recompute_modules against the rest of the config: what Megatron-Core's
// TransformerConfig.__post_init__ refuses (transformer_config.py, the recompute_modules checks),
// and the frameworks that have no such option.
#include <string>

#include "json_reader.h"
#include "validate.h"

namespace proteus::config_detail {

namespace {

bool uses_selective(const StrategySpec& s) {
  bool selective = s.recompute == Recompute::Selective;
  for (const OverrideSpec& o : s.overrides) selective = selective || o.recompute == Recompute::Selective;
  return selective;
}

bool has(RecomputeModules set, RecomputeModule m) { return (set & recompute_bit(m)) != 0; }

}  // namespace

void check_recompute_modules(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (s.recompute_modules == kDefaultRecomputeModules || !uses_selective(s)) return;
  const char* path = "strategy.recompute_modules";
  if (s.framework != Framework::Megatron)
    throw invalid_config(
        path, std::string("recompute modules are Megatron-Core's (--recompute-modules); framework \"") +
                  to_string(s.framework) +
                  "\" recomputes the attention core under selective recompute: remove the list");
  // "mla_up_proj in recompute_modules is only supported with multi_latent_attention."
  if (has(s.recompute_modules, RecomputeModule::MlaUpProj) &&
      (c.model.kind != ModelKind::Transformer || !c.model.mla.enabled()))
    throw invalid_config(path,
                         "\"mla_up_proj\" needs multi-head latent attention (model.mla), as Megatron-Core "
                         "requires multi_latent_attention for it");
  // "Delayed scaling does not support moe_act and layernorm recompute for fp8."
  if (c.training.precision == Precision::Fp8 && c.training.fp8_recipe == Fp8Recipe::Delayed &&
      (has(s.recompute_modules, RecomputeModule::MoeAct) ||
       has(s.recompute_modules, RecomputeModule::Layernorm)))
    throw invalid_config(path,
                         "\"moe_act\" and \"layernorm\" recompute need an FP8 recipe other than \"delayed\" "
                         "(Megatron-Core: delayed scaling does not support them); set training.fp8_recipe");
}

}  // namespace proteus::config_detail
