// strategy.tp_comm_overlap: Transformer Engine's userbuffers as Megatron-Core enables them with
// --tp-comm-overlap (docs/frameworks/tensor-parallelism-and-moe.md, "Tensor-parallel communication overlap";
// core/src/compile/userbuffers.h for TE's defaults).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/error.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"
#include "relative_approx.h"

using nlohmann::json;
using namespace proteus;

namespace {

// An H100-like GPU for the cost arithmetic below: 132 SMs, 989.4 bf16 TFLOP/s with a 0.8 ceiling,
// 128 x 256 tiles, no launch time.
CostModel h100_bf16() {
  CostModel m;
  m.gpu.sm_count = 132;
  m.gpu.hbm_GBps = 3350;
  m.gpu.peak_bf16_TFLOPS = 989.4;
  m.gpu.gemm_max_efficiency = 0.8;
  m.gpu.gemm_tile_m = 128;
  m.gpu.gemm_tile_n = 256;
  m.gpu.kernel_launch_us = 0;
  m.precision = Precision::Bf16;
  return m;
}

// An m x n x k GEMM's work (its FLOPs, no memory traffic).
ComputeWork gemm(int64_t m, int64_t n, int64_t k) {
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.gemm_m = m;
  w.gemm_n = n;
  w.gemm_k = k;
  w.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return w;
}

// GPT-style, 2 layers, hidden 512, ffn 2048, 8 heads, seq 256, micro-batch 1, one micro-batch;
// dp 4 x tp 2 with sequence parallelism on one DGX A100 node.
std::string small(bool overlap) {
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 4,
                           std::string(R"({"dp":4,"tp":2,"sequence_parallel":true,"tp_comm_overlap":)") +
                               (overlap ? "true" : "false") + "}");
}

// Rank 0's tasks of one op and phase, in program order.
std::vector<int> tasks_of(const ExecGraph& g, const char* label, Phase phase) {
  std::vector<int> out;
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const Task& t = g.tasks[i];
    if (t.rank == 0 && t.phase == phase && g.labels[static_cast<size_t>(t.label)] == label)
      out.push_back(static_cast<int>(i));
  }
  return out;
}

using test::collective_of_task;
using test::depends_on;

double tp_bytes(const CompiledModel& c, const char* kind) {
  double b = 0;
  for (const CollectiveStat& s : c.stats.collectives)
    if (s.kind == kind && s.axes == "tp") b += s.bytes_per_rank;
  return b;
}

}  // namespace

TEST_CASE("tp_comm_overlap: needs tensor and sequence parallelism, else an error naming it") {
  auto path = [](const std::string& strategy) {
    return test::error_path([&] {
      parse_config(test::config_json(test::gpt_model(2, 512, 8, 256, 8000),
                                     R"({"preset":"dgx-a100-80g","nodes":1})", 8, strategy));
    });
  };
  CHECK(path(R"({"dp":4,"tp":2,"tp_comm_overlap":true})") == "strategy.tp_comm_overlap");
  CHECK(path(R"({"dp":8,"sequence_parallel":true,"tp_comm_overlap":true})") == "strategy.tp_comm_overlap");
  CHECK(path(R"({"dp":4,"tp":2,"sequence_parallel":true,"tp_comm_overlap":true})") == test::kNoError);
}

