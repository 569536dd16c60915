// The zero-bubble comparison of issue 12: sail-sg/zero-bubble-pipeline-parallelism issue #21
// (8 x H800, a 6.2B model: 1F1B 55, interleaved 66, ZB-2P 67, ZB-V 64 samples/s at 48, 57, 79,
// 53 GB). The four configs are the zb-issue21 cases of tests/validation/published.json, written
// by tests/validation/derive_cases.py with the source of every setting the issue leaves out (Qi
// et al. Table 3's 6.2B GPT and the repository's example script); scripts/zb_issue21.py prints the
// table. The orderings the simulator agrees with are asserted here; the absolute figures (all
// 29-46% above the issue's) are discussed in docs/fidelity/validation.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/search.h"
#include "relative_approx.h"

namespace {

using json = nlohmann::json;

struct Run {
  json config;
  double samples_per_s = 0, peak_GiB = 0;
};

// The zb-issue21 cases, simulated once: schedule id ("1f1b", "interleaved", "zb2p", "zbv") -> run.
const std::map<std::string, Run>& runs() {
  static const std::map<std::string, Run> out = [] {
    std::ifstream f(std::string(PROTEUS_SOURCE_DIR) + "/tests/validation/published.json", std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    std::map<std::string, Run> m;
    const std::string prefix = "zb-issue21-";
    const json file = json::parse(text.str());
    for (const json& c : file.at("cases")) {
      const std::string id = c["id"];
      if (id.rfind(prefix, 0) != 0) continue;
      const json r = json::parse(proteus::simulate_json(c["config"].dump(), {}));
      if (r["ok"] != true) FAIL(id << ": " << r.dump());
      m[id.substr(prefix.size())] = {c["config"], r["summary"]["samples_per_s"].get<double>(),
                                     r["summary"]["peak_memory_GiB"].get<double>()};
    }
    return m;
  }();
  return out;
}

}  // namespace

TEST_CASE("zb issue 21: the zero-bubble repository's layer padding, as Megatron-Core's slots") {
  // --allow-padding-num-layers pads 30 layers to 32 and takes one from the first and the last
  // model chunk (legacy/model/transformer.py ParallelTransformer.get_offset); the cases give the
  // same as account_for_embedding/loss_in_pipeline_split.
  REQUIRE(runs().size() == 4);
  const auto layers = [](const std::string& id) {
    return proteus::test::compile_text(runs().at(id).config.dump()).tree.chunk_layers;
  };
  CHECK(layers("1f1b") == std::vector<int>{3, 4, 4, 4, 4, 4, 4, 3});
  // One layer per virtual stage (v 4): the first chunk is the embedding alone, the last the loss.
  std::vector<int> interleaved(32, 1);
  interleaved.front() = interleaved.back() = 0;
  CHECK(layers("interleaved") == interleaved);
  // ZB-V: 16 chunks of 2 slots; chunks 0 and 15 (both on stage 0, the V) hold one layer.
  std::vector<int> zbv(16, 2);
  zbv.front() = zbv.back() = 1;
  CHECK(layers("zbv") == zbv);
  CHECK(layers("zb2p") == layers("1f1b"));
}

TEST_CASE("zb issue 21: memory ordering and the speed pairs that agree with the published run") {
  const auto& r = runs();
  for (const auto& [id, run] : r)
    MESSAGE(id << ": " << run.samples_per_s << " samples/s, " << run.peak_GiB << " GiB");
  // Memory, #21: 1F1B 48 < ZB-V 53 < interleaved 57 < ZB-2P 79 GB.
  CHECK(r.at("1f1b").peak_GiB < r.at("zbv").peak_GiB);
  CHECK(r.at("zbv").peak_GiB < r.at("interleaved").peak_GiB);
  CHECK(r.at("interleaved").peak_GiB < r.at("zb2p").peak_GiB);
  // Speed, #21: 1F1B 55 < ZB-V 64 < interleaved 66 < ZB-2P 67. The last pair holds only with
  // the zero-bubble runs' optimizer post-validation (the example script's, under fp16): without
  // it interleaved ran 1% faster than ZB-2P (96.3 against 95.4 samples/s). ZB-V against
  // interleaved (#21: 3% slower) is not asserted: with the zero-bubble runtime's plan from
  // measured pass times ZB-V runs 3% faster here, as the paper's own A100 runs have it against
  // ZB-2P and 1F1B (docs/fidelity/validation.md, "The zero-bubble comparison").
  CHECK(r.at("1f1b").samples_per_s < r.at("zbv").samples_per_s);
  CHECK(r.at("1f1b").samples_per_s < r.at("interleaved").samples_per_s);
  CHECK(r.at("interleaved").samples_per_s < r.at("zb2p").samples_per_s);
  CHECK(r.at("zbv").samples_per_s < r.at("zb2p").samples_per_s);
}

TEST_CASE("zb issue 21: optimizer post-validation makes the iteration the steady-state period") {
  // ZB-2P on the 6.2B GPT: with post-validation no all-reduce joins the stages at the end of an
  // iteration, so the next one starts on each stage as soon as that stage is done. The period is
  // the longest span of a rank from its first task to its last; here the first stage (which
  // starts at 0 and waits for every gradient to come back) has it, so the period is exact.
  json cfg = runs().at("zb2p").config;
  REQUIRE(cfg["strategy"]["optimizer_post_validation"] == true);
  proteus::SimulateOptions with_timeline;
  with_timeline.timeline = true;
  const json on = json::parse(proteus::simulate_json(cfg.dump(), with_timeline));
  cfg["strategy"]["optimizer_post_validation"] = false;
  const json off = json::parse(proteus::simulate_json(cfg.dump(), {}));
  REQUIRE(on["ok"] == true);
  REQUIRE(off["ok"] == true);
  std::map<int, std::pair<double, double>> span;  // rank -> (first start, last end)
  for (const json& e : on["timeline"]) {
    auto [it, fresh] =
        span.try_emplace(e["rank"].get<int>(), e["start_s"].get<double>(), e["end_s"].get<double>());
    if (fresh) continue;
    it->second.first = std::min(it->second.first, e["start_s"].get<double>());
    it->second.second = std::max(it->second.second, e["end_s"].get<double>());
  }
  REQUIRE(span.size() == 8);
  double longest = 0;
  for (const auto& [rank, se] : span) longest = std::max(longest, se.second - se.first);
  const double period = on["summary"]["iteration_time_s"].get<double>();
  CHECK(period == proteus::test::approx(longest).epsilon(1e-9));
  CHECK(span.at(0).first == 0.0);
  CHECK(span.at(0).second - span.at(0).first == proteus::test::approx(longest).epsilon(1e-9));
  // Without it every stage waits for the last one: the makespan, the latest end of any rank's
  // task (the later stages start one forward after another), the same tasks at the same times.
  double latest_end = 0;
  for (const auto& [rank, se] : span) latest_end = std::max(latest_end, se.second);
  const double makespan = off["summary"]["iteration_time_s"].get<double>();
  CHECK(period < makespan);
  CHECK(makespan == proteus::test::approx(latest_end).epsilon(1e-9));
  // Megatron's own schedules synchronise before the step: refused, naming the field.
  json bad = runs().at("1f1b").config;
  bad["strategy"]["optimizer_post_validation"] = true;
  CHECK(proteus::test::error_path([&] { proteus::simulate_json(bad.dump(), {}); }) ==
        "strategy.optimizer_post_validation");
  // The search's bounds are for the synchronised iteration: it refuses the knob.
  CHECK(proteus::test::error_path([&] { proteus::search_json(runs().at("zb2p").config.dump(), {}); }) ==
        "strategy.optimizer_post_validation");
}
