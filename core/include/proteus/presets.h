// Presets compiled into the binary from core/presets/{models,clusters,scenarios}/*.json.
#pragma once
#include <string>
#include <vector>

namespace proteus {

enum class PresetKind { Model, Cluster, Scenario };

struct Preset {
  PresetKind kind;
  std::string name;  // file name without .json
  std::string json;  // file contents
};

const std::vector<Preset>& embedded_presets();  // immutable data, sorted by kind then name
const Preset* find_preset(PresetKind kind, const std::string& name);  // nullptr if none

}  // namespace proteus
