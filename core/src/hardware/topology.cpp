// The cluster as directed links (topology.h). Links are laid out by formula, so that a path is
// computed on demand in O(path length) (O(g^2) for an NVLink mesh, g = GPUs per node) without
// any per-pair table, and a 16,384-GPU cluster builds in O(links).
//
// Layout of link ids (g GPUs, S PCIe switches, R CPU roots, k NICs per node):
//   per node n, a block of `per_node` links starting at n * per_node:
//     [nvswitch: g GPU up-links (tx), g GPU down-links (rx)]            level NvLink
//     [g PCIe GPU->switch, g PCIe switch->GPU]                           level Pcie
//     [S PCIe switch->root, S PCIe root->switch]                         level Pcie
//     [R*(R-1) root->root socket links]                                  level CpuLink
//     [k NIC tx, k NIC rx]                                               level Nic
//   then, after all nodes:
//     [nvlink-mesh: per node, one link per connected ordered pair (i, j), row-major]
//     [leaf up-links, leaf down-links] when nodes_per_leaf > 0 and there are several leaves
//
// Modelling choices (documented here because they are simplifications):
// - Every node has a PCIe tree, whatever its GPU interconnect: it carries the GPU <-> NIC hop
//   and, on an NVLink mesh, the pairs with no NVLink. pcie_fanout = {GPUs per switch,
//   switches per root, roots}; empty means one switch and one root for the whole node.
// - Across nodes the GPU <-> NIC hop is the GPU's own PCIe link, even when the ring's NIC hangs
//   under another switch (NCCL's PXN moves such traffic over NVLink first); the NIC used is
//   channel % nics.
// - Capacities: NVLink, PCIe and socket links use intra_node.bus_efficiency; NIC and fabric
//   links use inter_node.bus_efficiency. A socket link with cpu_link_GBps = 0 runs at pcie_GBps.
// - Hop latency: inside a node intra_node.latency_us over NVLink, pcie_latency_us over PCIe;
//   across nodes inter_node.latency_us (NCCL's network hop constant already covers the
//   GPUDirect PCIe traversal).
#include "proteus/topology.h"
#include <algorithm>
#include <string>
#include "nvlink_rings.h"
#include "proteus/error.h"
#include "proteus/units.h"

