// Preset references in a config: "model": "gpt3-175b", "model": {"preset": "gpt3-175b", ...},
// and a whole config {"preset": "<scenario>", ...}. Overrides merge deeply over the preset:
// objects merge key by key, anything else (numbers, strings, arrays, null) replaces.
#pragma once
#include <string>
#include "json_reader.h"
#include "proteus/presets.h"

namespace proteus::config_detail {

Json deep_merge(Json base, const Json& overrides);

// The preset's JSON, or Error("unknown_preset", path, ...) listing the available names.
Json load_preset(PresetKind kind, const std::string& name, const std::string& path);

// A "model"/"cluster" value with any preset reference expanded into a plain object.
Json resolve_reference(const Json& value, PresetKind kind, const std::string& path);

// The whole config with a top-level "preset" (a scenario) expanded. Inside the scenario a
// string "model"/"cluster" counts as {"preset": name}, so that an override object merges
// over it; an override object that names its own "preset" replaces the scenario's instead.
Json resolve_scenario(const Json& root);

}  // namespace proteus::config_detail
