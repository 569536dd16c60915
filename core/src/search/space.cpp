// The knob table. Each knob names the config field it sets, the values worth trying given the
// knobs before it (every value a config could validly hold, minus those that change nothing),
// and the restriction of the "search" object. Enumeration is the nested product in table
// order, outermost first, so the order (and each candidate's index) is fixed.
//
// Values left out because they change nothing (each is what the frameworks do):
//   sequence_parallel only with tp > 1 (Megatron-LM turns it off at tp = 1, arguments.py);
//   zero > 0 only with data-parallel ranks (dp * cp > 1: there is nothing to shard over), and
//   only the stages the framework runs with the candidate's pipeline (framework_runs_zero:
//   Megatron-Core and DeepSpeed pipelines refuse zero 2-3, FSDP zero 1);
//   a schedule other than 1f1b only with pp > 1 (without a pipeline, Megatron runs
//   forward_backward_no_pipelining, one micro-batch's forward then its backward);
//   virtual_stages > 1 only with interleaved-1f1b, and interleaved-1f1b only with
//   virtual_stages > 1 (with one chunk per stage it is 1f1b);
//   recompute_modules only under selective recompute (the other modes ignore them);
//   expert_tp only for a mixture of experts with tp > 1 (with tp 1 the experts are whole either
//   way); a MoE candidate states it (tp or 1), a dense one leaves it unset.
#include <algorithm>
#include <functional>

#include "proteus/error.h"
#include "recompute_module_sets.h"
#include "space.h"

