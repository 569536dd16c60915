// Every cost constant in a cluster preset names its source (issue 14: "no constant fitted to a
// validation case: a test fails if a preset constant has no source"). In each of the objects
// gpu, intra_node, inter_node and collectives, every field that carries a number, a non-empty
// array or an object (peak_TFLOPS, measured tables) needs a non-empty "sources" entry of the
// same name. Names and kinds are words, not constants; empty arrays carry nothing.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "proteus/presets.h"

using nlohmann::json;

namespace {

// The constants of `object` (at `path`) that have no source, as "path.field".
std::vector<std::string> unsourced(const json& object, const std::string& path) {
  std::vector<std::string> missing;
  const json none = json::object();
  const json& sources = object.contains("sources") ? object.at("sources") : none;
  for (const auto& [key, value] : object.items()) {
    if (key == "sources" || key == "source" || value.is_string() || value.is_boolean()) continue;
    if ((value.is_array() || value.is_object()) && value.empty()) continue;
    const bool has =
        sources.contains(key) && sources.at(key).is_string() && !sources.at(key).get<std::string>().empty();
    if (!has) missing.push_back(path + "." + key);
  }
  return missing;
}

std::vector<std::string> unsourced_cluster(const json& cluster) {
  std::vector<std::string> missing;
  for (const char* part : {"gpu", "intra_node", "inter_node", "collectives"}) {
    if (!cluster.contains(part)) continue;
    for (auto& m : unsourced(cluster.at(part), part)) missing.push_back(std::move(m));
  }
  return missing;
}

}  // namespace

TEST_CASE("preset sources: the check finds a constant without a source") {
  const json cluster = json::parse(R"({"gpu": {"name": "x", "hbm_GBps": 1000, "sm_count": 10,
      "peak_TFLOPS": {"fp32": 1}, "links": [], "sources": {"hbm_GBps": "datasheet", "sm_count": ""}}})");
  const auto missing = unsourced_cluster(cluster);
  REQUIRE(missing.size() == 2);
  CHECK(missing[0] == "gpu.peak_TFLOPS");  // no entry (nlohmann orders keys alphabetically)
  CHECK(missing[1] == "gpu.sm_count");     // an empty source is no source
}

TEST_CASE("preset sources: every constant of every cluster preset names its source") {
  int clusters = 0;
  for (const auto& preset : proteus::embedded_presets()) {
    if (preset.kind != proteus::PresetKind::Cluster) continue;
    ++clusters;
    const json cluster = json::parse(preset.json);
    CAPTURE(preset.name);
    CHECK(cluster.contains("source"));
    for (const auto& field : unsourced_cluster(cluster)) {
      CAPTURE(field);
      FAIL_CHECK("a preset constant without a source");
    }
  }
  CHECK(clusters >= 10);
}
