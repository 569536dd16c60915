// Readers for each section of the config: one JSON object (presets already expanded) in,
// one typed spec out. Each checks its own fields; cross-section rules are in validate.h.
#pragma once
#include "json_reader.h"
#include "proteus/config.h"

namespace proteus::config_detail {

ModelSpec read_model(const Json& value, const std::string& path);
ClusterSpec read_cluster(const Json& value, const std::string& path);
// seq_len 0/absent becomes the model's (transformers) or 1 (other kinds).
TrainingSpec read_training(const Json& value, const std::string& path, const ModelSpec& model);
StrategySpec read_strategy(const Json& value, const std::string& path);
SimulationSpec read_simulation(const Json& value, const std::string& path);
SearchSpec read_search(const Json& value, const std::string& path);  // read_search.cpp
// A list of Megatron-Core recompute module names (strategy.recompute_modules) as a set.
RecomputeModules read_recompute_modules(const Json& value, const std::string& path);

}  // namespace proteus::config_detail
