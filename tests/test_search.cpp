// The strategy search (docs/search.md): exact against brute force, bounds that are lower
// bounds, the same answer for any thread count and for shards merged, and clear errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "../core/src/search/bounds.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/error.h"
#include "proteus/search.h"
#include "proteus/simulation.h"
#include "proteus/units.h"
#include "search_test_helpers.h"
#include "test_random.h"

using namespace proteus;

namespace {

// A 4-layer GPT on one DGX A100 (8 GPUs), small enough that simulating every candidate takes
// seconds.
const char* kSmall = R"({
  "model": {"preset": "gpt3-1.3b", "layers": 4, "hidden": 1024, "heads": 16, "seq_len": 512},
  "cluster": {"preset": "dgx-a100-80g", "nodes": 1},
  "training": {"global_batch": 16, "seq_len": 512},
  "search": {"micro_batch": [1, 2, 4], "zero": [0, 1, 3]}
})";

using test::simulate;
using test::Simulated;
using test::valid;

}  // namespace

TEST_CASE("search: the top K equal those of simulating every candidate (brute force)") {
  const Config base = parse_config_sections(kSmall);
  const std::vector<StrategySpec> space = enumerate_space(base);
  REQUIRE(space.size() > 100);
  const auto [r, fitting] = test::check_top_equals_brute_force(base, 3);
  // The bounds did their job: far fewer simulations than candidates.
  CHECK(r.counts.simulated < static_cast<int64_t>(fitting) / 4);
  CHECK(r.counts.enumerated == static_cast<int64_t>(space.size()));
}

TEST_CASE("search: with fewer micro-batches than stages the bounds see one micro-batch cross the model") {
  // 16 layers over pp 8 with one or two micro-batches: the iteration is mostly one micro-batch's
  // forward through the eight stages and its backward through them again. The per-stage terms
  // of the schedules without a head or tail term (zb-h2, zb-v) see one stage's share, an
  // eighth of it; the critical path sees it whole, and stays a lower bound.
  const Config base = parse_config_sections(R"({
    "model": {"preset": "gpt3-1.3b", "layers": 16, "hidden": 1024, "heads": 16, "seq_len": 1024},
    "cluster": {"preset": "dgx-a100-80g", "nodes": 1}, "training": {"global_batch": 4, "seq_len": 1024}})");
  const search_detail::ModelProfile profile = search_detail::profile_model(base);
  int checked = 0;
  for (Schedule schedule : {Schedule::OneFOneB, Schedule::ZbH2, Schedule::ZbV})
    for (int micro_batch : {4, 2}) {
      Config c = base;
      c.strategy.dp = 1;
      c.strategy.pp = 8;
      c.strategy.micro_batch = micro_batch;  // 4 / 4 = 1 micro-batch, 4 / 2 = 2
      c.strategy.schedule = schedule;
      if (!valid(c)) continue;
      ++checked;
      const std::string name = to_string(schedule);
      CAPTURE(name);
      CAPTURE(micro_batch);
      const Simulated s = simulate(c);
      const search_detail::Bounds a = search_detail::analytic_bounds(profile, c);
      const search_detail::Bounds k = search_detail::compiled_bounds(c);
      Config plain = c;
      plain.strategy.schedule = Schedule::OneFOneB;
      const search_detail::Bounds l = search_detail::layer_bounds(
          search_detail::compile_profile(plain, build_topology(plain.cluster)).layers, profile, c);
      CHECK(a.time_s <= s.time_s);
      CHECK(l.time_s <= s.time_s);
      CHECK(k.time_s <= s.time_s);
      MESSAGE(name, " mb ", micro_batch, ": analytic ", a.time_s / s.time_s, ", layer ", l.time_s / s.time_s,
              ", compiled ", k.time_s / s.time_s, " of the simulated time");
      // Forward and input gradient are most of a micro-batch's work (W, the optimizer and the
      // transfers the rest): the compiled and layer bounds hold 60% of the simulated time (without
      // the critical path, one stage's share: 28-48% for zb-h2 and zb-v); the analytic one, at
      // the fastest rate, 15% (5-8%).
      CHECK(k.time_s >= 0.6 * s.time_s);
      CHECK(l.time_s >= 0.6 * s.time_s);
      CHECK(a.time_s >= 0.15 * s.time_s);
    }
  CHECK(checked == 5);  // the zb-v planner refuses 2 micro-batches on 8 stages
}

