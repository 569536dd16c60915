// Trace -> result JSON (DESIGN.md §5) and Chrome trace. Pure functions.
#pragma once
#include <string>
#include "proteus/api.h"
#include "proteus/config.h"
#include "proteus/exec_graph.h"
#include "proteus/search.h"
#include "proteus/simulation.h"

namespace proteus {

struct ReportInputs {
  const Config& config;
  const ExecGraph& graph;
  const Trace& trace;
  double wall_ms = 0;  // measured by the caller (not part of determinism checks' inputs)
  // Out of memory only: the fastest changes that fit (fit_changes), reported as "fit_advice".
  const std::vector<FitChange>* fit_advice = nullptr;
  // A zero-bubble schedule planned from pass times (run.h): the pass times the planners were
  // given and each stage's order they chose, reported as "pipeline_plan".
  const PassProfile* zb_profile = nullptr;
  const std::vector<std::string>* stage_orders = nullptr;
};

// The result object, serialized with 2-space indent. Deterministic for identical inputs,
// except stats.wall_ms.
std::string result_json(const ReportInputs& in, const SimulateOptions& options);
// The fit advice on its own (fit_changes_json): {"ok":true,"fit_advice":[...],"warnings":[...]},
// the same entries and warning lines ("To fit: ...", or that no change fits) a result carries.
std::string fit_advice_result_json(const std::vector<FitChange>& advice);
// Chrome trace event format (Perfetto opens it): a process per rank, a thread per stream.
std::string chrome_trace(const ReportInputs& in);

}  // namespace proteus
