// Whole-pipeline physics (config -> compile -> HTAE -> result): properties any correct
// simulator of synchronous training must have, derived by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proteus/api.h"
#include "relative_approx.h"

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

json simulate(const std::string& cfg, bool timeline = false) {
  proteus::SimulateOptions o;
  o.timeline = timeline;
  json r = json::parse(proteus::simulate_json(cfg, o));
  REQUIRE_MESSAGE(r["ok"] == true, r.dump());
  return r;
}

using proteus::test::approx;  // a bubble fraction near 0.1 needs a tolerance relative to it

// Per rank of a simulated iteration: compute seconds of F, B, W passes and the first pass's start.
struct RankPasses {
  double busy_s = 0, first_start_s = 1e300, forward_s = 0;
};

struct Pipeline {
  std::vector<RankPasses> ranks;
  double span_s = 0;  // iteration time without the optimizer step
  double bubble0() const { return 1.0 - ranks.front().busy_s / span_s; }
};

Pipeline play(int p, int m, const std::string& schedule, int v, const std::string& extra = "") {
  // Two layers per chunk; the first chunk also holds the negligible input op.
  std::string stage_layers = "3";
  for (int c = 1; c < p * v; ++c) stage_layers += ",2";
  const std::string cfg = R"({"model":)" + uniform_chain(p * v * 2, 16384) + R"(,"cluster":)" +
                          free_network_cluster(1, p) + R"(,"training":{"global_batch":)" +
                          std::to_string(m * 256) +
                          R"(,"precision":"bf16","optimizer":"sgd"},"strategy":{"pp":)" + std::to_string(p) +
                          R"(,"micro_batch":256,"schedule":")" + schedule + R"(","virtual_stages":)" +
                          std::to_string(v) + R"(,"stage_layers":[)" + stage_layers + "]" + extra + "}}";
  const json r = simulate(cfg, true);
  Pipeline out;
  out.ranks.resize(static_cast<size_t>(p));
  double optimizer_s = 0;  // every stage steps the same two layers' weights
  for (const json& e : r["timeline"]) {
    if (e["stream"] != "compute") continue;
    RankPasses& rank = out.ranks[e["rank"].get<size_t>()];
    const std::string kind = e["kind"];
    const double start = e["start_s"].get<double>(), d = e["end_s"].get<double>() - start;
    if (kind == "optimizer") {
      optimizer_s = d;
      continue;
    }
    rank.busy_s += d;
    rank.first_start_s = std::min(rank.first_start_s, start);
    if (kind == "forward") rank.forward_s += d;
  }
  // The optimizer step at the end is compute: remove it from the span.
  out.span_s = r["summary"]["iteration_time_s"].get<double>() - optimizer_s;
  return out;
}

double pipeline_bubble(int p, int m, const std::string& schedule, int v) {
  return play(p, m, schedule, v).bubble0();
}

}  // namespace

TEST_CASE("a uniform pipeline with free communication has the textbook bubble") {
  // 1F1B and GPipe: (p-1)/(m+p-1). p=4, m=8: 3/11.
  CHECK(pipeline_bubble(4, 8, "1f1b", 1) == approx(3.0 / 11).epsilon(0.01));
  CHECK(pipeline_bubble(4, 8, "gpipe", 1) == approx(3.0 / 11).epsilon(0.01));
  // p=2, m=6: 1/7. The loss (~0.3% of the last stage's passes) delays stage 0 at each of its m
  // steady-state waits for the last stage's backward: +1.4% of the bubble here.
  CHECK(pipeline_bubble(2, 6, "1f1b", 1) == approx(1.0 / 7).epsilon(0.02));
  // Interleaved with v chunks: (p-1)/(v m + p-1). p=4, m=8, v=2: 3/19.
  CHECK(pipeline_bubble(4, 8, "interleaved-1f1b", 2) == approx(3.0 / 19).epsilon(0.01));
}

TEST_CASE("the handcrafted zero-bubble schedules keep the last stage busy from its first pass") {
  // Qi et al.'s ZB-H1 and ZB-H2 as drawn in the paper (zb_plan "unit"), on a chain of matmuls:
  // the last stage starts once every other stage has run micro-batch 0's forward and never
  // idles after, so the iteration is (p - 1) T_F plus the last stage's work, and stage 0, busy
  // as long as the last stage, idles (p - 1) T_F of it. With T_F = T_B = T_W that is
  // 3 / (3m + 3) = 1/9 at p=4, m=8; here a weight gradient also adds into the fp32 main_grad
  // in its epilogue (8 bytes per output element), so T_W is about 1.27 T_F and the bubble
  // smaller.
  for (const char* schedule : {"zb-h1", "zb-h2"}) {
    CAPTURE(schedule);
    const Pipeline pl = play(4, 8, schedule, 1, R"(,"zb_plan":"unit")");
    const RankPasses& last = pl.ranks.back();
    double ramp_s = 0;  // micro-batch 0's forward on every stage before the last
    for (size_t s = 0; s + 1 < pl.ranks.size(); ++s) ramp_s += pl.ranks[s].forward_s / 8;
    CHECK(last.first_start_s == approx(ramp_s).epsilon(1e-6));
    CHECK(pl.span_s == approx(ramp_s + last.busy_s).epsilon(1e-6));
    CHECK(pl.bubble0() == approx(1.0 - pl.ranks.front().busy_s / (ramp_s + last.busy_s)).epsilon(1e-6));
    // And the bubble is below 1F1B's (p-1)/(m+p-1) = 3/11 by the paper's margin or more.
    CHECK(pl.bubble0() < 1.0 / 9 + 1e-9);
  }
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
