// Max-min fair bandwidth sharing (core/src/exec/bandwidth_sharing.cpp). Every expected rate is
// derived by hand in the comment above its check.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#include "proteus/bandwidth_sharing.h"
#include "relative_approx.h"
#include "test_random.h"

using proteus::BandwidthSharing;

namespace {

using proteus::test::approx;

// Reference: textbook progressive filling over all flows at once, O(links^2), no heap, no
// components. Rates of live flows (ids as in the solver under test).
std::vector<double> reference_rates(const std::vector<double>& capacity,
                                    const std::vector<std::vector<std::pair<int, double>>>& flows,
                                    const std::vector<char>& alive) {
  const size_t nl = capacity.size(), nf = flows.size();
  std::vector<double> rate(nf, 0), residual = capacity;
  std::vector<char> frozen(nf, 0);
  for (size_t f = 0; f < nf; ++f) frozen[f] = !alive[f];
  for (;;) {
    std::vector<double> wsum(nl, 0);
    bool any = false;
    for (size_t f = 0; f < nf; ++f)
      if (!frozen[f])
        for (auto [l, w] : flows[f]) wsum[l] += w, any = true;
    if (!any) break;
    double best = INFINITY;
    int best_link = -1;
    for (size_t l = 0; l < nl; ++l)
      if (wsum[l] > 0 && residual[l] / wsum[l] < best)
        best = residual[l] / wsum[l], best_link = static_cast<int>(l);
    for (size_t f = 0; f < nf; ++f) {
      if (frozen[f]) continue;
      bool through = false;
      for (auto [l, w] : flows[f]) through = through || l == best_link;
      if (!through) continue;
      frozen[f] = 1;
      rate[f] = best;
      for (auto [l, w] : flows[f]) residual[l] -= w * best;
    }
  }
  return rate;
}

using proteus::test::Lcg;

}  // namespace

TEST_CASE("bandwidth sharing: the header's worked example") {
  // Link A (10 B/s) carries f1 and f2; link B (4 B/s) carries f2 only.
  // Raise both rates together: B saturates first at r = 4 (A would at 10/2 = 5), so f2 = 4;
  // A has 10 - 4 = 6 left for f1 alone: f1 = 6.
  BandwidthSharing bw({10, 4});
  const int f1 = bw.add_flow({{0, 1}});
  const int f2 = bw.add_flow({{0, 1}, {1, 1}});
  const auto& changed = bw.solve();
  CHECK(changed.size() == 2);
  CHECK(bw.rate_Bps(f1) == approx(6));
  CHECK(bw.rate_Bps(f2) == approx(4));
  CHECK(bw.active_flows() == 2);
  // Nothing changed since: solving again reports nothing.
  CHECK(bw.solve().empty());
  // Remove f2: f1 alone on A gets all 10.
  bw.remove_flow(f2);
  const auto& changed2 = bw.solve();
  REQUIRE(changed2.size() == 1);
  CHECK(changed2[0] == f1);
  CHECK(bw.rate_Bps(f1) == approx(10));
  CHECK(bw.active_flows() == 1);
}

TEST_CASE("bandwidth sharing: weights stand for identical copies") {
  // One link of 90 B/s; flow a has weight 8 (8 identical flows), flow b weight 1.
  // 9 copies share the link equally: each copy gets 90 / 9 = 10 B/s (8*10 + 1*10 = 90).
  BandwidthSharing bw({90});
  const int a = bw.add_flow({{0, 8}});
  const int b = bw.add_flow({{0, 1}});
  bw.solve();
  CHECK(bw.rate_Bps(a) == approx(10));
  CHECK(bw.rate_Bps(b) == approx(10));
}