namespace proteus {
namespace {

struct Layout {
  int g = 1, nics = 1;
  int gpus_per_switch = 1, switches_per_root = 1, roots = 1, switches = 1;
  bool nvswitch = false, mesh = false;
  int nvl = 0, pcie_gpu = 0, pcie_sw = 0, cpu = 0, nic = 0, per_node = 0;
  int nodes = 1, mesh_base = 0, mesh_per_node = 0;
  int nodes_per_leaf = 0, leaves = 1, fabric_base = 0, total = 0;
};

Layout layout_of(const ClusterSpec& c) {
  Layout L;
  L.g = std::max(1, c.gpus_per_node);
  L.nodes = std::max(1, c.nodes);
  L.nics = std::max(1, c.inter_node.nics_per_node);
  const auto& fan = c.intra_node.pcie_fanout;
  if (fan.size() >= 3) {
    L.gpus_per_switch = std::max(1, fan[0]);
    L.switches_per_root = std::max(1, fan[1]);
    L.roots = std::max(1, fan[2]);
  } else {
    L.gpus_per_switch = L.g;
  }
  L.switches = (L.g + L.gpus_per_switch - 1) / L.gpus_per_switch;
  L.nvswitch = c.intra_node.kind == IntraNodeKind::NvSwitch;
  L.mesh = c.intra_node.kind == IntraNodeKind::NvLinkMesh;
  int at = 0;
  L.nvl = at;
  at += L.nvswitch ? 2 * L.g : 0;
  L.pcie_gpu = at;
  at += 2 * L.g;
  L.pcie_sw = at;
  at += 2 * L.switches;
  L.cpu = at;
  at += L.roots * (L.roots - 1);
  L.nic = at;
  at += 2 * L.nics;
  L.per_node = at;
  L.mesh_base = L.nodes * L.per_node;
  if (L.mesh) {
    for (int i = 0; i < L.g; ++i)
      for (int j = 0; j < L.g; ++j)
        if (i != j && c.intra_node.links[i][j] > 0) ++L.mesh_per_node;
  }
  L.fabric_base = L.mesh_base + L.nodes * L.mesh_per_node;
  L.nodes_per_leaf = c.inter_node.nodes_per_leaf;
  L.leaves = L.nodes_per_leaf > 0 ? (L.nodes + L.nodes_per_leaf - 1) / L.nodes_per_leaf : 1;
  L.total = L.fabric_base + (L.leaves > 1 ? 2 * L.leaves : 0);
  return L;
}

// Index of the connected ordered pair (i, j) among the node's mesh links (row-major).
int mesh_pair_index(const ClusterSpec& c, int g, int i, int j) {
  int index = 0;
  for (int a = 0; a < g; ++a)
    for (int b = 0; b < g; ++b) {
      if (a == i && b == j) return index;
      if (a != b && c.intra_node.links[a][b] > 0) ++index;
    }
  return -1;
}

bool mesh_connected(const ClusterSpec& c, int i, int j) { return c.intra_node.links[i][j] > 0; }

int root_of_switch(const Layout& L, int sw) { return std::min(L.roots - 1, sw / L.switches_per_root); }

int cpu_link(const Layout& L, int base, int from_root, int to_root) {
  // Directed pairs (a, b), a != b, row-major, skipping the diagonal.
  return base + L.cpu + from_root * (L.roots - 1) + (to_root < from_root ? to_root : to_root - 1);
}

// Up the PCIe tree only as far as needed: PIX (same switch), PHB (same root), SYS (sockets).
void pcie_path(const Layout& L, int base, int a, int b, std::vector<int>& out) {
  const int sa = a / L.gpus_per_switch, sb = b / L.gpus_per_switch;
  out.push_back(base + L.pcie_gpu + a);
  if (sa != sb) {
    out.push_back(base + L.pcie_sw + sa);
    const int ra = root_of_switch(L, sa), rb = root_of_switch(L, sb);
    if (ra != rb) out.push_back(cpu_link(L, base, ra, rb));
    out.push_back(base + L.pcie_sw + L.switches + sb);
  }
  out.push_back(base + L.pcie_gpu + L.g + b);
}

void validate(const ClusterSpec& c) {
  if (c.nodes < 1) throw invalid_config("cluster.nodes", "nodes must be at least 1");
  if (c.gpus_per_node < 1) throw invalid_config("cluster.gpus_per_node", "gpus_per_node must be at least 1");
  if (c.inter_node.nics_per_node < 1)
    throw invalid_config("cluster.inter_node.nics_per_node", "nics_per_node must be at least 1");
  const auto& fan = c.intra_node.pcie_fanout;
  if (!fan.empty()) {
    if (fan.size() != 3 || fan[0] < 1 || fan[1] < 1 || fan[2] < 1)
      throw invalid_config("cluster.intra_node.pcie_fanout",
                           "pcie_fanout must be {gpus per switch, switches per root, roots}, all >= 1");
    if (static_cast<long>(fan[0]) * fan[1] * fan[2] < c.gpus_per_node)
      throw invalid_config("cluster.intra_node.pcie_fanout",
                           "pcie_fanout holds fewer GPUs than gpus_per_node");
  }
  if (c.intra_node.kind == IntraNodeKind::NvLinkMesh) {
    const auto& links = c.intra_node.links;
    bool square = static_cast<int>(links.size()) == c.gpus_per_node;
    for (const auto& row : links) square = square && static_cast<int>(row.size()) == c.gpus_per_node;
    if (!square)
      throw invalid_config("cluster.intra_node.links",
                           "links must be a gpus_per_node x gpus_per_node matrix");
    for (int i = 0; i < c.gpus_per_node; ++i)
      for (int j = 0; j < c.gpus_per_node; ++j)
        if (links[i][j] != links[j][i] || links[i][j] < 0)
          throw invalid_config("cluster.intra_node.links", "links must be symmetric and non-negative");
  }
  if (c.inter_node.nodes_per_leaf < 0)
    throw invalid_config("cluster.inter_node.nodes_per_leaf", "nodes_per_leaf must be >= 0");
  if (c.inter_node.nodes_per_leaf > 0 && c.inter_node.oversubscription <= 0)
    throw invalid_config("cluster.inter_node.oversubscription", "oversubscription must be > 0");
}

}  // namespace

Topology build_topology(const ClusterSpec& cluster) {
  validate(cluster);
  const Layout L = layout_of(cluster);
  const auto& in = cluster.intra_node;
  const auto& net = cluster.inter_node;
  const double nvlink_Bps = in.link_GBps * kBytesPerGB * in.bus_efficiency;
  const double pcie_Bps = in.pcie_GBps * kBytesPerGB * in.bus_efficiency;
  const double cpu_Bps =
      (in.cpu_link_GBps > 0 ? in.cpu_link_GBps : in.pcie_GBps) * kBytesPerGB * in.bus_efficiency;
  const double nic_Bps = net.nic_GBps * kBytesPerGB * net.bus_efficiency;

  Topology t;
  t.nodes = L.nodes;
  t.gpus_per_node = L.g;
  t.cluster = cluster;
  t.links.resize(L.total);
  auto set = [&](int id, LinkLevel level, double cap, std::string name) {
    Link& l = t.links[id];
    l.level = level;
    l.capacity_Bps = cap;
    l.name = std::move(name);
  };
  for (int n = 0; n < L.nodes; ++n) {
    const int base = n * L.per_node;
    const std::string node = "node" + std::to_string(n) + ".";
    for (int i = 0; i < L.g; ++i) {
      const std::string gpu = node + "gpu" + std::to_string(i);
      if (L.nvswitch) {
        set(base + L.nvl + i, LinkLevel::NvLink, nvlink_Bps, gpu + ".nvlink.tx");
        set(base + L.nvl + L.g + i, LinkLevel::NvLink, nvlink_Bps, gpu + ".nvlink.rx");
      }
      set(base + L.pcie_gpu + i, LinkLevel::Pcie, pcie_Bps, gpu + ".pcie.up");
      set(base + L.pcie_gpu + L.g + i, LinkLevel::Pcie, pcie_Bps, gpu + ".pcie.down");
    }
    for (int s = 0; s < L.switches; ++s) {
      const std::string sw = node + "sw" + std::to_string(s);
      set(base + L.pcie_sw + s, LinkLevel::Pcie, pcie_Bps, sw + ".pcie.up");
      set(base + L.pcie_sw + L.switches + s, LinkLevel::Pcie, pcie_Bps, sw + ".pcie.down");
    }
    for (int a = 0; a < L.roots; ++a)
      for (int b = 0; b < L.roots; ++b)
        if (a != b)
          set(cpu_link(L, base, a, b), LinkLevel::CpuLink, cpu_Bps,
              node + "cpu" + std::to_string(a) + "-cpu" + std::to_string(b));
    for (int k = 0; k < L.nics; ++k) {
      const std::string nic = node + "nic" + std::to_string(k);
      set(base + L.nic + k, LinkLevel::Nic, nic_Bps, nic + ".tx");
      set(base + L.nic + L.nics + k, LinkLevel::Nic, nic_Bps, nic + ".rx");
    }
    if (L.mesh) {
      int index = L.mesh_base + n * L.mesh_per_node;
      for (int i = 0; i < L.g; ++i)
        for (int j = 0; j < L.g; ++j)
          if (i != j && in.links[i][j] > 0)
            set(index++, LinkLevel::NvLink, in.links[i][j] * nvlink_Bps,
                node + "gpu" + std::to_string(i) + "-gpu" + std::to_string(j) + ".nvlink");
    }
  }
  if (L.leaves > 1) {
    // A leaf's up-link aggregates its nodes' NIC bandwidth divided by the oversubscription.
    const double leaf_Bps = L.nodes_per_leaf * L.nics * nic_Bps / net.oversubscription;
    for (int f = 0; f < L.leaves; ++f) {
      const std::string leaf = "leaf" + std::to_string(f);
      set(L.fabric_base + f, LinkLevel::Fabric, leaf_Bps, leaf + ".up");
      set(L.fabric_base + L.leaves + f, LinkLevel::Fabric, leaf_Bps, leaf + ".down");
    }
  }
  return t;
}

std::vector<int> Topology::path(int src_gpu, int dst_gpu, int channel) const {
  std::vector<int> out;
  if (src_gpu == dst_gpu) return out;
  const Layout L = layout_of(cluster);
  const int sn = src_gpu / L.g, si = src_gpu % L.g;
  const int dn = dst_gpu / L.g, di = dst_gpu % L.g;
  const int sbase = sn * L.per_node, dbase = dn * L.per_node;
  if (sn == dn) {
    if (L.nvswitch) {
      out.push_back(sbase + L.nvl + si);
      out.push_back(sbase + L.nvl + L.g + di);
    } else if (L.mesh && mesh_connected(cluster, si, di)) {
      out.push_back(L.mesh_base + sn * L.mesh_per_node + mesh_pair_index(cluster, L.g, si, di));
    } else {
      pcie_path(L, sbase, si, di, out);
    }
    return out;
  }
  const int nic = ((channel % L.nics) + L.nics) % L.nics;
  out.push_back(sbase + L.pcie_gpu + si);
  out.push_back(sbase + L.nic + nic);
  if (L.leaves > 1) {
    const int sl = sn / L.nodes_per_leaf, dl = dn / L.nodes_per_leaf;
    if (sl != dl) {
      out.push_back(L.fabric_base + sl);
      out.push_back(L.fabric_base + L.leaves + dl);
    }
  }
  out.push_back(dbase + L.nic + L.nics + nic);
  out.push_back(dbase + L.pcie_gpu + L.g + di);
  return out;
}

double Topology::hop_latency_s(int src_gpu, int dst_gpu) const {
  if (src_gpu == dst_gpu) return 0;
  const int g = std::max(1, gpus_per_node);
  if (src_gpu / g != dst_gpu / g) return cluster.inter_node.latency_us * kSecondsPerUs;
  const auto& in = cluster.intra_node;
  switch (in.kind) {
    case IntraNodeKind::NvSwitch:
      return in.latency_us * kSecondsPerUs;
    case IntraNodeKind::NvLinkMesh:
      return (mesh_connected(cluster, src_gpu % g, dst_gpu % g) ? in.latency_us : in.pcie_latency_us) *
             kSecondsPerUs;
    case IntraNodeKind::PcieTree:
      break;
  }
  return in.pcie_latency_us * kSecondsPerUs;
}

int Topology::ring_channels(const std::vector<int>& group) const {
  if (group.size() <= 1) return 1;
  const int g = std::max(1, gpus_per_node);
  const int node = group[0] / g;
  for (int gpu : group)
    if (gpu / g != node) return std::max(1, cluster.inter_node.nics_per_node);
  if (cluster.intra_node.kind != IntraNodeKind::NvLinkMesh) return 1;
  // NVLink mesh: a ring and its reverse per edge-disjoint NVLink cycle.
  std::vector<int> local;
  local.reserve(group.size());
  for (int gpu : group) local.push_back(gpu % g);
  const auto cycles = nvlink_mesh_cycles(cluster.intra_node, local);
  return cycles.empty() ? 1 : 2 * static_cast<int>(cycles.size());
}

}  // namespace proteus
