// The search result as JSON (docs/search.md), the merge of shards, and the error for a space
// where nothing remains. Doubles print in nlohmann's shortest round-trip form, so a merged
// result compares equal to a single machine's field by field.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "proteus/error.h"
#include "proteus/search.h"
#include "strategy_json.h"
#include "strategy_summary.h"

namespace proteus {

namespace {

using Json = nlohmann::ordered_json;

Json candidate_json(const CandidateResult& r) {
  Json j;
  j["index"] = r.index;
  j["strategy"] = strategy_json(r.strategy);
  j["summary"] = strategy_summary(r.strategy);
  j["outcome"] = to_string(r.outcome);
  if (r.outcome == Outcome::Fits || r.outcome == Outcome::NoFitSimulated) {
    j["iteration_time_s"] = r.iteration_time_s;
    j["mfu"] = r.mfu;
  }
  if (r.outcome != Outcome::Failed) j["peak_memory_GiB"] = r.peak_memory_GiB;
  if (r.outcome == Outcome::Failed) j["error"] = {{"path", r.path}, {"message", r.reason}};
  return j;
}

// Nothing ranked: say which constraint excluded everything.
void throw_if_empty(const Json& r) {
  if (!r["ranked"].empty()) return;
  const Json& n = r["counts"];
  const int64_t enumerated = n["enumerated"], invalid = n["invalid"];
  if (enumerated == 0)
    throw Error("no_strategy", "search",
                "the search space is empty: " + (r.contains("empty_reason")
                                                     ? r["empty_reason"].get<std::string>()
                                                     : std::string("no combination of the listed values")));
  if (invalid == enumerated) {
    const Json* top = nullptr;
    std::string all;
    for (const Json& reason : r["invalid"]) {
      if (!top || reason["count"].get<int64_t>() > (*top)["count"].get<int64_t>()) top = &reason;
      all += "; " + reason["path"].get<std::string>() + " (" + reason["count"].dump() +
             "): " + reason["message"].get<std::string>();
    }
    throw Error("no_strategy", top ? (*top)["path"].get<std::string>() : "search",
                "no valid strategy: all " + std::to_string(enumerated) + " candidates are invalid" + all);
  }
  if (n["failed"].get<int64_t>() > 0 && n["no_fit_bound"].get<int64_t>() +
                                                n["no_fit_simulated"].get<int64_t>() + invalid +
                                                n["failed"].get<int64_t>() ==
                                            enumerated)
    throw Error("no_strategy", r["failed"][0]["error"]["path"].get<std::string>(),
                "no strategy could be simulated: " + r["failed"][0]["error"]["message"].get<std::string>());
  std::string closest;
  if (!r["closest_no_fit"].empty()) {
    const Json& c = r["closest_no_fit"][0];
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.1f", c["peak_memory_GiB"].get<double>());
    closest = "; the smallest needs at least " + std::string(gib) + " GiB (" +
              c["summary"].get<std::string>() + ")";
  }
  char budget[64];
  std::snprintf(budget, sizeof budget, "%.1f GiB", r["memory_budget_GiB"].get<double>());
  throw Error("no_strategy", "search.memory_reserve",
              "no valid strategy fits in " + std::string(budget) +
                  " per GPU (memory_GiB less memory_reserve)" + closest);
}

Json result_json(const SearchResult& s, const Config& base) {
  Json j;
  j["ok"] = true;
  j["schema"] = 1;
  j["kind"] = "search";
  j["gpus"] = s.gpus;
  j["global_batch"] = base.training.global_batch;
  j["memory_reserve"] = base.search.memory_reserve;
  j["memory_budget_GiB"] = s.budget_GiB;
  j["top"] = s.top;
  j["shard"] = {{"index", s.shard}, {"count", s.shards}};
  const SearchCounts& n = s.counts;
  j["counts"] = {{"enumerated", n.enumerated},
                 {"evaluated", n.invalid + n.no_fit_bound + n.pruned_time + n.simulated + n.failed},
                 {"invalid", n.invalid},
                 {"no_fit_bound", n.no_fit_bound},
                 {"pruned_time", n.pruned_time},
                 {"layer_bounds", n.layer_bounded},
                 {"compiled_bounds", n.bounded},
                 {"simulated", n.simulated},
                 {"no_fit_simulated", n.no_fit_simulated},
                 {"failed", n.failed}};
  Json ranked = Json::array(), closest = Json::array(), failed = Json::array(), invalid = Json::array();
  for (const auto& r : s.ranked) ranked.push_back(candidate_json(r));
  for (const auto& r : s.closest_no_fit) closest.push_back(candidate_json(r));
  for (const auto& r : s.failed) failed.push_back(candidate_json(r));
  for (const auto& r : s.invalid_reasons)
    invalid.push_back(
        {{"path", r.path}, {"message", r.message}, {"count", r.count}, {"first_index", r.first_index}});
  j["ranked"] = ranked;
  j["closest_no_fit"] = closest;
  j["invalid"] = invalid;
  j["failed"] = failed;
  if (n.enumerated == 0) j["empty_reason"] = s.empty_reason;
  return j;
}

}  // namespace

std::string search_json(const std::string& config_text, const SearchOptions& options) {
  const Config base = parse_config_sections(config_text);
  const Json j = result_json(run_search(base, options), base);
  if (options.shards == 1) throw_if_empty(j);
  return j.dump(2);
}

namespace {

Error bad_merge(const std::string& message) { return Error("invalid_request", "merge", message); }

// Concatenates one list field of every shard, sorts it and keeps the first `keep`.
Json merged_list(const std::vector<Json>& shards, const char* key, size_t keep, const char* by) {
  std::vector<Json> all;
  for (const Json& s : shards)
    for (const Json& r : s[key]) all.push_back(r);
  std::stable_sort(all.begin(), all.end(), [by](const Json& a, const Json& b) {
    if (by && a[by] != b[by]) return a[by].get<double>() < b[by].get<double>();
    return a["index"].get<int64_t>() < b["index"].get<int64_t>();
  });
  if (all.size() > keep) all.resize(keep);
  Json out = Json::array();
  for (Json& r : all) out.push_back(std::move(r));
  return out;
}

}  // namespace

std::string merge_search_json(const std::vector<std::string>& shard_results) {
  if (shard_results.empty()) throw bad_merge("no shard results to merge");
  std::vector<Json> shards;
  for (size_t i = 0; i < shard_results.size(); ++i) {
    Json j = Json::parse(shard_results[i], nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("kind", "") != "search")
      throw bad_merge("input " + std::to_string(i + 1) +
                      " is not the JSON of a search (proteus search --json)");
    shards.push_back(std::move(j));
  }
  const Json& first = shards[0];
  const int64_t count = first["shard"]["count"];
  std::vector<bool> seen(static_cast<size_t>(count), false);
  for (const Json& s : shards) {
    for (const char* key : {"gpus", "global_batch", "memory_reserve", "top"})
      if (s[key] != first[key])
        throw bad_merge(std::string("the shards disagree on \"") + key +
                        "\": they come from different searches");
    if (s["shard"]["count"] != first["shard"]["count"] ||
        s["counts"]["enumerated"] != first["counts"]["enumerated"])
      throw bad_merge("the shards come from different searches (shard count or space size differ)");
    const int64_t k = s["shard"]["index"];
    if (seen[static_cast<size_t>(k)]) throw bad_merge("shard " + std::to_string(k) + " appears twice");
    seen[static_cast<size_t>(k)] = true;
  }
  for (int64_t k = 0; k < count; ++k)
    if (!seen[static_cast<size_t>(k)])
      throw bad_merge("shard " + std::to_string(k) + "/" + std::to_string(count) + " is missing");
  Json out = first;
  out["shard"] = {{"index", 0}, {"count", 1}};
  for (auto& [key, value] : out["counts"].items()) {
    if (key == "enumerated") continue;
    int64_t sum = 0;
    for (const Json& s : shards) sum += s["counts"][key].get<int64_t>();
    value = sum;
  }
  const size_t top = first["top"].get<size_t>();
  out["ranked"] = merged_list(shards, "ranked", top, "iteration_time_s");
  out["closest_no_fit"] = merged_list(shards, "closest_no_fit", 5, "peak_memory_GiB");
  out["failed"] = merged_list(shards, "failed", 5, nullptr);
  std::map<std::string, Json> reasons;
  for (const Json& s : shards)
    for (const Json& r : s["invalid"]) {
      auto [it, inserted] = reasons.emplace(r["path"].get<std::string>(), r);
      if (inserted) continue;
      Json& m = it->second;
      m["count"] = m["count"].get<int64_t>() + r["count"].get<int64_t>();
      if (r["first_index"].get<int64_t>() < m["first_index"].get<int64_t>()) {
        m["message"] = r["message"];
        m["first_index"] = r["first_index"];
      }
    }
  Json invalid = Json::array();
  for (auto& [path, r] : reasons) invalid.push_back(r);
  out["invalid"] = invalid;
  throw_if_empty(out);
  return out.dump(2);
}

}  // namespace proteus
