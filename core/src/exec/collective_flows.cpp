// Collectives as flows on the topology (collective_flows.h; DESIGN.md §3 "A collective as
// flows"). What NCCL runs, reduced to the flows it puts on links:
//
// Ring (all-reduce, all-gather, reduce-scatter). c = topology.ring_channels(group) channels.
//   Members are grouped by node (nodes in order of first appearance, members in group order;
//   on an NVLink mesh the node's members follow an NVLink Hamiltonian cycle when one exists).
//   Across nodes, channel k's ring is rotated inside every node so that it leaves the node
//   from the node's member k*m/c mod m (and enters the next node at that node's following member);
//   the inter-node hop takes the NIC serving the leaving GPU, on both sides (NCCL prefers
//   the NIC local to a GPU). A group with m members per node thus spreads its channels over
//   its members' NICs, and the groups of other tensor-parallel ranks use the other NICs.
//   Inside one NVLink-mesh node,
//   channels 2j and 2j+1 run NVLink cycle j forwards and backwards. Every hop of every
//   channel is one flow of (steps / n) * S / c bytes: 2(n-1)/n * S / c for all-reduce,
//   (n-1)/n * S / c for all-gather and reduce-scatter.
//   latency_s = steps * (largest per-hop alpha among the ring's hops).
// Ring exchange: one step of that ring (each member passes S to its successor): every hop
//   carries S / c; latency_s = the largest per-hop alpha (one step). Inside one node it runs at
//   the all-gather's measured efficiency.
// Tree (all-reduce only, when the group spans nodes): NCCL's double binary tree over the
//   nodes, one per channel k (c = nics): each channel carries S / c, half of it on each of the
//   two trees. In each node the members form a chain whose head is member k*m/c mod m; every
//   inter-node tree edge carries S / 2c up (reduce) and S / 2c down (broadcast) between the
//   heads through the heads' own NICs; every chain edge carries S / c in each direction (both trees).
//   latency_s = 2 * (tree depth * inter-node alpha + (chain length - 1) * intra-node alpha).
// NVLS tree (all-reduce only, across nodes whose switch reduces: intra_node.nvls, NCCL's
//   NVLSTree): the tree's edges between heads, and inside each node the node's own all-reduce
//   (a ring over its members at the all-reduce efficiency measured for them), all together.
//   latency_s = 2(m-1) * intra-node alpha + 2 * tree depth * inter-node alpha.
//   Ring, tree or NVLS tree: the one with the smallest estimate latency_s + max over links of
//   (bytes through the link / its capacity), the time of the plan alone on the network (NCCL
//   also chooses by an alpha-beta estimate); ties (within a relative 1e-9) go to the earlier.
// All-to-all: a direct flow of S / n from every member to every other member; inter-node flows
//   use the sender's own NIC. latency_s = largest per-hop alpha among the pairs.
// Send-recv: one flow of S bytes from group[0] to group[1] through the sender's NIC;
//   latency_s = its hop alpha.
// A group of one member (or a send to oneself) has no flows and no latency; a collective of
// zero bytes has no flows but keeps its latency.
//
// Inside one node, a cluster with intra_node.collective_efficiency (a measured table) runs each
// collective at the efficiency measured for its kind and group size: its flows' bytes are
// scaled by bus_efficiency / efficiency (apply_node_efficiency).
//
// Every collective of two or more members (send-recv and all-to-all included) also pays the
// library's fixed cost per call, cluster.collectives.base_latency_us (NCCL's baseLat, 8.4 us for
// the ring/Simple protocol in src/graph/tuning.cc; REFERENCE.md section 2), added to latency_s.
#include "proteus/collective_flows.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include "../hardware/nvlink_rings.h"
#include "link_slots.h"
#include "open_addressing.h"
#include "proteus/error.h"
#include "proteus/units.h"

