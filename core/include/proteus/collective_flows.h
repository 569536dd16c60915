// A collective as flows on the topology (DESIGN.md §3, "A collective as flows"). The
// executor starts these flows together; the collective ends when its slowest flow ends,
// plus latency_s.
//   ring all-reduce over n ranks in c channels: each ring hop carries 2(n-1)/n * S / c bytes;
//   latency = 2(n-1) * (per-hop alpha of the slowest level) + NCCL base latency.
//   ring all-gather / reduce-scatter: (n-1)/n * S / c per hop, (n-1) steps.
//   all-to-all: every rank sends S/n to every other rank directly (n(n-1) flows).
//   send-recv: one flow of S bytes.
// Across nodes, channel c of a ring leaves and enters every node through NIC c % nics.
#pragma once
#include <string>
#include <vector>
#include "proteus/exec_graph.h"
#include "proteus/topology.h"

namespace proteus {

struct FlowSpec {
  int src_gpu = 0, dst_gpu = 0;
  double bytes = 0;
  std::vector<int> links;   // topology link ids on its path
};

struct CollectivePlan {
  std::vector<FlowSpec> flows;
  double latency_s = 0;     // added after the last flow ends
  std::string algorithm;    // "ring", "tree", "direct", "p2p"
};

CollectivePlan plan_collective(const Topology& topology, CollectiveKind kind,
                               const std::vector<int>& group, double bytes);

}  // namespace proteus
