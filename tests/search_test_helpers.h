// What the search tests compare the search with: whether the validator accepts a candidate,
// and its simulated time and peak memory (the brute force the search must equal).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/error.h"
#include "proteus/search.h"
#include "proteus/simulation.h"
#include "proteus/units.h"

namespace proteus::test {

struct Simulated {
  double time_s, peak_bytes;
};

inline Simulated simulate(const Config& c) {
  const CompiledModel m = compile(c);
  const Trace t = execute(m.exec, cost_model_of(c), build_topology(c.cluster), exec_options_of(c, false));
  double peak = 0;
  for (const RankTrace& r : t.ranks) peak = std::max(peak, r.peak_memory_bytes);
  return {t.iteration_time_s, peak};
}

inline bool valid(const Config& c) {
  try {
    validate_config(c);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Simulates every valid candidate of base's space and checks that the search's top `top` are
// the fastest that fit, in order; returns the search's result and how many candidates fit.
inline std::pair<SearchResult, size_t> check_top_equals_brute_force(const Config& base, int top) {
  const std::vector<StrategySpec> space = enumerate_space(base);
  const double budget = base.cluster.gpu.memory_GiB * kBytesPerGiB;
  std::vector<std::pair<double, int64_t>> fitting;  // (time, index)
  for (size_t i = 0; i < space.size(); ++i) {
    Config c = base;
    c.strategy = space[i];
    if (!valid(c)) continue;
    const Simulated s = simulate(c);
    if (s.peak_bytes <= budget) fitting.push_back({s.time_s, static_cast<int64_t>(i)});
  }
  std::sort(fitting.begin(), fitting.end());
  SearchOptions o;
  o.top = top;
  const SearchResult r = run_search(base, o);
  REQUIRE(r.ranked.size() == static_cast<size_t>(top));
  for (size_t k = 0; k < r.ranked.size(); ++k) {
    CHECK(r.ranked[k].index == fitting[k].second);
    CHECK(r.ranked[k].iteration_time_s == fitting[k].first);
  }
  return {r, fitting.size()};
}

// Runs base's search on 1 and on 3 threads and checks the same ranking and the same counts
// (waves are merged in order and cached compiles are pure functions of their key).
inline void check_same_for_any_threads(const Config& base) {
  SearchOptions one, three;
  three.threads = 3;
  const SearchResult a = run_search(base, one), b = run_search(base, three);
  REQUIRE(a.ranked.size() == b.ranked.size());
  for (size_t k = 0; k < a.ranked.size(); ++k) {
    CHECK(a.ranked[k].index == b.ranked[k].index);
    CHECK(a.ranked[k].iteration_time_s == b.ranked[k].iteration_time_s);
  }
  CHECK(a.counts.simulated == b.counts.simulated);
  CHECK(a.counts.pruned_time == b.counts.pruned_time);
  CHECK(a.counts.no_fit_bound == b.counts.no_fit_bound);
  CHECK(a.counts.bounded == b.counts.bounded);
}

}  // namespace proteus::test
