// The search's recompute-modules knob (docs/search.md, "Recompute modules"): which sets of
// Megatron-Core's selective recompute modules it tries, that it stays exact with them, that a
// listed set is honoured, and that a ranked row can be pasted back into a config.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../core/src/search/bounds.h"
#include "../core/src/search/recompute_module_sets.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/error.h"
#include "proteus/search.h"
#include "proteus/simulation.h"
#include "proteus/units.h"
#include "search_test_helpers.h"

using namespace proteus;

namespace {

constexpr RecomputeModules bit(RecomputeModule m) { return recompute_bit(m); }
constexpr RecomputeModules kCoreAttn = bit(RecomputeModule::CoreAttn), kMoeAct = bit(RecomputeModule::MoeAct),
                           kLayernorm = bit(RecomputeModule::Layernorm), kMoe = bit(RecomputeModule::Moe),
                           kMlaUpProj = bit(RecomputeModule::MlaUpProj);

// A 4-layer Mixtral on one DGX H100: every layer a MoE layer (no dense MLP, no shared experts).
std::string small_moe(const std::string& training_extra = "", const std::string& strategy = "{}",
                      const std::string& search = "{}") {
  return R"({"model": {"preset": "mixtral-8x7b", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8,
                       "ffn_hidden": 2048, "seq_len": 1024},
             "cluster": {"preset": "dgx-h100", "nodes": 1},
             "training": {"global_batch": 16, "seq_len": 1024)" +
         training_extra + R"(},
             "strategy": )" +
         strategy + R"(, "search": )" + search + "}";
}

std::vector<RecomputeModules> sets_of(const std::string& text) {
  return search_detail::derived_recompute_module_sets(parse_config_sections(text));
}

}  // namespace

TEST_CASE("search recompute modules: a dense model keeps the config's own set") {
  const auto sets = sets_of(
      R"({"model": {"preset": "gpt3-1.3b", "layers": 4}, "cluster": "dgx-a100-80g", "training": {"global_batch": 8},
          "strategy": {"recompute": "selective", "recompute_modules": ["core_attn", "layernorm"]}})");
  CHECK(sets == std::vector<RecomputeModules>{kCoreAttn | kLayernorm});  // the config's, and nothing else
  const auto llama =
      sets_of(R"({"model": "llama3-8b", "cluster": "dgx-h100", "training": {"global_batch": 8}})");
  CHECK(llama == std::vector<RecomputeModules>{kCoreAttn});
}

TEST_CASE("search recompute modules: a MoE model tries every light combination, then the whole MoE layer") {
  // The modules Mixtral's ops carry: core_attn, moe_act, layernorm (the pre-MLP norm feeds the
  // router, not a TE linear) and moe. With flash attention (the preset) the attention core's
  // checkpoint would free only the softmax statistics: it is left to the config's own set.
  // {layernorm, moe} is the light set with the layer checkpointed: moe_act inside it would be
  // recomputed anyway.
  const std::vector<RecomputeModules> flash = {kCoreAttn, kMoeAct, kLayernorm, kMoeAct | kLayernorm,
                                               kLayernorm | kMoe};
  CHECK(sets_of(small_moe()) == flash);
  // Unfused attention saves the score matrix: the attention core joins every combination.
  const std::string unfused =
      R"({"model": {"preset": "mixtral-8x7b", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8,
                    "ffn_hidden": 2048, "seq_len": 1024, "flash_attention": false},
          "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"global_batch": 16, "seq_len": 1024}})";
  const std::vector<RecomputeModules> all = {kCoreAttn,
                                             kMoeAct,
                                             kCoreAttn | kMoeAct,
                                             kLayernorm,
                                             kCoreAttn | kLayernorm,
                                             kMoeAct | kLayernorm,
                                             kCoreAttn | kMoeAct | kLayernorm,
                                             kCoreAttn | kLayernorm | kMoe};
  CHECK(sets_of(unfused) == all);
  // The config's own set comes first (the neutral of the other recompute modes).
  const auto own = sets_of(small_moe("", R"({"recompute": "selective", "recompute_modules": ["moe"]})"));
  std::vector<RecomputeModules> own_first = flash;
  own_first.front() = kMoe;
  CHECK(own == own_first);
}

