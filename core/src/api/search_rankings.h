// Published comparisons against "the best configuration within memory" (validate_json, the
// validation file's "search_rankings"): a source that reports one run's configuration and, beside
// it, only the best throughput its authors found in a space of other configurations (NeMo's
// long-sequence table: with-CP configurations against "the best achievable performance within
// the given memory capacity" without CP). Proteus searches the same space (the strategy search,
// docs/search.md) and checks that the case's configuration still beats the best it finds there.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace proteus::validate_detail {

struct SimulatedCase {
  nlohmann::json config;
  double predicted_s = 0;
  bool gated = true;
};

struct SearchRankingsResult {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  bool gated_kept = true;  // every gated comparison kept
};

// `list`: the file's "search_rankings" array, each {"id", "source", "case", "search",
// "published_ratio", optional "reported_only"}; `cases`: the simulated time cases by id.
SearchRankingsResult check_search_rankings(const nlohmann::json& list,
                                           const std::map<std::string, SimulatedCase>& cases);

}  // namespace proteus::validate_detail