TEST_CASE("tp_comm_overlap: all-gathers run as TE's ring exchange inside the GEMM that reads them") {
  const CompiledModel ub = test::compile_text(small(true));
  const ExecGraph& g = ub.exec;
  // fc1 reads the layer norm's output, sequence-sharded over tp = 2: each rank holds
  // B = 256/2 tokens x 512 x 2 bytes = 131072 bytes. TE's ring exchange (num_splits = tp):
  //   compute: |fc1 on the local half of the tokens|fc1 on the half from the neighbour|
  //   tp_comm: |send/recv B (copy engine)         |
  // so the forward of fc1 is chunk, step, chunk; the step waits for the shard only, the second
  // chunk waits for the step.
  const std::vector<int> fc1 = tasks_of(g, "layers.0.mlp.fc1", Phase::Forward);
  REQUIRE(fc1.size() == 3);
  CHECK(g.tasks[static_cast<size_t>(fc1[0])].kind == TaskKind::Compute);
  CHECK(g.tasks[static_cast<size_t>(fc1[1])].kind == TaskKind::Collective);
  CHECK(g.tasks[static_cast<size_t>(fc1[2])].kind == TaskKind::Compute);
  const Collective& step = collective_of_task(g, fc1[1]);
  CHECK(step.kind == CollectiveKind::RingExchange);
  CHECK(step.axes == axis_bit(kAxisTp));
  CHECK(step.bytes == doctest::Approx(131072));  // each rank passes its shard B on
  CHECK(step.sm_free);                           // copy engine: does not slow the GEMM
  CHECK_FALSE(depends_on(g, fc1[1], fc1[0]));
  CHECK(depends_on(g, fc1[2], fc1[1]));
  // Each chunk is half the GEMM: 256/2 token rows, 2 x 128 x 512 x 1024 FLOP (fc1 out 2048/tp)
  // plus the bias, 128 x 1024.
  const ComputeWork& chunk = g.works[static_cast<size_t>(g.tasks[static_cast<size_t>(fc1[0])].work)];
  CHECK(chunk.gemm_m == 128);
  CHECK(chunk.flops == doctest::Approx(2.0 * 128 * 512 * 1024 + 128 * 1024));
  CHECK(chunk.sm_reserved == 0);  // ring_exchange: set_sm_margin = False
  // TE issues the chunks round-robin over its 3 compute streams: both tp = 2 chunks in flight.
  CHECK(chunk.concurrent_gemms == 2);

  // fc2's output is partial over tp and reduce-scattered to the sequence shard: TE's pipelined
  // GEMM + reduce-scatter, 4 chunks, each reduce-scattering S/4 = (256 x 512 x 2) / 4 = 65536
  // bytes beside the next chunk; the GEMM runs on the SMs the 16-SM kernel leaves.
  const std::vector<int> fc2 = tasks_of(g, "layers.0.mlp.fc2", Phase::Forward);
  REQUIRE(fc2.size() == 8);
  for (int i = 0; i < 4; ++i) {
    const Task& c = g.tasks[static_cast<size_t>(fc2[2 * i])];
    REQUIRE(c.kind == TaskKind::Compute);
    CHECK(g.works[static_cast<size_t>(c.work)].sm_reserved == 16);
    CHECK(g.works[static_cast<size_t>(c.work)].concurrent_gemms == 3);  // 4 chunks, 3 streams
    const Collective& rs = collective_of_task(g, fc2[2 * i + 1]);
    CHECK(rs.kind == CollectiveKind::ReduceScatter);
    CHECK(rs.bytes == doctest::Approx(65536));
    CHECK(rs.sm_free);
    CHECK(depends_on(g, fc2[2 * i + 1], fc2[2 * i]));
  }

  // Backward: fc2's data gradient reads the output gradient gathered over tp: the same ring
  // (proj_dgrad / fc2_dgrad), one step of B = 131072 bytes.
  const std::vector<int> fc2_back = tasks_of(g, "layers.0.mlp.fc2", Phase::BackwardInput);
  REQUIRE(fc2_back.size() == 3);
  CHECK(collective_of_task(g, fc2_back[1]).kind == CollectiveKind::RingExchange);
  CHECK(collective_of_task(g, fc2_back[1]).bytes == doctest::Approx(131072));
  // Bulk overlaps: fc1's data-gradient GEMM runs beside the all-gather of its saved input
  // (issued for the weight gradient that reads it, waiting for nothing), its weight-gradient
  // GEMM beside the reduce-scatter of its input gradient; both GEMMs lose 16 SMs.
  const std::vector<int> fc1_dgrad = tasks_of(g, "layers.0.mlp.fc1", Phase::BackwardInput);
  const std::vector<int> fc1_wgrad = tasks_of(g, "layers.0.mlp.fc1", Phase::BackwardWeight);
  REQUIRE(fc1_dgrad.size() == 1);
  CHECK(g.works[static_cast<size_t>(g.tasks[static_cast<size_t>(fc1_dgrad[0])].work)].sm_reserved == 16);
  REQUIRE(fc1_wgrad.size() == 2);
  CHECK(collective_of_task(g, fc1_wgrad[0]).kind == CollectiveKind::AllGather);
  CHECK(collective_of_task(g, fc1_wgrad[0]).sm_free);
  CHECK(collective_of_task(g, fc1_wgrad[0]).bytes / 2 == doctest::Approx(131072));
  CHECK(g.works[static_cast<size_t>(g.tasks[static_cast<size_t>(fc1_wgrad[1])].work)].sm_reserved == 16);
  // Per layer and micro-batch, userbuffers collectives over tp (1 micro-batch, 2 layers):
  //   ring exchanges: one step each for the qkv and fc1 forward and the proj and fc2 data
  //   gradients = 4; all-gathers: the bulk re-gathers of the qkv and fc1 inputs = 2;
  //   reduce-scatters: 4 chunks each for proj and fc2 forward, bulk for the qkv and fc1 input
  //   gradients = 10.
  int ub_steps = 0, ub_gathers = 0, ub_scatters = 0;
  for (const CollectiveStat& s : ub.stats.collectives) {
    if (s.purpose != "tp_overlap") continue;
    if (s.kind == "ring_exchange") ub_steps += static_cast<int>(s.count);
    if (s.kind == "all_gather") ub_gathers += static_cast<int>(s.count);
    if (s.kind == "reduce_scatter") ub_scatters += static_cast<int>(s.count);
  }
  CHECK(ub_steps == 2 * 4);
  CHECK(ub_gathers == 2 * 2);
  CHECK(ub_scatters == 2 * 10);

  // The overlap splits the traffic, it does not change it: the same tp bytes either way. An
  // all-gather's S is the gathered whole, of which (tp-1)/tp crosses; a ring step's S is the
  // shard passed on: at tp 2, each step stands for an all-gather of twice its S.
  const CompiledModel plain = test::compile_text(small(false));
  CHECK(tp_bytes(ub, "all_gather") + 2 * tp_bytes(ub, "ring_exchange") ==
        doctest::Approx(tp_bytes(plain, "all_gather")));
  CHECK(tp_bytes(ub, "reduce_scatter") == doctest::Approx(tp_bytes(plain, "reduce_scatter")));
}