TEST_CASE("search recompute modules: what the core attention's checkpoint saves under flash attention") {
  // Why core_attn is left out with a fused kernel: the same strategy with and without it differs
  // by the softmax statistics only, while the attention forward runs again.
  auto simulated = [](const std::string& modules) {
    const std::string config = small_moe(
        "",
        R"({"dp": 1, "tp": 8, "sequence_parallel": true, "recompute": "selective", "recompute_modules": )" +
            modules + "}");
    return nlohmann::json::parse(simulate_json(config, SimulateOptions{}))["summary"];
  };
  const auto without = simulated(R"(["moe_act"])"), with = simulated(R"(["core_attn", "moe_act"])");
  CHECK(with["iteration_time_s"].get<double>() > without["iteration_time_s"].get<double>());
  CHECK(without["peak_memory_GiB"].get<double>() - with["peak_memory_GiB"].get<double>() <
        0.01 * without["peak_memory_GiB"].get<double>());
}

TEST_CASE("search recompute modules: none the config would refuse, none for frameworks without them") {
  // Megatron-Core: "Delayed scaling does not support moe_act and layernorm recompute for fp8."
  const auto delayed = sets_of(small_moe(R"(, "precision": "fp8")"));
  CHECK(delayed == std::vector<RecomputeModules>{kCoreAttn, kMoe});
  const auto current = sets_of(small_moe(R"(, "precision": "fp8", "fp8_recipe": "current")"));
  CHECK(current.size() == 5);
  // FSDP and DeepSpeed recompute the attention core under selective recompute: nothing to choose.
  CHECK(sets_of(small_moe("", R"({"framework": "fsdp"})")) == std::vector<RecomputeModules>{kCoreAttn});
  // MLA adds mla_up_proj and its layernorms to the light modules (DeepSeek-V3, 4 layers).
  const auto mla = sets_of(
      R"({"model": {"preset": "deepseek-v3", "layers": 4}, "cluster": {"preset": "dgx-h100", "nodes": 4},
          "training": {"global_batch": 32, "seq_len": 1024}})");
  CHECK(std::find(mla.begin(), mla.end(), kMlaUpProj) != mla.end());
  CHECK(mla.size() == 12);  // its own; 7 light combinations; + mlp (dense layers), moe, shared_experts, all
  for (RecomputeModules s : mla) {
    Config c = parse_config_sections(
        R"({"model": {"preset": "deepseek-v3", "layers": 4}, "cluster": {"preset": "dgx-h100", "nodes": 4},
            "training": {"global_batch": 32, "seq_len": 1024},
            "strategy": {"dp": 32, "ep": 32, "recompute": "selective"}})");
    c.strategy.recompute_modules = s;
    CHECK_NOTHROW(validate_config(c));
  }
}

TEST_CASE("search recompute modules: the top K equal those of simulating every candidate") {
  const Config base = parse_config_sections(small_moe(
      "", "{}",
      R"({"tp": [1, 2], "pp": [1, 2], "micro_batch": [1], "zero": [1], "recompute": ["selective", "full"]})"));
  int selective_sets = 0;
  for (const StrategySpec& s : enumerate_space(base)) {
    if (s.recompute == Recompute::Full) CHECK(s.recompute_modules == kCoreAttn);
    selective_sets += s.recompute == Recompute::Selective && s.recompute_modules != kCoreAttn;
  }
  CHECK(selective_sets > 0);
  test::check_top_equals_brute_force(base, 3);
}

TEST_CASE("search recompute modules: listed sets are the ones tried") {
  const Config base =
      parse_config_sections(small_moe("", "{}", R"({"tp": [1], "pp": [1], "micro_batch": [1], "zero": [1],
                    "recompute_modules": [["moe_act"], ["core_attn", "layernorm"]]})"));
  int moe_act = 0, core_layernorm = 0;
  for (const StrategySpec& s : enumerate_space(base)) {
    if (s.recompute != Recompute::Selective) {
      CHECK(s.recompute_modules == kCoreAttn);
      continue;
    }
    moe_act += s.recompute_modules == kMoeAct;
    core_layernorm += s.recompute_modules == (kCoreAttn | kLayernorm);
    CHECK((s.recompute_modules == kMoeAct || s.recompute_modules == (kCoreAttn | kLayernorm)));
  }
  CHECK(moe_act > 0);
  CHECK(moe_act == core_layernorm);
}

