// One simulation of a config, as the CLI, the bindings, the search and the benchmark run it.
#pragma once
#include <optional>

#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"

namespace proteus {

struct ConfigRun {
  CompiledModel compiled;
  Trace trace;
  // A zero-bubble schedule planned from pass times: what the first play measured, which the
  // planners were given (compiled.stats.stage_orders holds the order they chose).
  std::optional<PassProfile> zb_profile;
};

// Whether the config's schedule is ordered by the zero-bubble runtime from measured pass times
// (zb-h1, zb-h2 or zb-v with strategy.zb_plan "profiled", the default).
bool zb_profiled(const Config& config);

// compile, then execute. A profiled zero-bubble schedule runs as the runtime does: its
// unit-time order is played once and timed (profile_passes), the order planned from those
// times (plan_zero_bubble), and that plan compiled and played; the trace is the second play's.
// `options.progress` and the memory curve are the second play's.
ConfigRun run_config(const Config& config, const Topology& topology, const ExecOptions& options);

}  // namespace proteus
