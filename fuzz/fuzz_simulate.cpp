// libFuzzer target over the whole pipeline: config text -> parse -> compile -> simulate ->
// result JSON and Chrome trace. The contract it checks, for any input bytes:
//   * the core either returns or throws proteus::Error (any other exception, a crash, a
//     sanitizer report or a hang is a finding);
//   * an Error has a known code and a non-empty message, and is never "internal" (an internal
//     error means a valid config reached an inconsistent state: a bug, not bad input);
//   * a config that parses prints (config_to_json) to text that parses back to the same config;
//   * a simulation that succeeds reports a finite, positive iteration time.
// Work per input is bounded by lowering simulation.max_tasks / max_events / max_timeline_spans
// (the same limits a user can set), so a slow input is a finding only when it is slow despite
// them. Build and run with fuzz/run.sh.
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz_contract.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/report.h"
#include "proteus/run.h"
#include "proteus/simulation.h"
#include "proteus/strategy_tree.h"
#include "proteus/topology.h"

namespace {

constexpr int64_t kFuzzMaxTasks = 20'000;
constexpr int64_t kFuzzMaxEvents = 200'000;
constexpr int64_t kFuzzMaxSpans = 2'000;

using fuzz_contract::check_error;
using fuzz_contract::finding;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  proteus::Config config;
  try {
    config = proteus::parse_config(text);
  } catch (const proteus::Error& e) {
    check_error(e, "parse");
    return 0;
  }

  // The resolved config is itself a valid config that resolves to the same thing.
  const std::string shown = proteus::config_to_json(config);
  try {
    const std::string again = proteus::config_to_json(proteus::parse_config(shown));
    if (again != shown) finding("config_to_json does not round-trip:\n" + shown + "\n---\n" + again);
  } catch (const proteus::Error& e) {
    finding(std::string("the resolved config does not parse: ") + e.path + ": " + e.what() + "\n" + shown);
  }

  config.simulation.max_tasks = std::min(config.simulation.max_tasks, kFuzzMaxTasks);
  config.simulation.max_events = std::min(config.simulation.max_events, kFuzzMaxEvents);
  config.simulation.max_timeline_spans = std::min(config.simulation.max_timeline_spans, kFuzzMaxSpans);
  try {
    const proteus::Topology topology = proteus::build_topology(config.cluster);
    const proteus::ConfigRun run =
        proteus::run_config(config, topology, proteus::exec_options_of(config, true));
    const proteus::CompiledModel& compiled = run.compiled;
    const proteus::Trace& trace = run.trace;
    (void)proteus::compile_stats_json(compiled);
    (void)proteus::tree_to_text(compiled.tree, compiled.graph);
    if (!std::isfinite(trace.iteration_time_s) || !(trace.iteration_time_s > 0)) {
      finding("iteration time " + std::to_string(trace.iteration_time_s) + " for\n" + shown);
    }
    proteus::SimulateOptions report;
    report.timeline = true;
    report.memory_curve = true;
    const proteus::ReportInputs in{config, compiled.exec, trace, 0.0};
    (void)proteus::result_json(in, report);
    (void)proteus::chrome_trace(in);
  } catch (const proteus::Error& e) {
    check_error(e, "simulate");
  }
  return 0;
}