TEST_CASE("search recompute modules: a ranked row pastes back into the config and simulates the same") {
  const std::string text = small_moe(
      "", "{}", R"({"tp": [1], "pp": [1], "micro_batch": [1], "zero": [1], "recompute": ["selective"],
                    "recompute_modules": [["moe_act", "layernorm"]]})");
  const nlohmann::json result = nlohmann::json::parse(search_json(text, SearchOptions{}));
  REQUIRE(!result["ranked"].empty());
  const nlohmann::json& row = result["ranked"][0];
  CHECK(row["strategy"]["recompute_modules"] == nlohmann::json::array({"moe_act", "layernorm"}));
  nlohmann::json config = nlohmann::json::parse(text);
  config.erase("search");
  config["strategy"] = row["strategy"];
  const nlohmann::json simulated = nlohmann::json::parse(simulate_json(config.dump(), SimulateOptions{}));
  CHECK(simulated["summary"]["iteration_time_s"] == row["iteration_time_s"]);
}

TEST_CASE("search recompute modules: the list is checked like the strategy's") {
  auto error_path = [](const std::string& search) {
    return test::error_path([&] { parse_config_sections(small_moe("", "{}", search)); });
  };
  CHECK(error_path(R"({"recompute_modules": []})") == "search.recompute_modules");
  CHECK(error_path(R"({"recompute_modules": [[]]})") == "search.recompute_modules[0]");
  CHECK(error_path(R"({"recompute_modules": ["core_attn"]})") == "search.recompute_modules[0]");
  CHECK(error_path(R"({"recompute_modules": [["core_attn"], ["moe_act", "mlpp"]]})") ==
        "search.recompute_modules[1][1]");
  CHECK(error_path(R"({"recompute_modules": [["moe_act", "moe_act"]]})") == "search.recompute_modules[0][1]");
  CHECK(error_path(R"({"recompute_modules": [["moe_act"]]})") == test::kNoError);
}

TEST_CASE("fit advice: a MoE run that does not fit is told which recompute modules make it fit") {
  // Mixtral 8x7B on 64 H100s, tp 1, pp 2 (interleaved), ep 8: 86 GiB with the default selective
  // recompute (the attention core). Recomputing the experts' activation instead frees its output
  // (the largest activation of a MoE layer) for the price of the activation function alone,
  // and no longer runs the attention forward twice.
  const std::string config =
      R"({"preset": "mixtral-8x7b-ep", "strategy": {"tp": 1, "pp": 2, "dp": 8, "ep": 8, "expert_tp": 1,
          "sequence_parallel": false, "schedule": "interleaved-1f1b", "virtual_stages": 8}})";
  const auto r = nlohmann::json::parse(simulate_json(config, {}));
  REQUIRE(r["summary"]["oom"] == true);
  REQUIRE(!r["fit_advice"].empty());
  const auto& first = r["fit_advice"][0];
  CHECK(first["change"] == "recompute selective -> selective(moe_act)");
  CHECK(first["strategy"]["recompute_modules"] == nlohmann::json::array({"moe_act"}));
  CHECK(first["iteration_time_s"].get<double>() < r["summary"]["iteration_time_s"].get<double>());
  // Applied, it simulates as advised and fits.
  auto changed = nlohmann::json::parse(config);
  changed["strategy"] = first["strategy"];
  SimulateOptions plain;
  plain.fit_advice = false;
  const auto s = nlohmann::json::parse(simulate_json(changed.dump(), plain));
  CHECK(s["summary"]["oom"] == false);
  CHECK(s["summary"]["iteration_time_s"] == first["iteration_time_s"]);
}

TEST_CASE("search recompute modules: candidates differing only in their modules share no compiled profile") {
  // The bug this catches: the profile cache keyed without the modules handed one set's compile
  // (its recompute time, its activation memory) to another set's bounds, which depended on
  // which thread compiled first.
  StrategySpec a;
  a.recompute = Recompute::Selective;
  a.recompute_modules = kMoeAct;
  StrategySpec b = a;
  b.recompute_modules = kLayernorm;
  CHECK(search_detail::compiled_profile_key(a) != search_detail::compiled_profile_key(b));
  // Other modes ignore the modules, so their candidates still share one.
  a.recompute = b.recompute = Recompute::Full;
  CHECK(search_detail::compiled_profile_key(a) == search_detail::compiled_profile_key(b));
}

TEST_CASE("search recompute modules: the same result and counts for any number of threads") {
  test::check_same_for_any_threads(
      parse_config_sections(small_moe("", "{}", R"({"micro_batch": [1], "zero": [1]})")));
}
