// The HTAE executor's output (DESIGN.md §1: "Trace") and the entry points of the pipeline.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/exec_graph.h"
#include "proteus/schedule.h"
#include "proteus/topology.h"

namespace proteus {

struct Span {
  int rank;  // simulated rank index
  Stream stream;
  int task;
  double start_s, end_s;
};

struct MemorySample {
  double time_s;
  double bytes;
};

struct RankTrace {
  std::array<double, kNumStreams> busy_s{};  // time each stream was busy
  double compute_busy_s = 0;                 // == busy_s[Compute]
  double exposed_comm_s = 0;                 // comm busy while compute idle
  double peak_memory_bytes = 0;
  std::array<double, kNumMemCategories> memory_at_peak_bytes{};
  std::vector<MemorySample> memory_curve;  // (time, bytes) at every change (decimated)
  double end_s = 0;
};

struct Trace {
  double iteration_time_s = 0;
  std::vector<double> task_start_s, task_end_s;  // per task of the ExecGraph
  std::vector<RankTrace> ranks;                  // per simulated rank
  int64_t events = 0;
  int64_t flows = 0;
  // Symmetry reduction only: collectives that started while a collective whose plan loads the
  // nodes of its group unequally (NCCL's double binary tree over 3+ nodes) and one standing for
  // sibling groups both had flows. Where non-zero the result can differ (slightly) from
  // simulating every GPU (DESIGN.md §3, "Symmetry").
  int64_t symmetry_uneven_overlaps = 0;
};

// Told how far a simulation is: tasks ended so far and the graph's task count. Called with
// done rising, at most about 100 times, the last time with done == total. It only observes:
// the run is the same with or without it.
using ProgressFn = std::function<void(int64_t done_tasks, int64_t total_tasks)>;

struct ExecOptions {
  int64_t max_events = 500'000'000;
  // Consecutive iterations overlap (no synchronisation at the iteration boundary): the
  // iteration time is the steady-state period, the longest span of any rank from its first
  // task to its last (see Executor::finish), not the makespan of one iteration.
  bool overlap_iterations = false;
  bool record_memory_curve = true;
  ProgressFn progress;  // empty: not told
};

// What a config asks of the executor: its GPUs' cost model at its training precision, and
// its simulation limits. The one place the CLI, the bindings, the benchmark and the fuzzer
// turn a config into executor inputs.
CostModel cost_model_of(const Config& config);
ExecOptions exec_options_of(const Config& config, bool record_memory_curve);

// HTAE: plays the graph. Pure function; throws Error("limit_exceeded", ...) past max_events.
Trace execute(const ExecGraph& graph, const CostModel& cost, const Topology& topology,
              const ExecOptions& options);

// The zero-bubble runtime's timers (schedule.h, PassProfile) read off a played graph: per
// physical stage, the mean span of each pass kind's compute tasks (first start to last end; the
// recompute before a backward counts with it), the activations micro-batch 0's forward and W
// passes allocate (net, averaged over the stage's chunks), and the mean pipeline transfer.
PassProfile profile_passes(const ExecGraph& graph, const Trace& trace);

}  // namespace proteus
