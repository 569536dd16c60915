// What to change when a config does not fit: the strategies one or two knob changes away that
// keep the GPU count, ranked by the search machinery (bounds, then simulation), fastest
// first. Each change is one a practitioner makes to an out-of-memory run: recompute more
// (for a Megatron-Core MoE or MLA model also other selective recompute modules),
// shard optimizer states / gradients / weights (ZeRO), sequence parallelism, smaller
// micro-batches, and moving data parallelism into pipeline or tensor parallelism.
#include <algorithm>
#include <string>
#include <vector>

#include "proteus/search.h"
#include "recompute_module_sets.h"

namespace proteus {

namespace {

std::string selective_text(RecomputeModules set) {
  std::string names;
  for (const std::string& n : recompute_module_names(set)) names += (names.empty() ? "" : "+") + n;
  return "selective(" + names + ")";
}

std::string recompute_text(const StrategySpec& s) {
  return s.recompute == Recompute::Selective && s.recompute_modules != kDefaultRecomputeModules
             ? selective_text(s.recompute_modules)
             : to_string(s.recompute);
}

struct Change {
  std::string knob, text;
  StrategySpec (*apply)(StrategySpec, int64_t);
  int64_t value;
};

std::vector<Change> single_changes(const Config& c) {
  const StrategySpec& s = c.strategy;
  std::vector<Change> out;
  for (Recompute r : kRecomputes)
    if (r != s.recompute)
      out.push_back({"recompute", "recompute " + recompute_text(s) + " -> " + to_string(r),
                     [](StrategySpec x, int64_t v) {
                       x.recompute = static_cast<Recompute>(v);
                       return x;
                     },
                     static_cast<int64_t>(r)});
  // Selective recompute of other modules: the search's sets (those that do not fit drop out).
  for (RecomputeModules set : search_detail::derived_recompute_module_sets(c))
    if (set != s.recompute_modules)
      out.push_back({"recompute", "recompute " + recompute_text(s) + " -> " + selective_text(set),
                     [](StrategySpec x, int64_t v) {
                       x.recompute = Recompute::Selective;
                       x.recompute_modules = static_cast<RecomputeModules>(v);
                       return x;
                     },
                     set});
  if (int64_t{s.dp} * s.cp > 1)
    for (int z = s.zero + 1; z <= 3; ++z)
      out.push_back({"zero", "zero " + std::to_string(s.zero) + " -> " + std::to_string(z),
                     [](StrategySpec x, int64_t v) {
                       x.zero = static_cast<int>(v);
                       return x;
                     },
                     z});
  if (s.tp > 1 && !s.sequence_parallel)
    out.push_back({"sequence_parallel", "sequence parallelism on",
                   [](StrategySpec x, int64_t) {
                     x.sequence_parallel = true;
                     return x;
                   },
                   1});
  for (int64_t mb = s.micro_batch / 2; mb >= 1; mb /= 2)
    if (s.micro_batch % mb == 0)
      out.push_back({"micro_batch",
                     "micro_batch " + std::to_string(s.micro_batch) + " -> " + std::to_string(mb),
                     [](StrategySpec x, int64_t v) {
                       x.micro_batch = v;
                       return x;
                     },
                     mb});
  // Data parallelism into the pipeline or into tensor parallelism (same GPUs).
  for (int f = 2; f <= s.dp && f <= 8; f *= 2) {
    if (s.dp % f != 0) continue;
    out.push_back({"pp",
                   "pp " + std::to_string(s.pp) + " -> " + std::to_string(s.pp * f) + ", dp " +
                       std::to_string(s.dp) + " -> " + std::to_string(s.dp / f),
                   [](StrategySpec x, int64_t v) {
                     x.pp *= static_cast<int>(v);
                     x.dp /= static_cast<int>(v);
                     x.ep = std::min(x.ep, x.dp);
                     return x;
                   },
                   f});
    out.push_back({"tp",
                   "tp " + std::to_string(s.tp) + " -> " + std::to_string(s.tp * f) + ", dp " +
                       std::to_string(s.dp) + " -> " + std::to_string(s.dp / f),
                   [](StrategySpec x, int64_t v) {
                     x.tp *= static_cast<int>(v);
                     x.dp /= static_cast<int>(v);
                     x.ep = std::min(x.ep, x.dp);
                     return x;
                   },
                   f});
  }
  return out;
}

}  // namespace

std::vector<FitChange> fit_changes(const Config& config, int count, int threads,
                                   const SearchProgressFn& progress) {
  const std::vector<Change> singles = single_changes(config);
  std::vector<StrategySpec> strategies;
  std::vector<std::string> texts;
  for (size_t i = 0; i < singles.size(); ++i) {
    strategies.push_back(singles[i].apply(config.strategy, singles[i].value));
    texts.push_back(singles[i].text);
    for (size_t j = i + 1; j < singles.size(); ++j) {
      if (singles[j].knob == singles[i].knob) continue;
      strategies.push_back(
          singles[j].apply(singles[i].apply(config.strategy, singles[i].value), singles[j].value));
      texts.push_back(singles[i].text + " + " + singles[j].text);
    }
  }
  for (StrategySpec& s : strategies) {  // zero/pp changed: the framework's defaults again
    forget_overlaps_deepspeed_lacks(&s, config.training.precision);
    refresh_framework_defaults(&s, config.training.precision);
    forget_pipeline_options_that_do_not_apply(&s);
    forget_distributed_optimizer_where_it_does_not_apply(&s);
  }
  SearchOptions options;
  options.top = count;
  options.threads = threads;
  options.progress = progress;
  const SearchResult r = rank_strategies(config, strategies, options);
  std::vector<FitChange> out;
  for (const CandidateResult& c : r.ranked)
    out.push_back(
        {texts[static_cast<size_t>(c.index)], c.strategy, c.iteration_time_s, c.peak_memory_GiB, c.mfu});
  return out;
}

}  // namespace proteus
