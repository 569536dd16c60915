// Planning a group once for all its sizes (collective_shapes, PlanCache) gives the plans that
// planning every size from scratch (plan_collective, weighted_plan) gives, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "../core/src/exec/executor_plans.h"
#include "proteus/collective_flows.h"
#include "proteus/exec_graph.h"
#include "proteus/topology.h"
#include "test_exec_helpers.h"

using namespace proteus;
using proteus::test::make_mesh;
using proteus::test::test_cluster;

namespace {

// Sizes from a few bytes to gigabytes, at uneven steps (gradient buckets), and zero.
std::vector<double> bucket_sizes() {
  std::vector<double> sizes{0.0};
  for (double s = 3.0; s < 8e9; s *= 5.3) sizes.push_back(s);
  return sizes;
}

void check_same_plan(const exec::WeightedPlan& cached, const exec::WeightedPlan& fresh) {
  CHECK(cached.latency_s == fresh.latency_s);
  CHECK(cached.source_flows == fresh.source_flows);
  REQUIRE(cached.flows.size() == fresh.flows.size());
  for (size_t i = 0; i < fresh.flows.size(); ++i) {
    CHECK(cached.flows[i].bytes == fresh.flows[i].bytes);
    CHECK(cached.flows[i].count == fresh.flows[i].count);
    CHECK(cached.flows[i].links == fresh.flows[i].links);
    const LinkWeights a = cached.flows[i].solver_links, b = fresh.flows[i].solver_links;
    CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
}

}  // namespace

TEST_CASE("a group's plans at many sizes: the cache equals planning each size afresh") {
  // 8 nodes of 8 GPUs with 2 NICs; dp = 8 (one member per node), tp = 8. The dp all-reduce
  // runs the tree at small sizes and the ring at large ones, so both cached algorithms are
  // used, each by several sizes; every dp group has 7 tp siblings.
  const Topology topo = build_topology(test_cluster(8, 8, 2));
  for (bool symmetric : {true, false}) {
    ExecGraph graph;
    graph.mesh = make_mesh(1, 8, 8);
    graph.symmetric = symmetric;
    std::set<std::string> algorithms;
    struct Kind {
      CollectiveKind kind;
      AxisMask axes;
    };
    const Kind kinds[] = {
        {CollectiveKind::AllReduce, axis_bit(kAxisDp)},
        {CollectiveKind::AllGather, axis_bit(kAxisDp)},
        {CollectiveKind::ReduceScatter, axis_bit(kAxisTp)},
        {CollectiveKind::AllReduce, static_cast<AxisMask>(axis_bit(kAxisDp) | axis_bit(kAxisTp))},
        {CollectiveKind::AllToAll, axis_bit(kAxisTp)}};
    for (const Kind& k : kinds)
      for (int rank : {0, 3})
        for (double bytes : bucket_sizes()) {
          Collective c;
          c.kind = k.kind;
          c.axes = k.axes;
          c.group = graph.mesh.group(rank, k.axes);
          c.bytes = bytes;
          graph.collectives.push_back(c);
          if (k.kind == CollectiveKind::AllReduce && k.axes == axis_bit(kAxisDp))
            algorithms.insert(plan_collective(topo, c.kind, c.group, c.bytes).algorithm);
        }
    CHECK(algorithms == std::set<std::string>{"ring", "tree"});
    exec::PlanCache cache(graph, topo);
    for (size_t i = 0; i < graph.collectives.size(); ++i) {
      CAPTURE(i);
      check_same_plan(cache.plan_of(static_cast<int>(i)),
                      exec::weighted_plan(topo, graph.mesh, symmetric, graph.collectives[i]));
    }
  }
}

TEST_CASE("a shape instantiated at a size is the plan of that size") {
  const Topology topo = build_topology(test_cluster(4, 8, 2));
  const std::vector<int> group{0, 9, 18, 27, 1, 10};  // two members on nodes 0 and 1
  const CollectiveShapes shapes = collective_shapes(topo, CollectiveKind::AllReduce, group);
  REQUIRE(shapes.candidates.size() == 2);  // crosses nodes: ring and tree
  for (double bytes : bucket_sizes()) {
    const CollectivePlan plan = plan_collective(topo, CollectiveKind::AllReduce, group, bytes);
    const size_t chosen = choose_plan(topo, shapes, bytes);
    CHECK(plan.algorithm == shapes.candidates[chosen].algorithm);
    CHECK(plan.latency_s == plan_latency_s(topo, shapes, chosen));
    const PlanShape& shape = shapes.candidates[chosen];
    REQUIRE(plan.flows.size() == (bytes > 0 ? shape.flows.size() : 0));
    for (size_t i = 0; i < plan.flows.size(); ++i) {
      CHECK(plan.flows[i].bytes == shape.flows[i].bytes_of(bytes));
      // Every flow leaves through its sender's own NIC (GPUs 0-3: NIC 0, 4-7: NIC 1).
      const int src = plan.flows[i].src_gpu;
      CHECK(plan.flows[i].links == topo.path(src, plan.flows[i].dst_gpu, src % 8 / 4));
    }
  }
}
