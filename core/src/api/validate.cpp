// validate_json (api.h): simulate every case of a validation file and compare with what its
// source published (docs/fidelity/validation.md, tests/validation/published.json).
//
// The file: {"cases": [{"id", "source", "gpu", "config", "expect": {"iteration_time_s"},
//                       "reported_only": "why", "needs": "why"}],
//            "memory_cases": [{"id", "source", "same_config_as", "expect_GiB": {quantity: GiB},
//                              "measure": {quantity: {"stage", "categories", "strategy"}},
//                              "known_issues": {quantity: "why it misses, whose fix"}}],
//            "targets": {"time_mape_pct", "time_max_pct", "memory_pct"}}   (all but "cases" optional)
// Time: error = (predicted - published) / published per case; MAPE = mean |error|. The targets
//   apply to the gated cases; a case with "reported_only" is simulated and reported (in the
//   all-case error and its group) but not held to them; a case with "needs" names what the
//   simulator lacks to run it (a feature, or settings its source does not state) and is listed,
//   not simulated. Groups: cases by "gpu" (the case's GPU type) and training.precision.
// Memory: a quantity is the simulator's memory at the peak of one pipeline stage (its first
//   simulated rank), summed over the named categories of the result's memory_breakdown_GiB, for
//   the case's config with "strategy" merged in. Without "measure", the quantities of
//   Korthikanti et al.'s Figure 1 are measured as that paper counts them:
//     weights_grads_optimizer           weights + gradients + optimizer_states of a stage that
//                                       holds transformer layers only (stage 1 when pp > 1; the
//                                       figure counts 12*l*h^2 parameters, no embedding)
//     activations_tp_only_no_recompute  activations of stage 0, sequence_parallel false, recompute none
//     activations_sp_selective          activations of stage 0, sequence_parallel true, recompute selective
// Rankings: every two cases with the same model, cluster and training settings (they differ only
//   in strategy) must come out in their published order.
// Search rankings ("search_rankings": [{"id", "source", "case", "search", "published_ratio"}]):
//   the case's configuration must beat the best that the strategy search finds in the "search"
//   space, as its source reports it beat the best its authors found there (search_rankings.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proteus/api.h"
#include "search_rankings.h"

