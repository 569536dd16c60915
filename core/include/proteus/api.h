// The core's whole surface for the CLI and the WebAssembly bindings: JSON text in, JSON
// text out. Each function throws proteus::Error for bad input; error_json() renders one.
#pragma once
#include <string>
#include "proteus/error.h"
#include "proteus/simulation.h"
#include "proteus/timeline_columns.h"

namespace proteus {

struct SimulateOptions {
  bool timeline = false;      // include "timeline" spans in the result
  bool memory_curve = false;  // include per-rank memory curves
  bool wall_time = false;     // include stats.wall_ms (off by default: results stay byte-identical)
  bool columns = false;       // simulate_output: the timeline as columns (not in the JSON)
  // simulate_output with memory_curve: the curves as columns (out.memory_curves), not in the
  // result JSON (the page; the numbers are the same, DESIGN.md §7 "The page receives columns").
  bool curve_columns = false;
  bool chrome_trace = false;  // simulate_output: the Chrome trace of the same run
  // When the run does not fit: "fit_advice", the three fastest changes of one or two knobs
  // that fit (a few bounded simulations; docs/search.md). Off: the result has no advice.
  bool fit_advice = true;
  // Native threads for the fit advice's simulations (the search's; the advice does not depend
  // on it). The CLI uses the machine's cores; WebAssembly has one.
  int fit_advice_threads = 1;
  // Told how far the executor is (tasks ended / tasks): the page's progress bar. Observes
  // only; not called for the fit advice's own simulations.
  ProgressFn progress;
};

// One simulation and everything made from it: the result JSON, the resolved config (as
// show_json writes it), and, as asked, the timeline columns and the Chrome trace.
struct SimulationOutput {
  std::string result;
  std::string resolved;
  std::string chrome_trace;
  TimelineColumns timeline;
  std::vector<MemoryCurveColumns> memory_curves;  // with curve_columns and memory_curve
};

std::string version();
// The largest input text any entry point reads (a config, a launch script, a config.json):
// callers holding a file refuse a bigger one before reading it.
long long max_input_bytes();
std::string presets_json();  // {"models":[{name,..}],"clusters":[..],"scenarios":[..]}
std::string preset_text(const std::string& kind, const std::string& name);  // the preset's JSON
std::string show_json(const std::string& config_text);                      // resolved config
std::string tree_text(const std::string& config_text);     // resolved strategy tree, printable
std::string compile_json(const std::string& config_text);  // compile statistics
std::string simulate_json(const std::string& config_text, const SimulateOptions& options);
std::string chrome_trace_json(const std::string& config_text);
SimulationOutput simulate_output(const std::string& config_text, const SimulateOptions& options);
// The fit advice of a config alone: {"ok":true,"fit_advice":[...],"warnings":[...]}, what
// simulate adds to a run that does not fit (docs/search.md, "When a config does not fit"). The
// page simulates without it (SimulateOptions::fit_advice false), shows the run, then asks for
// this: a large MoE run's advice takes tens of bounded simulations. `progress` is told
// (candidates decided, candidates) after each wave; it observes only.
std::string fit_changes_json(const std::string& config_text, const ProgressFn& progress = {});
// Simulates every case of a validation file (tests/validation/published.json, docs/fidelity/validation.md)
// and returns per-case predicted vs published, the mean absolute percentage error, memory
// cases, rankings and whether the targets are met.
std::string validate_json(const std::string& validation_text);
// Importers (core/src/import, docs/import.md). kind: "megatron" | "hf" | "auto" (recognises
// JSON configs, Hugging Face config.json files and Megatron arguments). options_json:
// {"cluster": preset name or cluster object, "nodes": N} for Megatron arguments. Returns
// {"ok":true,"kind":...,"config":{...},"ignored":[...],"assumed":[...]}.
std::string import_json(const std::string& kind, const std::string& text, const std::string& options_json);
std::string export_megatron_text(const std::string& config_text);  // the Megatron command line
std::string error_json(const Error& error);                        // {"ok":false,"error":{code,path,message}}

}  // namespace proteus
