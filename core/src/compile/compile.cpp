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
// recompute, the attention core under selective recompute.
double recompute_flops(const OpGraph& graph, const std::vector<OpPlan>& plans) {
  double f = 0;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (plans[i].recompute == Recompute::Full)
      f += graph.ops[i].fwd_flops;
    else if (plans[i].recompute == Recompute::Selective && graph.ops[i].selective_recompute)
      f += graph.ops[i].fwd_flops;
  }
  return f;
}

}  // namespace

CompiledModel compile(const Config& config, const CompileOptions& options) {
  CompiledModel out;
  const StrategySpec& s = config.strategy;
  // One micro-batch of every data-parallel replica: dp (which contains ep) splits the batch.
  const int64_t batch = s.micro_batch * s.dp;
  out.graph = build_op_graph(config.model, config.training, batch);
  out.tree = build_strategy_tree(config, out.graph);
  const std::vector<OpPlan> plans = plan_ops({out.graph, out.tree});

  ExecGraph& exec = out.exec;
  exec.micro_batches = out.tree.micro_batches;
  exec.pipeline_stages = out.tree.stages;
  exec.gpus = config.cluster.gpus();
  exec.samples_per_iteration = config.training.global_batch;
  exec.tokens_per_iteration =
      config.training.global_batch * std::max<int64_t>(1, out.graph.samples_per_batch_unit);
  const double mbs = out.tree.micro_batches;
  exec.model_flops_per_iteration = out.graph.training_flops() * mbs;
  exec.hardware_flops_per_iteration =
      exec.model_flops_per_iteration + recompute_flops(out.graph, plans) * mbs;

  // Refuse graphs that would exhaust memory before building them: a cheap upper bound of the
  // task count (ops x passes x ranks, with room for communication).
  const double ranks = config.simulation.symmetry ? out.tree.stages : config.cluster.gpus();
  const double estimate = static_cast<double>(out.graph.ops.size()) / out.tree.stages * 4.0 * mbs * ranks;
  if (estimate > static_cast<double>(config.simulation.max_tasks))
    throw Error(
        "limit_exceeded", "simulation.max_tasks",
        "this configuration needs about " + std::to_string(static_cast<int64_t>(estimate)) +
            " tasks, more than simulation.max_tasks = " + std::to_string(config.simulation.max_tasks) +
            "; raise the limit or simulate fewer micro-batches or layers");

  build_programs({out.graph, out.tree, config.training, plans, config.simulation.symmetry,
                  options.micro_batch_templates},
                 &exec, &out.stats);
  if (static_cast<int64_t>(exec.tasks.size()) > config.simulation.max_tasks)
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

}  // namespace proteus
