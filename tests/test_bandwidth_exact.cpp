// BandwidthSharing's shortcuts (lazy heap re-keying, the one-flow component, incremental
// components) give bit for bit the rates of the plain algorithm they replace: per component,
// flows summed in id order, and after every freeze the least (share, link id) among the
// links still carrying unfrozen flows, with every share recomputed (eager re-keying).
#include <doctest/doctest.h>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>
#include "proteus/bandwidth_sharing.h"
#include "test_random.h"

using proteus::BandwidthSharing;

namespace {

using Path = std::vector<std::pair<int, double>>;

using proteus::test::Lcg;

// The plain algorithm, with the solver's arithmetic in the solver's order: a flow's links
// sorted by id with duplicates merged; per link, its flows in the order the solver lists
// them (appended on add, swap-removed on remove), which is the order residuals are reduced in.
class EagerReference {
 public:
  explicit EagerReference(std::vector<double> capacity)
      : capacity_(std::move(capacity)), on_link_(capacity_.size()) {}

  void add(int id, const Path& path) {
    Path canon;
    for (const auto& p : path) {  // stable: duplicates add up in path order
      auto it = std::find_if(canon.begin(), canon.end(), [&](const auto& c) { return c.first == p.first; });
      if (it == canon.end())
        canon.push_back(p);
      else
        it->second += p.second;
    }
    std::stable_sort(canon.begin(), canon.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (id >= static_cast<int>(paths_.size())) paths_.resize(static_cast<size_t>(id) + 1);
    paths_[static_cast<size_t>(id)] = canon;
    for (const auto& lw : canon) on_link_[static_cast<size_t>(lw.first)].push_back(id);
  }

  void remove(int id) {
    for (const auto& lw : paths_[static_cast<size_t>(id)]) {
      auto& v = on_link_[static_cast<size_t>(lw.first)];
      *std::find(v.begin(), v.end(), id) = v.back();
      v.pop_back();
    }
    paths_[static_cast<size_t>(id)].clear();
  }

  // Rates of every flow id (0 for dead ones, +inf for a live flow crossing no link is not
  // modelled here: every test path has a link).
  std::vector<double> rates() const {
    std::vector<double> rate(paths_.size(), 0);
    std::vector<int> component(capacity_.size(), -1);
    for (size_t seed = 0; seed < capacity_.size(); ++seed)
      if (component[seed] < 0 && !on_link_[seed].empty())
        solve_component(static_cast<int>(seed), component, rate);
    return rate;
  }

 private:
  void solve_component(int seed, std::vector<int>& component, std::vector<double>& rate) const {
    std::vector<int> links{seed}, flows;
    component[static_cast<size_t>(seed)] = seed;
    for (size_t i = 0; i < links.size(); ++i)
      for (int f : on_link_[static_cast<size_t>(links[i])]) {
        if (std::find(flows.begin(), flows.end(), f) != flows.end()) continue;
        flows.push_back(f);
        for (const auto& lw : paths_[static_cast<size_t>(f)])
          if (component[static_cast<size_t>(lw.first)] < 0) {
            component[static_cast<size_t>(lw.first)] = seed;
            links.push_back(lw.first);
          }
      }
    std::sort(flows.begin(), flows.end());
    const size_t n = capacity_.size();
    std::vector<double> residual(capacity_), weight_sum(n, 0);
    std::vector<int> unfrozen(n, 0);
    for (int f : flows)
      for (const auto& [l, w] : paths_[static_cast<size_t>(f)])
        weight_sum[static_cast<size_t>(l)] += w, ++unfrozen[static_cast<size_t>(l)];
    std::vector<char> frozen(paths_.size(), 0);
    double level = 0;
    for (;;) {
      int best = -1;
      double best_share = 0;
      for (int l : links) {  // ascending ids win ties
        const size_t k = static_cast<size_t>(l);
        if (unfrozen[k] == 0) continue;
        const double share = residual[k] / weight_sum[k];
        if (best < 0 || share < best_share || (share == best_share && l < best)) best = l, best_share = share;
      }
      if (best < 0) return;
      level = std::max(level, best_share);
      for (int f : on_link_[static_cast<size_t>(best)]) {
        if (frozen[static_cast<size_t>(f)]) continue;
        frozen[static_cast<size_t>(f)] = 1;
        rate[static_cast<size_t>(f)] = level;
        for (const auto& [l, w] : paths_[static_cast<size_t>(f)]) {
          const size_t k = static_cast<size_t>(l);
          residual[k] -= w * level;
          if (residual[k] <= 1e-12 * capacity_[k]) residual[k] = 0;
          weight_sum[k] -= w;
          if (--unfrozen[k] == 0) weight_sum[k] = 0;
        }
      }
    }
  }

  std::vector<double> capacity_;
  std::vector<std::vector<int>> on_link_;
  std::vector<Path> paths_;
};

// Random adds and removes, solved every few changes; every live rate must equal the
// reference's exactly. Weights and capacities that do not add up exactly in binary, and
// paths over few links, so that shares tie, round and fall while flows freeze.
const std::vector<double> kUneven{1, 1.0 / 3, 0.7, 8.0 / 3, 2};  // the sorted summation path
const std::vector<double> kIntegers{1, 3, 8, 7, 2};              // sums exact in any order

void check_against_reference(uint64_t seed, int links, int max_live, int max_hops,
                             const std::vector<double>& weights) {
  Lcg rng{seed};
  std::vector<double> capacity(static_cast<size_t>(links));
  for (double& c : capacity) c = 1.0 + rng.below(7) / 3.0;
  BandwidthSharing bw(capacity);
  EagerReference ref(capacity);
  std::vector<int> live;
  int mismatches = 0;
  for (int step = 0; step < 4000; ++step) {
    if (live.size() < 5 || (static_cast<int>(live.size()) < max_live && rng.below(100) < 55)) {
      Path path;
      const int hops = 1 + rng.below(max_hops);
      for (int h = 0; h < hops; ++h)
        path.push_back(
            {rng.below(links), weights[static_cast<size_t>(rng.below(static_cast<int>(weights.size())))]});
      const int id = bw.add_flow(path);
      ref.add(id, path);
      live.push_back(id);
    } else {
      const size_t k = static_cast<size_t>(rng.below(static_cast<int>(live.size())));
      bw.remove_flow(live[k]);
      ref.remove(live[k]);
      live[k] = live.back();
      live.pop_back();
    }
    if (rng.below(3) == 0) {
      bw.solve();
      const std::vector<double> want = ref.rates();
      for (int id : live)
        if (bw.rate_Bps(id) != want[static_cast<size_t>(id)]) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("bandwidth sharing: rates equal the plain eager algorithm bit for bit") {
  for (const auto* weights : {&kUneven, &kIntegers}) {
    check_against_reference(7, 12, 40, 4, *weights);    // dense: large components, many ties
    check_against_reference(99, 64, 200, 3, *weights);  // sparse: many small components and single flows
    check_against_reference(2024, 6, 30, 6, *weights);  // few links, long paths with repeated links
  }
}
