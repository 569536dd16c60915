// Collectives inside one DGX A100 (8 x A100 SXM4 on NVSwitch, NVLink 3: 300 GB/s per GPU per
// direction) against published nccl-tests results (tests/calibration/a100_nccl_tests.json: an
// all-reduce sweep from 1 MiB to 8 GiB on OCI BM.GPU4.8, NCCL 2.17.1 all-reduce / all-gather /
// all-to-all at 1 GiB on Azure NDm A100 v4, a sendrecv_perf ring from 128 MiB to 1 GiB). The
// dgx-a100 presets' intra_node.latency_us and collective_efficiency are the least-squares fit of
// the flow model to those points (scripts/collective_sweep.py fit_flow_model; docs/fidelity/communication.md,
// "Collectives inside one DGX A100").
//
// Bus bandwidth (nccl-tests' definition): algbw S / t times 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather and all-to-all, 1 for send-recv. Tolerances: a latency plus one bandwidth per
// collective follows the measured curve only on average (the model's all-reduce bus bandwidth is
// 20% under the sweep's at 1 MiB and 8-22% over it from 2 to 32 MiB, where NCCL changes protocol
// and channel count with size), so the all-reduce's median |error| is held to 10% (it is 4.0%),
// every bandwidth-bound point (>= 64 MiB) of the ring collectives to 6% (at most 5.7%, at
// 128 MiB, a point below both its neighbours), and the send-recv ring's median to 12% (7.4%; its
// 128 MiB point, 111 GB/s against 189-195 from 256 MiB, is 60% below the model and cannot be
// followed by one efficiency).
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "calibration_data.h"
#include "lone_collective.h"
#include "proteus/collective_flows.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"
#include "relative_approx.h"

using nlohmann::json;
using namespace proteus;

namespace {

const double kMiB = 1024.0 * 1024;
const double kGiB = 1024.0 * kMiB;

ClusterSpec dgx_a100(const std::string& preset = "dgx-a100-80g") {
  return parse_config(R"({"model": "llama3-8b", "cluster": {"preset": ")" + preset +
                      R"(", "nodes": 1}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})")
      .cluster;
}

// nccl-tests' busbw factor of a collective over n GPUs.
double busbw_factor(const std::string& collective, double n) {
  if (collective == "all_reduce") return 2 * (n - 1) / n;
  if (collective == "send_recv") return 1;
  return (n - 1) / n;
}

CollectiveKind kind_of(const std::string& collective) {
  if (collective == "all_reduce") return CollectiveKind::AllReduce;
  if (collective == "all_gather") return CollectiveKind::AllGather;
  if (collective == "all_to_all") return CollectiveKind::AllToAll;
  return CollectiveKind::SendRecv;
}

// sendrecv_perf on 8 GPUs: GPU i sends S to GPU (i + 1) mod 8 while receiving from (i - 1) mod 8,
// all at once.
double ring_send_recv_s(const ClusterSpec& cluster, double bytes) {
  std::vector<test::Launch> ring;
  for (int i = 0; i < 8; ++i) ring.push_back({CollectiveKind::SendRecv, {i, (i + 1) % 8}});
  return test::concurrent_collectives_s(cluster, ring, bytes);
}

double simulated_s(const ClusterSpec& cluster, const std::string& collective, double bytes) {
  if (collective == "send_recv") return ring_send_recv_s(cluster, bytes);
  return test::lone_collective_s(cluster, kind_of(collective), bytes);
}

}  // namespace

TEST_CASE("a100 collectives: the published busbw matches the published times (transcription check)") {
  // nccl-tests prints busbw = S / t x factor; where a source printed both, they agree to its
  // rounding. Where only busbw was published the time was derived from it, so they agree exactly.
  const json data = test::calibration_json("a100_nccl_tests.json");
  for (const json& set : data.at("sets")) {
    const std::string collective = set.at("collective");
    const double n = collective == "send_recv" ? 8 : set.at("world").get<double>();
    for (const json& b : set.at("busbw_GBps")) {
      const double bytes = b[0], busbw = b[1];
      double t_us = 0;
      for (const json& p : set.at("points"))
        if (p[0].get<double>() == bytes) t_us = p[1];
      REQUIRE(t_us > 0);
      INFO(collective << " at " << bytes << " B");
      CHECK(bytes / (t_us * 1e3) * busbw_factor(collective, n) == proteus::test::approx(busbw).epsilon(0.01));
    }
  }
}

