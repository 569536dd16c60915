// Fidelity pieces of the cost model (docs/fidelity.md): the measured-time table from the
// config, NCCL's per-call latency. Expected values
// are derived by hand in the comments.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "proteus/api.h"
#include "proteus/collective_flows.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/error.h"
#include "proteus/topology.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

using proteus::test::approx;

}  // namespace

TEST_CASE("measured table: a config's gpu.measured_us replaces the roofline for matching ops") {
  // A hand-written table of two entries, as scripts/measure_ops.py writes it.
  const std::string cfg = R"({
    "model": "gpt2-small", "training": {"global_batch": 8, "seq_len": 1024},
    "cluster": {"preset": "dgx-a100-80g",
                "gpu": {"measured_us": {"matmul:M=1024,N=2304,K=768,B=1:bf16": 123.5,
                                        "attention:M=1024,N=1024,K=64,B=12:bf16": 77}}},
    "strategy": {"dp": 8, "micro_batch": 1}})";
  const Config config = parse_config(cfg);
  REQUIRE(config.cluster.gpu.measured_us.size() == 2);
  CostModel c;
  c.gpu = config.cluster.gpu;
  c.precision = Precision::Bf16;
  ComputeWork qkv;
  qkv.op_kind = OpKind::Matmul;
  qkv.gemm_m = 1024;
  qkv.gemm_n = 2304;
  qkv.gemm_k = 768;
  qkv.flops = 2.0 * 1024 * 2304 * 768;
  qkv.bytes = 1e6;
  REQUIRE(op_signature(qkv, Precision::Bf16) == "matmul:M=1024,N=2304,K=768,B=1:bf16");
  CHECK(c.compute_time_s(qkv) == approx(123.5e-6));
  // Another precision has another signature: the roofline answers.
  c.precision = Precision::Fp16;
  CHECK(c.compute_time_s(qkv) != approx(123.5e-6));
  // The table survives show (config_to_json) and re-parsing.
  const auto shown = nlohmann::json::parse(show_json(cfg));
  CHECK(shown["cluster"]["gpu"]["measured_us"]["attention:M=1024,N=1024,K=64,B=12:bf16"] == 77);
  CHECK(parse_config(shown.dump()).cluster.gpu.measured_us == config.cluster.gpu.measured_us);
  // A time must be a positive number of microseconds.
  const std::string bad = R"({"model": "gpt2-small", "training": {"global_batch": 8},
    "cluster": {"preset": "dgx-a100-80g", "gpu": {"measured_us": {"matmul:M=1,N=1,K=1,B=1:bf16": -3}}},
    "strategy": {"dp": 8}})";
  try {
    parse_config(bad);
    FAIL("a negative measured time must be rejected");
  } catch (const Error& e) {
    CHECK(e.path == "cluster.gpu.measured_us.matmul:M=1,N=1,K=1,B=1:bf16");
  }
}

TEST_CASE("collectives: NCCL's per-call base latency comes on top of the hops") {
  const Config config = parse_config(R"({"model": "gpt2-small", "training": {"global_batch": 16},
    "cluster": {"preset": "dgx-a100-80g", "nodes": 2}, "strategy": {"dp": 16}})");
  // The preset carries NCCL's ring/Simple baseLat.
  CHECK(config.cluster.collectives.base_latency_us == 8.4);
  ClusterSpec without = config.cluster;
  without.collectives.base_latency_us = 0;
  const Topology with_t = build_topology(config.cluster), without_t = build_topology(without);
  // Ring all-reduce inside a node over 8 GPUs: 14 hops of the preset's NVLink alpha
  // (intra_node.latency_us, 5.65 us on DGX A100), + 8.4 us per call.
  const double hop_s = config.cluster.intra_node.latency_us * 1e-6;
  std::vector<int> node0 = {0, 1, 2, 3, 4, 5, 6, 7};
  const double a = plan_collective(with_t, CollectiveKind::AllReduce, node0, 64e6).latency_s;
  const double b = plan_collective(without_t, CollectiveKind::AllReduce, node0, 64e6).latency_s;
  CHECK(b == approx(14 * hop_s));
  CHECK(a == approx(14 * hop_s + 8.4e-6));
  // Send-recv across nodes: one network hop (9.6 us) + 8.4 us; a send to oneself costs nothing.
  CHECK(plan_collective(with_t, CollectiveKind::SendRecv, {3, 11}, 1e6).latency_s == approx(18e-6));
  CHECK(plan_collective(with_t, CollectiveKind::SendRecv, {3, 3}, 1e6).latency_s == 0);
  CHECK(plan_collective(with_t, CollectiveKind::AllReduce, {5}, 1e6).latency_s == 0);
}
