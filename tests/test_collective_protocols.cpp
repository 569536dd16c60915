// NCCL's LL protocol in the collective planner (nccl_protocol.h; docs/fidelity.md, "NCCL's
// protocols"): what it costs against Simple and when NCCL's choice takes it. Expected values
// are derived from NCCL's constants (src/graph/tuning.cc, NCCL 2.20.3) and LL's wire format.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>
#include "proteus/collective_flows.h"
#include "proteus/config.h"
#include "proteus/nccl_protocol.h"
#include "proteus/topology.h"

using namespace proteus;

namespace {

ClusterSpec nodes_of(const std::string& preset, int nodes) {
  return parse_config(R"({"model": "llama3-8b", "cluster": {"preset": ")" + preset + R"(", "nodes": )" +
                      std::to_string(nodes) + R"(}, "training": {"global_batch": 64}, "strategy": {"dp": )" +
                      std::to_string(8 * nodes) + "}}")
      .cluster;
}

std::vector<int> first_gpus(int n) {
  std::vector<int> group(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) group[static_cast<size_t>(r)] = r;
  return group;
}

// Index of the candidate with this algorithm and protocol; fails the test when there is none.
size_t candidate(const CollectiveShapes& shapes, const std::string& algorithm, NcclProtocol protocol) {
  for (size_t i = 0; i < shapes.candidates.size(); ++i)
    if (shapes.candidates[i].algorithm == algorithm && shapes.candidates[i].protocol == protocol) return i;
  FAIL("no such candidate: " << algorithm << "/" << protocol_name(protocol));
  return 0;
}

// Seconds the plan's busiest link needs for its bytes (the plan alone on the network).
double busiest_link_s(const Topology& t, const CollectivePlan& plan) {
  std::map<int, double> load;
  for (const FlowSpec& f : plan.flows)
    for (int l : f.links) load[l] += f.bytes;
  double worst = 0;
  for (const auto& [l, bytes] : load)
    worst = std::max(worst, bytes / t.links[static_cast<size_t>(l)].capacity_Bps);
  return worst;
}

}  // namespace

TEST_CASE("protocols: LL halves the bandwidth and cuts the latency (2 PCIe nodes, one FDR NIC each)") {
  const Topology t = build_topology(nodes_of("gtx1080ti-1ib", 2));
  const std::vector<int> group = first_gpus(16);
  const CollectiveShapes shapes = collective_shapes(t, CollectiveKind::AllReduce, group);
  const size_t simple = candidate(shapes, "ring", NcclProtocol::Simple);
  const size_t ll = candidate(shapes, "ring", NcclProtocol::LL);
  candidate(shapes, "tree", NcclProtocol::LL);
  // Ring latency, 30 steps at the slowest hop (the network): Simple 8.4 + 30 x 9.6 = 296.4 us
  // (the preset's constants), LL 6.6 + 30 x 2.7 = 87.6 us (NCCL's).
  CHECK(plan_latency_s(t, shapes, simple) * 1e6 == doctest::Approx(296.4));
  CHECK(plan_latency_s(t, shapes, ll) * 1e6 == doctest::Approx(87.6));
  // Tree: 2 x (1 network hop + 7 PCIe hops of the node's chain): LL 6.8 + 2 x (5.0 + 7 x 1.0).
  CHECK(plan_latency_s(t, shapes, candidate(shapes, "tree", NcclProtocol::LL)) * 1e6 ==
        doctest::Approx(30.8));
  // Bandwidth: every LL flow carries twice the Simple flow's bytes (4 data bytes in each 8-byte
  // word); the ring's ~6 GB/s of bus bandwidth is far under LL's 39 GB/s ceiling on 2 nodes.
  const double bytes = 64e6;
  const CollectivePlan a = instantiate_plan(t, shapes, simple, bytes);
  const CollectivePlan b = instantiate_plan(t, shapes, ll, bytes);
  REQUIRE(a.flows.size() == b.flows.size());
  for (size_t i = 0; i < a.flows.size(); ++i)
    CHECK(b.flows[i].bytes == doctest::Approx(2 * a.flows[i].bytes));
  CHECK(busiest_link_s(t, b) == doctest::Approx(2 * busiest_link_s(t, a)));
  CHECK(a.protocol == "Simple");
  CHECK(b.protocol == "LL");
  // Small messages take LL, large ones Simple.
  CHECK(plan_collective(t, CollectiveKind::AllReduce, group, 4096).protocol == "LL");
  CHECK(plan_collective(t, CollectiveKind::AllReduce, group, bytes).protocol == "Simple");
  // All-gather and reduce-scatter rings across nodes get LL too.
  CHECK(plan_collective(t, CollectiveKind::AllGather, group, 4096).protocol == "LL");
  CHECK(plan_collective(t, CollectiveKind::ReduceScatter, group, 4096).protocol == "LL");
}

TEST_CASE("protocols: LL stays under NCCL's bus-bandwidth ceiling (llMaxBws)") {
  // 2 x 8 H200: the double binary tree's Simple bus bandwidth is ~385 GB/s; half of it would be
  // ~190, but NCCL caps LL at 39 GB/s across 2 nodes, 20.4 across more (tuning.cc llMaxBws,
  // Intel hosts).
  for (int nodes : {2, 4}) {
    CAPTURE(nodes);
    const Topology t = build_topology(nodes_of("dgx-h200", nodes));
    const std::vector<int> group = first_gpus(8 * nodes);
    const CollectiveShapes shapes = collective_shapes(t, CollectiveKind::AllReduce, group);
    const double bytes = 1 << 30;
    const double n = 8.0 * nodes;
    for (const char* algorithm : {"ring", "tree"}) {
      CAPTURE(algorithm);
      const CollectivePlan plan =
          instantiate_plan(t, shapes, candidate(shapes, algorithm, NcclProtocol::LL), bytes);
      const double bus_GBps = 2 * (n - 1) / n * bytes / busiest_link_s(t, plan) / 1e9;
      CHECK(bus_GBps == doctest::Approx(nodes == 2 ? 39.0 : 20.4));
    }
  }
}

TEST_CASE("protocols: inside a node Simple alone; all-to-all and send-recv Simple") {
  // Inside a node: the measured table (H100) or NCCL's ring/Simple constants (A100) alone.
  for (const char* preset : {"dgx-h100", "dgx-a100-80g"}) {
    CAPTURE(preset);
    const Topology t = build_topology(nodes_of(preset, 2));
    CHECK(collective_shapes(t, CollectiveKind::AllReduce, first_gpus(8)).candidates.size() == 1);
    CHECK(plan_collective(t, CollectiveKind::AllReduce, first_gpus(8), 4096).protocol == "Simple");
    CHECK(collective_shapes(t, CollectiveKind::AllGather, first_gpus(4)).candidates.size() == 1);
    // Across the two nodes: LL too.
    CHECK(plan_collective(t, CollectiveKind::AllReduce, first_gpus(16), 4096).protocol == "LL");
  }
  // NCCL's tuning model picks no protocol for all-to-all and send-recv (Simple here).
  const Topology t = build_topology(nodes_of("dgx-a100-80g", 2));
  CHECK(collective_shapes(t, CollectiveKind::AllToAll, first_gpus(16)).candidates.size() == 1);
  CHECK(collective_shapes(t, CollectiveKind::SendRecv, {0, 8}).candidates.size() == 1);
  CHECK(plan_collective(t, CollectiveKind::SendRecv, {0, 8}, 4096).protocol == "Simple");
}
