// Whole-pipeline physics (config -> compile -> HTAE -> result): properties any correct
// simulator of synchronous training must have, derived by hand.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "proteus/api.h"

namespace {

using nlohmann::json;

// A cluster where communication is (nearly) free: huge links, no latency, no interference.
std::string free_network_cluster(int nodes, int gpus_per_node) {
  return R"({"name":"ideal","nodes":)" + std::to_string(nodes) + R"(,"gpus_per_node":)" +
         std::to_string(gpus_per_node) +
         R"(,"gpu":{"name":"ideal","memory_GiB":80,"hbm_GBps":2000,"sm_count":108,
            "peak_TFLOPS":{"fp32":19.5,"tf32":156,"fp16":312,"bf16":312},"kernel_launch_us":0,
            "compute_slowdown_with_comm":1,"comm_slowdown_with_compute":1},
          "intra_node":{"kind":"nvswitch","link_GBps":1e7,"latency_us":0,"pcie_GBps":1e7,"pcie_latency_us":0},
          "inter_node":{"nics_per_node":8,"nic_GBps":1e7,"latency_us":0}})";
}

// A chain of identical linear layers: every pipeline stage does the same work. A negligible
// first op reads the model input, so that fc0 computes an input gradient like every other
// layer (the first op of a model has none); the loss on the last stage is ~0.1% of a stage.
std::string uniform_chain(int layers, int width) {
  std::string ops = R"({"name":"input","type":"custom","flops_per_sample":1,"bytes_per_sample":1})";
  for (int i = 0; i < layers; ++i) {
    ops += R"(,{"name":"fc)" + std::to_string(i) + R"(","type":"linear","in_features":)" +
           std::to_string(width) + R"(,"out_features":)" + std::to_string(width) + "}";
  }
  return R"({"kind":"graph","name":"chain","input_elements":)" + std::to_string(width) + R"(,"ops":[)" + ops +
         "]}";
}

json simulate(const std::string& cfg) {
  json r = json::parse(proteus::simulate_json(cfg, {}));
  REQUIRE_MESSAGE(r["ok"] == true, r.dump());
  return r;
}

double pipeline_bubble(int p, int m, const std::string& schedule, int v) {
  // Two layers per chunk; the first chunk also holds the negligible input op.
  std::string stage_layers = "3";
  for (int c = 1; c < p * v; ++c) stage_layers += ",2";
  const std::string cfg = R"({"model":)" + uniform_chain(p * v * 2, 16384) + R"(,"cluster":)" +
                          free_network_cluster(1, p) + R"(,"training":{"global_batch":)" +
                          std::to_string(m * 256) +
                          R"(,"precision":"bf16","optimizer":"sgd"},"strategy":{"pp":)" + std::to_string(p) +
                          R"(,"micro_batch":256,"schedule":")" + schedule + R"(","virtual_stages":)" +
                          std::to_string(v) + R"(,"stage_layers":[)" + stage_layers + "]}}";
  const json r = simulate(cfg);
  // The bubble of the pipeline itself: stage 0 idles between its passes; the optimizer step at
  // the end is compute, so remove it from both the busy time and the span (every stage holds
  // the same layers, so the busiest rank's optimizer time is stage 0's too).
  const json& d0 = r["devices"][0];
  const double opt = r["breakdown"]["compute_by_phase_s"]["optimizer"].get<double>();
  const double busy = d0["busy_s"]["compute"].get<double>() - opt;
  const double span = r["summary"]["iteration_time_s"].get<double>() - opt;
  return 1.0 - busy / span;
}

}  // namespace

