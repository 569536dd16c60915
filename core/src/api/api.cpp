// The core's JSON-in, JSON-out surface, shared by the CLI and the WebAssembly bindings.
#include "proteus/api.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/presets.h"
#include "proteus/report.h"
#include "proteus/run.h"
#include "proteus/search.h"
#include "proteus/simulation.h"
#include "proteus/strategy_tree.h"
#include "proteus/units.h"

namespace proteus {

std::string version() { return PROTEUS_VERSION; }

namespace {

const char* kind_name(PresetKind k) {
  switch (k) {
    case PresetKind::Model:
      return "models";
    case PresetKind::Cluster:
      return "clusters";
    case PresetKind::Scenario:
      return "scenarios";
  }
  return "?";
}

PresetKind kind_from(const std::string& kind) {
  if (kind == "model" || kind == "models") return PresetKind::Model;
  if (kind == "cluster" || kind == "clusters") return PresetKind::Cluster;
  if (kind == "scenario" || kind == "scenarios") return PresetKind::Scenario;
  throw Error("invalid_request", "kind",
              "preset kind must be model, cluster or scenario, not '" + kind + "'");
}

// A one-line description of a preset for lists: its own name/description fields.
nlohmann::ordered_json describe(const Preset& p) {
  nlohmann::ordered_json d;
  d["name"] = p.name;
  const auto j = nlohmann::json::parse(p.json, nullptr, false);
  if (j.is_object()) {
    if (j.contains("name") && j["name"].is_string()) d["title"] = j["name"];
    if (j.contains("description") && j["description"].is_string()) d["description"] = j["description"];
    if (p.kind == PresetKind::Cluster) {
      if (j.contains("gpu") && j["gpu"].is_object() && j["gpu"].contains("name")) d["gpu"] = j["gpu"]["name"];
      if (j.contains("gpus_per_node")) d["gpus_per_node"] = j["gpus_per_node"];
    }
    if (p.kind == PresetKind::Model && j.contains("kind")) d["kind"] = j["kind"];
  }
  return d;
}

}  // namespace

std::string presets_json() {
  nlohmann::ordered_json out;
  out["models"] = nlohmann::ordered_json::array();
  out["clusters"] = nlohmann::ordered_json::array();
  out["scenarios"] = nlohmann::ordered_json::array();
  for (const Preset& p : embedded_presets()) out[kind_name(p.kind)].push_back(describe(p));
  return out.dump(2);
}

std::string preset_text(const std::string& kind, const std::string& name) {
  const Preset* p = find_preset(kind_from(kind), name);
  if (!p) throw Error("unknown_preset", kind, "no " + kind + " preset named '" + name + "'");
  return p->json;
}

std::string show_json(const std::string& config_text) { return config_to_json(parse_config(config_text)); }

std::string tree_text(const std::string& config_text) {
  const Config config = parse_config(config_text);
  const OpGraph graph =
      build_op_graph(config.model, config.training, config.strategy.micro_batch * config.strategy.dp);
  return tree_to_text(build_strategy_tree(config, graph), graph);
}

std::string compile_json(const std::string& config_text) {
  return compile_stats_json(compile(parse_config(config_text)));
}

namespace {

struct Simulated {
  Config config;
  CompiledModel compiled;
  Trace trace;
  std::optional<PassProfile> zb_profile;  // run.h
  double wall_ms = 0;

  ReportInputs report_inputs() const {
    ReportInputs in{config, compiled.exec, trace, wall_ms};
    if (zb_profile) {
      in.zb_profile = &*zb_profile;
      in.stage_orders = &compiled.stats.stage_orders;
    }
    return in;
  }
};

Simulated run_simulation(const std::string& config_text, bool memory_curve, const ProgressFn& progress = {}) {
  const auto start = std::chrono::steady_clock::now();
  Simulated s;
  s.config = parse_config(config_text);
  const Topology topology = build_topology(s.config.cluster);
  ExecOptions exec = exec_options_of(s.config, memory_curve);
  exec.progress = progress;
  ConfigRun run = run_config(s.config, topology, exec);
  s.compiled = std::move(run.compiled);
  s.trace = std::move(run.trace);
  s.zb_profile = std::move(run.zb_profile);
  s.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return s;
}

// Only a run that does not fit pays for the advice (a handful of bounded simulations).
std::vector<FitChange> fit_advice_of(const Simulated& s, const SimulateOptions& options, bool* computed) {
  double peak_bytes = 0;
  for (const RankTrace& r : s.trace.ranks) peak_bytes = std::max(peak_bytes, r.peak_memory_bytes);
  *computed = options.fit_advice && peak_bytes > s.config.cluster.gpu.memory_GiB * kBytesPerGiB;
  return *computed ? fit_changes(s.config, 3, std::max(1, options.fit_advice_threads))
                   : std::vector<FitChange>{};
}

}  // namespace

std::string simulate_json(const std::string& config_text, const SimulateOptions& options) {
  const Simulated s = run_simulation(config_text, options.memory_curve, options.progress);
  ReportInputs in = s.report_inputs();
  bool computed = false;
  const std::vector<FitChange> advice = fit_advice_of(s, options, &computed);
  if (computed) in.fit_advice = &advice;
  return result_json(in, options);
}

std::string chrome_trace_json(const std::string& config_text) {
  const Simulated s = run_simulation(config_text, false);
  return chrome_trace(s.report_inputs());
}

SimulationOutput simulate_output(const std::string& config_text, const SimulateOptions& options) {
  const Simulated s = run_simulation(config_text, options.memory_curve, options.progress);
  ReportInputs in = s.report_inputs();
  bool computed = false;
  const std::vector<FitChange> advice = fit_advice_of(s, options, &computed);
  if (computed) in.fit_advice = &advice;
  SimulationOutput out;
  SimulateOptions json_options = options;
  if (options.curve_columns) json_options.memory_curve = false;  // they go to out.memory_curves
  out.result = result_json(in, json_options);
  if (options.curve_columns && options.memory_curve) out.memory_curves = memory_curve_columns(in);
  out.resolved = config_to_json(s.config);
  if (options.columns) out.timeline = timeline_columns(in);
  if (options.chrome_trace) out.chrome_trace = chrome_trace(in);
  return out;
}

std::string fit_changes_json(const std::string& config_text, const ProgressFn& progress) {
  const Config config = parse_config(config_text);
  SearchProgressFn told;
  if (progress) told = [&progress](const SearchProgress& p) { progress(p.decided, p.candidates); };
  return fit_advice_result_json(fit_changes(config, 3, 1, told));
}

std::string error_json(const Error& error) {
  nlohmann::ordered_json j;
  j["ok"] = false;
  j["error"] = {{"code", error.code}, {"path", error.path}, {"message", error.what()}};
  return j.dump(2);
}

}  // namespace proteus
