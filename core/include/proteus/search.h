// The strategy search (DESIGN.md §7, docs/search.md): for a config that fixes the model, the
// cluster and the training batch, every valid strategy in the space of its "search" object,
// ranked by simulated iteration time. Exact: candidates are discarded only by lower bounds
// (memory before compiling, iteration time against the K-th best simulated so far), so the
// top K are those a simulation of every candidate would rank first.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "proteus/config.h"

namespace proteus {

// How far a search is: told after the candidates are checked and after each wave of bounds
// and simulations, on the calling thread (a long search on the command line prints it).
struct SearchProgress {
  int64_t candidates = 0;  // this shard's share of the space
  int64_t decided = 0;     // invalid, over memory (bound), simulated or failed so far
  int64_t queued = 0;      // still waiting for a tighter bound or a simulation
  int64_t simulated = 0;
  int64_t bounds_tightened = 0;  // layer and compiled bounds given so far (from compiles, some cached)
  double best_s = 0;             // the fastest fitting candidate simulated so far; 0 while there is none
  std::string best;  // its strategy in one line ("dp=16 tp=4 pp=1 mb=1 1f1b sp zero=1 recompute=none")
};
using SearchProgressFn = std::function<void(const SearchProgress&)>;

struct SearchOptions {
  int top = 5;      // rank exactly this many fitting candidates (the pruning threshold is the K-th best)
  int threads = 1;  // native threads; the result does not depend on it
  int shard = 0;    // evaluate candidates whose index % shards == shard
  int shards = 1;
  SearchProgressFn progress;  // empty: not told; it observes, the result does not depend on it
};

enum class Outcome : uint8_t {
  Fits,            // simulated, peak memory within the budget
  NoFitSimulated,  // simulated, peak memory over the budget
  NoFitBound,      // a memory lower bound is over the budget (not simulated)
  PrunedTime,      // a time lower bound is above the K-th best simulated (not simulated)
  Invalid,         // the config validator rejects it (reason = its message)
  Failed,          // the simulation refused it (limits: max_tasks, max_events)
};
const char* to_string(Outcome);

struct CandidateResult {
  int64_t index = 0;  // position in the space's deterministic order
  StrategySpec strategy;
  Outcome outcome = Outcome::Invalid;
  double iteration_time_s = 0;  // simulated (Fits, NoFitSimulated)
  double peak_memory_GiB = 0;   // simulated, or the lower bound (NoFitBound)
  double mfu = 0;
  double time_bound_s = 0;   // the lower bound it was compared with
  std::string path, reason;  // Invalid/Failed: the error's JSON path and message
};

struct ReasonCount {
  std::string path, message;  // message of the first candidate (lowest index) with this path
  int64_t count = 0;
  int64_t first_index = 0;
};

struct SearchCounts {
  int64_t enumerated = 0, invalid = 0, no_fit_bound = 0, pruned_time = 0, no_fit_simulated = 0, simulated = 0,
          failed = 0, bounded = 0,  // bounded: candidates given a compiled (tight) bound
      layer_bounded = 0;            // interleaved candidates given layer bounds (a 1F1B compile's)
};

struct SearchResult {
  int gpus = 0;
  double budget_GiB = 0;  // GPU memory minus the reserve
  int top = 0, shard = 0, shards = 1;
  SearchCounts counts;
  std::vector<CandidateResult> ranked;          // fitting, fastest first (index breaks ties), at most `top`
  std::vector<CandidateResult> closest_no_fit;  // smallest-memory candidates that do not fit (bounded ones)
  std::vector<ReasonCount> invalid_reasons;     // grouped by JSON path
  std::vector<CandidateResult> failed;
  std::string empty_reason;  // when the space has no candidate: the GPU-count rule that excluded all
};

// The space in its deterministic order (the index of a strategy is its position).
std::vector<StrategySpec> enumerate_space(const Config& base);
SearchResult run_search(const Config& base, const SearchOptions& options);
// The same over an explicit list of strategies (indices are positions in it).
SearchResult rank_strategies(const Config& base, const std::vector<StrategySpec>& strategies,
                             const SearchOptions& options);

// What to change when a config does not fit (simulate's "fit_advice"): the `count` fastest
// strategies, among changes of one or two knobs that keep the GPU count, that fit in memory
// (less search.memory_reserve), each with its simulated time and peak memory.
struct FitChange {
  std::string change;  // "recompute none -> full + zero 0 -> 1"
  StrategySpec strategy;
  double iteration_time_s = 0, peak_memory_GiB = 0, mfu = 0;
};
std::vector<FitChange> fit_changes(const Config& config, int count = 3, int threads = 1,
                                   const SearchProgressFn& progress = {});

// JSON text in and out (the CLI and the WebAssembly bindings).
std::string search_json(const std::string& config_text, const SearchOptions& options);
// Combines the results of shards 0..N-1 of one search (in any order) into the result one
// machine would give: the same ranking, invalid reasons and counts of enumerated/invalid.
std::string merge_search_json(const std::vector<std::string>& shard_results);

}  // namespace proteus
