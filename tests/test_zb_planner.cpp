// The zero-bubble runtime's plans from measured pass times (plan_zero_bubble, zb_planner.h;
// docs/frameworks/pipeline.md, "Zero-bubble planning"). What Qi et al. derive for T_F = T_B = T_W:
// ZB-H1's bubble (p-1)(T_F + T_B - T_W) within 1F1B's memory (p forwards), ZB-H2 (2p forwards)
// none once m >= 2p - 1, ZB-V none within 2p chunk forwards; and what the runtime plans again
// for: passes of unequal times, where the unit-time order leaves bubbles the plan does not.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/run.h"
#include "proteus/schedule.h"
#include "proteus/strategy_tree.h"
#include "relative_approx.h"

namespace {

using namespace proteus;

PipelineSchedule unit_order(Schedule kind, int p, int m, double w_fraction) {
  const bool v = kind == Schedule::ZbV;
  return make_schedule(kind, p, m, chunk_placement(p, v ? 2 : 1, v), 0, w_fraction);
}

// A profile with the same times on every stage (seconds) and a 1 ns send.
PassProfile profile(int p, double f, double b, double w, double w_fraction = 0.5) {
  PassProfile out;
  out.f_s.assign(static_cast<size_t>(p), f);
  out.b_s.assign(static_cast<size_t>(p), b);
  out.w_s.assign(static_cast<size_t>(p), w);
  out.send_s = 1e-9;
  out.f_bytes.assign(static_cast<size_t>(p), 1e6);
  out.w_bytes.assign(static_cast<size_t>(p), -w_fraction * 1e6);
  return out;
}

SchedulePlay planned_play(Schedule kind, int p, int m, double f, double b, double w) {
  const PipelineSchedule sc = plan_zero_bubble(unit_order(kind, p, m, 0.5), kind, profile(p, f, b, w), 0.5);
  return play_schedule(sc, {f, b, w});
}

}  // namespace

TEST_CASE("zb planner: at T_F = T_B = T_W the paper's bubbles (ZB-H1 (p-1) T, ZB-2P and ZB-V none)") {
  for (auto [p, m] : {std::pair{4, 12}, std::pair{8, 24}, std::pair{4, 8}}) {
    CAPTURE(p);
    CAPTURE(m);
    // Times in ms: the planners' 1 ns send is 1e-6 of a pass.
    const double t = 1e-3;
    const SchedulePlay h1 = planned_play(Schedule::ZbH1, p, m, t, t, t);
    CHECK(h1.max_bubble() <= (p - 1) * t * (1 + 1e-3));
    CHECK(h1.max_bubble() >= (p - 1) * t * (1 - 1e-3));
    const SchedulePlay h2 = planned_play(Schedule::ZbH2, p, m, t, t, t);
    CHECK(h2.max_bubble() <= t * 1e-3);
    const SchedulePlay v = planned_play(Schedule::ZbV, p, m, t, t, t);
    CHECK(v.max_bubble() <= t * 1e-3);
  }
}

TEST_CASE("zb planner: with unequal pass times the plan leaves less bubble than the unit-time order") {
  // A middle stage of the 6.2B GPT on H800 (docs/fidelity/validation.md): F : B : W = 1 : 1.22 : 0.72.
  const int p = 8, m = 24;
  const double f = 1e-3, b = 1.22e-3, w = 0.72e-3;
  for (Schedule kind : {Schedule::ZbH2, Schedule::ZbV}) {
    const std::string name = to_string(kind);
    CAPTURE(name);
    const double unit = play_schedule(unit_order(kind, p, m, 0.5), {f, b, w}).max_bubble();
    const double planned = planned_play(kind, p, m, f, b, w).max_bubble();
    MESSAGE(name << ": bubble " << unit / f << " -> " << planned / f << " forwards");
    CHECK(planned < 0.5 * unit);
  }
  // ZB-H1's bubble is what its memory allows, (p-1)(T_F + T_B - T_W), either way.
  const double h1 = (p - 1) * (f + b - w);
  CHECK(planned_play(Schedule::ZbH1, p, m, f, b, w).max_bubble() == proteus::test::approx(h1).epsilon(1e-3));
  CHECK(play_schedule(unit_order(Schedule::ZbH1, p, m, 0.5), {f, b, w}).max_bubble() ==
        proteus::test::approx(h1).epsilon(1e-3));
}

TEST_CASE("zb planner: the memory limit holds (ZB-H1 p forwards, ZB-2P 2p, ZB-V 2p chunk forwards)") {
  const int p = 4, m = 16;
  const double f = 1e-3, b = 1.22e-3, w = 0.72e-3;
  for (auto [kind, limit] : {std::pair{Schedule::ZbH1, 4.0}, std::pair{Schedule::ZbH2, 8.0}}) {
    const PipelineSchedule sc = plan_zero_bubble(unit_order(kind, p, m, 0.5), kind, profile(p, f, b, w), 0.5);
    // SchedulePlay counts a waiting W as w_memory_fraction of a forward: the planner's account.
    PipelineSchedule counted = sc;
    counted.w_memory_fraction = 0.5;
    const SchedulePlay play = play_schedule(counted, {f, b, w});
    for (double held : play.peak_memory) CHECK(held <= limit + 1e-9);
  }
  const PipelineSchedule v =
      plan_zero_bubble(unit_order(Schedule::ZbV, p, m, 0.5), Schedule::ZbV, profile(p, f, b, w), 0.5);
  for (double held : play_schedule(v, {f, b, w}).peak_memory) CHECK(held <= 2.0 * p + 1e-9);
}