namespace proteus {
namespace {

struct Segment {
  int node = 0;
  std::vector<int> gpus;  // members on this node, in ring order
};

struct Geometry {
  int g = 1;     // GPUs per node
  int nics = 1;  // NICs per node
  int node_of(int gpu) const { return gpu / g; }
  int local_of(int gpu) const { return gpu % g; }
  // NIC k serves GPUs k*g/nics .. (k+1)*g/nics - 1.
  int nic_of_local(int local) const { return std::min(nics - 1, local * nics / g); }
};

Geometry geometry_of(const Topology& t) {
  Geometry geo;
  geo.g = std::max(1, t.gpus_per_node);
  geo.nics = std::max(1, t.cluster.inter_node.nics_per_node);
  return geo;
}

bool is_mesh(const Topology& t) { return t.cluster.intra_node.kind == IntraNodeKind::NvLinkMesh; }

// Members grouped by node; on an NVLink mesh each node's members follow an NVLink cycle
// (computed once per distinct local pattern).
std::vector<Segment> segments_of(const Topology& t, const Geometry& geo, const std::vector<int>& group) {
  std::vector<Segment> segments;
  std::map<int, int> index_of_node;
  for (int gpu : group) {
    const int node = geo.node_of(gpu);
    auto it = index_of_node.find(node);
    if (it == index_of_node.end()) {
      it = index_of_node.emplace(node, static_cast<int>(segments.size())).first;
      segments.push_back({node, {}});
    }
    segments[it->second].gpus.push_back(gpu);
  }
  if (is_mesh(t)) {
    std::vector<int> cached_locals, cached_order;  // local indices -> cycle order (locals)
    for (Segment& s : segments) {
      if (s.gpus.size() < 3) continue;
      std::vector<int> locals;
      for (int gpu : s.gpus) locals.push_back(geo.local_of(gpu));
      if (locals != cached_locals) {
        cached_locals = locals;
        const auto cycles = nvlink_mesh_cycles(t.cluster.intra_node, locals);
        cached_order = cycles.empty() ? locals : cycles[0];
      }
      const int base = s.node * geo.g;
      for (size_t i = 0; i < s.gpus.size(); ++i) s.gpus[i] = base + cached_order[i];
    }
  }
  return segments;
}

// The NIC a flow leaving `gpu` takes: the one serving that GPU (NCCL prefers the NIC local to
// the GPU). Channels of a ring therefore leave each node from different members, each through
// its own NIC. This rule commutes with every permutation of GPUs that preserves the NIC
// attachment, so the data-parallel groups of different tensor-parallel ranks put isomorphic
// flows on the network, which the executor's symmetry reduction relies on.
int own_nic(const Geometry& geo, int gpu) { return geo.nic_of_local(geo.local_of(gpu)); }

// Paths already taken by a shape being built: (src, dst, NIC) -> its range in PlanShape::links
// (the channels of a tree or ring often repeat a hop). Open addressing: a shape adds a few to
// a few hundred hops, and a node allocated per hop (std::unordered_map) cost more than
// finding the paths.
struct Hop {
  int src, dst, channel;
  bool operator==(const Hop& o) const { return src == o.src && dst == o.dst && channel == o.channel; }
};

struct HopTraits {
  using Entry = exec::HashEntry<Hop, std::pair<int, int>>;
  static size_t hash(const Hop& h) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(h.src)) << 32) ^
                         static_cast<uint32_t>(h.dst) ^ (static_cast<uint64_t>(h.channel) << 20);
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> 40);
  }
  static Entry empty() { return {{-1, 0, 0}, {0, 0}}; }  // GPU ids are >= 0
  static bool is_empty(const Entry& e) { return e.key.src < 0; }
};

using PathIndex = exec::OpenAddressing<Hop, std::pair<int, int>, HopTraits>;

void add_flow(const Topology& t, PlanShape& plan, PathIndex& paths, int src, int dst, double scale,
              double divisor, int channel) {
  FlowShape f;
  f.src_gpu = src;
  f.dst_gpu = dst;
  f.scale = scale;
  f.divisor = divisor;
  const auto [range, added] = paths.find_or_add(Hop{src, dst, channel}, {0, 0});
  if (added) {
    const std::vector<int> path = t.path(src, dst, channel);
    *range = {static_cast<int>(plan.links.size()), static_cast<int>(path.size())};
    plan.links.insert(plan.links.end(), path.begin(), path.end());
  }
  f.first_link = range->first;
  f.link_count = range->second;
  plan.flows.push_back(f);
}

