#include "network_p2p_sms.h"

#include <algorithm>

namespace proteus {

namespace {

// Where the member on `member_gpu` sits in a send-recv or ring exchange: its peers (the next and
// the previous member, one peer for a pair) and how many of them are on its own node.
struct RingPeers {
  int peers = 0;  // 0: not a member of such a collective
  int local = 0;
};

RingPeers ring_peers(const Collective& collective, int member_gpu, const Topology& topology) {
  if (collective.kind != CollectiveKind::SendRecv && collective.kind != CollectiveKind::RingExchange)
    return {};
  const std::vector<int>& ring = collective.group;
  const int n = static_cast<int>(ring.size());
  const auto at = std::find(ring.begin(), ring.end(), member_gpu);
  if (n < 2 || at == ring.end() || topology.gpus_per_node <= 0) return {};
  const int i = static_cast<int>(at - ring.begin());
  const auto node = [&](int gpu) { return gpu / topology.gpus_per_node; };
  const int next = ring[static_cast<size_t>((i + 1) % n)], prev = ring[static_cast<size_t>((i + n - 1) % n)];
  if (n == 2) return {1, node(next) == node(member_gpu) ? 1 : 0};
  return {2, (node(next) == node(member_gpu) ? 1 : 0) + (node(prev) == node(member_gpu) ? 1 : 0)};
}

}  // namespace

int network_p2p_ctas(const Collective& collective, int member_gpu, const Topology& topology) {
  const RingPeers r = ring_peers(collective, member_gpu, topology);
  return r.peers > 0 && r.local == 0 ? kNcclChannelsPerNetPeer * r.peers : 0;
}

int network_p2p_ctas_after_local(const Collective& collective, int member_gpu, const Topology& topology) {
  if (collective.kind != CollectiveKind::RingExchange || topology.gpus_per_node <= 0) return -1;
  const RingPeers r = ring_peers(collective, member_gpu, topology);
  const int node = member_gpu / topology.gpus_per_node;
  const bool leaves_node = std::any_of(collective.group.begin(), collective.group.end(),
                                       [&](int gpu) { return gpu / topology.gpus_per_node != node; });
  if (r.peers != 2 || r.local == 0 || !leaves_node) return -1;
  return kNcclChannelsPerNetPeer * (r.peers - r.local);
}

double sm_held_factor(int sm_count, int ctas) {
  if (ctas <= 0 || sm_count <= 1) return 1.0;
  const int free_sms = std::max(1, sm_count - ctas);
  return static_cast<double>(sm_count) / static_cast<double>(free_sms);
}

}  // namespace proteus
