// The search driver (docs/search.md). Three passes over this shard's candidates:
//  1. validate each (the config validator's message is the reason) and give it analytic
//     bounds; a memory bound over the budget means it does not fit;
//  2. queue the rest by their time bound (index breaks ties);
//  3. best first, in waves of kWave taken from the queue: a candidate with only the analytic
//     bound gets the compiled bounds of a one-micro-batch compile (memory over the budget:
//     it does not fit) and goes back into the queue; one with compiled bounds is simulated.
//     Before that, a candidate gets the layer bounds of its mesh's 1F1B compile (layer_bounds.h:
//     one compile for every schedule, virtual-stage count and ZeRO stage) and goes back; only if
//     it is taken again does its own compile run (interleaved and zb-v: a compile of their own).
//     Once the smallest bound in the queue exceeds the K-th best simulated time, none of the
//     rest can enter the top K: they are pruned. So only candidates whose compiled bound is
//     below the final K-th best (and those of waves before the threshold settled) are
//     simulated.
// Waves have a fixed size and their results are merged in order, so the counts as well as
// the ranking are the same for any number of threads.
#include <algorithm>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <queue>

#include "bounds.h"
#include "parallel_for.h"
#include "proteus/compile.h"
#include "proteus/error.h"
#include "proteus/run.h"
#include "proteus/search.h"
#include "proteus/simulation.h"
#include "proteus/units.h"
#include "space.h"
#include "strategy_summary.h"

