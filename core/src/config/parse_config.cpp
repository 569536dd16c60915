// parse_config: config text -> Config. Order: text limits and JSON syntax, scenario preset,
// top-level keys, each section (model/cluster presets expanded), then cross-field rules.
#include "json_text.h"
#include "limits.h"
#include "preset_merge.h"
#include "readers.h"
#include "validate.h"

namespace proteus {

using namespace config_detail;

Config parse_config(const std::string& json_text) {
  Config config = parse_config_sections(json_text);
  config_detail::validate_config(config);
  return config;
}

void validate_config(const Config& config) { config_detail::validate_config(config); }

Config parse_config_sections(const std::string& json_text) {
  Json root = parse_json_text(json_text, "the config");
  if (!root.is_object()) throw invalid_config("", "the config must be a JSON object, got " + describe(root));
  root = resolve_scenario(root);
  ObjectReader top(
      root, "",
      {"schema", "name", "description", "model", "cluster", "training", "strategy", "simulation", "search"});
  if (top.has("schema")) {
    int64_t schema = as_integer(top.at("schema"), "schema", 0, config_limits::kMaxExactInteger);
    if (schema != 1) {
      throw invalid_config("schema", "schema version " + std::to_string(schema) +
                                         " is not supported; this build reads version 1");
    }
  }
  Config config;
  config.name = top.string("name", "");
  top.string("description", "");
  config.model = read_model(
      resolve_reference(top.required("model", "a preset name or a model object"), PresetKind::Model, "model"),
      "model");
  config.cluster =
      read_cluster(resolve_reference(top.required("cluster", "a preset name or a cluster object"),
                                     PresetKind::Cluster, "cluster"),
                   "cluster");
  config.training =
      read_training(top.required("training", "at least {\"global_batch\": N}"), "training", config.model);
  config.strategy = read_strategy(top.has("strategy") ? top.at("strategy") : Json::object(), "strategy");
  // The gradient dtype's default depends on the framework and the training precision.
  refresh_framework_defaults(&config.strategy, config.training.precision);
  config.simulation =
      read_simulation(top.has("simulation") ? top.at("simulation") : Json::object(), "simulation");
  if (top.has("search")) config.search = read_search(top.at("search"), "search");
  return config;
}

}  // namespace proteus
