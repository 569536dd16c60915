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
// Tree (all-reduce only, when the group spans nodes): NCCL's double binary tree over the
//   nodes, one per channel k (c = nics): each channel carries S / c, half of it on each of the
//   two trees. In each node the members form a chain whose head is member k*m/c mod m; every
//   inter-node tree edge carries S / 2c up (reduce) and S / 2c down (broadcast) between the
//   heads through the heads' own NICs; every chain edge carries S / c in each direction (both trees).
//   latency_s = 2 * (tree depth * inter-node alpha + (chain length - 1) * intra-node alpha).
//   Ring or tree: the one with the smaller estimate latency_s + max over links of (bytes
//   through the link / its capacity), the time of the plan alone on the network (NCCL also
//   chooses by an alpha-beta estimate); ties (within a relative 1e-9) go to the ring.
// All-to-all: a direct flow of S / n from every member to every other member; inter-node flows
//   use the sender's own NIC. latency_s = largest per-hop alpha among the pairs.
// Send-recv: one flow of S bytes from group[0] to group[1] through the sender's NIC;
//   latency_s = its hop alpha.
// A group of one member (or a send to oneself) has no flows and no latency; a collective of
// zero bytes has no flows but keeps its latency.
//
// Every collective of two or more members (send-recv and all-to-all included) also pays the
// library's fixed cost per call, cluster.collectives.base_latency_us (NCCL's baseLat, 8.4 us for
// the ring/Simple protocol in src/graph/tuning.cc; REFERENCE.md section 2), added to latency_s.
#include <algorithm>
#include <cmath>
#include <map>
#include "proteus/collective_flows.h"
#include "proteus/error.h"
#include "proteus/units.h"
#include "../hardware/nvlink_rings.h"

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

void add_flow(const Topology& t, CollectivePlan& plan, int src, int dst, double bytes, int channel) {
  FlowSpec f;
  f.src_gpu = src;
  f.dst_gpu = dst;
  f.bytes = bytes;
  f.links = t.path(src, dst, channel);
  plan.flows.push_back(std::move(f));
}

CollectivePlan ring_plan(const Topology& t, const std::vector<int>& group, double bytes, int steps) {
  const Geometry geo = geometry_of(t);
  const int n = static_cast<int>(group.size());
  const std::vector<Segment> segments = segments_of(t, geo, group);
  CollectivePlan plan;
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
  const double hop_bytes = static_cast<double>(steps) / n * bytes / channels;
  double alpha_s = 0;
  for (int k = 0; k < channels; ++k) {
    const auto& ring = rings[k];
    for (int i = 0; i < n; ++i) {
      const int src = ring[i], dst = ring[(i + 1) % n];
      alpha_s = std::max(alpha_s, t.hop_latency_s(src, dst));
      if (bytes > 0) add_flow(t, plan, src, dst, hop_bytes, own_nic(geo, src));
    }
  }
  plan.latency_s = steps * alpha_s;
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

CollectivePlan tree_plan(const Topology& t, const std::vector<int>& group, double bytes) {
  const Geometry geo = geometry_of(t);
  const std::vector<Segment> segments = segments_of(t, geo, group);
  const int nodes = static_cast<int>(segments.size());
  const int channels = geo.nics;
  CollectivePlan plan;
  plan.algorithm = "tree";
  double intra_alpha_s = 0, inter_alpha_s = 0;
  size_t longest_chain = 1;
  std::vector<int> heads(nodes);
  for (int k = 0; k < channels; ++k) {
    for (int r = 0; r < nodes; ++r) {
      const auto& gpus = segments[r].gpus;
      // Channel k's head: member k*m/c (mod m), spreading the channels over the members' NICs.
      const size_t first = (static_cast<size_t>(k) * gpus.size() / static_cast<size_t>(channels)) % gpus.size();
      heads[r] = gpus[first];
      longest_chain = std::max(longest_chain, gpus.size());
      // Chain from the head through the node's other members: S / c each way per edge.
      for (size_t i = 0; i + 1 < gpus.size(); ++i) {
        const int a = gpus[(first + i) % gpus.size()], b = gpus[(first + i + 1) % gpus.size()];
        intra_alpha_s = std::max(intra_alpha_s, t.hop_latency_s(a, b));
        if (bytes > 0) {
          add_flow(t, plan, b, a, bytes / channels, own_nic(geo, b));
          add_flow(t, plan, a, b, bytes / channels, own_nic(geo, a));
        }
      }
    }
    for (int tree = 0; tree < 2; ++tree)
      for (int r = 0; r < nodes; ++r) {
        const int p = dtree_parent(tree, r, nodes);
        if (p < 0) continue;
        inter_alpha_s = std::max(inter_alpha_s, t.hop_latency_s(heads[r], heads[p]));
        if (bytes > 0) {
          add_flow(t, plan, heads[r], heads[p], bytes / (2.0 * channels), own_nic(geo, heads[r]));
          add_flow(t, plan, heads[p], heads[r], bytes / (2.0 * channels), own_nic(geo, heads[p]));
        }
      }
  }
  const int depth = std::max(tree_depth(0, nodes), tree_depth(1, nodes));
  plan.latency_s = 2.0 * (depth * inter_alpha_s + static_cast<double>(longest_chain - 1) * intra_alpha_s);
  return plan;
}

// The plan's time alone on the network: latency + the most loaded link's bytes / capacity.
double estimate_s(const Topology& t, const CollectivePlan& plan, std::vector<double>& load,
                  std::vector<int>& touched) {
  touched.clear();
  for (const FlowSpec& f : plan.flows)
    for (int l : f.links) {
      if (load[l] == 0) touched.push_back(l);
      load[l] += f.bytes;
    }
  double worst_s = 0;
  for (int l : touched) {
    worst_s = std::max(worst_s, load[l] / t.links[l].capacity_Bps);
    load[l] = 0;
  }
  return plan.latency_s + worst_s;
}

}  // namespace

