// Embind bindings: the core's api.h surface, strings in and strings out. Every call
// catches proteus::Error and any std::exception and returns error_json(...), so a bad
// config (or a bug) reaches JavaScript as {"ok":false,...} and never as an abort.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "proteus/api.h"
#include "proteus/error.h"
#include "proteus/search.h"

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

// A JavaScript progress callback as the core's ProgressFn, called with its two counts as
// numbers; empty (no reports) when `progress` is not a function, e.g. null.
proteus::ProgressFn js_progress(const emscripten::val& progress) {
  if (progress.typeOf().as<std::string>() != "function") return {};
  return [progress](int64_t done, int64_t total) {
    progress(static_cast<double>(done), static_cast<double>(total));
  };
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
    options.curve_columns = true;  // typed arrays below, not ~190 kB of JSON numbers
    options.wall_time = wall_time;
    return proteus::simulate_json(config, options);
  });
}
std::string chrome_trace_json(const std::string& config) {
  return guarded([&] { return proteus::chrome_trace_json(config); });
}
// The accuracy panel (web/src/accuracy.ts): a validation file (tests/validation/published.json
// or one case of it) compared with what its sources published, exactly as `proteus validate`.
std::string validate_json(const std::string& validation_text) {
  return guarded([&] { return proteus::validate_json(validation_text); });
}
// Importers (docs/import.md): kind "megatron" | "hf" | "auto"; options {"cluster", "nodes"}.
std::string import_json(const std::string& kind, const std::string& text, const std::string& options) {
  return guarded([&] { return proteus::import_json(kind, text, options); });
}
std::string export_megatron_text(const std::string& config) {
  return guarded([&] { return proteus::export_megatron_text(config); });
}
// The page checks a text's length against this before handing it over, so that an oversized
// paste or file is refused without copying it into the module (docs/import.md).
double max_input_bytes() { return static_cast<double>(proteus::max_input_bytes()); }

// A typed array of the page's own (copied out of the module's memory once, so the worker can
// transfer its buffer to the page without another copy).
template <typename T>
emscripten::val typed_copy(const char* type, const std::vector<T>& v) {
  return emscripten::val::global(type).new_(emscripten::typed_memory_view(v.size(), v.data()));
}

emscripten::val string_array(const std::vector<std::string>& list) {
  emscripten::val a = emscripten::val::array();
  for (const std::string& s : list) a.call<void>("push", s);
  return a;
}

