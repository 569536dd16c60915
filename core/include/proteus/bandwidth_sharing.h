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
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace proteus {

// A flow's links as add_flow takes them: (link id, weight) pairs in the caller's storage (a
// plan keeps the links of all its flows in one array; no vector per flow to chase). A view:
// made from a vector or a braced list, it is valid while that is (add_flow copies it).
class LinkWeights {
 public:
  using value_type = std::pair<int, double>;
  LinkWeights() = default;
  LinkWeights(const value_type* first, const value_type* last) : first_(first), last_(last) {}
  LinkWeights(const std::vector<value_type>& links)
      : LinkWeights(links.data(), links.data() + links.size()) {}
  LinkWeights(std::initializer_list<value_type> links) : LinkWeights(links.begin(), links.end()) {}
  const value_type* begin() const { return first_; }
  const value_type* end() const { return last_; }
  size_t size() const { return static_cast<size_t>(last_ - first_); }
  bool empty() const { return first_ == last_; }
  const value_type& operator[](size_t i) const { return first_[i]; }

 private:
  const value_type* first_ = nullptr;
  const value_type* last_ = nullptr;
};

class BandwidthSharing {
 public:
  explicit BandwidthSharing(std::vector<double> link_capacity_Bps, bool incremental = true);
  // links: (link id, weight) pairs. Returns a flow id (ids are reused after removal).
  int add_flow(LinkWeights links);
  void remove_flow(int flow);
  // Re-solves what changed since the last call; returns flows whose rate changed.
  const std::vector<int>& solve();
  // Inline: the executor reads every changed flow's rate after each solve.
  double rate_Bps(int flow) const {
    const size_t f = static_cast<size_t>(flow);
    return flow >= 0 && f < flows_.size() && flows_[f].alive ? flows_[f].rate_Bps : 0.0;
  }
  int active_flows() const;
  // Private state (flow/link incidence kept both ways; scratch buffers reused by solve()).
 private:
  struct FlowLink {
    int link;
    int slot;  // position of this flow in link_flows_[link]
    double weight;
  };
  struct LinkFlow {
    int flow;
    int index;  // position of this link in flow_links_[flow]
  };
  struct HeapEntry {
    double share;  // residual / weight sum: the rate at which the link saturates
    int link;
    uint32_t version;
  };
  // Everything the solver reads about a link, together (one or two cache lines rather
  // than one per field: the solver is bound by memory latency).
  struct LinkState {
    double capacity_Bps = 0;
    double residual_Bps = 0;  // solve_component scratch
    double weight_sum = 0;    // of the unfrozen flows (scratch)
    int unfrozen = 0;         // scratch
    uint32_t version = 0;     // of its live heap entry
    double heap_share = 0;    // the key of its live heap entry (scratch)
    uint64_t seen = 0;        // stamp
    uint64_t dirty = 0;       // == solves_ + 1: already in dirty_links_
  };
  struct FlowState {
    double rate_Bps = 0;
    uint64_t seen = 0, frozen = 0;  // stamps
    int size = 0;                   // links
    int alive = 0;
  };
  void collect_component(int seed_link, uint64_t stamp);
  void solve_component();
  bool sum_weights(bool integers_only);
  void push_link(int link, double share);
  void freeze_flows_of(int link, double level, uint64_t frozen);
  bool solve_single_flow(int seed_link, uint64_t stamp);
  void widen(size_t stride);
  int take_flow_id();
  static size_t canonicalize(FlowLink* links, size_t n);
  const FlowLink* links_begin(int f) const { return flow_links_.data() + static_cast<size_t>(f) * stride_; }
  const FlowLink* links_end(int f) const { return links_begin(f) + flows_[static_cast<size_t>(f)].size; }
  FlowLink* links_begin(int f) { return flow_links_.data() + static_cast<size_t>(f) * stride_; }

  bool incremental_;
  std::vector<LinkState> links_;
  std::vector<FlowState> flows_;
  // Flow f's links, sorted by link id: flow_links_[f * stride_ .. + size). One flat array
  // rather than a vector per flow: the solver walks these constantly, and flows come and go
  // by the million in a large simulation. stride_ grows to the longest flow seen.
  std::vector<FlowLink> flow_links_;
  size_t stride_ = 4;
  std::vector<std::vector<LinkFlow>> link_flows_;  // per link, flows through it
  std::vector<int> free_ids_;
  std::vector<int> dirty_links_;  // touched by add/remove since the last solve, once each
  uint64_t solves_ = 0;
  void mark_dirty(int link);
  std::vector<int> dirty_unlinked_;  // added flows that cross no link
  std::vector<int> changed_;
  void sort_changed();
  std::vector<uint32_t> changed_count_;  // sort_changed's counts by flow id, zero between calls
  int active_ = 0;
  // Scratch, reused across calls (no allocation in steady state).
  uint64_t stamp_ = 0;
  std::vector<int> stack_, comp_links_, comp_flows_;
  std::vector<HeapEntry> heap_;
};

}  // namespace proteus
