// The simulator's collectives inside one DGX H100 node against XLA's measured table
// (tests/calibration/xla_collective_table.json: openxla/xla collective_interpolator_data.h at
// 040b3849, "sm_90" for H100 and "sm_100" for B200, extracted by scripts/xla_collective_table.py). Every
// measured point of 1 MiB or more is simulated as XLA measured it: all replica groups at once on the 8 GPUs,
// each collective-permute pattern as its concurrent send-recvs, through the executor with the dgx-h100
// (dgx-b200) preset, whose intra-node latency_us and collective_efficiency are the least-squares fit of the
// flow model to those points (scripts/collective_sweep.py fit_flow_model).
//
// Tolerances (docs/fidelity/communication.md, "Collectives inside a node"): the measured bus bandwidth keeps
// rising from 1 MiB to 2 GiB (all-reduce on 8 GPUs: 35 GB/s at 1 MiB, 260 at 32 MiB, 402 at
// 2 GiB), which a latency plus one bandwidth per collective and group size follows only on
// average. Per (collective, group shape) the median relative error is held, on H100, to 20% for
// the ring collectives (all-reduce, all-gather, reduce-scatter), 30% for all-to-all and 60% for
// send-recv, whose measured curve has two regimes (about 100 GB/s from 4 to 64 MiB, about
// 280 GB/s from 256 MiB: XLA's collective-permute) that one efficiency can only split; the ring
// collectives' bandwidth-bound points (>= 64 MiB) are held to 25% each. B200 (dgx-b200, "sm_100")
// fits worse: 25%, 40%, 65% and 30%.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "calibration_data.h"
#include "error_path.h"
#include "lone_collective.h"
#include "proteus/collective_flows.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/error.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"
#include "relative_approx.h"

using nlohmann::json;
using namespace proteus;

namespace {

ClusterSpec cluster_of(const std::string& cluster_json, int gpus = 8) {
  const std::string dp = std::to_string(gpus);
  return parse_config(R"({"model": "llama3-8b", "cluster": )" + cluster_json +
                      R"(, "training": {"global_batch": )" + dp + R"(}, "strategy": {"dp": )" + dp + "}}")
      .cluster;
}

// One measured entry as the executor runs it: its collectives, each a kind and a group.
std::vector<test::Launch> launches_of(const json& e) {
  const std::string op = e.at("op");
  std::vector<test::Launch> out;
  if (op == "collective-permute") {
    const std::string pairs = e.at("pairs");
    for (int i = 0; i < 8; ++i) {
      if (pairs == "ring") out.push_back({CollectiveKind::SendRecv, {i, (i + 1) % 8}});
      if (pairs == "mutual") out.push_back({CollectiveKind::SendRecv, {i, i ^ 1}});
      if (pairs == "oneway" && i < 4) out.push_back({CollectiveKind::SendRecv, {i, i + 4}});
    }
    return out;
  }
  const CollectiveKind kind = op == "all-reduce"       ? CollectiveKind::AllReduce
                              : op == "all-gather"     ? CollectiveKind::AllGather
                              : op == "reduce-scatter" ? CollectiveKind::ReduceScatter
                                                       : CollectiveKind::AllToAll;
  const int groups = e.at("groups"), size = e.at("size");
  for (int g = 0; g < groups; ++g) {
    std::vector<int> group;
    for (int i = 0; i < size; ++i) group.push_back(g * size + i);
    out.push_back({kind, group});
  }
  return out;
}

// S of the entry as the simulator counts it (the data file's "definition").
double bytes_of(const json& e) {
  const double bytes = 4.0 * e.at("elements").get<double>();
  return e.at("op") == "reduce-scatter" ? bytes * e.at("size").get<double>() : bytes;
}

std::string shape_of(const json& e) {
  return e.contains("pairs")
             ? e.at("pairs").get<std::string>()
             : std::to_string(e.at("groups").get<int>()) + "x" + std::to_string(e.at("size").get<int>());
}

}  // namespace

