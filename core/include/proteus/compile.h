// The compiler (DESIGN.md §1, §7): (OpGraph, StrategyTree, TrainingSpec, PipelineSchedule) ->
// ExecGraph. Every strategy knob comes from the tree's nodes and the pass order from the
// schedule; the compiler reads no Config and knows no schedule by name.
// Communication is derived, never special-cased: for every producer/consumer pair the
// compiler compares the producer's output layout with the layout the consumer needs
// (layout.h); the backward pass does the same for gradients; weight gradients go from their
// partial layout to the layout the optimizer keeps (replicated, or sharded under ZeRO 2/3).
#pragma once
#include <map>
#include <string>
#include <vector>
#include "proteus/config.h"
#include "proteus/exec_graph.h"
#include "proteus/op_graph.h"
#include "proteus/schedule.h"
#include "proteus/strategy_tree.h"
#include "proteus/training_spec.h"

namespace proteus {

// One kind of collective as the compiler emitted it, for `proteus compile`.
struct CollectiveStat {
  std::string kind;     // "all_reduce", ...
  std::string axes;     // "tp", "dp+cp", "pp"
  std::string purpose;  // "activation", "gradient", "weight", "pipeline", "tied_embedding"
  int group_size = 0;
  int64_t count = 0;          // per representative rank of the stage, per iteration
  double bytes_per_rank = 0;  // total S over `count`
  int stage = 0;
};

struct CompileStats {
  int64_t parameters = 0;
  double model_flops_per_iteration = 0;
  double hardware_flops_per_iteration = 0;
  std::map<std::string, int64_t> tasks_by_kind;  // "compute", "collective", "p2p"
  std::map<std::string, int64_t> tasks_by_phase;
  std::vector<CollectiveStat> collectives;
  std::vector<double> p2p_bytes_per_boundary;  // per micro-batch, per direction, chunk c -> c+1
  std::vector<std::string> stage_orders;       // "F0 F1 B0 ..." per physical stage
  std::vector<std::array<double, kNumMemCategories>> static_bytes_per_stage;
  std::vector<double> activation_bytes_per_microbatch_per_stage;  // what one micro-batch keeps
  int64_t passes = 0;                                             // F/B/W passes built, all simulated ranks
  int64_t passes_from_templates = 0;  // of which instantiated from a micro-batch template
};

struct CompiledModel {
  OpGraph graph;
  StrategyTree tree;
  ExecGraph exec;
  CompileStats stats;
};

struct CompileOptions {
  // Instantiate each rank's repeated passes (F, B, W of one chunk) from a per-stage
  // micro-batch template instead of deriving every micro-batch op by op. Same ExecGraph
  // either way (tests/test_templates.cpp); off only to check exactly that.
  bool micro_batch_templates = true;
  bool symmetric = true;          // one simulated rank per stage (simulation.symmetry)
  int64_t max_tasks = 6'500'000;  // refuse bigger execution graphs (simulation.max_tasks)
};

// The compiler proper.
CompiledModel compile(OpGraph graph, StrategyTree tree, const TrainingSpec& training,
                      const PipelineSchedule& schedule, const CompileOptions& options);
// The stages before it, then compile: the op graph, the strategy tree and the schedule of a
// config (symmetric and max_tasks taken from config.simulation).
CompiledModel compile(const Config& config, const CompileOptions& options = {});
// The same with a given schedule over the config's chunks in place of the generated one (the
// zero-bubble runtime's plan from pass times: run.h).
CompiledModel compile(const Config& config, const PipelineSchedule& schedule,
                      const CompileOptions& options = {});
// The schedule compile(config) generates, and the tree it places the chunks of.
PipelineSchedule generated_schedule(const Config& config, const StrategyTree& tree);
// What a waiting W holds relative to a chunk forward, as the zero-bubble generators of this
// config's schedule count it (zb_w_memory_fraction of a transformer; 0 for other models).
double schedule_w_memory_fraction(const Config& config);
std::string compile_stats_json(const CompiledModel& compiled);

}  // namespace proteus
