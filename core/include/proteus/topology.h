// The cluster as directed links (DESIGN.md §3, HTAE): each link has a capacity in bytes/s
// (already multiplied by the NCCL bus efficiency of its level) and every GPU pair has a path.
//   nvswitch:    GPU tx -> (switch) -> GPU rx                     (one up- and one down-link per GPU)
//   nvlink-mesh: direct link i->j with links[i][j] * link_GBps; pairs with no link use PCIe
//   pcie-tree:   GPU -> switch -> CPU root -> (socket link) -> root -> switch -> GPU
//   across nodes: GPU -> PCIe -> NIC tx -> [leaf uplink] -> [leaf downlink] -> NIC rx -> PCIe -> GPU
// NIC k of a node serves GPUs k*g/nics .. (k+1)*g/nics-1; a ring channel c leaves and enters a
// node through NIC c % nics (NCCL rings through every NIC).
#pragma once
#include <string>
#include <vector>
#include "proteus/cluster_spec.h"

namespace proteus {

enum class LinkLevel : uint8_t { NvLink, Pcie, CpuLink, Nic, Fabric };

struct Link {
  LinkLevel level = LinkLevel::NvLink;
  double capacity_Bps = 0;  // effective (bus efficiency applied)
  std::string name;         // "node3.gpu5.nvlink.tx"
};

struct Topology {
  int nodes = 1;
  int gpus_per_node = 8;
  std::vector<Link> links;
  // Links a flow from src to dst GPU crosses; `channel` picks the NIC for inter-node flows.
  std::vector<int> path(int src_gpu, int dst_gpu, int channel) const;
  // Per-hop latency (alpha) between two GPUs, seconds: the slowest level on the path.
  double hop_latency_s(int src_gpu, int dst_gpu) const;
  // Channels NCCL would use for a ring over these GPUs (nics per node when it crosses nodes).
  int ring_channels(const std::vector<int>& group) const;
  ClusterSpec cluster;  // what it was built from
};

Topology build_topology(const ClusterSpec& cluster);

}  // namespace proteus