namespace proteus {

using namespace search_detail;

namespace {

constexpr int64_t kWave = 4;
constexpr size_t kClosestNoFit = 5;

const char* const kOutcomeNames[] = {"fits",        "no_fit_simulated", "no_fit_bound",
                                     "pruned_time", "invalid",          "failed"};

// How far a candidate's bound has been tightened: analytic, layer bounds (its mesh's 1F1B
// compile), its own compiled bound.
enum Tier : int { kAnalytic = 0, kLayer = 1, kCompiled = 2 };

// A candidate waiting in the queue, keyed by its best time bound so far.
struct Survivor {
  double bound_s;
  int64_t index;
  int tier;  // bound_s includes the bounds of this tier
};
bool operator>(const Survivor& a, const Survivor& b) {
  return a.bound_s != b.bound_s ? a.bound_s > b.bound_s : a.index > b.index;
}

Config candidate_config(const Config& base, const StrategySpec& s) {
  Config c = base;
  c.strategy = s;
  return c;
}

void simulate_into(const Config& c, const Topology& topology, CandidateResult* r) {
  const ConfigRun run = run_config(c, topology, exec_options_of(c, false));
  const CompiledModel& m = run.compiled;
  const Trace& t = run.trace;
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
// function of its key). The candidates of one wave often share a mesh (they differ in ZeRO
// stage or schedule), so a key is compiled once: a thread that asks for a key another thread
// is compiling waits for it (and gets its error, if the compile failed) instead of compiling
// it again.
class ProfileCache {
 public:
  using Profile = std::shared_ptr<const CompiledProfile>;
  explicit ProfileCache(const Topology& topology) : topology_(topology) {}
  Profile get(const Config& c) {
    const std::string key = compiled_profile_key(c.strategy);
    std::promise<Profile> promise;
    std::shared_future<Profile> pending;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto [it, inserted] = map_.try_emplace(key);
      if (inserted)
        it->second = promise.get_future().share();
      else
        pending = it->second;
    }
    if (pending.valid()) return pending.get();
    Profile profile;
    try {
      profile = std::make_shared<const CompiledProfile>(compile_profile(c, topology_));
    } catch (...) {
      promise.set_exception(std::current_exception());
      throw;
    }
    promise.set_value(profile);
    return profile;
  }

 private:
  const Topology& topology_;
  std::mutex mutex_;
  std::map<std::string, std::shared_future<Profile>> map_;
};

// One step for a candidate taken from the queue: without a compiled bound yet, compute it
// (memory over the budget: does not fit); with one, simulate.
struct Step {
  CandidateResult result;
  int tier = kAnalytic;  // the tier this step computed (result.time_bound_s)
  bool done = false;     // result is final (else: back into the queue with its new bound)
};

// The 1F1B config whose compile gives a candidate its layer bounds.
Config layer_profile_config(const Config& c) {
  Config plain = c;
  plain.strategy.schedule = Schedule::OneFOneB;
  plain.strategy.virtual_stages = 1;
  return plain;
}

// The layer tier, where it applies: a generated schedule whose mesh's 1F1B compile succeeds
// (a failure just skips the tier: the candidate's own compile decides).
bool layer_tier(const Config& c, const ModelProfile& model, ProfileCache& cache, Bounds* b) {
  if (c.strategy.schedule == Schedule::Explicit) return false;
  try {
    *b = layer_bounds(cache.get(layer_profile_config(c))->layers, model, c);
  } catch (const Error&) {
    return false;
  }
  return b->time_s > 0;
}

Step step(const Config& c, const Survivor& sv, double budget_bytes, const Topology& topology,
          const ModelProfile& model, ProfileCache& cache) {
  Step out;
  CandidateResult& r = out.result;
  r.index = sv.index;
  r.strategy = c.strategy;
  r.time_bound_s = sv.bound_s;
  try {
    Bounds lb;
    if (sv.tier == kAnalytic && layer_tier(c, model, cache, &lb)) {
      out.tier = kLayer;
      r.time_bound_s = std::max(lb.time_s, sv.bound_s);
      if (lb.memory_bytes > budget_bytes) {
        r.outcome = Outcome::NoFitBound;
        r.peak_memory_GiB = lb.memory_bytes / kBytesPerGiB;
        out.done = true;
      }
      return out;
    }
    if (sv.tier != kCompiled) {
      out.tier = kCompiled;
      const Bounds b = bounds_from_profile(*cache.get(c), c);
      r.time_bound_s = std::max(b.time_s, sv.bound_s);
      if (b.memory_bytes > budget_bytes) {
        r.outcome = Outcome::NoFitBound;
        r.peak_memory_GiB = b.memory_bytes / kBytesPerGiB;
        out.done = true;
      }
      return out;
    }
    simulate_into(c, topology, &r);
    r.outcome = r.peak_memory_GiB * kBytesPerGiB > budget_bytes ? Outcome::NoFitSimulated : Outcome::Fits;
  } catch (const Error& e) {
    r.outcome = Outcome::Failed;
    r.path = e.path;
    r.reason = e.what();
  }
  out.done = true;
  return out;
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

void tell_progress(const SearchOptions& options, const SearchResult& out, int64_t candidates, size_t queued) {
  if (!options.progress) return;
  const SearchCounts& n = out.counts;
  SearchProgress p;
  p.candidates = candidates;
  p.decided = n.invalid + n.no_fit_bound + n.simulated + n.failed;
  p.queued = static_cast<int64_t>(queued);
  p.simulated = n.simulated;
  p.bounds_tightened = n.bounded + n.layer_bounded;
  if (!out.ranked.empty()) {
    p.best_s = out.ranked.front().iteration_time_s;
    p.best = strategy_summary(out.ranked.front().strategy);
  }
  options.progress(p);
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
  const SpaceEnumeration space = enumerate(base);
  SearchResult out = rank_strategies(base, space.strategies, options);
  out.empty_reason = space.mesh_mismatch_example;
  return out;
}

SearchResult rank_strategies(const Config& base, const std::vector<StrategySpec>& strategies,
                             const SearchOptions& options) {
  check_options(options);
  struct {
    const std::vector<StrategySpec>& strategies;
  } space{strategies};
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
    survivors.push_back({b.time_s, i, kAnalytic});
  }
  for (auto& [path, rc] : reasons) out.invalid_reasons.push_back(rc);
  const int64_t candidates =
      out.counts.invalid + out.counts.no_fit_bound + static_cast<int64_t>(survivors.size());
  tell_progress(options, out, candidates, survivors.size());

  // 2-3. Best first: the queue's smallest bound is taken in waves (fixed for the wave: the
  // threshold, the members); a candidate with only an analytic bound gets its compiled one
  // and goes back, one with a compiled bound is simulated. Once the smallest bound exceeds
  // the K-th best simulated time, nothing left can enter the top K.
  std::priority_queue<Survivor, std::vector<Survivor>, std::greater<Survivor>> queue(std::greater<Survivor>(),
                                                                                     std::move(survivors));
  const double inf = std::numeric_limits<double>::infinity();
  ProfileCache cache(topology);
  while (!queue.empty()) {
    const double threshold =
        static_cast<int>(out.ranked.size()) < out.top ? inf : out.ranked.back().iteration_time_s;
    std::vector<Survivor> wave;
    while (!queue.empty() && wave.size() < static_cast<size_t>(kWave) && queue.top().bound_s <= threshold) {
      wave.push_back(queue.top());
      queue.pop();
    }
    if (wave.empty()) break;
    std::vector<Step> steps(wave.size());
    parallel_for(static_cast<int64_t>(wave.size()), options.threads, [&](int64_t k) {
      const size_t at = static_cast<size_t>(k);
      const Config c = candidate_config(base, space.strategies[static_cast<size_t>(wave[at].index)]);
      steps[at] = step(c, wave[at], budget_bytes, topology, profile, cache);
    });
    for (size_t k = 0; k < steps.size(); ++k) {
      out.counts.bounded += steps[k].tier == kCompiled;
      out.counts.layer_bounded += steps[k].tier == kLayer;
      if (steps[k].done)
        record(&out, std::move(steps[k].result));
      else
        queue.push({steps[k].result.time_bound_s, wave[k].index, steps[k].tier});
    }
    tell_progress(options, out, candidates, queue.size());
  }
  out.counts.pruned_time += static_cast<int64_t>(queue.size());
  return out;
}

}  // namespace proteus