// Megatron's full recompute calls the layer's forward again, TE's userbuffers included: the
// replayed fc1 gathers its input by the same ring exchange (chunk, step, chunk), rather than
// by a plain all-gather or by taking the forward's gathered copy, which the forward freed.
TEST_CASE("tp_comm_overlap: a full-recompute replay runs the forward's ring exchange again") {
  std::string cfg = small(true);
  cfg.replace(cfg.find("\"tp_comm_overlap\""), 0, "\"recompute\":\"full\",");
  const CompiledModel c = test::compile_text(cfg);
  const ExecGraph& g = c.exec;
  const std::vector<int> fwd = tasks_of(g, "layers.0.mlp.fc1", Phase::Forward);
  const std::vector<int> replay = tasks_of(g, "layers.0.mlp.fc1", Phase::Recompute);
  REQUIRE(fwd.size() == 3);
  REQUIRE(replay.size() == 3);
  CHECK(g.tasks[static_cast<size_t>(replay[1])].kind == TaskKind::Collective);
  CHECK(collective_of_task(g, replay[1]).sm_free);
  CHECK(collective_of_task(g, replay[1]).bytes == doctest::Approx(collective_of_task(g, fwd[1]).bytes));
  CHECK(depends_on(g, replay[2], replay[1]));
  // fc2's pipelined GEMM + reduce-scatter, replayed as in the forward.
  CHECK(tasks_of(g, "layers.0.mlp.fc2", Phase::Recompute).size() == 8);
}

TEST_CASE("tp_comm_overlap: the ring step runs beside the first chunk, the second chunk after both") {
  // The ring's timing on the small case: the step starts with chunk 0 (both wait only for the
  // layer norm's output) and chunk 1 starts when both have ended, so fc1's forward takes
  // chunk + max(chunk, step) instead of all-gather + GEMM.
  const Config config = parse_config(small(true));
  const CompiledModel ub = compile(config);
  const Trace tr =
      execute(ub.exec, cost_model_of(config), build_topology(config.cluster), exec_options_of(config, false));
  const std::vector<int> fc1 = tasks_of(ub.exec, "layers.0.mlp.fc1", Phase::Forward);
  REQUIRE(fc1.size() == 3);
  auto start = [&](int t) { return tr.task_start_s[static_cast<size_t>(t)]; };
  auto end = [&](int t) { return tr.task_end_s[static_cast<size_t>(t)]; };
  CHECK(start(fc1[1]) == doctest::Approx(start(fc1[0])));
  CHECK(start(fc1[2]) == doctest::Approx(std::max(end(fc1[0]), end(fc1[1]))));
  // The copy-engine step does not slow the chunk beside it (dgx-a100 compute_slowdown_with_comm
  // 1.189 applies to NCCL collectives only): both chunks take the same time.
  CHECK(end(fc1[2]) - start(fc1[2]) == doctest::Approx(end(fc1[0]) - start(fc1[0])));
}