TEST_CASE("bandwidth sharing: parking lot (a long flow across a chain of links)") {
  // Links L0 = 1, L1 = 2, L2 = 3 B/s. Long flow f0 crosses all three; f1, f2, f3 cross one each.
  // Every link carries 2 flows: saturation levels 1/2, 2/2, 3/2 -> L0 first at 0.5: f0 = f1 = 0.5.
  // L1 then has 2 - 0.5 = 1.5 for f2; L2 has 3 - 0.5 = 2.5 for f3.
  BandwidthSharing bw({1, 2, 3});
  const int f0 = bw.add_flow({{0, 1}, {1, 1}, {2, 1}});
  const int f1 = bw.add_flow({{0, 1}});
  const int f2 = bw.add_flow({{1, 1}});
  const int f3 = bw.add_flow({{2, 1}});
  bw.solve();
  CHECK(bw.rate_Bps(f0) == approx(0.5));
  CHECK(bw.rate_Bps(f1) == approx(0.5));
  CHECK(bw.rate_Bps(f2) == approx(1.5));
  CHECK(bw.rate_Bps(f3) == approx(2.5));
  // The classic symmetric parking lot: with all capacities equal to 1, every flow gets 1/2.
  BandwidthSharing eq({1, 1, 1});
  const int g0 = eq.add_flow({{0, 1}, {1, 1}, {2, 1}});
  const int g1 = eq.add_flow({{1, 1}});
  eq.solve();
  CHECK(eq.rate_Bps(g0) == approx(0.5));
  CHECK(eq.rate_Bps(g1) == approx(0.5));
}

TEST_CASE("bandwidth sharing: per-link weights and an unconstrained flow") {
  // Link 0 (12 B/s): flow a with weight 2 (two copies share it), flow b weight 1.
  // Link 1 (3 B/s): flow a only, weight 1. Levels: link 0 at 12/3 = 4, link 1 at 3 -> link 1
  // first: a = 3 (link 0 then holds 2*3 = 6 of a), b gets 12 - 6 = 6.
  BandwidthSharing bw({12, 3});
  const int a = bw.add_flow({{0, 2}, {1, 1}});
  const int b = bw.add_flow({{0, 1}});
  const int free_flow = bw.add_flow({});
  bw.solve();
  CHECK(bw.rate_Bps(a) == approx(3));
  CHECK(bw.rate_Bps(b) == approx(6));
  CHECK(std::isinf(bw.rate_Bps(free_flow)));
}

TEST_CASE("bandwidth sharing: only the touched component is re-solved") {
  // Two disjoint links, one flow each: adding a flow on link 1 changes only link 1's flows.
  BandwidthSharing bw({10, 20});
  const int a = bw.add_flow({{0, 1}});
  const int b = bw.add_flow({{1, 1}});
  bw.solve();
  const int c = bw.add_flow({{1, 1}});
  const auto& changed = bw.solve();
  // b halves from 20 to 10 and c appears at 10; a (other component) is not reported.
  REQUIRE(changed.size() == 2);
  CHECK(std::find(changed.begin(), changed.end(), a) == changed.end());
  CHECK(bw.rate_Bps(a) == approx(10));
  CHECK(bw.rate_Bps(b) == approx(10));
  CHECK(bw.rate_Bps(c) == approx(10));
}

