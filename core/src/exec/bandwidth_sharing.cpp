// Weighted max-min fair sharing by progressive filling (bandwidth_sharing.h states the maths).
//
// Algorithm for one connected component (flows <-> links):
//   residual_l = C_l, W_l = sum of weights of unfrozen flows through l.
//   All unfrozen flows share one rate level x; link l saturates at x_l = residual_l / W_l.
//   Repeatedly take the link with the smallest x_l (a heap with lazy deletion, ties broken by
//   link id), freeze every unfrozen flow through it at x = max(x_l, previous x), subtract
//   w * x from the residual of each link those flows cross, and re-key the links touched
//   (lazily: only a link whose x_l falls is pushed at once; solve_component says why).
//   Cost O((links + sum of path lengths) * log) per component.
// Numerical care: a residual at or below 1e-12 of the link's capacity counts as zero (the
// link is saturated); the level never decreases, so rounding cannot freeze a flow below the
// level of a link frozen earlier.
//
// Incremental: add/remove mark the flow's links dirty; solve() re-solves the connected
// components reached from dirty links, and only those. With incremental = false every
// component is re-solved. Components are solved independently and canonically (weights
// summed in flow id order, or in any order where that is exact; links popped in (share, id)
// order), so both modes produce bit-identical rates.
// A flow that crosses no link is unconstrained: its rate is +infinity (it takes no time).
#include "proteus/bandwidth_sharing.h"
#include <algorithm>
#include <limits>
#include "proteus/error.h"

namespace proteus {
namespace {

constexpr double kSaturatedRelative = 1e-12;  // residual <= this * capacity means saturated

bool heap_after(double share_a, int link_a, double share_b, int link_b) {
  // true when a comes after b in the min-heap order (share, then link id)
  return share_a > share_b || (share_a == share_b && link_a > link_b);
}

}  // namespace

BandwidthSharing::BandwidthSharing(std::vector<double> link_capacity_Bps, bool incremental)
    : incremental_(incremental), links_(link_capacity_Bps.size()), link_flows_(link_capacity_Bps.size()) {
  for (size_t l = 0; l < links_.size(); ++l) links_[l].capacity_Bps = link_capacity_Bps[l];
}

// Re-lays the flat link array with a larger stride (every flow keeps its links and slots).
void BandwidthSharing::widen(size_t stride) {
  std::vector<FlowLink> wider(flows_.size() * stride);
  for (size_t f = 0; f < flows_.size(); ++f)
    std::copy(
        flow_links_.begin() + static_cast<std::ptrdiff_t>(f * stride_),
        flow_links_.begin() + static_cast<std::ptrdiff_t>(f * stride_ + static_cast<size_t>(flows_[f].size)),
        wider.begin() + static_cast<std::ptrdiff_t>(f * stride));
  flow_links_ = std::move(wider);
  stride_ = stride;
}

// Writes the flow's links straight into its slot of flow_links_, checking them on the way:
// the executor's links come canonical (sorted by id, no duplicates, weights > 0: a plan's
// solver_links), so the common case is one pass, with no staging buffer.
int BandwidthSharing::add_flow(LinkWeights links) {
  if (links.size() > stride_) widen(links.size());  // room for all (weight-0 links are dropped)
  const int f = take_flow_id();
  FlowLink* out = links_begin(f);
  const int link_count = static_cast<int>(links_.size());
  size_t n = 0;
  bool canonical = true;  // sorted by link id with no duplicates (the executor's case)
  int prev = -1;
  for (const auto& [link, weight] : links) {
    if (link < 0 || link >= link_count) {
      free_ids_.push_back(f);  // unused: the solver is as it was
      throw Error("internal", "", "bandwidth sharing: flow crosses unknown link " + std::to_string(link));
    }
    if (weight > 0) {
      canonical = canonical && link > prev;
      prev = link;
      out[n++] = {link, -1, weight};
    }
  }
  if (!canonical) n = canonicalize(out, n);
  for (size_t i = 0; i < n; ++i) {
    auto& lf = link_flows_[static_cast<size_t>(out[i].link)];
    out[i].slot = static_cast<int>(lf.size());
    lf.push_back({f, static_cast<int>(i)});
  }
  // The new flow joins all its links into one component, which solve reaches from any of
  // them (and solves alike from any seed): one dirty link is enough.
  if (n > 0) mark_dirty(out[0].link);
  FlowState& st = flows_[static_cast<size_t>(f)];
  st.size = static_cast<int>(n);
  if (n == 0) dirty_unlinked_.push_back(f);
  st.alive = 1;
  st.rate_Bps = 0;
  ++active_;
  return f;
}

// A free flow id (ids are reused after removal), with room for stride_ links.
int BandwidthSharing::take_flow_id() {
  if (!free_ids_.empty()) {
    const int f = free_ids_.back();
    free_ids_.pop_back();
    return f;
  }
  flows_.emplace_back();
  flow_links_.resize(flow_links_.size() + stride_);
  return static_cast<int>(flows_.size()) - 1;
}

// Canonical form of n links in place: sorted by link id, duplicate links merged (weights add
// up). Returns how many remain.
size_t BandwidthSharing::canonicalize(FlowLink* links, size_t n) {
  std::stable_sort(links, links + n, [](const FlowLink& a, const FlowLink& b) { return a.link < b.link; });
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (out > 0 && links[out - 1].link == links[i].link)
      links[out - 1].weight += links[i].weight;
    else
      links[out++] = links[i];
  }
  return out;
}

