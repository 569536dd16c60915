// One collective over every GPU of a cluster, alone on the fabric, as nccl-tests runs it: the
// time the executor gives a single call (tests of collectives against published bus bandwidths).
#pragma once
#include "proteus/collective_flows.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"

namespace proteus::test {

inline double lone_collective_s(const ClusterSpec& cluster, CollectiveKind kind, double bytes) {
  const int gpus = cluster.nodes * cluster.gpus_per_node;
  CostModel cost;
  cost.gpu = cluster.gpu;
  ExecGraph g;
  g.symmetric = false;
  g.mesh.size = {1, gpus, 1, 1, 1};
  g.gpus = gpus;
  g.queues.resize(static_cast<size_t>(gpus) * kNumStreams);
  Collective c;
  c.kind = kind;
  c.bytes = bytes;
  c.axes = axis_bit(kAxisDp);
  for (int r = 0; r < gpus; ++r) {
    SimRank s;
    s.gpu = r;
    g.ranks.push_back(s);
    c.group.push_back(r);
  }
  g.collectives.push_back(c);
  for (int r = 0; r < gpus; ++r) {
    Task t;
    t.kind = TaskKind::Collective;
    t.rank = r;
    t.stream = Stream::DpComm;
    t.collective = 0;
    t.label = g.label_id("all");
    g.collectives[0].member_tasks.push_back(g.add_task(t, {}));
  }
  return execute(g, cost, build_topology(cluster), ExecOptions{}).iteration_time_s;
}

}  // namespace proteus::test