TEST_CASE("bandwidth sharing: incremental and full re-solve agree over 10,000 random changes") {
  // Same seeded sequence of adds/removes into two solvers; after every solve both must hold
  // bit-identical rates (components are solved canonically), and every 50 steps both must
  // match a textbook global progressive filling to 1e-9.
  const int links = 48;
  std::vector<double> capacity(links);
  Lcg rng{12345};
  for (int l = 0; l < links; ++l) capacity[l] = 1.0 + rng.below(100);
  BandwidthSharing inc(capacity, true), full(capacity, false);
  std::vector<std::vector<std::pair<int, double>>> flows;
  std::vector<char> alive;
  std::vector<int> live;
  const double weights[] = {1, 2, 0.5, 8};
  int mismatches = 0, reference_mismatches = 0;
  for (int step = 0; step < 10000; ++step) {
    const bool add = live.size() < 10 || (live.size() < 400 && rng.below(100) < 55);
    if (add) {
      std::vector<std::pair<int, double>> path;
      const int hops = 1 + rng.below(4);
      // Local paths (a window of links) so components form, merge and split.
      const int start = rng.below(links);
      for (int h = 0; h < hops; ++h)
        path.push_back({(start + h * (1 + rng.below(3))) % links, weights[rng.below(4)]});
      const int id = inc.add_flow(path);
      const int id2 = full.add_flow(path);
      CHECK(id == id2);
      if (id >= static_cast<int>(flows.size())) flows.resize(id + 1), alive.resize(id + 1, 0);
      // The reference sees merged duplicates like the solver does.
      std::vector<std::pair<int, double>> merged;
      for (auto p : path) {
        auto it = std::find_if(merged.begin(), merged.end(), [&](auto& m) { return m.first == p.first; });
        if (it == merged.end())
          merged.push_back(p);
        else
          it->second += p.second;
      }
      flows[id] = merged;
      alive[id] = 1;
      live.push_back(id);
    } else {
      const int k = rng.below(static_cast<int>(live.size()));
      const int id = live[k];
      live[k] = live.back();
      live.pop_back();
      inc.remove_flow(id);
      full.remove_flow(id);
      alive[id] = 0;
    }
    if (rng.below(4) == 0 || step == 9999) {  // batches of changes between solves too
      inc.solve();
      full.solve();
      for (int id : live)
        if (inc.rate_Bps(id) != full.rate_Bps(id)) ++mismatches;
      if (step % 50 == 0 || step == 9999) {
        const auto ref = reference_rates(capacity, flows, alive);
        for (int id : live)
          if (std::fabs(ref[id] - inc.rate_Bps(id)) > 1e-9 * std::max(1.0, ref[id])) ++reference_mismatches;
      }
    }
  }
  CHECK(mismatches == 0);
  CHECK(reference_mismatches == 0);
  CHECK(inc.active_flows() == static_cast<int>(live.size()));
}

TEST_CASE("bandwidth sharing: the changed flows come in increasing id order, dense or sparse") {
  // 300 flows on one shared link (a ring's hops all change together): removing one changes
  // the other 299 at once, ids dense in their range (counted into order). Then 150 flows
  // spread over 3,000 ids (every 20th flow, each alone on its own link) change together, ids
  // sparse (compared into order). The executor plays changed flows in this order, so it must
  // not depend on how they were found.
  std::vector<double> capacity(301, 10.0);  // each flow held to 1 by the shared link
  capacity[300] = 300.0;
  BandwidthSharing bw(capacity);
  std::vector<int> ids;
  for (int i = 0; i < 300; ++i) ids.push_back(bw.add_flow({{300, 1}, {i, 1}}));
  CHECK(bw.solve().size() == 300);
  bw.remove_flow(ids[150]);
  std::vector<int> changed = bw.solve();
  CHECK(changed.size() == 299);
  CHECK(std::is_sorted(changed.begin(), changed.end()));
  CHECK(std::adjacent_find(changed.begin(), changed.end()) == changed.end());
  BandwidthSharing spread(std::vector<double>(3000, 10.0));
  std::vector<int> all;
  for (int i = 0; i < 3000; ++i) all.push_back(spread.add_flow({{i, 1}}));
  spread.solve();
  for (int i = 0; i < 3000; i += 20) {
    spread.remove_flow(all[static_cast<size_t>(i)]);
    all[static_cast<size_t>(i)] = spread.add_flow({{i, 0.5}});  // twice the rate on its link
  }
  changed = spread.solve();
  CHECK(changed.size() == 150);
  CHECK(std::is_sorted(changed.begin(), changed.end()));
  CHECK(changed.back() - changed.front() > 8 * 150);  // the sparse path
}