namespace proteus {
namespace {

using Json = nlohmann::json;
using Out = nlohmann::ordered_json;

constexpr double kDefaultTimeMapePct = 7;  // the issue's targets
constexpr double kDefaultTimeMaxPct = 15;
constexpr double kDefaultMemoryPct = 3;

Error bad_file(const std::string& path, const std::string& message) {
  return Error("invalid_validation", path, message);
}

const Json& member(const Json& object, const char* key, const std::string& path) {
  if (!object.is_object() || !object.contains(key))
    throw bad_file(path, std::string("missing \"") + key + "\"");
  return object.at(key);
}

double positive_number(const Json& value, const std::string& path) {
  if (!value.is_number() || !(value.get<double>() > 0)) throw bad_file(path, "must be a positive number");
  return value.get<double>();
}

double percent_error(double predicted, double published) {
  return 100.0 * (predicted - published) / published;
}

Json simulate(const Json& config) { return Json::parse(simulate_json(config.dump(), SimulateOptions{})); }

struct Measure {
  int stage = 0;
  std::vector<std::string> categories;
  Json strategy = Json::object();
};

Measure default_measure(const std::string& quantity, const Json& config, const std::string& path) {
  Measure m;
  if (quantity == "weights_grads_optimizer") {
    const Json& strategy = config.value("strategy", Json::object());
    m.stage = strategy.value("pp", 1) > 1 ? 1 : 0;
    m.categories = {"weights", "gradients", "optimizer_states"};
  } else if (quantity == "activations_tp_only_no_recompute") {
    m.categories = {"activations"};
    m.strategy = {{"sequence_parallel", false}, {"recompute", "none"}};
  } else if (quantity == "activations_sp_selective") {
    m.categories = {"activations"};
    m.strategy = {{"sequence_parallel", true}, {"recompute", "selective"}};
  } else {
    throw bad_file(path, "no \"measure\" for quantity \"" + quantity + "\" and no default for it");
  }
  return m;
}

Measure read_measure(const Json& spec, const std::string& path) {
  Measure m;
  m.stage = spec.value("stage", 0);
  const Json& categories = member(spec, "categories", path);
  if (!categories.is_array() || categories.empty())
    throw bad_file(path + ".categories", "must list memory categories");
  for (const Json& c : categories) m.categories.push_back(c.get<std::string>());
  if (spec.contains("strategy")) m.strategy = spec.at("strategy");
  return m;
}

// The memory of `stage` at its first simulated rank's peak, in the named categories.
double stage_memory_GiB(const Json& result, const Measure& m, const std::string& path) {
  for (const Json& device : result.at("devices")) {
    if (device.at("stage").get<int>() != m.stage) continue;
    const Json& breakdown = device.at("memory_breakdown_GiB");
    double total = 0;
    for (const std::string& c : m.categories) {
      if (!breakdown.contains(c)) throw bad_file(path, "the result has no memory category \"" + c + "\"");
      total += breakdown.at(c).get<double>();
    }
    return total;
  }
  throw bad_file(path, "the simulation has no stage " + std::to_string(m.stage));
}

struct TimeCase {
  std::string id;
  Json config;
  double published_s = 0, predicted_s = 0;
  bool gated = true;
};

struct ErrorSum {
  int cases = 0;
  double sum_abs = 0, worst = 0;
  void add(double error_pct) {
    ++cases;
    sum_abs += std::fabs(error_pct);
    worst = std::max(worst, std::fabs(error_pct));
  }
  double mape() const { return cases ? sum_abs / cases : 0; }
};

// "H100 fp8": the case's GPU type and the precision it trains in (the config's default bf16).
std::string group_of(const Json& c) {
  const Json& training = c.at("config").value("training", Json::object());
  return c.value("gpu", std::string("unknown")) + " " + training.value("precision", std::string("bf16"));
}

// A config's training settings less its precision and FP8 recipe.
Json training_but_precision(const Json& config) {
  Json training = config.value("training", Json::object());
  if (training.is_object()) {
    training.erase("precision");
    training.erase("fp8_recipe");
  }
  return training;
}

// Two cases are ranked against each other when only their strategies or precisions differ: the
// same model, cluster and training but for the precision (the issue's "FP8 vs BF16"), the
// strategies free (recompute, schedules, CP, overlap).
bool same_setting(const Json& a, const Json& b) {
  return a.value("model", Json()) == b.value("model", Json()) &&
         a.value("cluster", Json()) == b.value("cluster", Json()) &&
         training_but_precision(a) == training_but_precision(b);
}

}  // namespace

std::string validate_json(const std::string& validation_text) {
  const Json file = Json::parse(validation_text, nullptr, false);
  if (file.is_discarded() || !file.is_object()) throw bad_file("", "a validation file is a JSON object");
  const Json targets = file.value("targets", Json::object());
  const double mape_target = targets.value("time_mape_pct", kDefaultTimeMapePct);
  const double max_target = targets.value("time_max_pct", kDefaultTimeMaxPct);
  const double memory_target = targets.value("memory_pct", kDefaultMemoryPct);

  Out out;
  out["ok"] = true;
  std::vector<TimeCase> time_cases;
  std::map<std::string, Json> configs;
  Out cases = Out::array();
  const Json& case_list = member(file, "cases", "");
  if (!case_list.is_array()) throw bad_file("cases", "must be an array");
  double sum_abs = 0, worst = -1;
  std::string worst_id;
  int gated_cases = 0;
  ErrorSum all;
  std::map<std::string, ErrorSum> groups;
  Out not_run = Out::array();
  for (size_t i = 0; i < case_list.size(); ++i) {
    const Json& c = case_list[i];
    const std::string path = "cases[" + std::to_string(i) + "]";
    TimeCase t;
    t.id = member(c, "id", path).get<std::string>();
    if (c.contains("needs")) {
      not_run.push_back({{"id", t.id}, {"gpu", c.value("gpu", "")}, {"needs", c.at("needs")}});
      continue;
    }
    t.config = member(c, "config", path);
    t.gated = !c.contains("reported_only");
    configs[t.id] = t.config;
    const Json& expect = member(c, "expect", path);
    if (!expect.contains("iteration_time_s")) continue;  // a config other cases refer to
    t.published_s = positive_number(expect.at("iteration_time_s"), path + ".expect.iteration_time_s");
    const Json result = simulate(t.config);
    t.predicted_s = result.at("summary").at("iteration_time_s").get<double>();
    const double error = percent_error(t.predicted_s, t.published_s);
    all.add(error);
    groups[group_of(c)].add(error);
    if (t.gated) {
      gated_cases++;
      sum_abs += std::fabs(error);
      if (std::fabs(error) > worst) {
        worst = std::fabs(error);
        worst_id = t.id;
      }
    }
    Out row;
    row["id"] = t.id;
    row["source"] = c.value("source", "");
    row["published_s"] = t.published_s;
    row["predicted_s"] = t.predicted_s;
    row["error_pct"] = error;
    row["group"] = group_of(c);
    row["gated"] = t.gated;
    row["peak_memory_GiB"] = result.at("summary").at("peak_memory_GiB");
    row["oom"] = result.at("summary").at("oom");
    cases.push_back(std::move(row));
    time_cases.push_back(std::move(t));
  }
  const double mape = gated_cases == 0 ? 0 : sum_abs / gated_cases;
  const bool time_met = gated_cases == 0 || (mape <= mape_target && worst <= max_target);
  out["cases"] = std::move(cases);
  out["not_run"] = std::move(not_run);
  out["all"] = {{"cases", all.cases}, {"mape_pct", all.mape()}, {"max_abs_error_pct", all.worst}};
  Out group_rows = Out::array();
  for (const auto& [name, sum] : groups)
    group_rows.push_back(
        {{"group", name}, {"cases", sum.cases}, {"mape_pct", sum.mape()}, {"max_abs_error_pct", sum.worst}});
  out["groups"] = std::move(group_rows);
  out["time"] = {{"cases", gated_cases},
                 {"mape_pct", mape},
                 {"max_abs_error_pct", std::max(0.0, worst)},
                 {"worst_case", worst_id},
                 {"target_mape_pct", mape_target},
                 {"target_max_pct", max_target},
                 {"met", time_met}};

  Out rankings = Out::array();
  bool rankings_kept = true;
  for (size_t a = 0; a < time_cases.size(); ++a)
    for (size_t b = a + 1; b < time_cases.size(); ++b) {
      const TimeCase &x = time_cases[a], &y = time_cases[b];
      if (!same_setting(x.config, y.config) || x.published_s == y.published_s) continue;
      const TimeCase& fast = x.published_s < y.published_s ? x : y;
      const TimeCase& slow = x.published_s < y.published_s ? y : x;
      const bool kept = fast.predicted_s < slow.predicted_s;
      const bool gated = x.gated && y.gated;
      if (gated) rankings_kept = rankings_kept && kept;
      rankings.push_back({{"faster", fast.id},
                          {"slower", slow.id},
                          {"published_ratio", slow.published_s / fast.published_s},
                          {"predicted_ratio", slow.predicted_s / fast.predicted_s},
                          {"kept", kept},
                          {"gated", gated}});
    }
  out["rankings"] = std::move(rankings);

  std::map<std::string, validate_detail::SimulatedCase> simulated;
  for (const TimeCase& t : time_cases) simulated[t.id] = {t.config, t.predicted_s, t.gated};
  validate_detail::SearchRankingsResult searched =
      validate_detail::check_search_rankings(file.value("search_rankings", Json()), simulated);
  out["search_rankings"] = std::move(searched.rows);
  rankings_kept = rankings_kept && searched.gated_kept;

  Out memory = Out::array();
  bool memory_met = true;
  double memory_worst = 0;
  const Json memory_list = file.value("memory_cases", Json::array());
  for (size_t i = 0; i < memory_list.size(); ++i) {
    const Json& m = memory_list[i];
    const std::string path = "memory_cases[" + std::to_string(i) + "]";
    const std::string id = member(m, "id", path).get<std::string>();
    const std::string base = member(m, "same_config_as", path).get<std::string>();
    if (!configs.count(base)) throw bad_file(path + ".same_config_as", "no case \"" + base + "\"");
    const Json& expect = member(m, "expect_GiB", path);
    if (!expect.is_object()) throw bad_file(path + ".expect_GiB", "must map quantities to GiB");
    const Json measures = m.value("measure", Json::object());
    std::map<std::string, Json> results;  // by strategy override, so a variant is simulated once
    for (auto it = expect.begin(); it != expect.end(); ++it) {
      const std::string qpath = path + ".expect_GiB." + it.key();
      const double published = positive_number(it.value(), qpath);
      const Measure measure = measures.contains(it.key())
                                  ? read_measure(measures.at(it.key()), path + ".measure." + it.key())
                                  : default_measure(it.key(), configs[base], qpath);
      Json config = configs[base];
      for (auto s = measure.strategy.begin(); s != measure.strategy.end(); ++s)
        config["strategy"][s.key()] = s.value();
      const std::string key = measure.strategy.dump();
      if (!results.count(key)) results[key] = simulate(config);
      const double predicted = stage_memory_GiB(results[key], measure, qpath);
      const double error = percent_error(predicted, published);
      const bool met = std::fabs(error) <= memory_target;
      memory_met = memory_met && met;
      memory_worst = std::max(memory_worst, std::fabs(error));
      Out row;
      row["id"] = id;
      row["quantity"] = it.key();
      row["stage"] = measure.stage;
      row["published_GiB"] = published;
      row["predicted_GiB"] = predicted;
      row["error_pct"] = error;
      row["met"] = met;
      const Json issues = m.value("known_issues", Json::object());
      if (issues.contains(it.key())) row["known_issue"] = issues.at(it.key());
      memory.push_back(std::move(row));
    }
  }
  out["memory_cases"] = std::move(memory);
  out["memory"] = {{"max_abs_error_pct", memory_worst}, {"target_pct", memory_target}, {"met", memory_met}};
  out["targets_met"] = time_met && memory_met && rankings_kept;
  return out.dump(2);
}

}  // namespace proteus
