// Where Megatron-Core's pipeline schedules launch the data-parallel gradient reductions
// (core/src/compile/grad_sync_points.h; docs/frameworks/data-parallelism.md, "When Megatron-Core
// launches the reductions"). With align_grad_reduce (its default) the interleaved schedule
// launches a chunk's reductions pipeline_parallel_rank backward passes after the chunk's last
// one, "at the same time across the pipeline-parallel group": in the drain, where stage s runs
// its backwards back to back and the last micro-batch reaches stage s (p - 1 - s) passes after
// stage p - 1, the launches of a chunk line up on every stage. The non-interleaved 1F1B lets the
// hooks launch them on the first stage and launches them after the last backward elsewhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "../core/src/compile/grad_sync_points.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/config.h"
#include "proteus/import.h"
#include "proteus/schedule.h"
#include "proteus/search.h"

using json = nlohmann::json;
using namespace proteus;

namespace {

// 8 uniform layers (a vocabulary small enough that the first and last stages weigh as the
// others) on one DGX H100: pp 4 x dp 2, 8 micro-batches of 1.
std::string config(const std::string& strategy) {
  return test::config_json(test::gpt_model(8, 2048, 16, 2048, 1024), R"({"preset":"dgx-h100","nodes":1})", 16,
                           R"({"tp":1,"pp":4,"dp":2,"micro_batch":1,"zero":1,"overlap_grad_reduce":true,)"
                           R"("grad_bucket_MB":16)" +
                               strategy + "}");
}

struct StageTimes {
  double first_reduction_s = 1e30;  // start of the stage's first gradient reduction
  double last_backward_end_s = 0;   // end of its last backward task on the compute stream
  double backward_s = 0;            // its backward compute, all micro-batches
  int backwards = 0;                // micro-batch x chunk backwards
};

// Per stage (rank = stage x dp: tp 1, dp 2), from the simulated timeline.
std::map<int, StageTimes> stage_times(const std::string& cfg) {
  SimulateOptions options;
  options.timeline = true;
  const json out = json::parse(simulate_json(cfg, options));
  REQUIRE(out["ok"] == true);
  std::map<int, StageTimes> stages;
  std::map<int, std::map<std::pair<int, std::string>, bool>> passes;
  for (const json& e : out["timeline"]) {
    const int rank = e["rank"].get<int>();
    if (rank % 2 != 0) continue;
    StageTimes& st = stages[rank / 2];
    const std::string name = e["name"].get<std::string>();
    const std::string kind = e["kind"].get<std::string>();
    if (name.rfind("grad_bucket_", 0) == 0)
      st.first_reduction_s = std::min(st.first_reduction_s, e["start_s"].get<double>());
    if (e["stream"] == "compute" && (kind == "backward_input" || kind == "backward_weight")) {
      st.last_backward_end_s = std::max(st.last_backward_end_s, e["end_s"].get<double>());
      st.backward_s += e["end_s"].get<double>() - e["start_s"].get<double>();
      // A backward: a micro-batch's pass through one layer (one layer per chunk).
      const std::string layer = name.substr(0, name.find('.', name.find('.') + 1));
      passes[rank][{e["mb"].get<int>(), layer}] = true;
    }
  }
  for (auto& [stage, st] : stages) st.backwards = static_cast<int>(passes[2 * stage].size());
  return stages;
}

double spread_of_first_reductions(const std::map<int, StageTimes>& stages) {
  double lo = 1e30, hi = 0;
  for (const auto& [stage, st] : stages) {
    lo = std::min(lo, st.first_reduction_s);
    hi = std::max(hi, st.first_reduction_s);
  }
  return hi - lo;
}

}  // namespace

