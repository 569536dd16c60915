// The search's expert_tp knob (docs/search.md, "MoE parallel folding"): with tp > 1 a mixture of
// experts either splits its experts like the dense MLP (expert_tp = tp) or keeps them whole and
// folds the tp ranks into expert parallelism (expert_tp 1, Megatron-Core's
// --expert-tensor-parallel-size 1), where ep = tp x a divisor of dp. The search tries both, stays
// exact, honours a listed choice, and its rows paste back into a config.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "error_path.h"
#include "proteus/api.h"
#include "proteus/config.h"
#include "proteus/search.h"
#include "search_test_helpers.h"

using namespace proteus;

namespace {

// A 4-layer Mixtral (8 experts) on one DGX H100.
std::string small_moe(const std::string& search, const std::string& strategy = "{}") {
  return R"({"model": {"preset": "mixtral-8x7b", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8,
                       "ffn_hidden": 2048, "seq_len": 1024},
             "cluster": {"preset": "dgx-h100", "nodes": 1},
             "training": {"global_batch": 16, "seq_len": 1024},
             "strategy": )" +
         strategy + R"(, "search": )" + search + "}";
}

const char* kSmallSpace = R"({"pp": [1], "cp": [1], "micro_batch": [2], "zero": [1], "recompute": ["none"]})";

}  // namespace

TEST_CASE("search expert_tp: with tp > 1 both layouts, folded ep = tp x a divisor of dp; tp 1 states 1") {
  const Config base = parse_config_sections(small_moe(kSmallSpace));
  int folded = 0, split = 0;
  for (const StrategySpec& s : enumerate_space(base)) {
    Config c = base;
    c.strategy = s;
    CHECK(test::valid(c));  // every candidate the knob makes is one Megatron-Core can run
    if (s.tp == 1) {
      CHECK(s.expert_tp == 1);  // stated, so that a pasted row overrides a config's own
      continue;
    }
    if (s.expert_tp == 1) {
      ++folded;
      CHECK(s.ep % s.tp == 0);
      CHECK(s.dp % (s.ep / s.tp) == 0);
    } else {
      ++split;
      CHECK(s.expert_tp == s.tp);
      CHECK(s.dp % s.ep == 0);
    }
  }
  CHECK(folded > 0);
  CHECK(split > 0);
  // tp 2 x ep 8 on 8 GPUs exists only folded (dp is 4).
  bool tp2_ep8 = false;
  for (const StrategySpec& s : enumerate_space(base)) tp2_ep8 |= s.tp == 2 && s.ep == 8 && s.expert_tp == 1;
  CHECK(tp2_ep8);
}

TEST_CASE("search expert_tp: a dense model leaves the field unset") {
  const Config dense = parse_config_sections(
      R"({"model": {"preset": "gpt3-1.3b", "layers": 4}, "cluster": "dgx-a100-80g", "training": {"global_batch": 8},
          "search": {"pp": [1], "micro_batch": [1], "zero": [1], "recompute": ["none"]}})");
  for (const StrategySpec& s : enumerate_space(dense)) CHECK(s.expert_tp == 0);
}

TEST_CASE("search expert_tp: the top K equal those of simulating every candidate, on any thread count") {
  const Config base = parse_config_sections(small_moe(kSmallSpace));
  const auto [result, fitting] = test::check_top_equals_brute_force(base, 3);
  CHECK(fitting > 10);
  test::check_same_for_any_threads(base);
}

TEST_CASE("search expert_tp: a listed layout is the only one tried") {
  int folded = 0, split = 0;
  for (const char* list : {R"(["tp"])", "[1]"}) {
    const std::string search =
        R"({"pp": [1], "cp": [1], "micro_batch": [2], "zero": [1], "recompute": ["none"],
                                   "expert_tp": )" +
        std::string(list) + "}";
    for (const StrategySpec& s : enumerate_space(parse_config_sections(small_moe(search)))) {
      if (s.tp == 1) continue;
      (s.expert_tp == 1 ? folded : split) += 1;
      CHECK((s.expert_tp == 1) == (std::string(list) == "[1]"));
    }
  }
  CHECK(folded > 0);
  CHECK(split > 0);
}

TEST_CASE("search expert_tp: a folded row pastes back into the config and simulates the same") {
  // The config's own expert_tp (folded) must not survive into a row that splits the experts, and
  // the other way round: rows of a mixture of experts state it.
  const std::string text = small_moe(
      R"({"tp": [2], "pp": [1], "cp": [1], "micro_batch": [2], "zero": [1], "recompute": ["none"]})",
      R"({"tp": 2, "ep": 8, "expert_tp": 1})");
  const nlohmann::json result = nlohmann::json::parse(search_json(text, SearchOptions{}));
  bool saw_folded = false, saw_split = false;
  for (const nlohmann::json& row : result["ranked"]) {
    REQUIRE(row["strategy"].contains("expert_tp"));
    (row["strategy"]["expert_tp"] == 1 ? saw_folded : saw_split) = true;
    nlohmann::json config = nlohmann::json::parse(text);
    config.erase("search");
    for (const auto& [k, v] : row["strategy"].items()) config["strategy"][k] = v;
    const nlohmann::json simulated = nlohmann::json::parse(simulate_json(config.dump(), SimulateOptions{}));
    CHECK(simulated["summary"]["iteration_time_s"] == row["iteration_time_s"]);
  }
  CHECK(saw_folded);
  CHECK(saw_split);
}

TEST_CASE("search expert_tp: the list is checked and named in errors") {
  auto error_path = [](const std::string& search) {
    return test::error_path([&] { parse_config_sections(small_moe(search)); });
  };
  CHECK(error_path(R"({"expert_tp": []})") == "search.expert_tp");
  CHECK(error_path(R"({"expert_tp": [2]})") == "search.expert_tp[0]");
  CHECK(error_path(R"({"expert_tp": ["tp", "ep"]})") == "search.expert_tp[1]");
  CHECK(error_path(R"({"expert_tp": "tp"})") == "search.expert_tp");
  CHECK(error_path(R"({"expert_tp": ["tp", 1]})") == test::kNoError);
}
