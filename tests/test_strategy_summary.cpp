// A strategy in one line (core/src/search/strategy_summary.cpp): the text the search table, its
// no-fit error, `proteus validate` and the page's accuracy panel print. Knobs at their neutral
// value are left out; a MoE layout that is not the dense one (expert tp 1) and a selective set
// other than Megatron's default (the core attention alone) are named, so every knob the search
// varies shows in the line.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../core/src/search/strategy_summary.h"
#include "proteus/api.h"
#include "proteus/search.h"

using namespace proteus;

namespace {

StrategySpec plain() {
  StrategySpec s;
  s.dp = 16;
  s.tp = 4;
  s.pp = 1;
  s.micro_batch = 1;
  s.sequence_parallel = true;
  s.zero = 1;
  s.recompute = Recompute::None;
  return s;
}

}  // namespace

TEST_CASE("strategy summary: the mesh, micro-batch and schedule, neutral knobs left out") {
  CHECK(strategy_summary(plain()) == "dp=16 tp=4 pp=1 mb=1 1f1b sp zero=1 recompute=none");
  StrategySpec s = plain();
  s.pp = 2;
  s.cp = 2;
  s.schedule = Schedule::Interleaved1F1B;
  s.virtual_stages = 4;
  s.sequence_parallel = false;
  s.recompute = Recompute::Full;
  CHECK(strategy_summary(s) == "dp=16 tp=4 pp=2 cp=2 mb=1 interleaved-1f1b v=4 zero=1 recompute=full");
}

TEST_CASE("strategy summary: expert parallelism, and expert tp only where it differs from tp") {
  StrategySpec s = plain();
  s.ep = 8;
  s.expert_tp = 4;  // experts split like the dense MLP: the default layout
  CHECK(strategy_summary(s) == "dp=16 tp=4 pp=1 ep=8 mb=1 1f1b sp zero=1 recompute=none");
  s.expert_tp = 1;  // MoE parallel folding
  CHECK(strategy_summary(s) == "dp=16 tp=4 pp=1 ep=8 etp=1 mb=1 1f1b sp zero=1 recompute=none");
}

TEST_CASE("strategy summary: selective recompute names its modules unless they are the default") {
  StrategySpec s = plain();
  s.recompute = Recompute::Selective;
  s.recompute_modules = kDefaultRecomputeModules;
  CHECK(strategy_summary(s) == "dp=16 tp=4 pp=1 mb=1 1f1b sp zero=1 recompute=selective");
  s.recompute_modules = kDefaultRecomputeModules | recompute_bit(RecomputeModule::MoeAct);
  CHECK(strategy_summary(s) == "dp=16 tp=4 pp=1 mb=1 1f1b sp zero=1 recompute=selective(core_attn+moe_act)");
  s.recompute = Recompute::Full;  // the modules mean nothing outside selective
  CHECK(strategy_summary(s) == "dp=16 tp=4 pp=1 mb=1 1f1b sp zero=1 recompute=full");
}

TEST_CASE("strategy summary: every ranked row of a search carries its own line") {
  const std::string config = R"({"model": {"preset": "gpt3-1.3b", "layers": 4},
    "cluster": {"preset": "dgx-h100", "nodes": 1},
    "training": {"global_batch": 16, "seq_len": 1024},
    "strategy": {},
    "search": {"pp": [1, 2], "micro_batch": [1, 2], "zero": [1], "recompute": ["none"]}})";
  SearchOptions o;
  o.top = 4;
  const auto r = nlohmann::json::parse(search_json(config, o));
  REQUIRE(r["ranked"].size() == 4);
  for (const auto& row : r["ranked"]) {
    const int pp = row["strategy"]["pp"], dp = row["strategy"]["dp"], tp = row["strategy"]["tp"];
    const std::string line = row["summary"];
    CHECK(line.rfind(
              "dp=" + std::to_string(dp) + " tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) + " ",
              0) == 0);
    CHECK(line.find("mb=" + row["strategy"]["micro_batch"].dump() + " ") != std::string::npos);
  }
}