// hop_share: the fraction of S each hop moves in all (over the channels); latency_steps: the
// hop latencies paid one after another.
PlanShape ring_plan(const Topology& t, const std::vector<int>& group, double hop_share, int latency_steps) {
  const Geometry geo = geometry_of(t);
  const int n = static_cast<int>(group.size());
  const std::vector<Segment> segments = segments_of(t, geo, group);
  PlanShape plan;
  plan.algorithm = "ring";
  std::vector<std::vector<int>> rings;  // one ring order per channel
  if (segments.size() > 1) {
    const int channels = t.ring_channels(group);
    for (int k = 0; k < channels; ++k) {
      std::vector<int> ring;
      ring.reserve(n);
      for (const Segment& s : segments) {
        // Rotate so that channel k leaves every node from its member k*m/c (mod m): the
        // channels spread evenly over the node's members and hence over their NICs.
        const size_t m = s.gpus.size();
        const size_t last = (static_cast<size_t>(k) * m / static_cast<size_t>(channels)) % m;
        for (size_t i = 1; i <= s.gpus.size(); ++i) ring.push_back(s.gpus[(last + i) % s.gpus.size()]);
      }
      rings.push_back(std::move(ring));
    }
  } else if (is_mesh(t) && n >= 3) {
    std::vector<int> locals;
    for (int gpu : group) locals.push_back(geo.local_of(gpu));
    const auto cycles = nvlink_mesh_cycles(t.cluster.intra_node, locals);
    const int base = segments[0].node * geo.g;
    for (const auto& cycle : cycles) {
      std::vector<int> forward;
      for (int local : cycle) forward.push_back(base + local);
      std::vector<int> backward(forward.rbegin(), forward.rend());
      rings.push_back(std::move(forward));
      rings.push_back(std::move(backward));
    }
    if (rings.empty()) rings.push_back(group);
  } else {
    rings.push_back(group);
  }
  const int channels = static_cast<int>(rings.size());
  // Each hop moves hop_share * S / channels bytes.
  double alpha_s = 0;
  PathIndex paths;
  plan.flows.reserve(static_cast<size_t>(channels) * static_cast<size_t>(n));
  for (int k = 0; k < channels; ++k) {
    const auto& ring = rings[k];
    for (int i = 0; i < n; ++i) {
      const int src = ring[i], dst = ring[(i + 1) % n];
      alpha_s = std::max(alpha_s, t.hop_latency_s(src, dst));
      add_flow(t, plan, paths, src, dst, hop_share, channels, own_nic(geo, src));
    }
  }
  plan.latency_s = latency_steps * alpha_s;
  return plan;
}

// Parent of `rank` in NCCL's binary tree over n ranks (ncclGetBtree); -1 for the root (0).
int btree_parent(int rank, int n) {
  if (rank == 0) return -1;
  int bit = 1;
  while (!(bit & rank)) bit <<= 1;
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return up;
}

// NCCL's double binary tree (ncclGetDtree): tree 1 mirrors tree 0 for an even count of ranks
// and shifts it by one for an odd count.
int dtree_parent(int tree, int rank, int n) {
  if (tree == 0) return btree_parent(rank, n);
  if (n % 2 == 1) {
    const int shifted = btree_parent((rank - 1 + n) % n, n);
    return shifted < 0 ? -1 : (shifted + 1) % n;
  }
  const int mirrored = btree_parent(n - 1 - rank, n);
  return mirrored < 0 ? -1 : n - 1 - mirrored;
}

int tree_depth(int tree, int n) {
  int depth = 0;
  for (int r = 0; r < n; ++r) {
    int d = 0;
    for (int x = r; (x = dtree_parent(tree, x, n)) >= 0;) ++d;
    depth = std::max(depth, d);
  }
  return depth;
}