// Flows come and go many at a time through the same links (the hops of one collective):
// each link is listed once per solve.
void BandwidthSharing::mark_dirty(int link) {
  LinkState& ls = links_[static_cast<size_t>(link)];
  if (ls.dirty == solves_ + 1) return;
  ls.dirty = solves_ + 1;
  dirty_links_.push_back(link);
}

void BandwidthSharing::remove_flow(int flow) {
  if (flow < 0 || flow >= static_cast<int>(flows_.size()) || !flows_[static_cast<size_t>(flow)].alive)
    throw Error("internal", "", "bandwidth sharing: removing unknown flow " + std::to_string(flow));
  for (const FlowLink* x = links_begin(flow); x != links_end(flow); ++x) {
    auto& lf = link_flows_[static_cast<size_t>(x->link)];
    // Swap-remove; the moved entry's flow learns its new slot.
    const LinkFlow last = lf.back();
    lf[static_cast<size_t>(x->slot)] = last;
    links_begin(last.flow)[last.index].slot = x->slot;
    lf.pop_back();
    // A link left without flows has nothing to re-solve (solve would skip it); one that keeps
    // flows has their shares to raise.
    if (!lf.empty()) mark_dirty(x->link);
  }
  FlowState& st = flows_[static_cast<size_t>(flow)];
  st.size = 0;
  st.alive = 0;
  st.rate_Bps = 0;
  --active_;
  free_ids_.push_back(flow);
}

// The component's links and flows, in search order. The links need no order (the heap
// orders them by (share, id)); the flows are put in id order by sum_weights when it matters.
void BandwidthSharing::collect_component(int seed_link, uint64_t stamp) {
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  stack_.push_back(seed_link);
  links_[static_cast<size_t>(seed_link)].seen = stamp;
  while (!stack_.empty()) {
    const int l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    for (const LinkFlow& lf : link_flows_[static_cast<size_t>(l)]) {
      FlowState& fs = flows_[static_cast<size_t>(lf.flow)];
      if (fs.seen == stamp) continue;
      fs.seen = stamp;
      comp_flows_.push_back(lf.flow);
      for (const FlowLink* x = links_begin(lf.flow); x != links_end(lf.flow); ++x) {
        LinkState& ls = links_[static_cast<size_t>(x->link)];
        if (ls.seen == stamp) continue;
        ls.seen = stamp;
        stack_.push_back(x->link);
      }
    }
  }
}