TEST_CASE("search: analytic, layer and compiled bounds never exceed the simulated time and memory") {
  // Random candidates of a dense GPT on 16 GPUs (two nodes) and of a small mixture of experts:
  // every pipeline schedule, interleaving, ZeRO stage, recompute mode, sequence and context
  // parallelism the space holds.
  const char* configs[] = {
      R"({"model": {"preset": "gpt3-1.3b", "layers": 8, "hidden": 1024, "heads": 16, "seq_len": 1024},
          "cluster": {"preset": "dgx-a100-80g", "nodes": 2}, "training": {"global_batch": 32, "seq_len": 1024},
          "search": {"micro_batch": [1, 2, 4]}})",
      R"({"model": {"preset": "mixtral-8x7b", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8,
                    "ffn_hidden": 2048, "seq_len": 1024},
          "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"global_batch": 16, "seq_len": 1024},
          "search": {"micro_batch": [1, 2]}})"};
  test::Lcg rng{20261201};
  int checked = 0, layer_checked = 0;
  for (const char* text : configs) {
    const Config base = parse_config_sections(text);
    const search_detail::ModelProfile profile = search_detail::profile_model(base);
    const std::vector<StrategySpec> space = enumerate_space(base);
    for (int tries = 0, n = 0; n < 40 && tries < 4000; ++tries) {
      Config c = base;
      c.strategy = space[static_cast<size_t>(rng.below(static_cast<int>(space.size())))];
      if (!valid(c)) continue;
      ++n;
      ++checked;
      const Simulated s = simulate(c);
      const search_detail::Bounds a = search_detail::analytic_bounds(profile, c);
      const search_detail::Bounds k = search_detail::compiled_bounds(c);
      Config plain = c;  // the layer tier: the 1F1B compile of the same mesh, taken apart by layer
      plain.strategy.schedule = Schedule::OneFOneB;
      plain.strategy.virtual_stages = 1;
      const search_detail::Bounds l = search_detail::layer_bounds(
          search_detail::compile_profile(plain, build_topology(plain.cluster)).layers, profile, c);

      CAPTURE(c.strategy.dp);
      CAPTURE(c.strategy.tp);
      CAPTURE(c.strategy.pp);
      CAPTURE(c.strategy.cp);
      CAPTURE(c.strategy.ep);
      CAPTURE(c.strategy.micro_batch);
      const std::string schedule = to_string(c.strategy.schedule),
                        recompute = to_string(c.strategy.recompute);
      CAPTURE(schedule);
      CAPTURE(recompute);
      CAPTURE(c.strategy.virtual_stages);
      CAPTURE(c.strategy.zero);
      CAPTURE(c.strategy.sequence_parallel);
      CHECK(a.time_s <= s.time_s);
      CHECK(a.memory_bytes <= s.peak_bytes);
      CHECK(k.time_s <= s.time_s);
      CHECK(k.memory_bytes <= s.peak_bytes);
      CHECK(l.time_s <= s.time_s);
      CHECK(l.memory_bytes <= s.peak_bytes);
      layer_checked += l.time_s > 0;
    }
  }
  CHECK(checked == 80);
  MESSAGE("layer bounds checked on ", layer_checked, " candidates");
  CHECK(layer_checked >= 20);  // the layer tier applies to every generated schedule with pp >= 2
}

TEST_CASE("search: DualPipe's compiled bound leaves out the collective gaps its overlapped pairs fill") {
  // Bug: the bound took micro-batch 0's passes with the gaps its tensor-parallel collectives force
  // on the stream, times the micro-batches; DualPipe runs one micro-batch's forward beside
  // another's backward, whose compute fills those gaps, so the bound (37.4 ms) exceeded the
  // simulated iteration (36.5 ms) and the search could prune a DualPipe candidate that wins.
  const Config c = parse_config_sections(
      R"({"model": {"preset": "mixtral-8x7b", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8,
                    "ffn_hidden": 2048, "seq_len": 1024},
          "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"global_batch": 16, "seq_len": 1024},
          "strategy": {"dp": 1, "tp": 4, "pp": 2, "micro_batch": 2, "schedule": "dualpipe", "recompute": "full"}})");
  const Simulated s = simulate(c);
  const search_detail::Bounds k = search_detail::compiled_bounds(c);
  CHECK(k.time_s <= s.time_s);
  CHECK(k.time_s > 0.5 * s.time_s);  // still a bound that prunes
}