TEST_CASE("a100 collectives: 1 GiB all-reduce on 8 A100s is the fitted flow model's time") {
  // dgx-a100-80g: base 8.4 us, per-hop alpha 5.65 us, all-reduce over 8 GPUs at 0.753 of 300 GB/s.
  // Ring: 2(n-1) = 14 hops and 2(n-1)/n = 1.75 S through every GPU's NVLink:
  //   8.4 + 14 x 5.65 + 1.75 x 2^30 / (300e3 x 0.753) us = 8.4 + 79.1 + 8318.5 = 8406.0 us,
  // busbw 1.75 x 2^30 / 8406.0 us = 223.5 GB/s. Published: 230.08 GB/s (OCI BM.GPU4.8, 8166.8 us)
  // and 231.45 GB/s (Azure NDm A100 v4, NCCL 2.17.1): the model is 3% slow there, and 3-4% slow
  // from 1 to 10 GiB, because the least squares of relative error also weigh the mid sizes,
  // where it is fast.
  const double t = simulated_s(dgx_a100(), "all_reduce", kGiB);
  CHECK(t * 1e6 == proteus::test::approx(8.4 + 14 * 5.65 + 1.75 * kGiB / (300e3 * 0.753)).epsilon(1e-9));
  CHECK(1.75 * kGiB / t / 1e9 == proteus::test::approx(223.5).epsilon(0.001));
  CHECK(std::fabs(t / 8166.8e-6 - 1) < 0.04);
}

TEST_CASE("a100 collectives: dgx-a100-80g reproduces the published nccl-tests points >= 1 MiB") {
  const ClusterSpec cluster = dgx_a100();
  std::vector<double> all_reduce_errors, send_recv_errors;
  int points = 0;
  const json data = test::calibration_json("a100_nccl_tests.json");
  for (const json& set : data.at("sets")) {
    const std::string collective = set.at("collective");
    const double n = collective == "send_recv" ? 8 : set.at("world").get<double>();
    for (const json& p : set.at("points")) {
      const double bytes = p[0], measured_s = p[1].get<double>() * 1e-6;
      if (bytes < kMiB) continue;
      ++points;
      const double modelled_s = simulated_s(cluster, collective, bytes);
      const double modelled_busbw = bytes / modelled_s * busbw_factor(collective, n) / 1e9;
      const double published_busbw = bytes / measured_s * busbw_factor(collective, n) / 1e9;
      const double error = modelled_busbw / published_busbw - 1;
      INFO(collective << " at " << bytes << " B: modelled " << modelled_busbw << " GB/s, published "
                      << published_busbw << " GB/s");
      if (collective == "send_recv") {
        send_recv_errors.push_back(std::fabs(error));
        continue;
      }
      if (collective == "all_reduce") all_reduce_errors.push_back(std::fabs(error));
      if (bytes >= 64 * kMiB) CHECK(std::fabs(error) <= 0.06);
    }
  }
  CHECK(points == 22);
  CHECK(all_reduce_errors.size() == 16);
  CHECK(test::median(all_reduce_errors) <= 0.10);
  CHECK(send_recv_errors.size() == 4);
  CHECK(test::median(send_recv_errors) <= 0.12);
}

TEST_CASE("a100 collectives: what the data do not cover keeps bus_efficiency") {
  // No published A100 measurement of reduce-scatter, nor of groups of 2 or 4 GPUs, was found:
  // their table entries are bus_efficiency itself (0.8), so their plans are the plans without
  // the table, bit for bit. A 4-GPU all-reduce, a 2-GPU all-gather and an 8-GPU reduce-scatter:
  ClusterSpec with = dgx_a100();
  ClusterSpec without = with;
  without.intra_node.collective_efficiency = NodeCollectiveEfficiency{};
  const Topology a = build_topology(with), b = build_topology(without);
  const double S = 256 * kMiB;
  const std::vector<std::pair<CollectiveKind, std::vector<int>>> cases = {
      {CollectiveKind::AllReduce, {0, 1, 2, 3}},
      {CollectiveKind::AllGather, {4, 5}},
      {CollectiveKind::ReduceScatter, {0, 1, 2, 3, 4, 5, 6, 7}}};
  for (const auto& [kind, group] : cases) {
    const CollectivePlan p = plan_collective(a, kind, group, S), q = plan_collective(b, kind, group, S);
    REQUIRE(p.flows.size() == q.flows.size());
    for (size_t i = 0; i < p.flows.size(); ++i) CHECK(p.flows[i].bytes == q.flows[i].bytes);
  }
  // The measured 8-GPU all-gather (0.856) does stretch: each flow carries 0.8 / 0.856 of it.
  const CollectivePlan ag = plan_collective(a, CollectiveKind::AllGather, {0, 1, 2, 3, 4, 5, 6, 7}, S);
  const CollectivePlan plain = plan_collective(b, CollectiveKind::AllGather, {0, 1, 2, 3, 4, 5, 6, 7}, S);
  REQUIRE(ag.flows.size() == plain.flows.size());
  CHECK(ag.flows[0].bytes == proteus::test::approx(plain.flows[0].bytes * 0.8 / 0.856).epsilon(1e-12));
}

TEST_CASE("a100 collectives: the 40 GB and 80 GB DGX A100 share the NVSwitch fabric") {
  // Same NVLink 3 NVSwitch, same table: every collective inside the node takes the same time.
  const ClusterSpec a = dgx_a100("dgx-a100-80g"), b = dgx_a100("dgx-a100-40g");
  for (const char* collective : {"all_reduce", "all_gather", "all_to_all", "send_recv"})
    CHECK(simulated_s(a, collective, 512 * kMiB) == simulated_s(b, collective, 512 * kMiB));
}