// A component of one flow (the common case: a ring hop or a send whose links nothing else
// crosses): progressive filling freezes it at the smallest capacity / weight over its links,
// which is what solve_component computes for it, without the heap.
bool BandwidthSharing::solve_single_flow(int seed_link, uint64_t stamp) {
  if (link_flows_[static_cast<size_t>(seed_link)].size() != 1) return false;
  const int f = link_flows_[static_cast<size_t>(seed_link)][0].flow;
  for (const FlowLink* x = links_begin(f); x != links_end(f); ++x)
    if (link_flows_[static_cast<size_t>(x->link)].size() != 1) return false;
  double level = std::numeric_limits<double>::infinity();
  for (const FlowLink* x = links_begin(f); x != links_end(f); ++x) {
    LinkState& ls = links_[static_cast<size_t>(x->link)];
    ls.seen = stamp;
    level = std::min(level, ls.capacity_Bps / x->weight);
  }
  FlowState& fs = flows_[static_cast<size_t>(f)];
  if (fs.rate_Bps != level) {
    fs.rate_Bps = level;
    changed_.push_back(f);
  }
  return true;
}

void BandwidthSharing::solve_component() {
  const uint64_t frozen = ++stamp_;
  for (int l : comp_links_) {
    LinkState& ls = links_[static_cast<size_t>(l)];
    ls.residual_Bps = ls.capacity_Bps;
    ls.weight_sum = 0;
    ls.unfrozen = 0;
  }
  if (!sum_weights(/*integers_only=*/true)) {
    std::sort(comp_flows_.begin(), comp_flows_.end());
    for (int l : comp_links_) {
      links_[static_cast<size_t>(l)].weight_sum = 0;
      links_[static_cast<size_t>(l)].unfrozen = 0;
    }
    sum_weights(/*integers_only=*/false);
  }
  auto after = [](const HeapEntry& a, const HeapEntry& b) {
    return heap_after(a.share, a.link, b.share, b.link);
  };
  heap_.clear();
  for (int l : comp_links_) {
    LinkState& ls = links_[static_cast<size_t>(l)];
    ++ls.version;
    ls.heap_share = ls.residual_Bps / ls.weight_sum;
    heap_.push_back({ls.heap_share, l, ls.version});
  }
  std::make_heap(heap_.begin(), heap_.end(), after);

  double level = 0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), after);
    const HeapEntry top = heap_.back();
    heap_.pop_back();
    const int l = top.link;
    LinkState& popped = links_[static_cast<size_t>(l)];
    if (top.version != popped.version || popped.unfrozen == 0) continue;
    // Lazy re-keying: a link's share rose since its entry was pushed (freezing flows at a
    // level at most its share does that); put it back at its share now. Every live entry
    // is a lower bound of its link's share, so an entry that is still exact is the least
    // (share, id): the order of links, and so every rate, is that of re-keying eagerly.
    const double share = popped.residual_Bps / popped.weight_sum;
    if (share > top.share) {
      push_link(l, share);
      continue;
    }
    level = std::max(level, top.share);
    freeze_flows_of(l, level, frozen);
  }
}

// Each link's weight sum and flow count over the component's flows. The canonical order of
// the sums is by flow id, so that a component's rates do not depend on where the search
// started. But integers add up exactly in any order (below 2^53: at most 2^20 flows of
// weight at most 2^32), so with integer weights (the common case: counts of sibling and
// identical flows) the search order gives the same bits, and the sort is skipped. With
// integers_only, returns false at the first weight that is not one (the sums are partial).
bool BandwidthSharing::sum_weights(bool integers_only) {
  constexpr double kMaxExactWeight = 4294967296.0;  // 2^32
  if (integers_only && comp_flows_.size() > (size_t{1} << 20)) return false;
  for (int f : comp_flows_)
    for (const FlowLink* x = links_begin(f); x != links_end(f); ++x) {
      const double w = x->weight;
      if (integers_only && !(w <= kMaxExactWeight && static_cast<double>(static_cast<int64_t>(w)) == w))
        return false;
      LinkState& ls = links_[static_cast<size_t>(x->link)];
      ls.weight_sum += w;
      ++ls.unfrozen;
    }
  return true;
}