TEST_CASE(
    "grad sync points: interleaved, a chunk's reductions launch pipeline-rank backwards after its last") {
  // Megatron-Core's interleaved order on 4 stages x 2 chunks, 8 micro-batches: the backwards of
  // the last group run chunk 1 then chunk 0, 4 each; a chunk's last backward is k, its launch
  // after backward k + stage, the last backward at most.
  for (int stage = 0; stage < 4; ++stage) {
    CAPTURE(stage);
    const std::vector<Pass> order = stage_schedule(Schedule::Interleaved1F1B, 4, 8, 2, stage);
    const GradSyncPoints points = megatron_grad_sync_points(order, stage, true);
    CHECK_FALSE(points.on_ready);
    std::vector<int> backward_index(order.size(), -1), last_backward(2, -1);
    int backwards = 0;
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i].kind == PassKind::B) {
        backward_index[i] = backwards;
        last_backward[static_cast<size_t>(order[i].chunk)] = backwards++;
      }
    REQUIRE(backwards == 16);
    CHECK(last_backward[1] == 11);  // chunk 1's micro-batch 7: the 4th backward of the last group
    CHECK(last_backward[0] == 15);
    std::map<int, int> launched_after;  // chunk -> backward index
    for (size_t i = 0; i < order.size(); ++i)
      for (int chunk : points.chunks_after_pass[i]) {
        REQUIRE(backward_index[i] >= 0);  // only after backwards
        launched_after[chunk] = backward_index[i];
      }
    CHECK(launched_after.at(1) == 11 + stage);
    CHECK(launched_after.at(0) == 15);  // 15 + stage clamped: after the last backward
  }
}

TEST_CASE("grad sync points: 1F1B, the hooks on the first stage, after the last backward elsewhere") {
  for (int stage = 0; stage < 4; ++stage) {
    CAPTURE(stage);
    const std::vector<Pass> order = stage_schedule(Schedule::OneFOneB, 4, 8, 1, stage);
    const GradSyncPoints points = megatron_grad_sync_points(order, stage, false);
    CHECK(points.on_ready == (stage == 0));
    int launches = 0;
    for (size_t i = 0; i < order.size(); ++i)
      if (!points.chunks_after_pass[i].empty()) {
        ++launches;
        CHECK(i + 1 == order.size());  // the order ends with the last backward
        CHECK(order[i].kind == PassKind::B);
      }
    CHECK(launches == (stage == 0 ? 0 : 1));
  }
}

TEST_CASE("grad sync points: aligned launches line up across the stages; the hooks' are a pass apart") {
  const std::string interleaved = R"(,"schedule":"interleaved-1f1b","virtual_stages":2)";
  const auto aligned = stage_times(config(interleaved));
  const auto hooks = stage_times(config(interleaved + R"(,"align_grad_reduce":false)"));
  REQUIRE(aligned.size() == 4);
  REQUIRE(hooks.size() == 4);
  const double t_backward = aligned.at(1).backward_s / aligned.at(1).backwards;  // one chunk backward
  CAPTURE(t_backward);
  // The hooks launch chunk 1's buckets on stage s as its last backward there ends, (p - 1 - s)
  // backwards after stage p - 1's: 3 backwards apart from the first stage to the last.
  CHECK(spread_of_first_reductions(hooks) > 2.5 * t_backward);
  // Aligned: stage s waits s more backwards, so every stage launches at the same point of the
  // drain (within a fraction of a pass: the stages' backwards are not exactly equal).
  CHECK(spread_of_first_reductions(aligned) < 0.5 * t_backward);
}

TEST_CASE("grad sync points: 1F1B stages after the first reduce after their last backward") {
  const auto aligned = stage_times(config(""));
  const auto hooks = stage_times(config(R"(,"align_grad_reduce":false)"));
  for (int stage = 0; stage < 4; ++stage) {
    CAPTURE(stage);
    const StageTimes& a = aligned.at(stage);
    const StageTimes& h = hooks.at(stage);
    // Several buckets per stage: the hooks launch the first while the last backward still runs.
    CHECK(h.first_reduction_s < h.last_backward_end_s);
    if (stage == 0)
      CHECK(a.first_reduction_s < a.last_backward_end_s);
    else
      CHECK(a.first_reduction_s >= a.last_backward_end_s);
  }
}

TEST_CASE("grad sync points: align_grad_reduce is refused where Megatron-Core's schedules do not reduce") {
  for (const std::string& strategy :
       {std::string(R"({"tp":1,"pp":1,"dp":8,"micro_batch":1,"align_grad_reduce":false})"),
        std::string(
            R"({"tp":1,"pp":4,"dp":2,"micro_batch":1,"overlap_grad_reduce":false,"align_grad_reduce":true})"),
        std::string(
            R"({"tp":1,"pp":4,"dp":2,"micro_batch":1,"framework":"deepspeed","align_grad_reduce":true})")}) {
    CAPTURE(strategy);
    const std::string cfg = test::config_json(test::gpt_model(8, 1024, 16, 1024, 1024),
                                              R"({"preset":"dgx-h100","nodes":1})", 16, strategy);
    CHECK(test::error_path([&] { parse_config(cfg); }) == "strategy.align_grad_reduce");
  }
}

