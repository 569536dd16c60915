#include "search_rankings.h"

#include "proteus/error.h"
#include "proteus/search.h"

namespace proteus::validate_detail {
namespace {

using Json = nlohmann::json;
using Out = nlohmann::ordered_json;

Error bad_entry(const std::string& path, const std::string& message) {
  return Error("invalid_validation", path, message);
}

// The fastest fitting strategy of the case's config in `space` (its "search" object), or null
// when nothing in the space fits. A space the search refuses (empty, a knob out of range) is an
// error at `path` (the entry's "search").
Json best_in_space(const Json& config, const Json& space, const std::string& path) {
  Json base = config;
  base["search"] = space;
  SearchOptions options;
  options.top = 1;
  Json result;
  try {
    result = Json::parse(search_json(base.dump(), options));
  } catch (const Error& e) {
    // The search's answer when valid candidates exist but none fits (search_json.cpp,
    // throw_if_empty): the case is then the only configuration that runs.
    if (e.code == "no_strategy" && e.path == "search.memory_reserve") return Json();
    const std::string inner = e.path.rfind("search.", 0) == 0 ? e.path.substr(6) : "";
    throw Error(e.code, path + inner, e.what());
  }
  return result.at("ranked").at(0);
}

Out check_one(const Json& entry, const std::string& path, const std::map<std::string, SimulatedCase>& cases,
              bool* gated) {
  if (!entry.is_object() || !entry.contains("id") || !entry.contains("case") || !entry.contains("search"))
    throw bad_entry(path, "a search ranking needs \"id\", \"case\" and \"search\"");
  const std::string case_id = entry.at("case").get<std::string>();
  const auto it = cases.find(case_id);
  if (it == cases.end()) throw bad_entry(path + ".case", "no simulated case \"" + case_id + "\"");
  if (!entry.at("search").is_object()) throw bad_entry(path + ".search", "must be a search space object");
  const Json& ratio = entry.value("published_ratio", Json());
  if (!ratio.is_number() || !(ratio.get<double>() > 0))
    throw bad_entry(path + ".published_ratio", "must be a positive number (best in the space / the case)");
  const SimulatedCase& c = it->second;
  const Json best = best_in_space(c.config, entry.at("search"), path + ".search");
  *gated = c.gated && !entry.contains("reported_only");
  Out row;
  row["id"] = entry.at("id");
  row["case"] = case_id;
  row["published_ratio"] = ratio;
  if (best.is_null()) {
    row["kept"] = true;  // nothing in the space fits: the case's configuration is the only one
    row["best"] = nullptr;
  } else {
    const double best_s = best.at("iteration_time_s").get<double>();
    row["predicted_ratio"] = best_s / c.predicted_s;
    row["kept"] = c.predicted_s < best_s;
    row["best"] = {
        {"strategy", best.at("strategy")}, {"summary", best.at("summary")}, {"iteration_time_s", best_s}};
  }
  row["gated"] = *gated;
  return row;
}

}  // namespace

SearchRankingsResult check_search_rankings(const Json& list,
                                           const std::map<std::string, SimulatedCase>& cases) {
  SearchRankingsResult out;
  if (list.is_null()) return out;
  if (!list.is_array()) throw bad_entry("search_rankings", "must be an array");
  for (size_t i = 0; i < list.size(); ++i) {
    bool gated = false;
    Out row = check_one(list[i], "search_rankings[" + std::to_string(i) + "]", cases, &gated);
    if (gated) out.gated_kept = out.gated_kept && row.at("kept").get<bool>();
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace proteus::validate_detail
