// A collective as flows on the topology (DESIGN.md §3, "A collective as flows"). The
// executor starts these flows together; the collective ends when its slowest flow ends,
// plus latency_s.
//   ring all-reduce over n ranks in c channels: each ring hop carries 2(n-1)/n * S / c bytes;
//   latency = 2(n-1) * (per-hop alpha of the slowest level) + NCCL base latency.
//   ring all-gather / reduce-scatter: (n-1)/n * S / c per hop, (n-1) steps.
//   all-to-all: every rank sends S/n to every other rank directly (n(n-1) flows).
//   send-recv: one flow of S bytes.
//   ring exchange (one step of a ring pass): S / c per hop, one hop's latency.
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
  std::vector<int> links;  // topology link ids on its path
};

struct CollectivePlan {
  std::vector<FlowSpec> flows;
  double latency_s = 0;   // added after the last flow ends
  std::string algorithm;  // "ring", "tree", "nvls_tree", "direct", "p2p"
};

CollectivePlan plan_collective(const Topology& topology, CollectiveKind kind, const std::vector<int>& group,
                               double bytes);

// The same plans with the size left symbolic, for callers that plan one (kind, group) at many
// sizes (gradient buckets): the paths, ring/tree orders and latencies do not depend on the
// size, only the flows' bytes and the ring-or-tree choice do. plan_collective is
// instantiate_plan(shapes, choose_plan(shapes, S), S), so both give the same plan bit for bit.
struct FlowShape {
  int src_gpu = 0, dst_gpu = 0;
  // The flow moves (scale * S) / divisor bytes of a collective of S bytes, evaluated in this
  // order: the expression the per-size planner always used, so no rounding differs.
  double scale = 1, divisor = 1;
  int first_link = 0, link_count = 0;  // its path: PlanShape::links[first_link, + link_count)
  double bytes_of(double collective_bytes) const { return scale * collective_bytes / divisor; }
};

// Where the flows' bytes pile up: the distinct links the shape uses (in order of first use)
// and, for every link of every flow (flow after flow, path order), the index of its link
// there. The load estimate sums the bytes on each link in that order.
struct LinkLoads {
  std::vector<int> links;
  std::vector<int> slot_of_crossing;
};

struct PlanShape {
  std::vector<FlowShape> flows;  // present when S > 0
  std::vector<int> links;        // the flows' paths, back to back (flows may share a path)
  double latency_s = 0;          // without the library's base latency
  std::string algorithm;
  LinkLoads loads;  // filled only when the plan competes with another
  const int* path_begin(const FlowShape& f) const { return links.data() + f.first_link; }
  const int* path_end(const FlowShape& f) const { return links.data() + f.first_link + f.link_count; }
};

struct CollectiveShapes {
  std::vector<PlanShape> candidates;  // the ring first; an all-reduce across nodes adds the tree
                                      // and, on NVLS nodes, the NVLS tree
  bool moves = false;                 // two distinct members: the call pays the base latency
};

CollectiveShapes collective_shapes(const Topology& topology, CollectiveKind kind,
                                   const std::vector<int>& group);
// Index of the candidate a collective of `bytes` runs.
size_t choose_plan(const Topology& topology, const CollectiveShapes& shapes, double bytes);
CollectivePlan instantiate_plan(const Topology& topology, const CollectiveShapes& shapes, size_t chosen,
                                double bytes);
// Latency of candidate `chosen` as plan_collective reports it (base latency included).
double plan_latency_s(const Topology& topology, const CollectiveShapes& shapes, size_t chosen);

}  // namespace proteus