// The double binary tree's edges between the nodes' heads (heads[r]: node r's head for this
// channel), S / 2c each way per edge and tree. Returns the largest inter-node hop alpha.
double add_tree_edges(const Topology& t, PlanShape& plan, PathIndex& paths, const std::vector<int>& heads,
                      int channels) {
  const Geometry geo = geometry_of(t);
  const int nodes = static_cast<int>(heads.size());
  double alpha_s = 0;
  for (int tree = 0; tree < 2; ++tree)
    for (int r = 0; r < nodes; ++r) {
      const int p = dtree_parent(tree, r, nodes);
      if (p < 0) continue;
      alpha_s = std::max(alpha_s, t.hop_latency_s(heads[r], heads[p]));
      add_flow(t, plan, paths, heads[r], heads[p], 1.0, 2.0 * channels, own_nic(geo, heads[r]));
      add_flow(t, plan, paths, heads[p], heads[r], 1.0, 2.0 * channels, own_nic(geo, heads[p]));
    }
  return alpha_s;
}

PlanShape tree_plan(const Topology& t, const std::vector<int>& group) {
  const Geometry geo = geometry_of(t);
  const std::vector<Segment> segments = segments_of(t, geo, group);
  const int nodes = static_cast<int>(segments.size());
  const int channels = geo.nics;
  PlanShape plan;
  plan.algorithm = "tree";
  double intra_alpha_s = 0, inter_alpha_s = 0;
  size_t longest_chain = 1;
  std::vector<int> heads(nodes);
  PathIndex paths;
  for (int k = 0; k < channels; ++k) {
    for (int r = 0; r < nodes; ++r) {
      const auto& gpus = segments[r].gpus;
      // Channel k's head: member k*m/c (mod m), spreading the channels over the members' NICs.
      const size_t first =
          (static_cast<size_t>(k) * gpus.size() / static_cast<size_t>(channels)) % gpus.size();
      heads[r] = gpus[first];
      longest_chain = std::max(longest_chain, gpus.size());
      // Chain from the head through the node's other members: S / c each way per edge.
      for (size_t i = 0; i + 1 < gpus.size(); ++i) {
        const int a = gpus[(first + i) % gpus.size()], b = gpus[(first + i + 1) % gpus.size()];
        intra_alpha_s = std::max(intra_alpha_s, t.hop_latency_s(a, b));
        add_flow(t, plan, paths, b, a, 1.0, channels, own_nic(geo, b));
        add_flow(t, plan, paths, a, b, 1.0, channels, own_nic(geo, a));
      }
    }
    inter_alpha_s = std::max(inter_alpha_s, add_tree_edges(t, plan, paths, heads, channels));
  }
  const int depth = std::max(tree_depth(0, nodes), tree_depth(1, nodes));
  plan.latency_s = 2.0 * (depth * inter_alpha_s + static_cast<double>(longest_chain - 1) * intra_alpha_s);
  return plan;
}

// The plan's links numbered densely in order of first use. plan.links holds each distinct
// path once, appended when its first flow was added (add_flow), so numbering it in order is
// numbering the flows' crossings in order, with a lookup per path link rather than per crossing.
LinkLoads link_loads_of(const PlanShape& plan) {
  LinkLoads loads;
  exec::LinkSlots slots(plan.links.size());
  std::vector<int> slot_at(plan.links.size());  // per position in plan.links
  for (size_t p = 0; p < plan.links.size(); ++p) {
    bool added = false;
    slot_at[p] = slots.number(plan.links[p], &added);
    if (added) loads.links.push_back(plan.links[p]);
  }
  loads.slot_of_crossing.reserve(plan.links.size());
  for (const FlowShape& f : plan.flows)
    for (int k = 0; k < f.link_count; ++k)
      loads.slot_of_crossing.push_back(slot_at[static_cast<size_t>(f.first_link + k)]);
  return loads;
}

