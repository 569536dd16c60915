// DualPipeV (deepseek-ai/DualPipe dualpipev.py): DeepSeek-V3's DualPipe cut in half onto a V.
// DeepSeek-V3 technical report (arXiv 2412.19437) Table 2, for PP pipeline ranks of DualPipe:
//   1F1B      bubble (PP-1)(F+B)           parameters 1x  activations PP
//   ZB1P      bubble (PP-1)(F+B-2W)        parameters 1x  activations PP
//   DualPipe  bubble (PP/2-1)(F&B+B-3W)    parameters 2x  activations PP+1
// F a forward chunk, B a whole backward chunk, W its weight-gradient part, F&B a forward and
// a backward overlapped. Cut in half, DualPipeV runs the same timeline on n = PP/2 devices,
// each holding two of the 2n = PP model chunks (chunk s going down, 2n-1-s coming back), so
// the figures hold with PP = 2n and "a chunk" = one PP-th of the model.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "compile_fixtures.h"
#include "proteus/api.h"
#include "proteus/error.h"
#include "proteus/schedule.h"

namespace {

using namespace proteus;
using nlohmann::json;

PipelineSchedule dualpipe_v(int n, int m) {
  return make_schedule(Schedule::DualPipeV, n, m, chunk_placement(n, 2, true));
}

// A small MoE transformer (8 experts, top-2) on two 8-GPU nodes: pp 2 (one node each),
// experts spread over the 8 GPUs of a stage (ep 8), so every MoE layer does an all-to-all.
std::string moe_config(const std::string& schedule) {
  return R"({"model":{"kind":"transformer","name":"moe-test","layers":8,"hidden":2048,"heads":16,
              "ffn_hidden":8192,"seq_len":4096,"vocab":32000,"mlp":"swiglu","norm":"rmsnorm",
              "moe":{"experts":8,"top_k":2,"expert_ffn_hidden":4096}},
            "cluster":{"preset":"dgx-h100","nodes":2},
            "training":{"global_batch":64,"precision":"bf16"},
            "strategy":{"pp":2,"dp":8,"ep":8,"micro_batch":1,"schedule":)" +
         schedule + "}}";
}

json simulate(const std::string& cfg) {
  json r = json::parse(simulate_json(cfg, {}));
  REQUIRE_MESSAGE(r["ok"] == true, r.dump());
  return r;
}

}  // namespace

TEST_CASE("dualpipe-v: DeepSeek-V3 Table 2 bubble (PP/2-1)(F&B+B-3W) and PP+1 activations") {
  for (auto [n, m] : {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 16}, std::pair{8, 20}}) {
    const PipelineSchedule sc = dualpipe_v(n, m);
    validate_schedule(sc, "strategy.schedule");
    CAPTURE(n);
    CAPTURE(m);
    // Unit passes F = B_input = W = 1 (whole backward B = 2), the F&B group not shortened
    // (F&B = F + B = 3): (PP/2 - 1)(F&B + B - 3W) = (n - 1)(3 + 2 - 3) = 2(n - 1) on the first
    // stage, the largest bubble: 6 at n = 4, 14 at n = 8 (DualPipe's figure, 8 ranks and 20
    // micro-batches, is n = 4).
    const SchedulePlay play = play_schedule(sc, {1, 1, 1});
    CHECK(play.bubble(0) == doctest::Approx(2.0 * (n - 1)));
    CHECK(play.max_bubble() == doctest::Approx(2.0 * (n - 1)));
    // Every stage's busy time: 2 chunks x m micro-batches x (F + B_input + W) = 6m.
    CHECK(play.busy[0] == doctest::Approx(6.0 * m));
    // Activations PP + 1 = 2n + 1 chunk forwards whose backward has not finished, every stage.
    for (int s = 0; s < n; ++s) CHECK(play.peak_held[static_cast<size_t>(s)] == 2 * n + 1);
  }
  // ZB1P, the table's check: ZB-H1 on PP = 2n ranks, unit passes: (PP-1)(F+B-2W) = 2n - 1.
  for (int n : {2, 4}) {
    const PipelineSchedule zb = make_schedule(Schedule::ZbH1, 2 * n, 4 * n, chunk_placement(2 * n, 1, false));
    CHECK(play_schedule(zb, {1, 1, 1}).bubble(0) == doctest::Approx(2.0 * n - 1));
  }
}

