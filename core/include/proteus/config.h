// The whole input of a simulation and its parser. parse_config is the only place that reads
// config JSON; it resolves presets (deep-merging overrides), checks the exact key set and
// every value, and throws proteus::Error with the JSON path of the first problem.
#pragma once
#include <cstdint>
#include <string>
#include "proteus/cluster_spec.h"
#include "proteus/model_spec.h"
#include "proteus/search_spec.h"
#include "proteus/strategy_spec.h"
#include "proteus/training_spec.h"

namespace proteus {

// Simulation switches (top-level "simulation" object, optional).
struct SimulationSpec {
  bool symmetry = true;  // simulate one rank per class of identical ranks
  // Refuse graphs bigger than this (clear error). The largest validation case,
  // megatron-ptd-530b-560 (1,120 micro-batches on 35 stages), is estimated at 6.15M tasks
  // (5.99M built) and simulates in 677 MB resident natively (113 bytes a task with symmetry;
  // ~200 without, docs/robustness.md), so 6.5M tasks stay within about 1.3 GB, inside a
  // WebAssembly page's memory (2 GB). The biggest scenario preset has ~1M tasks.
  int64_t max_tasks = 6'500'000;
  // ~3 us an event natively: 100M events bound a simulation to minutes, not hours.
  int64_t max_events = 100'000'000;
  int64_t max_timeline_spans = 2'000'000;
};

struct Config {
  std::string name;  // optional, scenarios use it
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  StrategySpec strategy;
  SimulationSpec simulation;
  SearchSpec search;  // the optional "search" object (proteus search); simulate ignores it
};

Config parse_config(const std::string& json_text);
// The same without the rules that relate the strategy to the model, cluster and batch: the
// strategy search reads its base config this way (its strategy is what it varies) and checks
// each candidate with validate_config, which throws the error parse_config would.
Config parse_config_sections(const std::string& json_text);
void validate_config(const Config& config);
// The resolved config as JSON text (every field explicit), for `proteus show`.
std::string config_to_json(const Config& config, int indent = 2);

}  // namespace proteus