void BandwidthSharing::push_link(int link, double share) {
  auto after = [](const HeapEntry& a, const HeapEntry& b) {
    return heap_after(a.share, a.link, b.share, b.link);
  };
  LinkState& ls = links_[static_cast<size_t>(link)];
  ++ls.version;
  ls.heap_share = share;
  heap_.push_back({share, link, ls.version});
  std::push_heap(heap_.begin(), heap_.end(), after);
}

// Freezes the unfrozen flows through `link` at `level` and takes their bandwidth off every
// link they cross. A link whose share falls (rounding, or a residual clamped to zero) is
// pushed at once, keeping its entry a lower bound; one whose share rises waits to be popped.
void BandwidthSharing::freeze_flows_of(int link, double level, uint64_t frozen) {
  for (const LinkFlow& lf : link_flows_[static_cast<size_t>(link)]) {
    const int f = lf.flow;
    FlowState& fs = flows_[static_cast<size_t>(f)];
    if (fs.frozen == frozen) continue;
    fs.frozen = frozen;
    if (fs.rate_Bps != level) {
      fs.rate_Bps = level;
      changed_.push_back(f);
    }
    for (const FlowLink* x = links_begin(f); x != links_end(f); ++x) {
      LinkState& k = links_[static_cast<size_t>(x->link)];
      k.residual_Bps -= x->weight * level;
      if (k.residual_Bps <= kSaturatedRelative * k.capacity_Bps) k.residual_Bps = 0;
      k.weight_sum -= x->weight;
      if (--k.unfrozen == 0) {
        k.weight_sum = 0;
        continue;
      }
      const double share = k.residual_Bps / k.weight_sum;
      if (!(share >= k.heap_share)) push_link(x->link, share);  // NaN too, as an eager push would
    }
  }
}

const std::vector<int>& BandwidthSharing::solve() {
  changed_.clear();
  const uint64_t seen = ++stamp_;
  auto visit = [&](int l) {
    if (links_[static_cast<size_t>(l)].seen == seen || link_flows_[static_cast<size_t>(l)].empty()) return;
    if (solve_single_flow(l, seen)) return;
    collect_component(l, seen);
    solve_component();
  };
  if (incremental_) {
    for (int l : dirty_links_) visit(l);
  } else {
    for (int l = 0; l < static_cast<int>(links_.size()); ++l) visit(l);
  }
  for (int f : dirty_unlinked_) {
    FlowState& fs = flows_[static_cast<size_t>(f)];
    if (fs.alive && fs.size == 0 && fs.rate_Bps != std::numeric_limits<double>::infinity()) {
      fs.rate_Bps = std::numeric_limits<double>::infinity();
      changed_.push_back(f);
    }
  }
  dirty_links_.clear();
  dirty_unlinked_.clear();
  ++solves_;
  sort_changed();
  return changed_;
}

// changed_ in increasing order. A data-parallel ring over thousands of GPUs changes the rates
// of most of its hop flows at once, and comparison sorting them was a tenth of such a run
// (DP 512 on 8,192 V100s: 8.9% of the samples in std::sort). When the ids are dense in their
// range, counting them sorts in linear time; the result is the same sequence either way.
void BandwidthSharing::sort_changed() {
  constexpr size_t kDenseFactor = 8;  // count when the range is at most 8x the ids
  if (changed_.size() < 64) {
    std::sort(changed_.begin(), changed_.end());
    return;
  }
  const auto [lo, hi] = std::minmax_element(changed_.begin(), changed_.end());
  const int first = *lo, last = *hi;
  const size_t range = static_cast<size_t>(last - first) + 1;
  if (range > kDenseFactor * changed_.size()) {
    std::sort(changed_.begin(), changed_.end());
    return;
  }
  if (changed_count_.size() < flows_.size()) changed_count_.resize(flows_.size(), 0);
  for (int f : changed_) ++changed_count_[static_cast<size_t>(f)];
  size_t out = 0;
  for (int f = first; f <= last; ++f) {
    uint32_t& n = changed_count_[static_cast<size_t>(f)];
    for (; n > 0; --n) changed_[out++] = f;
  }
}

int BandwidthSharing::active_flows() const { return active_; }

}  // namespace proteus
