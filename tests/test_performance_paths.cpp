// The shortcuts taken for speed (docs/performance.md) equal the plain paths they replace.
#include <doctest/doctest.h>

#include <vector>

#include "../core/src/exec/executor_plans.h"
#include "proteus/bandwidth_sharing.h"
#include "proteus/collective_flows.h"
#include "proteus/simulation.h"
#include "test_exec_helpers.h"

using namespace proteus;
using proteus::test::make_mesh;
using proteus::test::test_cluster;

TEST_CASE("identical flows of a plan are merged into one weighted flow") {
  // dp = 4 over 4 nodes of 8 GPUs with 2 NICs, tp = 8: the dp group {0, 8, 16, 24} has one
  // member per node, so its 2 ring channels leave every node through the same NIC (GPU 0's)
  // and each hop's 2 flows are identical: 4 merged flows of count 2.
  const ClusterSpec cl = test_cluster(4, 8, 2);
  const Topology topo = build_topology(cl);
  const Mesh mesh = make_mesh(1, 4, 8);
  Collective c;
  c.kind = CollectiveKind::AllGather;
  c.axes = axis_bit(kAxisDp);
  c.bytes = 1e9;
  c.group = mesh.group(0, c.axes);
  REQUIRE(c.group == std::vector<int>{0, 8, 16, 24});
  const CollectivePlan raw = plan_collective(topo, c.kind, c.group, c.bytes);
  for (bool symmetric : {false, true}) {
    const exec::WeightedPlan p = exec::weighted_plan(topo, mesh, symmetric, c);
    CHECK(p.source_flows == static_cast<int64_t>(raw.flows.size()));
    int64_t total = 0;
    for (const exec::WeightedFlow& f : p.flows) {
      total += f.count;
      // solver_links: sorted, unique, weight * count.
      REQUIRE(f.solver_links.size() == f.links.size());
      for (size_t i = 0; i + 1 < f.solver_links.size(); ++i)
        CHECK(f.solver_links[i].first < f.solver_links[i + 1].first);
      for (const auto& [link, w] : f.links) {
        bool found = false;
        for (const auto& [l2, w2] : f.solver_links)
          if (l2 == link) {
            found = true;
            CHECK(w2 == w * f.count);
          }
        CHECK(found);
      }
    }
    CHECK(total == static_cast<int64_t>(raw.flows.size()));
    CHECK(p.flows.size() * 2 == raw.flows.size());
  }
}

TEST_CASE("a flow of weight 2w gets the rate of two identical flows of weight w") {
  // Links: A 10 B/s, B 4 B/s. Plain: f1, f2 on A and B (weight 1 each), f3 on A.
  //   B saturates first at 4 / 2 = 2 (f1, f2 frozen at 2); A keeps 10 - 4 = 6 for f3 -> 6.
  // Merged: g (weight 2 on A and B) and f3: B saturates at 4 / 2 = 2; f3 gets 6.
  BandwidthSharing plain({10, 4}), merged({10, 4});
  const int f1 = plain.add_flow({{0, 1.0}, {1, 1.0}});
  const int f2 = plain.add_flow({{0, 1.0}, {1, 1.0}});
  const int f3 = plain.add_flow({{0, 1.0}});
  const int g = merged.add_flow({{0, 2.0}, {1, 2.0}});
  const int h = merged.add_flow({{0, 1.0}});
  plain.solve();
  merged.solve();
  CHECK(plain.rate_Bps(f1) == 2.0);
  CHECK(plain.rate_Bps(f2) == 2.0);
  CHECK(merged.rate_Bps(g) == 2.0);
  CHECK(plain.rate_Bps(f3) == 6.0);
  CHECK(merged.rate_Bps(h) == 6.0);
}

TEST_CASE("one-flow components: the rate is the smallest capacity / weight, as progressive filling gives") {
  // Flow 1 alone on links 0 (10 B/s, weight 2) and 1 (4 B/s, weight 1): min(5, 4) = 4.
  // Flow 2 alone on link 2 (9 B/s, weight 3): 3. Both modes agree, and a second flow joining
  // link 2 makes it a two-flow component (weights 3 and 1 share 9: 9 / 4 = 2.25 each).
  for (bool incremental : {true, false}) {
    BandwidthSharing bw({10, 4, 9}, incremental);
    const int a = bw.add_flow({{1, 1.0}, {0, 2.0}});  // unsorted input: the sorting path
    const int b = bw.add_flow({{2, 3.0}});
    bw.solve();
    CHECK(bw.rate_Bps(a) == 4.0);
    CHECK(bw.rate_Bps(b) == 3.0);
    const int c = bw.add_flow({{2, 1.0}});
    bw.solve();
    CHECK(bw.rate_Bps(b) == 2.25);
    CHECK(bw.rate_Bps(c) == 2.25);
    bw.remove_flow(c);
    bw.solve();
    CHECK(bw.rate_Bps(b) == 3.0);
  }
}