// The plan's time alone on the network: latency + the most loaded link's bytes / capacity.
// Each link's load sums its flows' bytes in flow order.
double estimate_s(const Topology& t, const PlanShape& plan, double bytes) {
  double worst_s = 0;
  if (bytes > 0) {
    const LinkLoads& loads = plan.loads;
    std::vector<double> load(loads.links.size(), 0.0);
    size_t j = 0;
    for (const FlowShape& f : plan.flows) {
      const double flow_bytes = f.bytes_of(bytes);
      for (int k = 0; k < f.link_count; ++k)
        load[static_cast<size_t>(loads.slot_of_crossing[j++])] += flow_bytes;
    }
    for (size_t i = 0; i < load.size(); ++i)
      worst_s = std::max(worst_s, load[i] / t.links[static_cast<size_t>(loads.links[i])].capacity_Bps);
  }
  return plan.latency_s + worst_s;
}

PlanShape empty_shape(CollectiveKind kind) {
  PlanShape plan;
  switch (kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::RingExchange:
      plan.algorithm = "ring";
      break;
    case CollectiveKind::AllToAll:
      plan.algorithm = "direct";
      break;
    case CollectiveKind::SendRecv:
      plan.algorithm = "p2p";
      break;
  }
  return plan;
}

PlanShape send_recv_shape(const Topology& topology, const std::vector<int>& group) {
  PlanShape plan = empty_shape(CollectiveKind::SendRecv);
  if (group.size() != 2)
    throw Error("internal", "", "send-recv needs exactly two members (sender, receiver)");
  const int src = group[0], dst = group[1];
  if (src == dst) return plan;
  plan.latency_s = topology.hop_latency_s(src, dst);
  PathIndex paths;
  add_flow(topology, plan, paths, src, dst, 1.0, 1.0, own_nic(geometry_of(topology), src));
  return plan;
}

PlanShape all_to_all_shape(const Topology& topology, const std::vector<int>& group) {
  PlanShape plan = empty_shape(CollectiveKind::AllToAll);
  const Geometry geo = geometry_of(topology);
  const double n = static_cast<double>(group.size());
  double alpha_s = 0;
  PathIndex paths;
  for (int src : group)
    for (int dst : group) {
      if (src == dst) continue;
      alpha_s = std::max(alpha_s, topology.hop_latency_s(src, dst));
      add_flow(topology, plan, paths, src, dst, 1.0, n, own_nic(geo, src));
    }
  plan.latency_s = alpha_s;
  return plan;
}

// Measured efficiency of a `kind` collective over m members of one node (cluster_spec.h,
// NodeCollectiveEfficiency); 0 when the table has none for it.
double node_efficiency(const NodeCollectiveEfficiency& table, CollectiveKind kind, int m) {
  if (kind == CollectiveKind::SendRecv) return table.send_recv;
  if (table.members.empty()) return 0;
  // A ring exchange is one step of the all-gather's ring (no measurement of a lone step).
  const std::vector<double>& e = kind == CollectiveKind::AllReduce ? table.all_reduce
                                 : kind == CollectiveKind::AllGather || kind == CollectiveKind::RingExchange
                                     ? table.all_gather
                                 : kind == CollectiveKind::ReduceScatter ? table.reduce_scatter
                                                                         : table.all_to_all;
  const std::vector<int>& sizes = table.members;
  if (m <= sizes.front()) return e.front();
  if (m >= sizes.back()) return e.back();
  size_t i = 1;
  while (sizes[i] < m) ++i;
  const double w = static_cast<double>(m - sizes[i - 1]) / (sizes[i] - sizes[i - 1]);
  return e[i - 1] + w * (e[i] - e[i - 1]);
}

// A collective inside one node runs at its measured efficiency instead of bus_efficiency (the
// links' capacity): each flow's bytes grow by bus_efficiency / efficiency, so the flow holds
// its links as long as the measured collective took (docs/fidelity/communication.md, "Collectives inside a
// node"). Collectives across nodes keep the links' capacities.
void apply_node_efficiency(const Topology& t, CollectiveKind kind, const std::vector<int>& group,
                           CollectiveShapes& shapes) {
  const NodeCollectiveEfficiency& table = t.cluster.intra_node.collective_efficiency;
  if (table.empty()) return;
  const int g = std::max(1, t.gpus_per_node);
  for (int gpu : group)
    if (gpu / g != group[0] / g) return;
  const double efficiency = node_efficiency(table, kind, static_cast<int>(group.size()));
  if (!(efficiency > 0)) return;
  const double stretch = t.cluster.intra_node.bus_efficiency / efficiency;
  for (PlanShape& plan : shapes.candidates)
    for (FlowShape& f : plan.flows) f.scale *= stretch;
}

