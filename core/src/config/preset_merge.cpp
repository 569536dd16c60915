#include "preset_merge.h"

#include "json_text.h"

namespace proteus::config_detail {

namespace {

const char* kind_word(PresetKind kind) {
  switch (kind) {
    case PresetKind::Model:
      return "model";
    case PresetKind::Cluster:
      return "cluster";
    case PresetKind::Scenario:
      return "scenario";
  }
  return "?";
}

std::string available_names(PresetKind kind) {
  std::string names;
  for (const Preset& preset : embedded_presets()) {
    if (preset.kind == kind) names += (names.empty() ? "" : ", ") + preset.name;
  }
  return names.empty() ? "(none)" : names;
}

// {"preset": name} for a string, the object itself otherwise.
Json as_reference_object(const Json& value) {
  if (value.is_string()) return Json{{"preset", value}};
  return value;
}

}  // namespace

Json deep_merge(Json base, const Json& overrides) {
  if (!base.is_object() || !overrides.is_object()) return overrides;
  for (const auto& item : overrides.items()) {
    auto found = base.find(item.key());
    if (found != base.end() && found->is_object() && item.value().is_object()) {
      *found = deep_merge(std::move(*found), item.value());
    } else {
      base[item.key()] = item.value();
    }
  }
  return base;
}

Json load_preset(PresetKind kind, const std::string& name, const std::string& path) {
  const Preset* preset = find_preset(kind, name);
  if (preset == nullptr) {
    std::string shown = name.size() > 80 ? name.substr(0, 77) + "..." : name;
    throw Error("unknown_preset", path,
                "unknown " + std::string(kind_word(kind)) + " preset \"" + shown +
                    "\"; available: " + available_names(kind));
  }
  Json json = parse_json_text(preset->json, std::string(kind_word(kind)) + " preset \"" + name + "\"");
  if (!json.is_object()) {
    throw Error("internal", path,
                "the " + std::string(kind_word(kind)) + " preset \"" + name + "\" is not a JSON object");
  }
  if (json.contains("preset")) {
    throw Error("internal", path,
                "the " + std::string(kind_word(kind)) + " preset \"" + name +
                    "\" refers to another preset, which presets may not do");
  }
  return json;
}

Json resolve_reference(const Json& value, PresetKind kind, const std::string& path) {
  if (value.is_string()) return load_preset(kind, as_string(value, path), path);
  if (!value.is_object() || !value.contains("preset")) return value;
  const std::string preset_path = join_path(path, "preset");
  Json base = load_preset(kind, as_string(value.at("preset"), preset_path), preset_path);
  Json overrides = value;
  overrides.erase("preset");
  return deep_merge(std::move(base), overrides);
}

Json resolve_scenario(const Json& root) {
  if (!root.is_object() || !root.contains("preset")) return root;
  Json scenario = load_preset(PresetKind::Scenario, as_string(root.at("preset"), "preset"), "preset");
  for (const char* key : {"model", "cluster"}) {
    if (scenario.contains(key)) scenario[key] = as_reference_object(scenario[key]);
  }
  Json overrides = root;
  overrides.erase("preset");
  for (const char* key : {"model", "cluster"}) {
    // An override that picks its own preset (by name or object) starts from that preset.
    if (overrides.contains(key) &&
        (overrides[key].is_string() || (overrides[key].is_object() && overrides[key].contains("preset")))) {
      scenario[key] = overrides[key];
      overrides.erase(key);
    }
  }
  return deep_merge(std::move(scenario), overrides);
}

}  // namespace proteus::config_detail
