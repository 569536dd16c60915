// Megatron-Core's selective recompute by module (--recompute-granularity selective
// --recompute-modules ..., TransformerConfig.recompute_modules; docs/frameworks/recompute.md, "Selective
// recompute by module"). The model builders tag each op with the modules whose code runs it
// (Op::recompute_modules); a strategy names the modules it recomputes
// (strategy.recompute_modules, default core_attn: Korthikanti et al.'s selective recompute).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace proteus {

// In Megatron's order of its allowed names.
enum class RecomputeModule : uint8_t {
  CoreAttn,       // the core attention (tensor_parallel.checkpoint of core_attention)
  MoeAct,         // the experts' activation (CheckpointWithoutOutput in TEGroupedMLP)
  Layernorm,      // input_layernorm / pre_mlp_layernorm where not fused into a TE linear
  MlaUpProj,      // MLA's up projections and rotary (CheckpointWithoutOutput)
  Mlp,            // the dense MLP (tensor_parallel.checkpoint of self.mlp)
  Moe,            // the whole MoE layer (tensor_parallel.checkpoint in MoELayer.forward)
  SharedExperts,  // the shared experts (tensor_parallel.checkpoint in MoELayer)
};
constexpr int kNumRecomputeModules = 7;

// A set of modules, one bit per RecomputeModule.
using RecomputeModules = uint8_t;
constexpr RecomputeModules recompute_bit(RecomputeModule m) {
  return static_cast<RecomputeModules>(1u << static_cast<unsigned>(m));
}
constexpr RecomputeModules kDefaultRecomputeModules = recompute_bit(RecomputeModule::CoreAttn);
// The names of a set's modules, in Megatron's order (what strategy.recompute_modules holds).
std::vector<std::string> recompute_module_names(RecomputeModules set);

const char* to_string(RecomputeModule m);
std::optional<RecomputeModule> recompute_module_named(const std::string& name);

// "Output-discarding checkpointing" (moe_act, layernorm, mla_up_proj): the module keeps its
// inputs, its output is freed after the forward and made again before the backward that reads
// it. The others (core_attn, mlp, moe, shared_experts) are checkpoints: only the module's inputs
// are kept, and its forward runs again before its own backward.
constexpr bool discards_output(RecomputeModule m) {
  return m == RecomputeModule::MoeAct || m == RecomputeModule::Layernorm || m == RecomputeModule::MlaUpProj;
}

}  // namespace proteus