// NCCL's NVLS tree (all-reduce across nodes of NVLink SHARP switches): inside each node the
// switch reduces the members' data and multicasts the result (NVLS), across nodes the heads run
// the double binary tree. The node's part moves what the node's own all-reduce moves, at the
// efficiency measured for it: a ring over the node's members, 2(m-1)/m * S per hop, each flow
// stretched by bus_efficiency / efficiency (all-reduce over m members; no table: no stretch).
// NCCL pipelines the two parts (tuning.cc: NVLSTree bandwidth = min(intra, inter)), as the
// flows here run together. The tree edges are the tree's, one channel per NIC.
// latency_s = 2(m-1) * intra-node alpha (the node's all-reduce) + 2 * tree depth * inter-node alpha.
PlanShape nvls_tree_plan(const Topology& t, const std::vector<Segment>& segments) {
  const Geometry geo = geometry_of(t);
  const int nodes = static_cast<int>(segments.size());
  const int channels = geo.nics;
  PlanShape plan;
  plan.algorithm = "nvls_tree";
  PathIndex paths;
  double intra_alpha_s = 0, inter_alpha_s = 0;
  size_t longest = 1;
  const NodeCollectiveEfficiency& table = t.cluster.intra_node.collective_efficiency;
  for (const Segment& s : segments) {
    const int m = static_cast<int>(s.gpus.size());
    longest = std::max(longest, s.gpus.size());
    const double efficiency = table.empty() ? 0 : node_efficiency(table, CollectiveKind::AllReduce, m);
    const double stretch = efficiency > 0 ? t.cluster.intra_node.bus_efficiency / efficiency : 1.0;
    const double scale = 2.0 * (m - 1) / m * stretch;
    for (int i = 0; i < m; ++i) {
      const int src = s.gpus[static_cast<size_t>(i)], dst = s.gpus[static_cast<size_t>((i + 1) % m)];
      intra_alpha_s = std::max(intra_alpha_s, t.hop_latency_s(src, dst));
      add_flow(t, plan, paths, src, dst, scale, 1.0, own_nic(geo, src));
    }
  }
  std::vector<int> heads(static_cast<size_t>(nodes));
  for (int k = 0; k < channels; ++k) {
    // Channel k's head: member k*m/c (mod m), as in the tree.
    for (int r = 0; r < nodes; ++r) {
      const auto& gpus = segments[static_cast<size_t>(r)].gpus;
      heads[static_cast<size_t>(r)] =
          gpus[(static_cast<size_t>(k) * gpus.size() / static_cast<size_t>(channels)) % gpus.size()];
    }
    inter_alpha_s = std::max(inter_alpha_s, add_tree_edges(t, plan, paths, heads, channels));
  }
  const int depth = std::max(tree_depth(0, nodes), tree_depth(1, nodes));
  plan.latency_s = 2.0 * static_cast<double>(longest - 1) * intra_alpha_s + 2.0 * depth * inter_alpha_s;
  return plan;
}

// NCCL offers the NVLS tree for an all-reduce across nodes when the switch reduces (intra_node.nvls)
// and every node holds at least two members (one member per node has nothing to reduce in the switch).
bool nvls_tree_applies(const Topology& t, const std::vector<Segment>& segments) {
  if (!t.cluster.intra_node.nvls || t.cluster.intra_node.kind != IntraNodeKind::NvSwitch) return false;
  if (segments.size() < 2) return false;
  for (const Segment& s : segments)
    if (s.gpus.size() < 2) return false;
  return true;
}

}  // namespace