TEST_CASE("search: only the ZeRO stages the framework runs are enumerated") {
  // Megatron-Core and DeepSpeed pipelines shard with the distributed optimizer only; FSDP has no
  // optimizer-only sharding. Listing the others made most of a pipelined space "invalid".
  const auto zeros = [](const char* framework) {
    const Config base = parse_config_sections(std::string(R"({"model": {"preset": "gpt3-1.3b", "layers": 8},
        "cluster": {"preset": "dgx-a100-80g", "nodes": 1}, "training": {"global_batch": 16},
        "strategy": {"framework": ")") + framework +
                                              R"("},
        "search": {"tp": [1], "micro_batch": [1], "recompute": ["none"]}})");
    std::set<std::pair<int, int>> seen;  // (pp > 1, zero)
    for (const StrategySpec& s : enumerate_space(base)) {
      Config c = base;
      c.strategy = s;
      CHECK(test::error_path([&] { validate_config(c); }) != "strategy.zero");
      seen.insert({s.pp > 1, s.zero});
    }
    return seen;
  };
  using Seen = std::set<std::pair<int, int>>;
  CHECK(zeros("megatron") == Seen{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}});
  CHECK(zeros("fsdp") == Seen{{0, 0}, {0, 2}, {0, 3}, {1, 0}, {1, 2}, {1, 3}});
}

TEST_CASE("search: the same result for any number of threads") {
  // ZeRO 2 and 3 reduce gradients every micro-batch (grad_sync), ZeRO 0 and 1 at the boundary:
  // their compiles differ, so they share no cached profile whichever thread compiles first.
  test::check_same_for_any_threads(parse_config_sections(kSmall));
}

TEST_CASE("search: shards merged equal the single-machine search") {
  SearchOptions o;
  const auto single = nlohmann::json::parse(search_json(kSmall, o));
  std::vector<std::string> parts;
  for (int k : {2, 0, 1}) {  // any order
    SearchOptions s;
    s.shard = k;
    s.shards = 3;
    parts.push_back(search_json(kSmall, s));
  }
  const auto merged = nlohmann::json::parse(merge_search_json(parts));
  CHECK(merged["ranked"] == single["ranked"]);
  CHECK(merged["invalid"] == single["invalid"]);
  CHECK(merged["counts"]["enumerated"] == single["counts"]["enumerated"]);
  CHECK(merged["counts"]["evaluated"] == single["counts"]["evaluated"]);
  CHECK(merged["counts"]["invalid"] == single["counts"]["invalid"]);
  // A missing shard is an error, not a silently partial answer.
  parts.pop_back();
  CHECK_THROWS_WITH_AS(merge_search_json(parts), doctest::Contains("shard 1/3 is missing"), Error);
}

TEST_CASE("search: dualpipe is tried where it is valid, and simulated like any schedule") {
  // The 4-layer GPT, 16 sequences on 8 GPUs. DualPipe (dualpipe.py's asserts) needs an even pp
  // and an even number m = 16 / (dp * micro_batch) >= 2 pp of micro-batches. By hand, with
  // micro_batch 1 and tp = cp = 1: pp 2 (dp 4, m 4 >= 4) and pp 4 (dp 2, m 8 >= 8) are valid;
  // pp 8 (dp 1, m 16 >= 16) is not: 8 model chunks per copy exceed the 4 layers.
  const Config base = parse_config_sections(R"({
    "model": {"preset": "gpt3-1.3b", "layers": 4, "hidden": 1024, "heads": 16, "seq_len": 512},
    "cluster": {"preset": "dgx-a100-80g", "nodes": 1}, "training": {"global_batch": 16, "seq_len": 512},
    "search": {"tp": [1], "cp": [1], "pp": [2, 4, 8], "micro_batch": [1, 2], "zero": [0], "recompute": ["none"],
               "schedule": ["dualpipe"]}})");
  std::vector<std::pair<int, int64_t>> valid_dualpipe;  // (pp, micro_batch)
  for (const StrategySpec& s : enumerate_space(base)) {
    if (s.schedule != Schedule::DualPipe) continue;
    Config c = base;
    c.strategy = s;
    const int64_t m = 16 / (int64_t{s.dp} * s.micro_batch);
    CAPTURE(s.pp);
    CAPTURE(m);
    CHECK(valid(c) == (s.pp % 2 == 0 && m % 2 == 0 && m >= 2 * s.pp && 2 * s.pp <= 8));
    if (valid(c)) valid_dualpipe.push_back({s.pp, s.micro_batch});
  }
  // micro_batch 2: pp 2 (m 2 < 4) and pp 4 (m 4 < 8) are refused, so only micro_batch 1 remains.
  CHECK(valid_dualpipe == std::vector<std::pair<int, int64_t>>{{2, 1}, {4, 1}});
  // The search ranks them by their simulated time: the same figures as simulating each one.
  SearchOptions o;
  o.top = 2;
  const SearchResult r = run_search(base, o);
  REQUIRE(r.ranked.size() == 2);
  for (const CandidateResult& cr : r.ranked) {
    CHECK(cr.strategy.schedule == Schedule::DualPipe);
    Config c = base;
    c.strategy = cr.strategy;
    CHECK(cr.iteration_time_s == simulate(c).time_s);
  }
}

