// The names of Megatron-Core's selective recompute modules (transformer_config.py,
// recompute_modules: "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
// "shared_experts").
#include "proteus/recompute_modules.h"

namespace proteus {

const char* to_string(RecomputeModule m) {
  switch (m) {
    case RecomputeModule::CoreAttn:
      return "core_attn";
    case RecomputeModule::MoeAct:
      return "moe_act";
    case RecomputeModule::Layernorm:
      return "layernorm";
    case RecomputeModule::MlaUpProj:
      return "mla_up_proj";
    case RecomputeModule::Mlp:
      return "mlp";
    case RecomputeModule::Moe:
      return "moe";
    case RecomputeModule::SharedExperts:
      return "shared_experts";
  }
  return "?";
}

std::vector<std::string> recompute_module_names(RecomputeModules set) {
  std::vector<std::string> names;
  for (int i = 0; i < kNumRecomputeModules; ++i)
    if (set & recompute_bit(static_cast<RecomputeModule>(i)))
      names.push_back(to_string(static_cast<RecomputeModule>(i)));
  return names;
}

std::optional<RecomputeModule> recompute_module_named(const std::string& name) {
  for (int i = 0; i < kNumRecomputeModules; ++i) {
    const auto m = static_cast<RecomputeModule>(i);
    if (name == to_string(m)) return m;
  }
  return std::nullopt;
}

}  // namespace proteus