CollectiveShapes collective_shapes(const Topology& topology, CollectiveKind kind,
                                   const std::vector<int>& group) {
  const int n = static_cast<int>(group.size());
  CollectiveShapes shapes;
  if (n <= 1) {
    shapes.candidates.push_back(empty_shape(kind));
    return shapes;
  }
  if (kind == CollectiveKind::SendRecv) {
    shapes.candidates.push_back(send_recv_shape(topology, group));
    shapes.moves = group[0] != group[1];
    apply_node_efficiency(topology, kind, group, shapes);
    return shapes;
  }
  shapes.moves = true;
  if (kind == CollectiveKind::AllToAll) {
    shapes.candidates.push_back(all_to_all_shape(topology, group));
    apply_node_efficiency(topology, kind, group, shapes);
    return shapes;
  }
  if (kind != CollectiveKind::AllReduce) {
    shapes.candidates.push_back(kind == CollectiveKind::RingExchange
                                    ? ring_plan(topology, group, 1.0, 1)
                                    : ring_plan(topology, group, static_cast<double>(n - 1) / n, n - 1));
    apply_node_efficiency(topology, kind, group, shapes);
    return shapes;
  }
  shapes.candidates.push_back(ring_plan(topology, group, static_cast<double>(2 * (n - 1)) / n, 2 * (n - 1)));
  const Geometry geo = geometry_of(topology);
  bool crosses_nodes = false;
  for (int gpu : group) crosses_nodes = crosses_nodes || geo.node_of(gpu) != geo.node_of(group[0]);
  if (!crosses_nodes) {
    apply_node_efficiency(topology, kind, group, shapes);
    return shapes;
  }
  shapes.candidates.push_back(tree_plan(topology, group));
  const std::vector<Segment> segments = segments_of(topology, geo, group);
  if (nvls_tree_applies(topology, segments)) shapes.candidates.push_back(nvls_tree_plan(topology, segments));
  for (PlanShape& plan : shapes.candidates) plan.loads = link_loads_of(plan);
  return shapes;
}

size_t choose_plan(const Topology& topology, const CollectiveShapes& shapes, double bytes) {
  size_t best = 0;
  if (shapes.candidates.size() < 2) return best;
  double best_s = estimate_s(topology, shapes.candidates[0], bytes);
  // Near-ties go to the earlier candidate (the ring first): isomorphic sibling groups sum their
  // link loads in different orders, and a rounding-level difference must not give them
  // different algorithms.
  for (size_t i = 1; i < shapes.candidates.size(); ++i) {
    const double candidate_s = estimate_s(topology, shapes.candidates[i], bytes);
    if (candidate_s < best_s * (1 - 1e-9)) {
      best = i;
      best_s = candidate_s;
    }
  }
  return best;
}

double plan_latency_s(const Topology& topology, const CollectiveShapes& shapes, size_t chosen) {
  double latency_s = shapes.candidates[chosen].latency_s;
  if (shapes.moves) latency_s += topology.cluster.collectives.base_latency_us * kSecondsPerUs;
  return latency_s;
}

CollectivePlan instantiate_plan(const Topology& topology, const CollectiveShapes& shapes, size_t chosen,
                                double bytes) {
  const PlanShape& shape = shapes.candidates[chosen];
  CollectivePlan plan;
  plan.algorithm = shape.algorithm;
  plan.latency_s = plan_latency_s(topology, shapes, chosen);
  if (!(bytes > 0)) return plan;  // zero bytes: no flows, the latency stays
  plan.flows.reserve(shape.flows.size());
  for (const FlowShape& f : shape.flows)
    plan.flows.push_back(
        {f.src_gpu, f.dst_gpu, f.bytes_of(bytes), std::vector<int>(shape.path_begin(f), shape.path_end(f))});
  return plan;
}

CollectivePlan plan_collective(const Topology& topology, CollectiveKind kind, const std::vector<int>& group,
                               double bytes) {
  const CollectiveShapes shapes = collective_shapes(topology, kind, group);
  return instantiate_plan(topology, shapes, choose_plan(topology, shapes, bytes), bytes);
}

}  // namespace proteus
