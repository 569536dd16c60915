// Embind bindings: the core's api.h surface, strings in and strings out. Every call
// catches proteus::Error and any std::exception and returns error_json(...), so a bad
// config (or a bug) reaches JavaScript as {"ok":false,...} and never as an abort.
#include <emscripten/bind.h>

#include <exception>
#include <string>

#include "proteus/api.h"
#include "proteus/error.h"

namespace {

template <typename F>
std::string guarded(F&& f) {
  try {
    return f();
  } catch (const proteus::Error& e) {
    return proteus::error_json(e);
  } catch (const std::exception& e) {
    return proteus::error_json(proteus::Error("internal", "", e.what()));
  } catch (...) {
    return proteus::error_json(proteus::Error("internal", "", "unknown exception"));
  }
}

std::string version() {
  return guarded([] { return proteus::version(); });
}
std::string presets_json() {
  return guarded([] { return proteus::presets_json(); });
}
std::string preset_text(const std::string& kind, const std::string& name) {
  return guarded([&] { return proteus::preset_text(kind, name); });
}
std::string show_json(const std::string& config) {
  return guarded([&] { return proteus::show_json(config); });
}
std::string tree_text(const std::string& config) {
  return guarded([&] { return proteus::tree_text(config); });
}
std::string compile_json(const std::string& config) {
  return guarded([&] { return proteus::compile_json(config); });
}
// Flags instead of a struct: plain values cross the Embind boundary without registration.
std::string simulate_json(const std::string& config, bool timeline, bool memory_curve, bool wall_time) {
  return guarded([&] {
    proteus::SimulateOptions options;
    options.timeline = timeline;
    options.memory_curve = memory_curve;
    options.wall_time = wall_time;
    return proteus::simulate_json(config, options);
  });
}
std::string chrome_trace_json(const std::string& config) {
  return guarded([&] { return proteus::chrome_trace_json(config); });
}

}  // namespace

EMSCRIPTEN_BINDINGS(proteus) {
  emscripten::function("version", &version);
  emscripten::function("presets_json", &presets_json);
  emscripten::function("preset_text", &preset_text);
  emscripten::function("show_json", &show_json);
  emscripten::function("tree_text", &tree_text);
  emscripten::function("compile_json", &compile_json);
  emscripten::function("simulate_json", &simulate_json);
  emscripten::function("chrome_trace_json", &chrome_trace_json);
}