TEST_CASE("grad sync points: Megatron-LM's --no-align-grad-reduce on import and export") {
  const std::string args =
      "torchrun pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
      "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8 --bf16 "
      "--use-distributed-optimizer --overlap-grad-reduce --tensor-model-parallel-size 2 ";
  MegatronImportOptions o;
  o.cluster_json = R"({"preset": "dgx-h100", "nodes": 1})";
  const std::string pipelined = args + "--pipeline-model-parallel-size 2 ";
  const ImportResult off = import_megatron(pipelined + "--no-align-grad-reduce", o);
  CHECK_FALSE(parse_config(off.config_json).strategy.align_grad_reduce);
  // The name before the rename.
  CHECK_FALSE(parse_config(import_megatron(pipelined + "--no-delay-grad-reduce", o).config_json)
                  .strategy.align_grad_reduce);
  CHECK(parse_config(import_megatron(pipelined, o).config_json).strategy.align_grad_reduce);
  // Without a pipeline the schedule never launches the reductions: ignored, and said so.
  const ImportResult flat = import_megatron(args + "--no-align-grad-reduce", o);
  CHECK(std::any_of(flat.ignored.begin(), flat.ignored.end(),
                    [](const std::string& line) { return line.rfind("--no-align-grad-reduce", 0) == 0; }));
  CHECK_FALSE(parse_config(flat.config_json).strategy.align_grad_reduce_given);
  // Under --deepspeed the engine reduces the gradients: ignored, and said so.
  const ImportResult ds = import_megatron(pipelined + "--deepspeed --zero-stage 1 --no-align-grad-reduce", o);
  CHECK(parse_config(ds.config_json).strategy.framework == Framework::DeepSpeed);
  CHECK_FALSE(parse_config(ds.config_json).strategy.align_grad_reduce_given);
  CHECK(std::any_of(ds.ignored.begin(), ds.ignored.end(), [](const std::string& line) {
    return line.rfind("--no-align-grad-reduce / --no-delay-grad-reduce", 0) == 0;
  }));
  CHECK(export_megatron(off.config_json).find("--no-align-grad-reduce") != std::string::npos);
  CHECK(export_megatron(import_megatron(pipelined, o).config_json).find("align-grad") == std::string::npos);
}

TEST_CASE("grad sync points: a search keeps the config's pipeline options only where they act") {
  // The base sets both of Megatron-Core's pipeline options; the space's candidates without a
  // pipeline (or, for overlap_p2p_comm, without the interleaved schedule) drop them instead of
  // being refused for them, and the candidates where they act keep them.
  const Config base = parse_config(test::config_json(
      test::gpt_model(8, 1024, 16, 1024, 1024), R"({"preset":"dgx-h100","nodes":1})", 16,
      R"({"tp":1,"pp":2,"dp":4,"micro_batch":1,"zero":1,"schedule":"interleaved-1f1b","virtual_stages":2,)"
      R"("overlap_p2p_comm":false,"align_grad_reduce":false})"));
  int flat = 0, interleaved = 0, one_f_one_b = 0;
  for (const StrategySpec& s : enumerate_space(base)) {
    if (s.pp == 1) {
      ++flat;
      CHECK_FALSE(s.align_grad_reduce_given);
      CHECK_FALSE(s.overlap_p2p_comm_given);
    } else if (s.framework == Framework::Megatron && s.schedule == Schedule::Interleaved1F1B) {
      ++interleaved;
      CHECK_FALSE(s.overlap_p2p_comm);
      CHECK_FALSE(s.align_grad_reduce);
    } else if (s.framework == Framework::Megatron && s.schedule == Schedule::OneFOneB) {
      ++one_f_one_b;
      CHECK_FALSE(s.overlap_p2p_comm_given);
      CHECK_FALSE(s.align_grad_reduce);
    }
  }
  CHECK(flat > 0);
  CHECK(interleaved > 0);
  CHECK(one_f_one_b > 0);
}