namespace {

CollectivePlan plan_without_base_latency(const Topology& topology, CollectiveKind kind, const std::vector<int>& group,
                                         double bytes) {
  const int n = static_cast<int>(group.size());
  CollectivePlan plan;
  switch (kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      plan.algorithm = "ring";
      break;
    case CollectiveKind::AllToAll:
      plan.algorithm = "direct";
      break;
    case CollectiveKind::SendRecv:
      plan.algorithm = "p2p";
      break;
  }
  if (n <= 1) return plan;
  const Geometry geo = geometry_of(topology);

  if (kind == CollectiveKind::SendRecv) {
    if (n != 2) throw Error("internal", "", "send-recv needs exactly two members (sender, receiver)");
    const int src = group[0], dst = group[1];
    if (src == dst) return plan;
    plan.latency_s = topology.hop_latency_s(src, dst);
    if (bytes > 0) add_flow(topology, plan, src, dst, bytes, geo.nic_of_local(geo.local_of(src)));
    return plan;
  }

  if (kind == CollectiveKind::AllToAll) {
    double alpha_s = 0;
    for (int src : group)
      for (int dst : group) {
        if (src == dst) continue;
        alpha_s = std::max(alpha_s, topology.hop_latency_s(src, dst));
        if (bytes > 0) add_flow(topology, plan, src, dst, bytes / n, geo.nic_of_local(geo.local_of(src)));
      }
    plan.latency_s = alpha_s;
    return plan;
  }

  if (kind != CollectiveKind::AllReduce) return ring_plan(topology, group, bytes, n - 1);

  CollectivePlan ring = ring_plan(topology, group, bytes, 2 * (n - 1));
  bool crosses_nodes = false;
  for (int gpu : group) crosses_nodes = crosses_nodes || geo.node_of(gpu) != geo.node_of(group[0]);
  if (!crosses_nodes) return ring;
  CollectivePlan tree = tree_plan(topology, group, bytes);
  std::vector<double> load(topology.links.size(), 0);
  std::vector<int> touched;
  const double ring_s = estimate_s(topology, ring, load, touched);
  const double tree_s = estimate_s(topology, tree, load, touched);
  // Near-ties go to the ring: isomorphic sibling groups sum their link loads in different
  // orders, and a rounding-level difference must not give them different algorithms.
  return tree_s < ring_s * (1 - 1e-9) ? tree : ring;
}

}  // namespace

CollectivePlan plan_collective(const Topology& topology, CollectiveKind kind, const std::vector<int>& group,
                               double bytes) {
  CollectivePlan plan = plan_without_base_latency(topology, kind, group, bytes);
  const bool moves = group.size() > 1 && !(kind == CollectiveKind::SendRecv && group[0] == group[1]);
  if (moves) plan.latency_s += topology.cluster.collectives.base_latency_us * kSecondsPerUs;
  return plan;
}

}  // namespace proteus
