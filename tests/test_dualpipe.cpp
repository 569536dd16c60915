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
#include "error_path.h"
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
  // (dgx-h100's compute_slowdown_with_comm, 1.189: NCCL's SMs): between 1x and 1.189x the serial.
  constexpr double kH100ComputeSlowdownWithComm = 1.189;
  for (int s = 0; s < 2; ++s) {
    const double with = overlapped["devices"][s]["busy_s"]["compute"].get<double>();
    const double without = serial["devices"][s]["busy_s"]["compute"].get<double>();
    CHECK(with > without);
    CHECK(with < kH100ComputeSlowdownWithComm * without);
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
    return test::error_path([&] { test::compile_text(cfg); });
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

// DualPipe itself (deepseek-ai/DualPipe dualpipe.py): PP = p ranks, two copies of the model.
// Rank r holds copy A's stage r (chunk 0; micro-batches 0 .. m/2-1 enter at rank 0) and copy
// B's stage p-1-r (chunk ".1"; micro-batches m/2 .. m-1 enter at rank p-1).
namespace {

PipelineSchedule dualpipe(int p, int m) {
  return make_schedule(Schedule::DualPipe, p, m, chunk_placement(p, 2, true));
}

}  // namespace

TEST_CASE("dualpipe: DeepSeek-V3 Table 2 bubble (PP/2-1)(F&B+B-3W) and PP+1 activations") {
  for (auto [p, m] :
       {std::pair{2, 4}, std::pair{4, 8}, std::pair{8, 16}, std::pair{8, 20}, std::pair{8, 32}}) {
    const PipelineSchedule sc = dualpipe(p, m);
    CAPTURE(p);
    CAPTURE(m);
    CHECK(sc.copies == 2);
    validate_schedule(sc, "strategy.schedule");
    // Unit passes F = B_input = W = 1, so the whole backward B = 2 and the unshortened F&B =
    // F + B = 3: (PP/2 - 1)(F&B + B - 3W) = (p/2 - 1)(3 + 2 - 3) = p - 2 (6 for the report's
    // Figure 5, 8 ranks and 20 micro-batches), the largest bubble of any rank.
    const SchedulePlay play = play_schedule(sc, {1, 1, 1});
    CHECK(play.max_bubble() == doctest::Approx(p - 2.0));
    for (int s = 0; s < p; ++s) {
      CAPTURE(s);
      // Each rank: 2 chunks x m/2 micro-batches each x (F + B_input + W) = 3m.
      CHECK(play.busy[static_cast<size_t>(s)] == doctest::Approx(3.0 * m));
      // Activations PP + 1: chunk forwards whose backward has not finished, on every rank.
      CHECK(play.peak_held[static_cast<size_t>(s)] == p + 1);
    }
    // The two ends are mirror images: rank 0 and rank p-1 idle alike.
    CHECK(play.bubble(0) == doctest::Approx(play.bubble(p - 1)));
  }
}

TEST_CASE("dualpipe: the order is dualpipe.py's, each copy with its half of the micro-batches") {
  // p = 4, m = 8, rank 0 (half_rank h = 0, first half: phase 0 = copy A = chunk 0 with
  // micro-batches 0-3, phase 1 = copy B = chunk ".1" with 4-7), num_half_ranks n = 2,
  // half_num_chunks 4. Step 1, (n-h-1)*2 = 2: F0 F1. Step 2, h+1 = 1: F2 F4.1. Step 3, n-h-1 = 1:
  // B4.1 (zero bubble, its W popped at once) W4.1 F5.1. Step 4, 4 - p + h + 1 = 1 (rank 0 is not
  // a middle rank): F3&B5.1&W5.1, F6.1&B0&W0. Step 5, 1: B6.1 W6.1, F7.1&B1&W1. Step 6, h+1 = 1
  // (h even: zero bubble after B1): B7.1 W7.1, B2. Step 7: W2 B3. Step 8: W3.
  CHECK(to_string(dualpipe(4, 8).order[0]) ==
        "F0 F1 F2 F4.1 B4.1 W4.1 F5.1 F3&B5.1&W5.1 F6.1&B0&W0 B6.1 W6.1 F7.1&B1&W1 B7.1 W7.1 B2 W2 B3 W3");
  // Rank 3 (second half, h = 0): `phase ^= is_in_second_half`, so phase 0 is copy B there (it
  // feeds copy B's micro-batches in) and phase 1 copy A (its last stage, the loss).
  CHECK(to_string(dualpipe(4, 8).order[3]) ==
        "F4.1 F5.1 F6.1 F0 B0 W0 F1 F7.1&B1&W1 F2&B4.1&W4.1 B2 W2 F3&B5.1&W5.1 B3 W3 B6.1 W6.1 B7.1 W7.1");
  // Rank 1, a middle rank (h = p/2 - 1 = 1): step 2, twice: F0 F4.1 F1 F5.1; steps 1 and 3 none;
  // step 4, 4 - 4 + 1 + 1 = 2 times, the first F0 and B1 not overlapped: F2 B4.1 W4.1,
  // F6.1&B0&W0, then F3&B5.1&W5.1 F7.1&B1&W1; step 6, twice (h odd: zero bubble from i = 1, before
  // B1): B6.1 W6.1 B2 W2, B7.1 B3; step 8: W7.1 W3 (FIFO).
  CHECK(to_string(dualpipe(4, 8).order[1]) ==
        "F0 F4.1 F1 F5.1 F2 B4.1 W4.1 F6.1&B0&W0 F3&B5.1&W5.1 F7.1&B1&W1 B6.1 W6.1 B2 W2 B7.1 B3 W7.1 W3");
}

TEST_CASE("dualpipe: a micro-batch runs only through its copy's chunks") {
  PipelineSchedule sc = dualpipe(4, 8);
  // Stage 0's chunk 0 is copy A (micro-batches 0-3): "F4" (copy B's micro-batch) is refused.
  sc.order[0][0].micro_batch = 4;
  try {
    validate_schedule(sc, "strategy.schedule");
    FAIL("accepted a micro-batch of the other copy");
  } catch (const Error& e) {
    CHECK(e.path == "strategy.schedule.stages[0][0]");
    CHECK(std::string(e.what()).find("copy 1") != std::string::npos);
  }
}

namespace {

// An 8-layer GPT (hidden 1024, untied embeddings so that each weight belongs to one stage) on
// one dgx-h100 node: pp 4 x dp 2, global batch 16 = 8 micro-batches of 1 (2 x pp, dualpipe's least).
std::string gpt_pp4(const std::string& schedule, int64_t global_batch = 16, int pp = 4) {
  std::string model = test::gpt_model(8, 1024, 8, 512, 32000);
  model.replace(model.find("\"tied_embeddings\":true"), 22, "\"tied_embeddings\":false");
  return test::config_json(
      model, R"({"preset":"dgx-h100","nodes":1,"gpus_per_node":)" + std::to_string(2 * pp) + "}",
      global_batch, R"({"pp":)" + std::to_string(pp) + R"(,"dp":2,"schedule":")" + schedule + "\"}");
}

double static_bytes(const CompiledModel& m, int stage, MemCategory category) {
  for (const SimRank& r : m.exec.ranks)
    if (r.stage == stage) return r.static_bytes[static_cast<size_t>(category)];
  return -1;
}

}  // namespace