TEST_CASE("a uniform pipeline with free communication has the textbook bubble") {
  // 1F1B and GPipe: (p-1)/(m+p-1). p=4, m=8: 3/11.
  CHECK(pipeline_bubble(4, 8, "1f1b", 1) == doctest::Approx(3.0 / 11).epsilon(0.01));
  CHECK(pipeline_bubble(4, 8, "gpipe", 1) == doctest::Approx(3.0 / 11).epsilon(0.01));
  CHECK(pipeline_bubble(2, 6, "1f1b", 1) == doctest::Approx(1.0 / 7).epsilon(0.01));
  // Interleaved with v chunks: (p-1)/(v m + p-1). p=4, m=8, v=2: 3/19.
  CHECK(pipeline_bubble(4, 8, "interleaved-1f1b", 2) == doctest::Approx(3.0 / 19).epsilon(0.01));
  // The zero-bubble schedules (Qi et al. 2024), here with a chain of matmuls whose input
  // gradient (B) and weight gradient (W) cost what the forward costs (T_F = T_B = T_W): ZB-H1
  // idles (p-1)(T_F+T_B-T_W) = 3 units of 3m + 3 = 27: 1/9; ZB-H2 and ZB-V keep every stage
  // busy from its first pass to its last, and stage 0 finishes p-1 units before the last
  // stage, so the iteration idles (p-1) T_F of 3m + 3 on stage 0: 1/9 as well.
  CHECK(pipeline_bubble(4, 8, "zb-h1", 1) == doctest::Approx(1.0 / 9).epsilon(0.05));
  CHECK(pipeline_bubble(4, 8, "zb-h2", 1) == doctest::Approx(1.0 / 9).epsilon(0.05));
}

namespace {

json gpt_on(const std::string& cluster_patch, const std::string& strategy) {
  return simulate(R"({"model":{"preset":"gpt3-1.3b","layers":8},"cluster":)" + cluster_patch +
                  R"(,"training":{"global_batch":64,"seq_len":2048,"precision":"bf16"},"strategy":)" +
                  strategy + "}");
}

double iteration_s(const json& r) { return r["summary"]["iteration_time_s"].get<double>(); }

}  // namespace

TEST_CASE("more bandwidth or more FLOPS never makes an iteration slower") {
  const std::string strategy = R"({"dp":8,"tp":2,"pp":2,"micro_batch":2})";
  const double base = iteration_s(gpt_on(R"({"preset":"dgx-a100-80g","nodes":4})", strategy));
  const double faster_nic =
      iteration_s(gpt_on(R"({"preset":"dgx-a100-80g","nodes":4,"inter_node":{"nic_GBps":50}})", strategy));
  const double faster_nvlink =
      iteration_s(gpt_on(R"({"preset":"dgx-a100-80g","nodes":4,"intra_node":{"link_GBps":600}})", strategy));
  const double faster_gpu = iteration_s(gpt_on(
      R"({"preset":"dgx-a100-80g","nodes":4,"gpu":{"peak_TFLOPS":{"bf16":624,"fp16":624}}})", strategy));
  const double slower_nic =
      iteration_s(gpt_on(R"({"preset":"dgx-a100-80g","nodes":4,"inter_node":{"nic_GBps":5}})", strategy));
  CHECK(faster_nic <= base);
  CHECK(faster_nvlink <= base);
  CHECK(faster_gpu < base);
  CHECK(slower_nic > base);
}

TEST_CASE("overlapped gradient all-reduce hides behind backward when bandwidth allows, not otherwise") {
  // Pure data parallelism across 4 nodes: the gradient buckets reduce during the backward.
  const std::string fast = R"({"preset":"dgx-a100-80g","nodes":4})";
  const std::string slow = R"({"preset":"dgx-a100-80g","nodes":4,"inter_node":{"nic_GBps":0.5}})";
  auto run = [&](const std::string& cluster, bool overlap) {
    return gpt_on(cluster, std::string(R"({"dp":32,"micro_batch":2,"overlap_grad_reduce":)") +
                               (overlap ? "true" : "false") + "}");
  };
  const json fast_overlap = run(fast, true), fast_serial = run(fast, false);
  const json slow_overlap = run(slow, true);
  // Fast network: almost all of the reduction hides; overlapping beats reducing afterwards.
  CHECK(fast_overlap["summary"]["exposed_comm_fraction"].get<double>() < 0.10);
  CHECK(iteration_s(fast_overlap) < iteration_s(fast_serial));
  // A 100x slower network: the reduction outlasts the backward and is exposed.
  CHECK(slow_overlap["summary"]["exposed_comm_fraction"].get<double>() > 0.5);
}
