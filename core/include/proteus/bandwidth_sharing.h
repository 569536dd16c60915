// The numerical kernel of the network model: max-min fair sharing of link bandwidth among
// flows, by progressive filling, with weights (a flow of weight w stands for w identical
// flows, each getting the flow's rate; used by the symmetry reduction).
//
// Maths: find rates r_f maximizing the minimum, then the next minimum, ... subject to
// sum_f w_{f,l} * r_f <= C_l for every link l. Progressive filling: raise all unfrozen rates
// together; the first link to saturate freezes the flows through it; repeat.
// Worked example: link A (10 B/s) carries f1, f2; link B (4 B/s) carries f2 only.
//   Raise both: B saturates at r=4 (f2 frozen at 4); A then has 10-4=6 for f1 -> r1 = 6.
//
// Incremental: a change only re-solves the connected component of flows and links it
// touches; `incremental = false` re-solves everything (tests check both agree).
// No I/O, no globals, integer ids.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace proteus {

class BandwidthSharing {
 public:
  explicit BandwidthSharing(std::vector<double> link_capacity_Bps, bool incremental = true);
  // links: (link id, weight) pairs. Returns a flow id (ids are reused after removal).
  int add_flow(const std::vector<std::pair<int, double>>& links);
  void remove_flow(int flow);
  // Re-solves what changed since the last call; returns flows whose rate changed.
  const std::vector<int>& solve();
  double rate_Bps(int flow) const;
  int active_flows() const;
  // ... private members as the implementation needs
 private:
  struct Impl;
  std::vector<double> capacity_;
  bool incremental_;
  // implementation-defined state follows in the .cpp via these containers
  std::vector<std::vector<std::pair<int, double>>> flow_links_;
  std::vector<std::vector<int>> link_flows_;
  std::vector<double> rate_;
  std::vector<char> alive_;
  std::vector<int> free_ids_;
  std::vector<int> dirty_links_;
  std::vector<int> changed_;
  int active_ = 0;
};

}  // namespace proteus
