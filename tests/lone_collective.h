// One collective over every GPU of a cluster, alone on the fabric, as nccl-tests runs it: the
// time the executor gives a single call (tests of collectives against published bus bandwidths).
#pragma once
#include <vector>

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

// One collective launched on a group of an 8-GPU node.
struct Launch {
  CollectiveKind kind;
  std::vector<int> group;
};

// The launches at once on 8 GPUs, alone on the fabric: the time until the last ends. A
// send-recv of an odd sender goes on its own stream so that a GPU that sends and receives (a
// ring, mutual pairs) runs both at once, as XLA's permute and nccl-tests' grouped send and
// receive do.
inline double concurrent_collectives_s(const ClusterSpec& cluster, const std::vector<Launch>& launches,
                                       double bytes) {
  const Topology topo = build_topology(cluster);
  CostModel cost;
  cost.gpu = cluster.gpu;
  ExecGraph g;
  g.symmetric = false;
  g.mesh.size = {1, 1, 1, 1, 8};
  g.gpus = 8;
  for (int r = 0; r < 8; ++r) {
    SimRank s;
    s.gpu = r;
    g.ranks.push_back(s);
  }
  g.queues.resize(static_cast<size_t>(8) * kNumStreams);
  for (const Launch& l : launches) {
    Collective c;
    c.kind = l.kind;
    c.bytes = bytes;
    c.group = l.group;
    c.axes = axis_bit(kAxisTp);
    const int id = static_cast<int>(g.collectives.size());
    g.collectives.push_back(c);
    const Stream stream =
        l.kind == CollectiveKind::SendRecv && l.group[0] % 2 == 1 ? Stream::DpComm : Stream::PpComm;
    std::vector<int> tasks;
    for (int rank : l.group) {
      Task t;
      t.kind = TaskKind::Collective;
      t.rank = rank;
      t.stream = stream;
      t.collective = id;
      t.label = g.label_id("c" + std::to_string(id));
      tasks.push_back(g.add_task(t, {}));
    }
    g.collectives[static_cast<size_t>(id)].member_tasks = tasks;
  }
  return execute(g, cost, topo, ExecOptions{}).iteration_time_s;
}

}  // namespace proteus::test
