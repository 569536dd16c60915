// Weighted max-min fair sharing by progressive filling (bandwidth_sharing.h states the maths).
//
// Algorithm for one connected component (flows <-> links):
//   residual_l = C_l, W_l = sum of weights of unfrozen flows through l.
//   All unfrozen flows share one rate level x; link l saturates at x_l = residual_l / W_l.
//   Repeatedly take the link with the smallest x_l (a heap with lazy deletion, ties broken by
//   link id), freeze every unfrozen flow through it at x = max(x_l, previous x), subtract
//   w * x from the residual of each link those flows cross, and re-key the links touched.
//   Cost O((links + sum of path lengths) * log) per component.
// Numerical care: a residual at or below 1e-12 of the link's capacity counts as zero (the
// link is saturated); the level never decreases, so rounding cannot freeze a flow below the
// level of a link frozen earlier.
//
// Incremental: add/remove mark the flow's links dirty; solve() re-solves the connected
// components reached from dirty links, and only those. With incremental = false every
// component is re-solved. Components are solved independently and canonically (their
// links and flows sorted by id), so both modes produce bit-identical rates.
// A flow that crosses no link is unconstrained: its rate is +infinity (it takes no time).
#include <algorithm>
#include <limits>
#include "proteus/bandwidth_sharing.h"
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
    : capacity_(std::move(link_capacity_Bps)), incremental_(incremental) {
  const size_t n = capacity_.size();
  link_flows_.resize(n);
  link_seen_.assign(n, 0);
  link_touched_.assign(n, 0);
  residual_Bps_.assign(n, 0);
  weight_sum_.assign(n, 0);
  unfrozen_.assign(n, 0);
  version_.assign(n, 0);
}

// Re-lays the flat link array with a larger stride (every flow keeps its links and slots).
void BandwidthSharing::widen(size_t stride) {
  std::vector<FlowLink> wider(flow_size_.size() * stride);
  for (size_t f = 0; f < flow_size_.size(); ++f)
    std::copy(flow_links_.begin() + static_cast<std::ptrdiff_t>(f * stride_),
              flow_links_.begin() + static_cast<std::ptrdiff_t>(f * stride_ + static_cast<size_t>(flow_size_[f])),
              wider.begin() + static_cast<std::ptrdiff_t>(f * stride));
  flow_links_ = std::move(wider);
  stride_ = stride;
}

int BandwidthSharing::add_flow(const std::vector<std::pair<int, double>>& links) {
  auto& fl = new_links_;
  fl.clear();
  bool canonical = true;  // already sorted by link id with no duplicates (the executor's case)
  int prev = -1;
  for (const auto& [link, weight] : links) {
    if (link < 0 || link >= static_cast<int>(capacity_.size()))
      throw Error("internal", "", "bandwidth sharing: flow crosses unknown link " + std::to_string(link));
    if (weight > 0) {
      canonical = canonical && link > prev;
      prev = link;
      fl.push_back({link, -1, weight});
    }
  }
  if (!canonical) {
    // Canonical form: sorted by link id, duplicate links merged (weights add up).
    std::stable_sort(fl.begin(), fl.end(), [](const FlowLink& a, const FlowLink& b) { return a.link < b.link; });
    size_t out = 0;
    for (size_t i = 0; i < fl.size(); ++i) {
      if (out > 0 && fl[out - 1].link == fl[i].link)
        fl[out - 1].weight += fl[i].weight;
      else
        fl[out++] = fl[i];
    }
    fl.resize(out);
  }
  if (fl.size() > stride_) widen(fl.size());
  int f;
  if (!free_ids_.empty()) {
    f = free_ids_.back();
    free_ids_.pop_back();
  } else {
    f = static_cast<int>(flow_size_.size());
    flow_size_.push_back(0);
    flow_links_.resize(flow_links_.size() + stride_);
    rate_.push_back(0);
    alive_.push_back(0);
    flow_seen_.push_back(0);
    flow_frozen_.push_back(0);
  }
  FlowLink* out = links_begin(f);
  for (size_t i = 0; i < fl.size(); ++i) {
    auto& lf = link_flows_[static_cast<size_t>(fl[i].link)];
    out[i] = {fl[i].link, static_cast<int>(lf.size()), fl[i].weight};
    lf.push_back({f, static_cast<int>(i)});
    dirty_links_.push_back(fl[i].link);
  }
  flow_size_[static_cast<size_t>(f)] = static_cast<int>(fl.size());
  if (fl.empty()) dirty_unlinked_.push_back(f);
  alive_[f] = 1;
  rate_[f] = 0;
  ++active_;
  return f;
}

void BandwidthSharing::remove_flow(int flow) {
  if (flow < 0 || flow >= static_cast<int>(alive_.size()) || !alive_[flow])
    throw Error("internal", "", "bandwidth sharing: removing unknown flow " + std::to_string(flow));
  for (const FlowLink* x = links_begin(flow); x != links_end(flow); ++x) {
    auto& lf = link_flows_[static_cast<size_t>(x->link)];
    // Swap-remove; the moved entry's flow learns its new slot.
    const LinkFlow last = lf.back();
    lf[static_cast<size_t>(x->slot)] = last;
    links_begin(last.flow)[last.index].slot = x->slot;
    lf.pop_back();
    dirty_links_.push_back(x->link);
  }
  flow_size_[static_cast<size_t>(flow)] = 0;
  alive_[flow] = 0;
  rate_[flow] = 0;
  --active_;
  free_ids_.push_back(flow);
}