// One simulation for the page: {result, resolved, curves: [{rank, t_s, GiB}], timeline:
// {columns..., tables...}} or {error} (the error JSON text). The timeline and the memory
// curves are typed arrays, never JSON numbers (DESIGN.md §7).
// `progress`: null, or a function called with (tasks ended, tasks) as the executor advances
// (the worker posts it to the page); it cannot change the result.
emscripten::val simulate_columns(const std::string& config, bool timeline, bool memory_curve,
                                 emscripten::val progress) {
  emscripten::val out = emscripten::val::object();
  proteus::SimulationOutput run;
  const std::string error = guarded([&] {
    proteus::SimulateOptions options;
    options.columns = timeline;
    options.memory_curve = memory_curve;
    options.curve_columns = true;  // typed arrays below, not ~190 kB of JSON numbers
    // The page shows the run first and asks for its fit advice after it (fit_changes_json).
    options.fit_advice = false;
    options.progress = js_progress(progress);
    run = proteus::simulate_output(config, options);
    return std::string();
  });
  if (!error.empty()) {
    out.set("error", error);
    return out;
  }
  out.set("result", run.result);
  out.set("resolved", run.resolved);
  // The memory curves: result JSON's "memory_curves" as {rank, t_s, GiB} typed arrays.
  emscripten::val curves = emscripten::val::array();
  for (const proteus::MemoryCurveColumns& c : run.memory_curves) {
    emscripten::val one = emscripten::val::object();
    one.set("rank", c.rank);
    one.set("t_s", typed_copy("Float64Array", c.t_s));
    one.set("GiB", typed_copy("Float64Array", c.GiB));
    curves.call<void>("push", one);
  }
  out.set("curves", curves);
  if (!timeline) return out;
  const proteus::TimelineColumns& c = run.timeline;
  emscripten::val t = emscripten::val::object();
  t.set("start", typed_copy("Float64Array", c.start_s));
  t.set("end", typed_copy("Float64Array", c.end_s));
  t.set("rank", typed_copy("Int32Array", c.rank));
  t.set("mb", typed_copy("Int32Array", c.micro_batch));
  t.set("stream", typed_copy("Uint8Array", c.stream));
  t.set("kind", typed_copy("Uint8Array", c.kind));
  t.set("phase", typed_copy("Uint8Array", c.phase));
  t.set("name", typed_copy("Uint32Array", c.name));
  t.set("bytes", typed_copy("Float64Array", c.bytes));
  t.set("flops", typed_copy("Float64Array", c.flops));
  t.set("group", typed_copy("Int32Array", c.group));
  t.set("nodes", typed_copy("Int32Array", c.nodes));
  t.set("peer", typed_copy("Int32Array", c.peer));
  t.set("depOffsets", typed_copy("Int32Array", c.dep_offsets));
  t.set("deps", typed_copy("Int32Array", c.deps));
  t.set("names", string_array(c.names));
  t.set("streams", string_array(c.streams));
  t.set("kinds", string_array(c.kinds));
  t.set("phases", string_array(c.phases));
  t.set("totalTasks", static_cast<double>(c.total_tasks));
  out.set("timeline", t);
  return out;
}

}  // namespace

// Strategy search (docs/search.md): one shard of the space per call, so a pool of workers
// runs shard k of n each; the page merges the shards' JSON texts. `progress`: null, or a
// function called with (candidates decided, this shard's candidates) after the check and
// after each wave (SearchOptions::progress); it cannot change the result.
std::string search_json(const std::string& config, int top, int shard, int shards, emscripten::val progress) {
  return guarded([&] {
    proteus::SearchOptions o;
    o.top = top;
    o.shard = shard;
    o.shards = shards;
    if (proteus::ProgressFn told = js_progress(progress))
      o.progress = [told](const proteus::SearchProgress& p) { told(p.decided, p.candidates); };
    return proteus::search_json(config, o);
  });
}

// The fit advice of a config that does not fit (proteus::fit_changes_json), asked for after the
// page has shown the run. `progress`: null, or a function called with (candidates decided,
// candidates) after each wave of bounds and simulations.
std::string fit_changes_json(const std::string& config, emscripten::val progress) {
  return guarded([&] { return proteus::fit_changes_json(config, js_progress(progress)); });
}

// `shards`: a JavaScript array of the shards' result texts.
std::string merge_search_json(const emscripten::val& shards) {
  return guarded([&] { return proteus::merge_search_json(emscripten::vecFromJSArray<std::string>(shards)); });
}

EMSCRIPTEN_BINDINGS(proteus) {
  emscripten::function("version", &version);
  emscripten::function("presets_json", &presets_json);
  emscripten::function("preset_text", &preset_text);
  emscripten::function("show_json", &show_json);
  emscripten::function("tree_text", &tree_text);
  emscripten::function("compile_json", &compile_json);
  emscripten::function("simulate_json", &simulate_json);
  emscripten::function("chrome_trace_json", &chrome_trace_json);
  emscripten::function("simulate_columns", &simulate_columns);
  emscripten::function("validate_json", &validate_json);
  emscripten::function("import_json", &import_json);
  emscripten::function("export_megatron_text", &export_megatron_text);
  emscripten::function("max_input_bytes", &max_input_bytes);
  emscripten::function("search_json", &search_json);
  emscripten::function("merge_search_json", &merge_search_json);
  emscripten::function("fit_changes_json", &fit_changes_json);
}
