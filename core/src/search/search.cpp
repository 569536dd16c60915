// The search driver (docs/search.md). Three passes over this shard's candidates:
//  1. validate each (the config validator's message is the reason) and give it analytic
//     bounds; a memory bound over the budget means it does not fit;
//  2. sort the rest by their analytic time bound (index breaks ties);
//  3. in waves of kWave, in that order: a candidate whose bound exceeds the K-th best
//     simulated time (the threshold, fixed for the wave) cannot enter the top K and is
//     pruned; otherwise a one-micro-batch compile gives tighter bounds, and only if those
//     pass is it simulated. After each wave the threshold tightens; once the next bound in
//     order exceeds it, every remaining candidate is pruned.
// Waves have a fixed size and their results are merged in order, so the counts as well as
// the ranking are the same for any number of threads.
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "bounds.h"
#include "parallel_for.h"
#include "proteus/compile.h"
#include "proteus/error.h"
#include "proteus/search.h"
#include "proteus/simulation.h"
#include "proteus/units.h"
#include "space.h"

namespace proteus {

using namespace search_detail;

namespace {

constexpr int64_t kWave = 4;
constexpr size_t kClosestNoFit = 5;

const char* const kOutcomeNames[] = {"fits",        "no_fit_simulated", "no_fit_bound",
                                     "pruned_time", "invalid",          "failed"};

struct Survivor {
  int64_t index;
  Bounds analytic;
};

Config candidate_config(const Config& base, const StrategySpec& s) {
  Config c = base;
  c.strategy = s;
  return c;
}

void simulate_into(const Config& c, const Topology& topology, CandidateResult* r) {
  const CompiledModel m = compile(c);
  const Trace t = execute(m.exec, cost_model_of(c), topology, exec_options_of(c, false));
  double peak = 0;
  for (const RankTrace& rt : t.ranks) peak = std::max(peak, rt.peak_memory_bytes);
  r->iteration_time_s = t.iteration_time_s;
  r->peak_memory_GiB = peak / kBytesPerGiB;
  const double peak_flops = c.cluster.gpu.peak_TFLOPS(c.training.precision) * kFlopsPerTFLOP;
  const double denominator = double(m.exec.gpus) * t.iteration_time_s * peak_flops;
  r->mfu = denominator > 0 ? m.exec.model_flops_per_iteration / denominator : 0;
}

// Bounds, then (if they pass) the simulation, of one candidate against `threshold_s`.
// Compiled profiles by compiled_profile_key, shared by the threads (a profile is a pure
// function of its key, so whichever thread computes it first stores the same value).
class ProfileCache {
 public:
  std::shared_ptr<const CompiledProfile> get(const Config& c) {
    const std::string key = compiled_profile_key(c.strategy);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    auto profile = std::make_shared<const CompiledProfile>(compile_profile(c));
    std::lock_guard<std::mutex> lock(mutex_);
    return map_.emplace(key, profile).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const CompiledProfile>> map_;
};

CandidateResult evaluate(const Config& c, const Survivor& sv, double threshold_s, double budget_bytes,
                         const Topology& topology, ProfileCache& cache, bool* compiled) {
  CandidateResult r;
  *compiled = false;
  r.index = sv.index;
  r.strategy = c.strategy;
  r.time_bound_s = sv.analytic.time_s;
  if (sv.analytic.time_s > threshold_s) {
    r.outcome = Outcome::PrunedTime;
    return r;
  }
  try {
    *compiled = true;
    const Bounds b = bounds_from_profile(*cache.get(c), c);
    r.time_bound_s = std::max(b.time_s, sv.analytic.time_s);
    if (b.memory_bytes > budget_bytes) {
      r.outcome = Outcome::NoFitBound;
      r.peak_memory_GiB = b.memory_bytes / kBytesPerGiB;
      return r;
    }
    if (r.time_bound_s > threshold_s) {
      r.outcome = Outcome::PrunedTime;
      return r;
    }
    simulate_into(c, topology, &r);
    r.outcome = r.peak_memory_GiB * kBytesPerGiB > budget_bytes ? Outcome::NoFitSimulated : Outcome::Fits;
  } catch (const Error& e) {
    r.outcome = Outcome::Failed;
    r.path = e.path;
    r.reason = e.what();
  }
  return r;
}

bool faster(const CandidateResult& a, const CandidateResult& b) {
  return a.iteration_time_s != b.iteration_time_s ? a.iteration_time_s < b.iteration_time_s
                                                  : a.index < b.index;
}

bool smaller(const CandidateResult& a, const CandidateResult& b) {
  return a.peak_memory_GiB != b.peak_memory_GiB ? a.peak_memory_GiB < b.peak_memory_GiB : a.index < b.index;
}

void keep_best(std::vector<CandidateResult>* list, CandidateResult r, size_t k,
               bool (*before)(const CandidateResult&, const CandidateResult&)) {
  list->insert(std::upper_bound(list->begin(), list->end(), r, before), std::move(r));
  if (list->size() > k) list->pop_back();
}

void record(SearchResult* out, CandidateResult r) {
  SearchCounts& n = out->counts;
  switch (r.outcome) {
    case Outcome::Fits:
      ++n.simulated;
      keep_best(&out->ranked, std::move(r), static_cast<size_t>(out->top), faster);
      break;
    case Outcome::NoFitSimulated:
      ++n.simulated;
      ++n.no_fit_simulated;
      keep_best(&out->closest_no_fit, std::move(r), kClosestNoFit, smaller);
      break;
    case Outcome::NoFitBound:
      ++n.no_fit_bound;
      keep_best(&out->closest_no_fit, std::move(r), kClosestNoFit, smaller);
      break;
    case Outcome::PrunedTime:
      ++n.pruned_time;
      break;
    case Outcome::Failed:
      ++n.failed;
      if (out->failed.size() < kClosestNoFit) out->failed.push_back(std::move(r));
      break;
    case Outcome::Invalid:
      ++n.invalid;
      break;
  }
}

void check_options(const SearchOptions& o) {
  if (o.top < 1) throw Error("invalid_request", "top", "--top must be at least 1");
  if (o.threads < 1) throw Error("invalid_request", "threads", "--threads must be at least 1");
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    throw Error("invalid_request", "shard",
                "--shard K/N needs 0 <= K < N (got " + std::to_string(o.shard) + "/" +
                    std::to_string(o.shards) + ")");
}

}  // namespace

const char* to_string(Outcome o) { return kOutcomeNames[static_cast<int>(o)]; }

std::vector<StrategySpec> enumerate_space(const Config& base) { return enumerate(base).strategies; }

SearchResult run_search(const Config& base, const SearchOptions& options) {
  check_options(options);
  const SpaceEnumeration space = enumerate(base);
  const ModelProfile profile = profile_model(base);
  const Topology topology = build_topology(base.cluster);
  SearchResult out;
  out.gpus = base.cluster.gpus();
  out.top = options.top;
  out.shard = options.shard;
  out.shards = options.shards;
  const double budget_bytes = base.cluster.gpu.memory_GiB * kBytesPerGiB * (1 - base.search.memory_reserve);
  out.budget_GiB = budget_bytes / kBytesPerGiB;
  out.counts.enumerated = static_cast<int64_t>(space.strategies.size());
  out.empty_reason = space.mesh_mismatch_example;

  // 1. Validity and analytic bounds.
  std::map<std::string, ReasonCount> reasons;
  std::vector<Survivor> survivors;
  for (int64_t i = options.shard; i < out.counts.enumerated; i += options.shards) {
    const Config c = candidate_config(base, space.strategies[static_cast<size_t>(i)]);
    try {
      validate_config(c);
    } catch (const Error& e) {
      ++out.counts.invalid;
      ReasonCount& rc = reasons[e.path];
      if (rc.count++ == 0) {
        rc.first_index = i;
        rc.path = e.path;
        rc.message = e.what();
      }
      continue;
    }
    const Bounds b = analytic_bounds(profile, c);
    if (b.memory_bytes > budget_bytes) {
      CandidateResult r;
      r.index = i;
      r.strategy = c.strategy;
      r.outcome = Outcome::NoFitBound;
      r.peak_memory_GiB = b.memory_bytes / kBytesPerGiB;
      record(&out, std::move(r));
      continue;
    }
    survivors.push_back({i, b});
  }
  for (auto& [path, rc] : reasons) out.invalid_reasons.push_back(rc);

  // 2. Most promising first.
  std::sort(survivors.begin(), survivors.end(), [](const Survivor& a, const Survivor& b) {
    return a.analytic.time_s != b.analytic.time_s ? a.analytic.time_s < b.analytic.time_s : a.index < b.index;
  });

  // 3. Waves against the K-th best so far.
  const double inf = std::numeric_limits<double>::infinity();
  ProfileCache cache;
  for (size_t pos = 0; pos < survivors.size();) {
    const double threshold =
        static_cast<int>(out.ranked.size()) < out.top ? inf : out.ranked.back().iteration_time_s;
    if (survivors[pos].analytic.time_s > threshold) {
      out.counts.pruned_time += static_cast<int64_t>(survivors.size() - pos);
      break;
    }
    const size_t n = std::min<size_t>(kWave, survivors.size() - pos);
    std::vector<CandidateResult> wave(n);
    std::vector<char> compiled(n, 0);
    parallel_for(static_cast<int64_t>(n), options.threads, [&](int64_t k) {
      const size_t at = static_cast<size_t>(k);
      const Survivor& sv = survivors[pos + at];
      const Config c = candidate_config(base, space.strategies[static_cast<size_t>(sv.index)]);
      bool was_compiled = false;
      wave[at] = evaluate(c, sv, threshold, budget_bytes, topology, cache, &was_compiled);
      compiled[at] = was_compiled;
    });
    for (size_t k = 0; k < n; ++k) {
      out.counts.bounded += compiled[k];
      record(&out, std::move(wave[k]));
    }
    pos += n;
  }
  return out;
}

}  // namespace proteus
