// Config -> OpGraph -> StrategyTree -> op plans -> ExecGraph.
#include "proteus/compile.h"

#include <array>

#include <nlohmann/json.hpp>

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

// Tasks by kind and by phase. Counted in arrays first: a string-keyed map lookup per task
// was a tenth of the compile time at a million tasks.
void count_tasks(const ExecGraph& exec, CompileStats* st) {
  enum { kCompute, kCollective, kP2p, kKinds };
  constexpr int kPhases = static_cast<int>(Phase::Sync) + 1;
  std::array<int64_t, kKinds> by_kind{};
  std::array<int64_t, kPhases> by_phase{};
  for (const Task& t : exec.tasks) {
    if (t.kind == TaskKind::Compute)
      ++by_kind[kCompute];
    else if (exec.collectives[static_cast<size_t>(t.collective)].kind == CollectiveKind::SendRecv)
      ++by_kind[kP2p];
    else
      ++by_kind[kCollective];
    ++by_phase[static_cast<size_t>(t.phase)];
  }
  const char* kind_names[kKinds] = {"compute", "collective", "p2p"};
  for (int k = 0; k < kKinds; ++k)
    if (by_kind[static_cast<size_t>(k)] > 0)
      st->tasks_by_kind[kind_names[k]] = by_kind[static_cast<size_t>(k)];
  for (int p = 0; p < kPhases; ++p)
    if (by_phase[static_cast<size_t>(p)] > 0)
      st->tasks_by_phase[to_string(Phase(p))] = by_phase[static_cast<size_t>(p)];
}

}  // namespace

CompiledModel compile(const Config& config, const CompileOptions& options) {
  CompiledModel out;
  const StrategySpec& s = config.strategy;
  // One micro-batch of every data-parallel replica: dp (which contains ep) splits the batch.
  const int64_t batch = s.micro_batch * s.dp;
  out.graph = build_op_graph(config.model, config.training, batch);
  out.tree = build_strategy_tree(config, out.graph);
  const std::vector<OpPlan> plans = plan_ops({config, out.graph, out.tree});

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

  build_programs(
      {config, out.graph, out.tree, plans, config.simulation.symmetry, options.micro_batch_templates}, &exec,
      &out.stats);
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

std::string compile_stats_json(const CompiledModel& c) {
  using nlohmann::ordered_json;
  const CompileStats& st = c.stats;
  ordered_json j;
  j["ok"] = true;
  j["schema"] = 1;
  j["model"] = c.graph.model_name;
  j["parameters"] = st.parameters;
  j["model_flops_per_iteration"] = st.model_flops_per_iteration;
  j["hardware_flops_per_iteration"] = st.hardware_flops_per_iteration;
  ordered_json mesh;
  for (int a = 0; a < kNumMeshAxes; ++a) mesh[axis_name(MeshAxis(a))] = c.tree.mesh.size[a];
  j["mesh"] = mesh;
  j["micro_batches"] = c.tree.micro_batches;
  j["stages"] = c.tree.stages;
  j["virtual_stages"] = c.tree.virtual_stages;
  j["layers_per_chunk"] = c.tree.chunk_layers;
  j["simulated_ranks"] = c.exec.ranks.size();
  j["tasks"] = c.exec.tasks.size();
  j["tasks_by_kind"] = st.tasks_by_kind;
  j["tasks_by_phase"] = st.tasks_by_phase;
  j["passes"] = st.passes;
  j["passes_from_templates"] = st.passes_from_templates;
  ordered_json colls = ordered_json::array();
  for (const CollectiveStat& s : st.collectives) {
    colls.push_back({{"stage", s.stage},
                     {"kind", s.kind},
                     {"axes", s.axes},
                     {"purpose", s.purpose},
                     {"group_size", s.group_size},
                     {"count", s.count},
                     {"bytes_per_rank", s.bytes_per_rank}});
  }
  j["collectives"] = colls;
  j["p2p_bytes_per_boundary"] = st.p2p_bytes_per_boundary;
  j["stage_orders"] = st.stage_orders;
  ordered_json mem = ordered_json::array();
  for (size_t s = 0; s < st.static_bytes_per_stage.size(); ++s) {
    ordered_json m;
    for (int k = 0; k < kNumMemCategories; ++k)
      m[to_string(MemCategory(k))] = st.static_bytes_per_stage[s][k];
    m["activations_per_micro_batch"] = st.activation_bytes_per_microbatch_per_stage[s];
    mem.push_back(m);
  }
  j["static_memory_bytes_per_stage"] = mem;
  return j.dump(2);
}

}  // namespace proteus