TEST_CASE("collective calibration: 1 GiB all-reduce on 8 H100s is the fitted flow model's time") {
  // dgx-h100: base 8.4 us, per-hop alpha 3.73 us, all-reduce on 8 GPUs at 0.873 of 450 GB/s.
  // Ring: 2(n-1) = 14 hops and 2(n-1)/n = 1.75 S through every GPU's NVLink:
  //   8.4 + 14 x 3.73 + 1.75 x 2^30 / (450e3 x 0.873) us = 8.4 + 52.22 + 4783.09 = 4843.71 us.
  // XLA measured 2^28 F32 = 2^30 B at 227,444,546,849 B/s: 4720.9 us (the model is 2.6% slow).
  const ClusterSpec h100 = cluster_of(R"({"preset": "dgx-h100", "nodes": 1})");
  const double S = 1024.0 * 1024 * 1024;
  const double t =
      test::concurrent_collectives_s(h100, {{CollectiveKind::AllReduce, {0, 1, 2, 3, 4, 5, 6, 7}}}, S);
  CHECK(t * 1e6 == proteus::test::approx(8.4 + 14 * 3.73 + 1.75 * S / (450e3 * 0.873)).epsilon(1e-9));
  CHECK(t * 1e6 == proteus::test::approx(4843.71).epsilon(1e-5));
  CHECK(std::fabs(t / (S / 227444546849.0) - 1) < 0.03);
}

TEST_CASE("collective calibration: a group size between two measured ones interpolates") {
  // members [2, 8] with all-reduce efficiencies [0.5, 0.8]: 4 GPUs sit a third of the way,
  // 0.5 + (4 - 2) / (8 - 2) x 0.3 = 0.6. Ring over 4: 6 hops, 1.5 S per GPU link:
  //   8.4 + 6 x 3.73 + 1.5 x 2^30 / (450e3 x 0.6) us.
  const ClusterSpec c =
      cluster_of(R"({"preset": "dgx-h100", "nodes": 1, "intra_node": {"collective_efficiency":
      {"members": [2, 8], "all_reduce": [0.5, 0.8], "all_gather": [0.5, 0.8], "reduce_scatter": [0.5, 0.8],
       "all_to_all": [0.5, 0.8], "send_recv": 0.7}}})");
  const double S = 1024.0 * 1024 * 1024;
  const double t = test::concurrent_collectives_s(c, {{CollectiveKind::AllReduce, {0, 1, 2, 3}}}, S);
  CHECK(t * 1e6 == proteus::test::approx(8.4 + 6 * 3.73 + 1.5 * S / (450e3 * 0.6)).epsilon(1e-9));
  // A send-recv inside the node: one hop, S at 0.7 of the link.
  const double p2p = test::concurrent_collectives_s(c, {{CollectiveKind::SendRecv, {0, 5}}}, S);
  CHECK(p2p * 1e6 == proteus::test::approx(8.4 + 3.73 + S / (450e3 * 0.7)).epsilon(1e-9));
}

TEST_CASE("collective calibration: across nodes the links keep bus_efficiency") {
  // Two DGX H100 nodes: an all-reduce over GPU 0 of each node is not inside one node, so the
  // measured table does not apply; its plan equals the plan without the table, bit for bit.
  ClusterSpec with = cluster_of(R"({"preset": "dgx-h100", "nodes": 2})", 16);
  ClusterSpec without = with;
  without.intra_node.collective_efficiency = NodeCollectiveEfficiency{};
  const double S = 256.0 * 1024 * 1024;
  const CollectivePlan a = plan_collective(build_topology(with), CollectiveKind::AllReduce, {0, 8}, S);
  const CollectivePlan b = plan_collective(build_topology(without), CollectiveKind::AllReduce, {0, 8}, S);
  REQUIRE(a.flows.size() == b.flows.size());
  for (size_t i = 0; i < a.flows.size(); ++i) CHECK(a.flows[i].bytes == b.flows[i].bytes);
  // Inside one node it does apply: 2 GPUs, all-reduce at 0.483 instead of bus_efficiency 0.8,
  // so each flow carries 0.8 / 0.483 times the ring's S bytes.
  const CollectivePlan in = plan_collective(build_topology(with), CollectiveKind::AllReduce, {0, 1}, S);
  const CollectivePlan plain = plan_collective(build_topology(without), CollectiveKind::AllReduce, {0, 1}, S);
  REQUIRE(in.flows.size() == 2);
  CHECK(in.flows[0].bytes == proteus::test::approx(plain.flows[0].bytes * 0.8 / 0.483).epsilon(1e-12));
}