namespace proteus::search_detail {

namespace {

using Values = std::vector<int64_t>;

struct Problem {
  const Config& base;
  int64_t gpus;
  int64_t units;  // layers (transformer) or ops (graph) pipeline stages split; 0 otherwise
  std::vector<int64_t> recompute_module_sets;  // derived_recompute_module_sets, built once
};

Values divisors(int64_t n) {
  Values d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

Values range(int64_t from, int64_t to) {
  Values v;
  for (int64_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

int64_t pipeline_units(const ModelSpec& m) {
  if (m.kind == ModelKind::Transformer) return m.layers;
  if (m.kind == ModelKind::Graph) return static_cast<int64_t>(m.ops.size());
  return 0;
}

template <class E, size_t N>
Values all_of(const E (&values)[N]) {
  Values v;
  for (E e : values) v.push_back(static_cast<int64_t>(e));
  return v;
}

template <class E>
Values as_values(const std::vector<E>& list) {
  Values v;
  for (E e : list) v.push_back(static_cast<int64_t>(e));
  return v;
}

struct Knob {
  const char* name;
  // The values to try given the knobs before it (already set in `s`); `listed` is the search
  // object's list for this knob (empty: not restricted).
  std::function<Values(const Problem&, const StrategySpec& s)> values;
  std::function<Values(const SearchSpec&)> listed;
  std::function<void(StrategySpec&, int64_t)> apply;
  // False when the knob changes nothing given the knobs before it: it keeps its neutral value.
  std::function<bool(const Problem&, const StrategySpec& s)> applies;
  int64_t neutral;
  // When set, the neutral value depends on the config (recompute_modules: the config's own set).
  std::function<int64_t(const Problem&)> neutral_of = nullptr;
};

int64_t mesh_without_dp(const StrategySpec& s) { return int64_t{s.tp} * s.pp * s.cp; }

bool is_moe(const Problem& p) {
  return p.base.model.kind == ModelKind::Transformer && p.base.model.moe.experts > 0;
}

// The expert_tp knob's values: the field unset (a dense model), the experts whole (MoE parallel
// folding, expert_tp 1), or split like the dense MLP (expert_tp = the candidate's tp).
constexpr int64_t kExpertTpUnset = 0, kExpertTpFolded = 1, kExpertTpOfTp = 2;

// search.expert_tp holds 1 (folded) and 0 ("tp").
Values listed_expert_tp(const SearchSpec& s) {
  Values v;
  for (int64_t x : s.expert_tp) v.push_back(x == 1 ? kExpertTpFolded : kExpertTpOfTp);
  return v;
}

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = {
      {"tp", [](const Problem& p, const StrategySpec&) { return divisors(p.gpus); },
       [](const SearchSpec& s) { return s.tp; }, [](StrategySpec& s, int64_t v) { s.tp = int(v); },
       [](const Problem&, const StrategySpec&) { return true; }, 1},
      {"pp",
       [](const Problem& p, const StrategySpec& s) {
         Values v;
         for (int64_t d : divisors(p.gpus % s.tp == 0 ? p.gpus / s.tp : p.gpus))
           if (p.units == 0 || d <= p.units) v.push_back(d);
         return v;
       },
       [](const SearchSpec& s) { return s.pp; }, [](StrategySpec& s, int64_t v) { s.pp = int(v); },
       [](const Problem&, const StrategySpec&) { return true; }, 1},
      {"cp",
       [](const Problem& p, const StrategySpec& s) {
         Values v;
         const int64_t rest = int64_t{s.tp} * s.pp;
         for (int64_t d : divisors(p.gpus % rest == 0 ? p.gpus / rest : 1))
           if (p.base.training.seq_len % d == 0) v.push_back(d);
         return v;
       },
       [](const SearchSpec& s) { return s.cp; }, [](StrategySpec& s, int64_t v) { s.cp = int(v); },
       [](const Problem& p, const StrategySpec&) { return p.base.model.kind == ModelKind::Transformer; }, 1},
      // dp is what the GPU count leaves (enumerate() counts the combinations where nothing is left).
      {"dp",
       [](const Problem& p, const StrategySpec& s) {
         const int64_t rest = mesh_without_dp(s);
         return p.gpus % rest == 0 ? Values{p.gpus / rest} : Values{};
       },
       [](const SearchSpec& s) { return s.dp; }, [](StrategySpec& s, int64_t v) { s.dp = int(v); },
       [](const Problem&, const StrategySpec&) { return true; }, 1},
      // MoE parallel folding (Megatron-Core's --expert-tensor-parallel-size 1); before ep, whose
      // values it changes.
      {"expert_tp",
       [](const Problem&, const StrategySpec&) {
         return Values{kExpertTpOfTp, kExpertTpFolded};
       },
       listed_expert_tp,
       [](StrategySpec& s, int64_t v) {
         s.expert_tp = v == kExpertTpFolded ? 1 : v == kExpertTpOfTp ? s.tp : 0;
       },
       [](const Problem& p, const StrategySpec& s) { return is_moe(p) && s.tp > 1; }, kExpertTpUnset,
       [](const Problem& p) { return is_moe(p) ? kExpertTpOfTp : kExpertTpUnset; }},
      {"ep",
       [](const Problem& p, const StrategySpec& s) {
         // Folded, the expert-parallel group takes in the tp ranks: ep = tp x (a divisor of dp).
         const int64_t tp_in_ep = experts_fold_tp(s) ? s.tp : 1;
         Values v;
         for (int64_t d : divisors(s.dp))
           if (p.base.model.moe.experts % (d * tp_in_ep) == 0) v.push_back(d * tp_in_ep);
         return v;
       },
       [](const SearchSpec& s) { return s.ep; }, [](StrategySpec& s, int64_t v) { s.ep = int(v); },
       [](const Problem& p, const StrategySpec&) { return is_moe(p); }, 1},
      {"schedule", [](const Problem&, const StrategySpec&) { return all_of(kSchedules); },
       [](const SearchSpec& s) { return as_values(s.schedule); },
       [](StrategySpec& s, int64_t v) { s.schedule = static_cast<Schedule>(v); },
       [](const Problem&, const StrategySpec& s) { return s.pp > 1; },
       static_cast<int64_t>(Schedule::OneFOneB)},
      {"virtual_stages",
       [](const Problem& p, const StrategySpec& s) {
         return p.units > 0 ? range(2, p.units / s.pp) : Values{2};
       },
       [](const SearchSpec& s) { return s.virtual_stages; },
       [](StrategySpec& s, int64_t v) { s.virtual_stages = int(v); },
       [](const Problem&, const StrategySpec& s) { return s.schedule == Schedule::Interleaved1F1B; }, 1},
      {"micro_batch",
       [](const Problem& p, const StrategySpec& s) {
         return p.base.training.global_batch % s.dp == 0 ? divisors(p.base.training.global_batch / s.dp)
                                                         : Values{1};
       },
       [](const SearchSpec& s) { return s.micro_batch; },
       [](StrategySpec& s, int64_t v) { s.micro_batch = v; },
       [](const Problem&, const StrategySpec&) { return true; }, 1},
      {"sequence_parallel",
       [](const Problem&, const StrategySpec&) {
         return Values{0, 1};
       },
       [](const SearchSpec& s) { return s.sequence_parallel; },
       [](StrategySpec& s, int64_t v) { s.sequence_parallel = v != 0; },
       [](const Problem&, const StrategySpec& s) { return s.tp > 1; }, 0},
      {"zero",
       [](const Problem&, const StrategySpec& s) {
         Values v;
         for (int z = 0; z <= 3; ++z)
           if (framework_runs_zero(s, z)) v.push_back(z);
         return v;
       },
       [](const SearchSpec& s) { return s.zero; }, [](StrategySpec& s, int64_t v) { s.zero = int(v); },
       [](const Problem&, const StrategySpec& s) { return int64_t{s.dp} * s.cp > 1; }, 0},
      {"recompute", [](const Problem&, const StrategySpec&) { return all_of(kRecomputes); },
       [](const SearchSpec& s) { return as_values(s.recompute); },
       [](StrategySpec& s, int64_t v) { s.recompute = static_cast<Recompute>(v); },
       [](const Problem&, const StrategySpec&) { return true; }, static_cast<int64_t>(Recompute::None)},
      {"recompute_modules", [](const Problem& p, const StrategySpec&) { return p.recompute_module_sets; },
       [](const SearchSpec& s) { return as_values(s.recompute_modules); },
       [](StrategySpec& s, int64_t v) { s.recompute_modules = static_cast<RecomputeModules>(v); },
       [](const Problem&, const StrategySpec& s) { return s.recompute == Recompute::Selective; }, 0,
       [](const Problem& p) { return static_cast<int64_t>(p.base.strategy.recompute_modules); }},
  };
  return table;
}

// Values of knob k: its own list (or the listed ones, in the list's order) when it applies,
// else its neutral value. A listed value outside the derived ones is kept (the validator says
// why it is invalid), except for dp, which the GPU count determines.
Values values_of(const Knob& k, const Problem& p, const StrategySpec& s) {
  if (!k.applies(p, s)) return {k.neutral_of ? k.neutral_of(p) : k.neutral};
  const Values listed = k.listed(p.base.search);
  const Values derived = k.values(p, s);
  if (listed.empty()) return derived;
  if (std::string(k.name) != "dp") return listed;
  Values v;
  for (int64_t x : listed)
    if (std::find(derived.begin(), derived.end(), x) != derived.end()) v.push_back(x);
  return v;
}

void expand(const Problem& p, size_t k, StrategySpec& s, SpaceEnumeration* out) {
  const auto& table = knobs();
  if (k == table.size()) {
    out->strategies.push_back(s);
    // zero/pp changed: the framework's defaults again
    forget_overlaps_deepspeed_lacks(&out->strategies.back(), p.base.training.precision);
    refresh_framework_defaults(&out->strategies.back(), p.base.training.precision);
    forget_pipeline_options_that_do_not_apply(&out->strategies.back());
    forget_distributed_optimizer_where_it_does_not_apply(&out->strategies.back());
    return;
  }
  const Values values = values_of(table[k], p, s);
  if (values.empty() && std::string(table[k].name) == "dp") {
    ++out->mesh_mismatches;
    if (out->mesh_mismatch_example.empty())
      out->mesh_mismatch_example =
          "tp*pp*cp = " + std::to_string(s.tp) + "*" + std::to_string(s.pp) + "*" + std::to_string(s.cp) +
          " leaves no listed dp with dp*tp*pp*cp = " + std::to_string(p.gpus) + " GPUs";
  }
  for (int64_t v : values) {
    table[k].apply(s, v);
    expand(p, k + 1, s, out);
  }
}

}  // namespace

SpaceEnumeration enumerate(const Config& base) {
  // Its bounds and its other schedules are for the synchronised iteration (docs/design.md §4).
  if (base.strategy.optimizer_post_validation)
    throw invalid_config("strategy.optimizer_post_validation",
                         "the search compares schedules over one synchronised iteration, most of which "
                         "cannot post-validate; remove optimizer_post_validation");
  if (!base.strategy.stage_layers.empty())
    throw invalid_config(
        "strategy.stage_layers",
        "the search splits layers evenly over each candidate's pipeline; remove stage_layers");
  if (uneven_pipeline(base.strategy))
    throw invalid_config(base.strategy.first_stage_layers > 0  ? "strategy.first_stage_layers"
                         : base.strategy.last_stage_layers > 0 ? "strategy.last_stage_layers"
                         : base.strategy.embedding_as_layer
                             ? "strategy.account_for_embedding_in_pipeline_split"
                             : "strategy.account_for_loss_in_pipeline_split",
                         "the search splits layers evenly over each candidate's pipeline; remove the "
                         "uneven-pipeline options");
  for (size_t i = 0; i < base.strategy.overrides.size(); ++i)
    if (base.strategy.overrides[i].stage)
      throw invalid_config("strategy.overrides[" + std::to_string(i) + "].stage",
                           "the search varies the pipeline; an override may not fix a module's stage");
  Problem p{base, base.cluster.gpus(), pipeline_units(base.model), {}};
  // Only a space that reaches selective recompute needs them (they build the model's op graph).
  if (base.search.recompute.empty() || std::find(base.search.recompute.begin(), base.search.recompute.end(),
                                                 Recompute::Selective) != base.search.recompute.end())
    p.recompute_module_sets = as_values(derived_recompute_module_sets(base));
  SpaceEnumeration out;
  StrategySpec s = base.strategy;
  expand(p, 0, s, &out);
  return out;
}

}  // namespace proteus::search_detail