TEST_CASE("tp_comm_overlap: chunks in flight on TE's compute streams share the GPU's waves") {
  // GPT-3 175B's QKV at tp 4, one 2048-token micro-batch, split into tp ring-exchange chunks of
  // 512 rows: 512 x 3072 x 12288 (q's share), 128 x 256 tiles on 132 SMs. Alone a chunk is
  // 4 x 12 = 48 tiles, one wave at 48/132 of the SMs; three in flight (TE's
  // NVTE_COMM_OVERLAP_MAX_STREAMS) are 144 tiles in two waves, 144/264. Everything else in the
  // efficiency (ceiling, K and thin-shape factors) is the same, so the chunk's time shrinks by
  // (48/132) / (144/264) = 2/3.
  const CostModel m = h100_bf16();
  ComputeWork chunk = gemm(512, 3072, 12288);
  ComputeWork in_flight = chunk;
  in_flight.concurrent_gemms = 3;
  CHECK(m.compute_time_s(in_flight) ==
        proteus::test::approx(m.compute_time_s(chunk) * (48.0 / 132) / (144.0 / 264)).epsilon(1e-12));
  // A chunk grid that fills whole waves gains nothing: 1024 x 8448 is 8 x 33 = 264 tiles, two
  // full waves alone and six with three in flight.
  chunk = gemm(1024, 8448, 12288);
  in_flight = chunk;
  in_flight.concurrent_gemms = 3;
  CHECK(m.compute_time_s(in_flight) == proteus::test::approx(m.compute_time_s(chunk)).epsilon(1e-12));
}

TEST_CASE("tp_comm_overlap: a GEMM beside a userbuffers kernel runs on the SMs it leaves") {
  // H100: 132 SMs; TE's pipeline/bulk kernels hold num_sm = 16, so the GEMM gets 116 of them and
  // 116/132 of the throughput: 1e12 FLOP at 989.4 TFLOPS x 0.8 = 1263.4 us becomes
  // 1263.4 x 132/116 = 1437.7 us.
  const CostModel m = h100_bf16();
  ComputeWork unshaped;
  unshaped.op_kind = OpKind::Matmul;
  unshaped.flops = 1e12;
  ComputeWork beside = unshaped;
  beside.sm_reserved = 16;
  CHECK(m.compute_time_s(unshaped) == proteus::test::approx(1e12 / (989.4e12 * 0.8)).epsilon(1e-12));
  CHECK(m.compute_time_s(beside) ==
        proteus::test::approx(1e12 / (989.4e12 * 0.8) * 132 / 116).epsilon(1e-12));

  // TE hands cuBLAS the SMs it leaves (_math_sms), and the waves are planned over them: a grid of
  // exactly 116 tiles of 128 x 256 (512 x 7424) is one full wave there, where on the whole GPU it
  // leaves 16 of 132 SMs idle. Both run at 116/132 of the GPU: the same time.
  const ComputeWork grid = gemm(512, 7424, 8192);
  ComputeWork grid_beside = grid;
  grid_beside.sm_reserved = 16;
  CHECK(m.compute_time_s(grid_beside) == proteus::test::approx(m.compute_time_s(grid)).epsilon(1e-12));
}

TEST_CASE(
    "tp_comm_overlap: hides most of the exposed tensor-parallel communication of the default scenario") {
  // Llama 3 8B, tp 4 x pp 2 x dp 4 on 4 DGX H100, sequence parallel: without the overlap every
  // sequence-parallel all-gather and reduce-scatter in the forward and every output-gradient
  // gather in the backward waits on the compute stream; with it only the last reduce-scatter
  // chunk and a ring step longer than a chunk are exposed, while the pipelined and bulk GEMMs
  // lose 16/132 of their SMs. The iteration is faster and its exposed communication smaller.
  auto run = [](bool overlap) {
    json c = json::parse(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "nodes": 4},
      "training": {"global_batch": 32, "seq_len": 8192}, "strategy": {"dp": 4, "tp": 4, "pp": 2,
      "sequence_parallel": true, "zero": 1, "recompute": "selective"}})");
    c["strategy"]["tp_comm_overlap"] = overlap;
    return json::parse(simulate_json(c.dump(), SimulateOptions{}))["summary"];
  };
  const json plain = run(false), ub = run(true);
  CHECK(ub["iteration_time_s"].get<double>() < plain["iteration_time_s"].get<double>());
  CHECK(ub["exposed_comm_fraction"].get<double>() < 0.6 * plain["exposed_comm_fraction"].get<double>());
}