TEST_CASE("search: a space where nothing remains gets an error naming the constraint") {
  auto error_of = [](const std::string& search,
                     const std::string& model =
                         R"({"preset": "gpt3-1.3b", "layers": 4, "hidden": 1024, "heads": 16})") {
    const std::string text = R"({"model": )" + model + R"(,
      "cluster": {"preset": "dgx-a100-80g", "nodes": 1}, "training": {"global_batch": 16, "seq_len": 512},
      "search": )" + search + "}";
    try {
      search_json(text, {});
    } catch (const Error& e) {
      return e.path + ": " + e.what();
    }
    return std::string("no error");
  };
  // tp 3 leaves no data-parallel degree on 8 GPUs.
  CHECK(error_of(R"({"tp": [3]})").find("leaves no listed dp with dp*tp*pp*cp = 8 GPUs") !=
        std::string::npos);
  // Every candidate invalid: the validator's own message, at the path it names.
  const std::string heads = error_of(R"({"tp": [8], "micro_batch": [32]})");
  CHECK(heads.rfind("strategy.micro_batch:", 0) == 0);
  CHECK(heads.find("micro_batch=32 is larger than the per-replica batch") != std::string::npos);
  // Nothing fits: Llama 2 7B without tensor or pipeline parallelism needs at least 7e9 * 16 / 8
  // bytes (ZeRO 3 over 8 GPUs: 13 GiB) and a 90% reserve leaves 8 GiB of 80.
  const std::string memory = error_of(R"({"memory_reserve": 0.9, "tp": [1], "pp": [1]})", R"("llama2-7b")");
  CHECK(memory.rfind("search.memory_reserve: no valid strategy fits in 8.0 GiB", 0) == 0);
}

TEST_CASE("search: the search object is checked like the rest of the config") {
  auto error_path = [](const std::string& search) {
    return test::error_path([&] {
      parse_config_sections(
          R"({"model": "gpt3-1.3b", "cluster": "dgx-a100-80g", "training": {"global_batch": 8},
        "search": )" +
          search + "}");
    });
  };
  CHECK(error_path(R"({"tp": []})") == "search.tp");
  CHECK(error_path(R"({"tpp": [1]})") == "search.tpp");
  CHECK(error_path(R"({"schedule": ["1f1b", "zb-h9"]})") == "search.schedule[1]");
  CHECK(error_path(R"({"memory_reserve": 1.5})") == "search.memory_reserve");
  CHECK(error_path(R"({"zero": [4]})") == "search.zero[0]");
  CHECK(error_path(R"({"tp": [1], "memory_reserve": 0.05})") == test::kNoError);
}

TEST_CASE("simulate: a config that does not fit lists the three fastest changes that do") {
  // GPT-3 1.3B cut to 8 layers (0.5e9 parameters: 18 bytes each / tp 2 = 4.2 GiB of weights,
  // gradients and Adam states) with micro-batches of 8 sequences of 1024 tokens, on GPUs of
  // 6 GiB: the activations do not fit beside them.
  const std::string config =
      R"({"model": {"preset": "gpt3-1.3b", "layers": 8}, "training": {"global_batch": 32, "seq_len": 1024},
    "cluster": {"preset": "dgx-a100-80g", "gpu": {"memory_GiB": 6}},
    "strategy": {"dp": 4, "tp": 2, "micro_batch": 8}})";
  const auto r = nlohmann::json::parse(simulate_json(config, {}));
  REQUIRE(r["summary"]["oom"] == true);
  REQUIRE(r["fit_advice"].size() == 3);
  double previous = 0;
  for (const auto& advice : r["fit_advice"]) {
    const std::string change = advice["change"];
    CAPTURE(change);
    // Each is what simulating that strategy gives, and it fits.
    auto changed = nlohmann::json::parse(config);
    changed["strategy"] = advice["strategy"];
    SimulateOptions plain;
    plain.fit_advice = false;
    const auto s = nlohmann::json::parse(simulate_json(changed.dump(), plain));
    CHECK(s["summary"]["oom"] == false);
    CHECK(s["summary"]["iteration_time_s"] == advice["iteration_time_s"]);
    CHECK(s["summary"]["peak_memory_GiB"] == advice["peak_memory_GiB"]);
    const double time_s = advice["iteration_time_s"];
    CHECK(time_s >= previous);  // fastest first
    previous = time_s;
  }
  bool said = false;
  for (const auto& w : r["warnings"]) said = said || w.get<std::string>().rfind("To fit: ", 0) == 0;
  CHECK(said);
  // A dense model is offered no recompute modules (they are for MoE and MLA models).
  for (const auto& advice : r["fit_advice"])
    CHECK(advice["change"].get<std::string>().find("selective(") == std::string::npos);
  // A run that fits pays nothing and gets no advice.
  const auto fits = nlohmann::json::parse(simulate_json(R"({"preset": "default"})", {}));
  CHECK(fits["summary"]["oom"] == false);
  CHECK_FALSE(fits.contains("fit_advice"));
}