TEST_CASE("dualpipe compiled: each rank holds two stages' parameters and sums them with its pair") {
  const CompiledModel dp = test::compile_text(gpt_pp4("dualpipe"));
  const CompiledModel ofob = test::compile_text(gpt_pp4("1f1b"));
  // The tree: 4 model chunks of 2 layers, each held twice (copy A's chunk c on stage c, copy
  // B's on stage 3 - c); the pipeline's 8 chunks placed in a V.
  CHECK(dp.tree.copies == 2);
  CHECK(dp.tree.chunk_layers == std::vector<int>{2, 2, 2, 2});
  CHECK(dp.tree.chunk_stage == std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0});
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    // Parameters 2x (DeepSeek-V3 Table 2): rank s holds 1F1B's stage s and stage 3 - s, so the
    // weights, gradients and optimizer states of two 1F1B stages.
    for (MemCategory c : {MemCategory::Weights, MemCategory::Gradients, MemCategory::OptimizerStates})
      CHECK(static_bytes(dp, s, c) ==
            doctest::Approx(static_bytes(ofob, s, c) + static_bytes(ofob, 3 - s, c)));
    // The copies' gradients are summed once, over the pair {s, 3 - s}: one all-reduce of every
    // fp32 gradient of the rank (4 bytes per parameter; the bf16 weights are 2).
    const test::CollCount pair = test::count_collectives(dp, CollectiveKind::AllReduce, axis_bit(kAxisPp),
                                                         Phase::Sync, "model_copies", s);
    CHECK(pair.count == 1);
    CHECK(pair.bytes == doctest::Approx(2 * static_bytes(dp, s, MemCategory::Weights)));
    CHECK(test::count_collectives(ofob, CollectiveKind::AllReduce, axis_bit(kAxisPp), Phase::Sync,
                                  "model_copies", s)
              .count == 0);
  }
  // Stage 1 by hand: 4 layers (model chunks 1 and 2) of 12h^2 + 13h parameters (q 1, kv 2, o 1,
  // fc1 4, fc2 4 times h^2; biases h + 2h + h + 4h + h; two layer norms 4h) at h = 1024:
  // 12,596,224 each; bf16 weights 2 bytes: 100,769,792 bytes, twice 1F1B's stage 1.
  CHECK(static_bytes(dp, 1, MemCategory::Weights) == doctest::Approx(4 * 12596224.0 * 2));
  CHECK(static_bytes(ofob, 1, MemCategory::Weights) == doctest::Approx(2 * 12596224.0 * 2));
  // The pair reduction is between the ranks of stages 1 and 2 of the same data-parallel replica.
  for (const Task& t : dp.exec.tasks) {
    if (t.kind != TaskKind::Collective || t.rank != 1 || dp.exec.labels[t.label] != "model_copies") continue;
    const Collective& col = dp.exec.collectives[t.collective];
    REQUIRE(col.group.size() == 2);
    CHECK(dp.tree.mesh.coords_of(col.group[0])[kAxisPp] == 1);
    CHECK(dp.tree.mesh.coords_of(col.group[1])[kAxisPp] == 2);
  }
}