TEST_CASE("dualpipe-v: the order is dualpipev.py's, F&B groups in the main step") {
  // n = 2, m = 4, stage 0 (rank 0: half_rank 0; chunk 0 = model chunk 0, ".1" = chunk 3):
  // step 1: 2 x F0; step 2: F0 F1; step 3: B1 W1 F1 (zero bubble: W popped at once);
  // step 4 (m - 2n + 1 = 1 time): F0&B1&W1, F1&B0&W0 (whole backwards, overlapped);
  // step 5: B1 W1, F1&B0&W0; step 6 (r = 0, even: zero bubble after B1): B1 W1, B0;
  // step 7: W(popped) B0 (zb); step 8: W.
  CHECK(to_string(dualpipe_v(2, 4).order[0]) ==
        "F0 F1 F2 F0.1 B0.1 W0.1 F1.1 F3&B1.1&W1.1 F2.1&B0&W0 B2.1 W2.1 F3.1&B1&W1 B3.1 W3.1 B2 W2 B3 W3");
  // Stage 1 (the bottom of the V, the last rank): its first F0 and B1 are not overlapped.
  CHECK(to_string(dualpipe_v(2, 4).order[1]).rfind("F0 F0.1 F1 F1.1 F2 B0.1 W0.1 F2.1&B0&W0", 0) == 0);
}

TEST_CASE("dualpipe-v: two chunks per stage hold 2x a 1F1B stage of PP = 2n (the table's parameters)") {
  // 8 layers: dualpipe-v on 2 stages puts 2 layers on each of 4 chunks, stage 1 runs chunks 1
  // and 2 (no embedding, no output layer); 1F1B on 4 stages puts 2 layers on stage 1.
  const auto base = [](const std::string& strategy) {
    return test::config_json(test::gpt_model(8, 1024, 8, 512, 32000), R"({"preset":"dgx-h100","nodes":1})",
                             16, strategy);
  };
  const CompiledModel dpv = test::compile_text(base(R"({"pp":2,"dp":4,"schedule":"dualpipe-v"})"));
  const CompiledModel ofob = test::compile_text(base(R"({"pp":4,"dp":2,"schedule":"1f1b"})"));
  CHECK(dpv.tree.chunk_stage == std::vector<int>{0, 1, 1, 0});
  const auto weights = [](const CompiledModel& m, int stage) {
    for (const SimRank& r : m.exec.ranks)
      if (r.stage == stage) return r.static_bytes[static_cast<size_t>(MemCategory::Weights)];
    return -1.0;
  };
  CHECK(weights(dpv, 1) == doctest::Approx(2 * weights(ofob, 1)));
}

TEST_CASE("dualpipe-v: F&B groups hide one micro-batch's all-to-all behind the other's compute") {
  // The same passes in the same order, once as dualpipe-v (F&B groups interleaved) and once
  // as an explicit schedule without the groups (each pass runs whole, in turn).
  const PipelineSchedule sc = dualpipe_v(2, 8);
  std::string stages;
  for (const auto& order : sc.order) {
    std::string list;
    for (const Pass& p : order) list += std::string(list.empty() ? "" : ",") + "\"" + to_string(p) + "\"";
    stages += std::string(stages.empty() ? "" : ",") + "[" + list + "]";
  }
  const json overlapped = simulate(moe_config(R"("dualpipe-v")"));
  const json serial = simulate(moe_config(R"({"stages":[)" + stages + R"(],"placement":"v"})"));
  // Same work: the group's compute is the sum of its members' (the GPU runs the kernels of the
  // two micro-batches one after the other), only slowed where an all-to-all now runs beside it
  // (dgx-h100's compute_slowdown_with_comm, 1.1: NCCL's SMs): between 1x and 1.1x the serial.
  for (int s = 0; s < 2; ++s) {
    const double with = overlapped["devices"][s]["busy_s"]["compute"].get<double>();
    const double without = serial["devices"][s]["busy_s"]["compute"].get<double>();
    CHECK(with > without);
    CHECK(with < 1.1 * without);
  }
  // ... and the all-to-alls of one run while the other computes: less exposed communication,
  // a shorter iteration.
  CHECK(overlapped["summary"]["exposed_comm_fraction"].get<double>() <
        serial["summary"]["exposed_comm_fraction"].get<double>());
  CHECK(overlapped["summary"]["iteration_time_s"].get<double>() <
        serial["summary"]["iteration_time_s"].get<double>());
}

TEST_CASE("dualpipe-v: errors name the field") {
  const auto path_of = [](const std::string& cfg) {
    try {
      test::compile_text(cfg);
    } catch (const Error& e) {
      return e.path;
    }
    return std::string();
  };
  // 64 / (dp 8 x micro_batch 4) = 2 micro-batches < 2 pp = 4: DualPipeV.step asserts
  // num_chunks >= num_ranks * 2.
  std::string few = moe_config(R"("dualpipe-v")");
  few.replace(few.find(R"("micro_batch":1)"), 15, R"("micro_batch":4)");
  CHECK(path_of(few) == "strategy.schedule");
  // An explicit group cannot start a stage's list.
  CHECK(path_of(moe_config(R"({"stages":[["&F0"],["F0"]],"placement":"v"})")) ==
        "strategy.schedule.stages[0][0]");
}