TEST_CASE("collective calibration: a bad collective_efficiency names its field") {
  auto error_path = [](const std::string& table) {
    return test::error_path([&] {
      cluster_of(R"({"preset": "dgx-h100", "nodes": 1, "intra_node": {"collective_efficiency": )" + table +
                 "}}");
    });
  };
  const std::string kinds = R"("all_gather": [0.5], "reduce_scatter": [0.5], "all_to_all": [0.5])";
  CHECK(error_path(R"({"members": [2], "all_reduce": [0.5, 0.6], )" + kinds + "}") ==
        "cluster.intra_node.collective_efficiency.all_reduce");
  CHECK(error_path(R"({"members": [2], "all_reduce": [1.5], )" + kinds + "}") ==
        "cluster.intra_node.collective_efficiency.all_reduce[0]");
  CHECK(error_path(R"({"members": [4, 2], "all_reduce": [0.5, 0.5], "all_gather": [0.5, 0.5],
      "reduce_scatter": [0.5, 0.5], "all_to_all": [0.5, 0.5]})") ==
        "cluster.intra_node.collective_efficiency.members[1]");
  CHECK(error_path(R"({"members": [2], )" + kinds + "}") ==
        "cluster.intra_node.collective_efficiency.all_reduce");
  CHECK(error_path(R"({"members": [1], "all_reduce": [0.5], )" + kinds + "}") ==
        "cluster.intra_node.collective_efficiency.members[0]");
  // A table measured on 8-GPU nodes stays valid on a config with 4 GPUs per node.
  CHECK_NOTHROW(cluster_of(R"({"preset": "dgx-h100", "nodes": 1, "gpus_per_node": 4})", 4));
  CHECK(error_path(R"({"members": [2], "all_reduce": [0.5], "send_recv": 0.5, "ring": 1, )" + kinds + "}") ==
        "cluster.intra_node.collective_efficiency.ring");
}

// Tolerances of one preset against its measured table (see the header comment).
struct Bounds {
  double ring_median, all_to_all_median, send_recv_median, ring_large;
};

void check_table(const std::string& preset, const std::string& gpu, const Bounds& bounds) {
  const json data = test::calibration_json("xla_collective_table.json");
  CHECK(data.at("source").at("commit") == "040b3849aff88d770f0677110fb5efc58e366a95");
  const json& entries = data.at("gpus").at(gpu);
  REQUIRE(entries.size() == 330);  // 5 opcodes x 3 group shapes or permute patterns x 22 sizes
  const ClusterSpec cluster = cluster_of(R"({"preset": ")" + preset + R"(", "nodes": 1})");
  std::map<std::string, std::vector<double>> errors;
  int points = 0;
  for (const json& e : entries) {
    const double bytes = bytes_of(e);
    if (bytes < 1024.0 * 1024) continue;
    const double measured_s = bytes / e.at("Bps").get<double>();
    const double error = test::concurrent_collectives_s(cluster, launches_of(e), bytes) / measured_s - 1;
    const std::string op = e.at("op");
    const std::string key = op + " " + shape_of(e);
    errors[key].push_back(error);
    ++points;
    const bool ring = op == "all-reduce" || op == "all-gather" || op == "reduce-scatter";
    if (ring && bytes >= 64.0 * 1024 * 1024) {
      INFO(preset << " " << key << " at " << bytes << " B: simulated/measured - 1 = " << error);
      CHECK(std::fabs(error) <= bounds.ring_large);
    }
  }
  CHECK(points == 180);
  CHECK(errors.size() == 15);
  for (const auto& [key, list] : errors) {
    std::vector<double> abs_errors;
    for (double x : list) abs_errors.push_back(std::fabs(x));
    const double med = test::median(abs_errors);
    const double bound = key.rfind("collective-permute", 0) == 0 ? bounds.send_recv_median
                         : key.rfind("all-to-all", 0) == 0       ? bounds.all_to_all_median
                                                                 : bounds.ring_median;
    INFO(preset << " " << key << ": median |simulated/measured - 1| = " << med << " over " << list.size()
                << " sizes");
    CHECK(med <= bound);
  }
}

TEST_CASE("collective calibration: dgx-h100 reproduces XLA's measured H100 collectives >= 1 MiB") {
  check_table("dgx-h100", "sm_90", {0.20, 0.30, 0.60, 0.25});
}

TEST_CASE("collective calibration: dgx-b200 reproduces XLA's measured B200 collectives >= 1 MiB") {
  // B200's curves bend more than H100's between 1 MiB and 2 GiB (rms relative error of the fit
  // 0.346 against 0.278): all-to-all 30-39% and send-recv 56-63% median error per shape.
  check_table("dgx-b200", "sm_100", {0.25, 0.40, 0.65, 0.30});
}