TEST_CASE("dualpipe compiled: every micro-batch passes each model chunk once, in its direction") {
  const CompiledModel dp = test::compile_text(gpt_pp4("dualpipe"));
  // Per rank: 2 chunks x 4 micro-batches x (F, B, W) = 24 passes; compute tasks of micro-batch 0
  // (copy A, enters at stage 0) run forward on stages 0, 1, 2, 3 and those of micro-batch 4
  // (copy B) on 3, 2, 1, 0 -- found through the pipeline sends: micro-batch 0's forward sends go
  // from stage s to s + 1, micro-batch 4's from s to s - 1.
  for (const Task& t : dp.exec.tasks) {
    if (t.kind != TaskKind::Collective || t.stream != Stream::PpComm || t.phase != Phase::Forward) continue;
    const Collective& col = dp.exec.collectives[t.collective];
    const int from = dp.tree.mesh.coords_of(col.group[0])[kAxisPp];
    const int to = dp.tree.mesh.coords_of(col.group[1])[kAxisPp];
    CAPTURE(t.micro_batch);
    CHECK(to == (t.micro_batch < 4 ? from + 1 : from - 1));
  }
  const json r = simulate(gpt_pp4("dualpipe"));
  CHECK(r["summary"]["iteration_time_s"].get<double>() > 0);
}