void BandwidthSharing::collect_component(int seed_link, uint64_t stamp) {
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  stack_.push_back(seed_link);
  link_seen_[seed_link] = stamp;
  while (!stack_.empty()) {
    const int l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    for (const LinkFlow& lf : link_flows_[l]) {
      if (flow_seen_[lf.flow] == stamp) continue;
      flow_seen_[lf.flow] = stamp;
      comp_flows_.push_back(lf.flow);
      for (const FlowLink* x = links_begin(lf.flow); x != links_end(lf.flow); ++x) {
        if (link_seen_[x->link] == stamp) continue;
        link_seen_[x->link] = stamp;
        stack_.push_back(x->link);
      }
    }
  }
  std::sort(comp_links_.begin(), comp_links_.end());
  std::sort(comp_flows_.begin(), comp_flows_.end());
}

// A component of one flow (the common case: a ring hop or a send whose links nothing else
// crosses): progressive filling freezes it at the smallest capacity / weight over its links,
// which is what solve_component computes for it, without the heap.
bool BandwidthSharing::solve_single_flow(int seed_link, uint64_t stamp) {
  if (link_flows_[seed_link].size() != 1) return false;
  const int f = link_flows_[seed_link][0].flow;
  for (const FlowLink* x = links_begin(f); x != links_end(f); ++x)
    if (link_flows_[x->link].size() != 1) return false;
  double level = std::numeric_limits<double>::infinity();
  for (const FlowLink* x = links_begin(f); x != links_end(f); ++x) {
    link_seen_[x->link] = stamp;
    level = std::min(level, capacity_[x->link] / x->weight);
  }
  if (rate_[f] != level) {
    rate_[f] = level;
    changed_.push_back(f);
  }
  return true;
}

void BandwidthSharing::solve_component() {
  const uint64_t frozen = ++stamp_;
  for (int l : comp_links_) {
    residual_Bps_[l] = capacity_[l];
    weight_sum_[l] = 0;
    unfrozen_[l] = 0;
  }
  for (int f : comp_flows_)
    for (const FlowLink* x = links_begin(f); x != links_end(f); ++x) {
      weight_sum_[x->link] += x->weight;
      ++unfrozen_[x->link];
    }
  auto after = [](const HeapEntry& a, const HeapEntry& b) { return heap_after(a.share, a.link, b.share, b.link); };
  heap_.clear();
  for (int l : comp_links_) {
    ++version_[l];
    heap_.push_back({residual_Bps_[l] / weight_sum_[l], l, version_[l]});
  }
  std::make_heap(heap_.begin(), heap_.end(), after);

  double level = 0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), after);
    const HeapEntry top = heap_.back();
    heap_.pop_back();
    const int l = top.link;
    if (top.version != version_[l] || unfrozen_[l] == 0) continue;
    level = std::max(level, top.share);
    const uint64_t touch = ++stamp_;
    touched_.clear();
    for (const LinkFlow& lf : link_flows_[l]) {
      const int f = lf.flow;
      if (flow_frozen_[f] == frozen) continue;
      flow_frozen_[f] = frozen;
      if (rate_[f] != level) {
        rate_[f] = level;
        changed_.push_back(f);
      }
      for (const FlowLink* x = links_begin(f); x != links_end(f); ++x) {
        const int k = x->link;
        residual_Bps_[k] -= x->weight * level;
        if (residual_Bps_[k] <= kSaturatedRelative * capacity_[k]) residual_Bps_[k] = 0;
        weight_sum_[k] -= x->weight;
        if (--unfrozen_[k] == 0) weight_sum_[k] = 0;
        if (link_touched_[k] != touch) {
          link_touched_[k] = touch;
          touched_.push_back(k);
        }
      }
    }
    for (int k : touched_) {
      ++version_[k];
      if (unfrozen_[k] > 0) {
        heap_.push_back({residual_Bps_[k] / weight_sum_[k], k, version_[k]});
        std::push_heap(heap_.begin(), heap_.end(), after);
      }
    }
  }
}

const std::vector<int>& BandwidthSharing::solve() {
  changed_.clear();
  const uint64_t seen = ++stamp_;
  auto visit = [&](int l) {
    if (link_seen_[l] == seen || link_flows_[l].empty()) return;
    if (solve_single_flow(l, seen)) return;
    collect_component(l, seen);
    solve_component();
  };
  if (incremental_) {
    for (int l : dirty_links_) visit(l);
  } else {
    for (int l = 0; l < static_cast<int>(capacity_.size()); ++l) visit(l);
  }
  for (int f : dirty_unlinked_) {
    if (alive_[f] && flow_size_[static_cast<size_t>(f)] == 0 && rate_[f] != std::numeric_limits<double>::infinity()) {
      rate_[f] = std::numeric_limits<double>::infinity();
      changed_.push_back(f);
    }
  }
  dirty_links_.clear();
  dirty_unlinked_.clear();
  std::sort(changed_.begin(), changed_.end());
  return changed_;
}

double BandwidthSharing::rate_Bps(int flow) const {
  if (flow < 0 || flow >= static_cast<int>(alive_.size()) || !alive_[flow]) return 0;
  return rate_[flow];
}

int BandwidthSharing::active_flows() const { return active_; }

}  // namespace proteus
