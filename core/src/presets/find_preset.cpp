// Looks up a preset embedded from core/presets (see embed_presets.cmake).
#include "proteus/presets.h"

namespace proteus {

const Preset* find_preset(PresetKind kind, const std::string& name) {
  for (const Preset& preset : embedded_presets()) {
    if (preset.kind == kind && preset.name == name) return &preset;
  }
  return nullptr;
}

}  // namespace proteus