TEST_CASE("dualpipe: errors name the field (dualpipe.py's asserts)") {
  const auto path_of = [](const std::string& cfg) {
    return test::error_path([&] { test::compile_text(cfg); });
  };
  // assert num_ranks % 2 == 0: pp 3 (x dp 2 on a node of 6 GPUs).
  CHECK(path_of(gpt_pp4("dualpipe", 16, 3)) == "strategy.pp");
  // assert num_chunks % 2 == 0: 18 / dp 2 = 9 micro-batches.
  CHECK(path_of(gpt_pp4("dualpipe", 18)) == "strategy.schedule");
  // assert num_chunks >= num_ranks * 2: 12 / 2 = 6 < 8.
  CHECK(path_of(gpt_pp4("dualpipe", 12)) == "strategy.schedule");
  // The least: 16 / 2 = 8 = 2 pp compiles.
  CHECK(path_of(gpt_pp4("dualpipe", 16)) == test::kNoError);
}

namespace {

// DualPipe's generated order as an explicit schedule: each stage's entries ("F5", "&B0.1"),
// declared as two copies of the model.
std::string explicit_dualpipe(int p, int m, const std::string& extra) {
  std::string stages;
  for (int s = 0; s < p; ++s) {
    std::string list;
    for (const Pass& pass : stage_schedule(Schedule::DualPipe, p, m, 2, s))
      list += std::string(list.empty() ? "" : ",") + "\"" + (pass.with_previous ? "&" : "") +
              to_string(pass) + "\"";
    stages += std::string(s ? "," : "") + "[" + list + "]";
  }
  return R"({"stages":[)" + stages + "]" + extra + "}";
}

std::string with_schedule(std::string cfg, const std::string& schedule) {
  const std::string named = R"("schedule":"dualpipe")";
  return cfg.replace(cfg.find(named), named.size(), "\"schedule\":" + schedule);
}

}  // namespace

TEST_CASE("dualpipe: an explicit order declares two copies of the model") {
  // pp 4, 16 samples over dp 2: 8 micro-batches, 0-3 through copy 0 (down the stages), 4-7
  // through copy 1 (back up). Written out entry by entry, "copies": 2 compiles to DualPipe's
  // own program: same placement, orders, tasks and simulated iteration.
  const std::string cfg = gpt_pp4("dualpipe");
  const std::string given = with_schedule(cfg, explicit_dualpipe(4, 8, R"(,"copies":2)"));
  const CompiledModel named = test::compile_text(cfg);
  const CompiledModel written = test::compile_text(given);
  CHECK(written.tree.copies == 2);
  CHECK(written.tree.chunk_stage == named.tree.chunk_stage);
  CHECK(written.stats.stage_orders == named.stats.stage_orders);
  CHECK(written.exec.tasks.size() == named.exec.tasks.size());
  CHECK(simulate(given)["summary"]["iteration_time_s"] == simulate(cfg)["summary"]["iteration_time_s"]);
  const auto path_of = [](const std::string& c) { return test::error_path([&] { test::compile_text(c); }); };
  // The copy of an entry is its chunk's: on stage 0, chunk 0 (no suffix) is copy 0's, so F4
  // (micro-batch 4 runs through copy 1) as its first entry is refused, naming the entry.
  std::string wrong = given;
  wrong.replace(wrong.find(R"([["F0")"), 6, R"([["F4")");
  CHECK(path_of(wrong) == "strategy.schedule.stages[0][0]");
  // Declared fields: the count, the placement a pair of copies needs, an even pp, and an even
  // number of micro-batches (half per copy).
  CHECK(path_of(with_schedule(cfg, explicit_dualpipe(4, 8, R"(,"copies":3)"))) == "strategy.schedule.copies");
  CHECK(path_of(with_schedule(cfg, explicit_dualpipe(4, 8, R"(,"copies":2,"placement":"interleaved")"))) ==
        "strategy.schedule.placement");
  CHECK(path_of(with_schedule(gpt_pp4("dualpipe", 18), explicit_dualpipe(4, 8, R"(,"copies":2)"))) ==
        "strategy.schedule.copies");
  const std::string three = R"({"stages":[["F0","B0"],["F0","B0"],["F0","B0"]],"copies":2})";
  CHECK(path_of(with_schedule(gpt_pp4("dualpipe", 12, 3), three)) == "strategy.pp");
}
