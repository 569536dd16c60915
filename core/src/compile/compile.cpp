// Config -> OpGraph -> StrategyTree -> op plans -> ExecGraph.
#include "proteus/compile.h"

#include <array>

#include "compile_stats.h"
#include "op_plan.h"
#include "program_builder.h"
#include "proteus/error.h"

namespace proteus {

namespace {

// Recompute adds forward work before the backward: the layer's whole forward under full
// recompute (less what op-level checkpointing saves, torch_op_sac.h), the ops of the recomputed
// modules under selective recompute (each once).
double recompute_flops(const OpGraph& graph, const std::vector<OpPlan>& plans) {
  double f = 0;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (plans[i].recompute == Recompute::Full)
      f += graph.ops[i].fwd_flops * (1 - plans[i].sac_saved_share);
    else if (plans[i].recompute_modules != 0)
      f += graph.ops[i].fwd_flops;
  }
  return f;
}

// Refuses graphs that would exhaust memory before building them (or their schedule): a cheap
// upper bound of the task count (ops x passes x ranks, with room for communication).
void refuse_if_too_big(const OpGraph& graph, const StrategyTree& tree, const CompileOptions& options) {
  const double mbs = tree.micro_batches;
  const double ranks = options.symmetric ? tree.stages : tree.mesh.ranks();
  const double estimate = static_cast<double>(graph.ops.size()) / tree.stages * 4.0 * mbs * ranks;
  if (estimate > static_cast<double>(options.max_tasks))
    throw Error("limit_exceeded", "simulation.max_tasks",
                "this configuration needs about " + std::to_string(static_cast<int64_t>(estimate)) +
                    " tasks, more than simulation.max_tasks = " + std::to_string(options.max_tasks) +
                    "; raise the limit or simulate fewer micro-batches or layers");
}

}  // namespace

CompiledModel compile(OpGraph graph, StrategyTree tree, const TrainingSpec& training,
                      const PipelineSchedule& schedule, const CompileOptions& options) {
  CompiledModel out;
  out.graph = std::move(graph);
  out.tree = std::move(tree);
  const std::vector<OpPlan> plans = plan_ops({out.graph, out.tree, training});

  ExecGraph& exec = out.exec;
  exec.micro_batches = out.tree.micro_batches;
  exec.pipeline_stages = out.tree.stages;
  exec.gpus = out.tree.mesh.ranks();
  exec.samples_per_iteration = training.global_batch;
  exec.tokens_per_iteration = training.global_batch * std::max<int64_t>(1, out.graph.samples_per_batch_unit);
  const double mbs = out.tree.micro_batches;
  exec.model_flops_per_iteration = out.graph.training_flops() * mbs;
  exec.hardware_flops_per_iteration =
      exec.model_flops_per_iteration + recompute_flops(out.graph, plans) * mbs;

  refuse_if_too_big(out.graph, out.tree, options);
  build_programs(
      {out.graph, out.tree, training, plans, schedule, options.symmetric, options.micro_batch_templates},
      &exec, &out.stats);
  if (static_cast<int64_t>(exec.tasks.size()) > options.max_tasks)
    throw Error("limit_exceeded", "simulation.max_tasks",
                "the execution graph has " + std::to_string(exec.tasks.size()) +
                    " tasks, more than simulation.max_tasks");

  CompileStats& st = out.stats;
  st.parameters = out.graph.parameter_count();
  st.model_flops_per_iteration = exec.model_flops_per_iteration;
  st.hardware_flops_per_iteration = exec.hardware_flops_per_iteration;
  count_tasks(exec, &st);
  return out;
}

// The M_W / M_B the zero-bubble runtime's schedulers assume for a transformer (schedule.h);
// other models have no zero-bubble runtime to follow: a waiting W is not counted (0).
double schedule_w_memory_fraction(const Config& config) {
  const ModelSpec& m = config.model;
  if (m.kind != ModelKind::Transformer) return 0;
  return zb_w_memory_fraction(m.hidden, m.heads,
                              config.training.seq_len > 0 ? config.training.seq_len : m.seq_len);
}

PipelineSchedule generated_schedule(const Config& config, const StrategyTree& tree) {
  return schedule_of(config.strategy, tree, schedule_w_memory_fraction(config));
}

namespace {

// The stages before the compiler; `schedule` null: the generated one.
CompiledModel compile_config(const Config& config, const PipelineSchedule* schedule,
                             const CompileOptions& options) {
  const StrategySpec& s = config.strategy;
  // One micro-batch of every data-parallel replica: dp (which contains ep) splits the batch.
  OpGraph graph = build_op_graph(config.model, config.training, s.micro_batch * s.dp);
  StrategyTree tree = build_strategy_tree(config, graph);
  CompileOptions o = options;
  o.symmetric = config.simulation.symmetry;
  o.max_tasks = config.simulation.max_tasks;
  refuse_if_too_big(graph, tree, o);
  if (schedule) return compile(std::move(graph), std::move(tree), config.training, *schedule, o);
  const PipelineSchedule generated = generated_schedule(config, tree);
  return compile(std::move(graph), std::move(tree), config.training, generated, o);
}

}  // namespace

CompiledModel compile(const Config& config, const CompileOptions& options) {
  return compile_config(config, nullptr, options);
}

CompiledModel compile(const Config& config, const PipelineSchedule& schedule, const CompileOptions& options) {
  return compile_config(config, &schedule, options);
}

}  // namespace proteus