TEST_CASE("zb planner: a played zb-h1 graph's profile, and the config knob") {
  const std::string cfg = std::string("{\"model\":") + test::gpt_model(8, 512, 8, 512, 1024) +
                          ",\"cluster\":{\"preset\":\"dgx-a100-80g\",\"nodes\":1},"
                          "\"training\":{\"global_batch\":32,\"precision\":\"bf16\"},"
                          "\"strategy\":{\"pp\":4,\"dp\":2,\"micro_batch\":1,\"schedule\":\"zb-h1\"}}";
  const Config config = parse_config(cfg);
  const Topology topology = build_topology(config.cluster);
  const CompiledModel unit = compile(config);
  const Trace trace = execute(unit.exec, cost_model_of(config), topology, exec_options_of(config, false));
  const PassProfile pr = profile_passes(unit.exec, trace);
  REQUIRE(pr.f_s.size() == 4);
  for (size_t s = 0; s < 4; ++s) {
    CHECK(pr.f_s[s] > 0);
    CHECK(pr.b_s[s] > 0);
    CHECK(pr.w_s[s] > 0);
    CHECK(pr.f_bytes[s] > 0);
    // W frees what the weight gradients read, part of what the forward kept.
    CHECK(pr.w_bytes[s] < 0);
    CHECK(-pr.w_bytes[s] < pr.f_bytes[s]);
  }
  CHECK(pr.send_s > 0);
  // A middle stage's forward: at least its compute tasks' busy time, averaged over the passes.
  double busy = 0;
  int passes = 0;
  for (size_t t = 0; t < unit.exec.tasks.size(); ++t) {
    const Task& task = unit.exec.tasks[t];
    if (task.kind != TaskKind::Compute || task.stream != Stream::Compute || task.phase != Phase::Forward ||
        task.micro_batch < 0 || unit.exec.ranks[static_cast<size_t>(task.rank)].stage != 1)
      continue;
    busy += trace.task_end_s[t] - trace.task_start_s[t];
    passes = std::max(passes, task.micro_batch + 1);
  }
  REQUIRE(passes == 16);
  CHECK(pr.f_s[1] >= busy / passes * (1 - 1e-9));
  CHECK(pr.f_s[1] <= busy / passes * 1.5);

  // The default plays the plan from these times; "unit" the order compile() generates.
  const ConfigRun profiled = run_config(config, topology, exec_options_of(config, false));
  Config unit_config = config;
  unit_config.strategy.zb_plan = ZbPlan::Unit;
  CHECK(zb_profiled(config));
  CHECK_FALSE(zb_profiled(unit_config));
  // PyTorch's pipelining runs static zero-bubble orders: unit unless the config asks.
  std::string fsdp = cfg;
  fsdp.replace(fsdp.find("\"zb-h1\""), 7, "\"zb-h1\",\"framework\":\"fsdp\"");
  CHECK_FALSE(zb_profiled(parse_config(fsdp)));
  const ConfigRun kept = run_config(unit_config, topology, exec_options_of(unit_config, false));
  CHECK(kept.compiled.stats.stage_orders == unit.stats.stage_orders);
  CHECK(kept.trace.iteration_time_s == trace.iteration_time_s);
  CHECK(profiled.trace.iteration_time_s <= trace.iteration_time_s * (1 + 1e-9));

  // The result says what the planners were given and the order they chose.
  const nlohmann::json result = nlohmann::json::parse(simulate_json(cfg, {}));
  REQUIRE(result.contains("pipeline_plan"));
  const nlohmann::json& plan = result["pipeline_plan"];
  REQUIRE(plan["forward_ms"].size() == 4);
  for (size_t s = 0; s < 4; ++s) {
    CHECK(plan["forward_ms"][s].get<double>() == proteus::test::approx(pr.f_s[s] * 1e3).epsilon(1e-12));
    CHECK(plan["backward_weight_ms"][s].get<double>() ==
          proteus::test::approx(pr.w_s[s] * 1e3).epsilon(1e-12));
  }
  CHECK(plan["send_ms"].get<double>() == proteus::test::approx(pr.send_s * 1e3).epsilon(1e-12));
  CHECK(plan["stage_orders"].get<std::vector<std::string>>() == profiled.compiled.stats.stage_orders);
  std::string unit_text = cfg;
  unit_text.replace(unit_text.find("\"zb-h1\""), 7, "\"zb-h1\",\"zb_plan\":\"unit\"");
  CHECK_FALSE(nlohmann::json::parse(simulate_json(unit_text, {})).contains("pipeline_plan"));

  // Only the zero-bubble runtime's schedules take it, and only its two names.
  std::string bad = cfg;
  bad.replace(bad.find("\"zb-h1\""), 7, "\"1f1b\",\"zb_plan\":\"unit\"");
  CHECK(test::error_path([&] { parse_config(bad); }) == "strategy.zb_plan");
  // The runtime's V planner fails with 1 < micro-batches < pp: refused before it runs.
  std::string few = cfg;
  few.replace(few.find("\"zb-h1\""), 7, "\"zb-v\"");
  few.replace(few.find("\"global_batch\":32"), 17, "\"global_batch\":6");
  CHECK(test::error_path([&] { parse_config(few); }) == "strategy.schedule");
  std::string unknown = cfg;
  unknown.replace(unknown.find("\"zb-h1\""), 7, "\"zb-h1\",\"zb_plan\":\"ilp\"");
  CHECK(test::error_path([&] { parse_config(unknown); }) == "strategy.zb_plan");
}