TEST_CASE("fit_changes_json: the advice alone is simulate's, told how far it is") {
  // The page shows an out-of-memory run at once and asks for its advice after (a large MoE
  // run's takes tens of bounded simulations): the same entries and warning lines as simulate's.
  const std::string config = R"({"model": "llama2-7b", "cluster": {"preset": "dgx-a100-40g", "nodes": 1},
    "training": {"global_batch": 64, "seq_len": 4096, "precision": "bf16"},
    "strategy": {"dp": 4, "tp": 2, "micro_batch": 8}})";
  const auto whole = nlohmann::json::parse(simulate_json(config, {}));
  std::vector<std::pair<int64_t, int64_t>> told;
  const auto alone = nlohmann::json::parse(fit_changes_json(
      config, [&](int64_t decided, int64_t candidates) { told.emplace_back(decided, candidates); }));
  CHECK(alone["ok"] == true);
  CHECK(alone["fit_advice"] == whole["fit_advice"]);
  std::vector<std::string> lines;
  for (const auto& w : whole["warnings"]) {
    const std::string text = w;
    if (text.rfind("To fit: ", 0) == 0 || text.rfind("No change of one or two knobs", 0) == 0)
      lines.push_back(text);
  }
  CHECK(alone["warnings"] == nlohmann::json(lines));
  REQUIRE_FALSE(told.empty());
  for (size_t i = 1; i < told.size(); ++i) CHECK(told[i].first >= told[i - 1].first);  // never goes back
  for (const auto& [decided, candidates] : told) CHECK(decided <= candidates);
  // The CLI's threads (SimulateOptions::fit_advice_threads) give the same advice.
  SimulateOptions threaded;
  threaded.fit_advice_threads = 3;
  CHECK(simulate_json(config, threaded) == simulate_json(config, {}));
  // Simulated without its advice (the page's first call), the run says it does not fit and no more.
  SimulateOptions plain;
  plain.fit_advice = false;
  const auto bare = nlohmann::json::parse(simulate_json(config, plain));
  CHECK(bare["summary"]["oom"] == true);
  CHECK_FALSE(bare.contains("fit_advice"));
  for (const auto& w : bare["warnings"]) CHECK(w.get<std::string>().rfind("To fit: ", 0) != 0);
}

TEST_CASE("search progress: told after the check and each wave; every candidate decided or waiting") {
  // A candidate is decided (invalid, over memory, simulated, failed) or still waiting, at every
  // report; the last report's best is the result's; the result does not depend on the observer.
  SearchOptions o;
  o.top = 3;
  std::vector<SearchProgress> told;
  o.progress = [&](const SearchProgress& p) { told.push_back(p); };
  const std::string with = search_json(kSmall, o);
  const auto r = nlohmann::json::parse(with);
  REQUIRE(told.size() >= 2);
  int64_t decided = -1, simulated = -1, bounds = -1;
  for (const SearchProgress& p : told) {
    CHECK(p.decided + p.queued == p.candidates);
    CHECK(p.decided >= decided);  // never goes back
    CHECK(p.simulated >= simulated);
    CHECK(p.bounds_tightened >= bounds);
    decided = p.decided;
    simulated = p.simulated;
    bounds = p.bounds_tightened;
  }
  const auto& n = r["counts"];
  CHECK(told.back().candidates == n["enumerated"].get<int64_t>());
  CHECK(told.back().simulated == n["simulated"].get<int64_t>());
  CHECK(told.back().bounds_tightened ==
        n["layer_bounds"].get<int64_t>() + n["compiled_bounds"].get<int64_t>());
  CHECK(told.back().queued == n["pruned_time"].get<int64_t>());  // what is left is pruned
  CHECK(told.back().best_s == r["ranked"][0]["iteration_time_s"].get<double>());
  CHECK(told.back().best == r["ranked"][0]["summary"].get<std::string>());
  CHECK(told.front().simulated == 0);  // the first report: after the check, before any wave
  o.progress = nullptr;
  CHECK(search_json(kSmall, o) == with);
}
