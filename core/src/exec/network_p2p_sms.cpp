#include "network_p2p_sms.h"

#include <algorithm>

namespace proteus {

int network_p2p_ctas(const Collective& collective, int member_gpu, const Topology& topology) {
  if (collective.kind != CollectiveKind::SendRecv && collective.kind != CollectiveKind::RingExchange)
    return 0;
  const std::vector<int>& ring = collective.group;
  const int n = static_cast<int>(ring.size());
  const auto at = std::find(ring.begin(), ring.end(), member_gpu);
  if (n < 2 || at == ring.end() || topology.gpus_per_node <= 0) return 0;
  const int i = static_cast<int>(at - ring.begin());
  const auto node = [&](int gpu) { return gpu / topology.gpus_per_node; };
  const int next = ring[static_cast<size_t>((i + 1) % n)], prev = ring[static_cast<size_t>((i + n - 1) % n)];
  if (node(next) == node(member_gpu) || node(prev) == node(member_gpu)) return 0;
  const int peers = n > 2 ? 2 : 1;
  return kNcclChannelsPerNetPeer * peers;
}

double sm_held_factor(int sm_count, int ctas) {
  if (ctas <= 0 || sm_count <= 1) return 1.0;
  const int free_sms = std::max(1, sm_count - ctas);
  return static_cast<double>(sm_count) / static_cast<double>(free_sms);
}

}  // namespace proteus
