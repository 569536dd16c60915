// Fills the strategy tree from the StrategySpec macros and the per-module overrides.
#include "proteus/strategy_tree.h"

#include <algorithm>
#include <sstream>

#include "proteus/error.h"

namespace proteus {

std::array<int, kNumMeshAxes> resolve_op_axis_dims(const Op& op, const ParallelConfig& cfg,
                                                   const Mesh& mesh) {
  std::array<int, kNumMeshAxes> out{-1, -1, -1, -1, -1};
  for (int a = 0; a < kNumMeshAxes; ++a) {
    if (a == kAxisPp || mesh.size[a] <= 1) continue;
    // Ulysses (cp_comm_type a2a): the attention core is split by heads over cp, so its Q, K, V
    // and output go sequence-sharded -> head-sharded by all-to-all (TE AttnFuncWithCPAndQKVOA2A).
    if (a == kAxisCp && op.kind == OpKind::Attention && cfg.cp_comm_type == CpCommType::A2a &&
        op.find_dim("heads") >= 0) {
      out[a] = op.find_dim("heads");
      continue;
    }
    // The all-gather dispatcher: dispatch and combine work on the experts of this rank for
    // every token of the group, so they split the expert index ("route") over ep (and tp when
    // it is folded in): their token inputs are all-gathered, combine's output is a partial
    // sum, reduce-scattered (Megatron-Core MoEAllGatherTokenDispatcher).
    if (op.kind == OpKind::Dispatch && cfg.moe_dispatcher == MoeDispatcher::AllGather &&
        (a == kAxisEp || (a == kAxisTp && cfg.experts_fold_tp)) && op.find_dim("route") >= 0) {
      out[a] = op.find_dim("route");
      continue;
    }
    for (const std::string& name : cfg.axis_dims[a]) {
      if (op.kind == OpKind::Dispatch && name == "expert") continue;
      const int d = op.find_dim(name);
      if (d >= 0) {
        out[a] = d;
        break;
      }
    }
  }
  return out;
}

namespace {

// The kernel fusions off in this run (a bit per KernelFusion): every one under eager PyTorch,
// else those Megatron's --no-*-fusion flags turned off. Norms have no such flag (Megatron's
// --no-persist-layer-norm picks another fused kernel).
uint32_t unfused_kernels(const StrategySpec& s, bool eager) {
  const auto bit = [](KernelFusion f) { return 1u << static_cast<int>(f); };
  if (eager) return ((1u << kNumKernelFusions) - 1) & ~bit(KernelFusion::None);
  uint32_t mask = 0;
  if (!s.apply_rope_fusion) mask |= bit(KernelFusion::Rope);
  if (!s.bias_activation_fusion) mask |= bit(KernelFusion::BiasActivation);
  if (!s.bias_dropout_fusion) mask |= bit(KernelFusion::BiasDropoutAdd);
  if (!s.masked_softmax_fusion) mask |= bit(KernelFusion::MaskedSoftmax);
  return mask;
}

// DeepSpeedZeroConfig.param_persistence_threshold ("stage3_param_persistence_threshold"):
// pp_int(1e5) (deepspeed/runtime/zero/config.py).
constexpr double kDeepSpeedParamPersistenceElements = 1e5;

// What DeepSpeed's engines do with gradients (docs/frameworks/data-parallelism.md, "What
// DeepSpeed overlaps", "DeepSpeed's BF16_Optimizer"). Without ZeRO the engine all-reduces after
// the backward (DeepSpeedEngine.backward -> allreduce_gradients), and the pipeline engine reduces
// after its schedule (TrainSchedule's ReduceGrads -> _exec_reduce_grads,
// reduce_gradients(pipeline_parallel=True)); only ZeRO-1/2's overlap_comm hooks outside a
// pipeline, and ZeRO-3, reduce during the backward. ZeRO-1/2 all-gather the updated weights
// inside step() (all_gather_dp_groups), before the next forward. bf16 at zero 0 is BF16_Optimizer:
// fp32 master weights and Adam states partitioned over the data-parallel group (zero 1), an fp32
// gradient buffer for every parameter, all-reduced whole (buffered_allreduce_fallback on
// get_grads_for_reduction) once the last backward has returned, and the step's bf16 partitions
// all-gathered inside step() (update_lp_params -> all_gather_dp_groups). Its update_hp_grads
// adds each micro-batch's gradients; under the other optimizers autograd does. At ZeRO-3 the
// parameters under the persistence threshold stay whole (compile/op_plan.cpp).
void deepspeed_config(const StrategySpec& s, Precision precision, ParallelConfig* c) {
  if (s.zero == 3) c->zero3_persistence_elements = kDeepSpeedParamPersistenceElements;
  const bool bf16_optimizer = deepspeed_bf16_optimizer(s, precision);
  if (!deepspeed_can_overlap_grad_reduce(s)) c->overlap_grad_reduce = false;
  if (deepspeed_gathers_weights_in_step(s, precision)) c->overlap_param_gather = false;
  c->bf16_optimizer = bf16_optimizer;
  c->autograd_grad_accumulation = !bf16_optimizer;
  if (!bf16_optimizer) return;
  c->zero = 1;
  c->grad_reduce_in_fp32 = true;
}

// The macro defaults: which dims each mesh axis splits (DESIGN.md §3 macros).
ParallelConfig root_config(const StrategySpec& s, Precision precision) {
  ParallelConfig c;
  c.axis_dims[kAxisDp] = {"batch", "tokens"};
  // Expert parallelism shards experts where an op has them, and is data parallelism elsewhere.
  c.axis_dims[kAxisEp] = {"expert", "batch", "tokens"};
  c.axis_dims[kAxisCp] = {"seq"};
  // Megatron tensor parallelism: column/row-parallel linears by heads or MLP width, the
  // vocab-parallel embedding, head and loss; with sequence parallelism everything else is
  // split along the sequence.
  c.axis_dims[kAxisTp] = {"heads", "kv_heads", "ffn", "vocab", "out", "cout"};
  if (s.sequence_parallel) c.axis_dims[kAxisTp].push_back("seq");
  // MoE parallel folding (expert_tp 1): in expert layers tp splits the experts, not their
  // width; with ep the experts are split over ep/tp x tp = ep ranks.
  c.experts_fold_tp = experts_fold_tp(s);
  if (c.experts_fold_tp) c.axis_dims[kAxisTp].insert(c.axis_dims[kAxisTp].begin(), "expert");
  c.moe_dispatcher = s.moe_dispatcher;
  c.recompute = s.recompute;
  c.recompute_modules = s.recompute_modules;
  c.zero = s.zero;
  c.grad_bucket_MB = s.grad_bucket_MB;
  c.overlap_grad_reduce = s.overlap_grad_reduce;
  c.overlap_param_gather = s.overlap_param_gather;
  c.megatron_grad_sync_func = align_grad_reduce_applies(s) && s.align_grad_reduce &&
                              s.grad_sync == GradSync::AtBoundary &&
                              (s.schedule == Schedule::OneFOneB || s.schedule == Schedule::Interleaved1F1B);
  c.apex_distributed_adam =
      distributed_optimizer_applies(s) && s.distributed_optimizer == DistributedOptimizer::Apex;
  // NeMo passes sync_overlap_parameters as param_sync_func; only the interleaved schedule calls it.
  c.apex_param_sync_func = c.apex_distributed_adam && s.overlap_param_gather && s.pp > 1 &&
                           s.schedule == Schedule::Interleaved1F1B;
  c.grad_reduce_in_fp32 = s.grad_reduce_in_fp32;
  c.grad_sync = s.grad_sync;
  c.cp_comm_type = s.cp_comm_type;
  c.tp_comm_overlap = s.tp_comm_overlap;
  c.torch_async_tp = s.framework == Framework::Fsdp && s.tp_comm_overlap;
  c.dtensor_tp = s.framework == Framework::Fsdp;
  c.eager_elementwise = s.framework == Framework::Fsdp && !s.torch_compile;
  c.unfused_mask = unfused_kernels(s, c.eager_elementwise);
  c.fsdp2_copies = s.framework == Framework::Fsdp;
  c.megatron_fsdp = s.framework == Framework::Megatron && s.zero == 3;
  c.fsdp_pp_post_backward = s.framework == Framework::Fsdp && s.pp > 1;
  c.torch_optimizer = s.framework == Framework::Fsdp;
  c.torch_cp = s.framework == Framework::Fsdp;
  c.ulysses_cp = s.framework == Framework::DeepSpeed;
  c.torch_op_sac = s.framework == Framework::Fsdp;
  c.megatron_split_qkv = s.framework == Framework::Megatron;
  c.fused_qkv_gemm = s.framework != Framework::Fsdp;
  c.torch_linear_gemms = s.framework == Framework::Fsdp;
  c.wgrad_into_main_grad = s.framework == Framework::Megatron && s.gradient_accumulation_fusion;
  c.wgrad_add_to_main_grad = s.framework == Framework::Megatron && !s.gradient_accumulation_fusion;
  c.torch_repeat_kv = s.framework == Framework::Fsdp;
  c.torch_cross_entropy = s.framework == Framework::Fsdp;
  c.ddp_first_bucket = s.framework == Framework::Fsdp && s.zero == 0;
  if (s.framework == Framework::DeepSpeed) deepspeed_config(s, precision, &c);
  c.fp8_param_gather = s.fp8_param_gather;
  c.fp8_weight_cache = s.framework != Framework::Fsdp;
  c.store_param_remainders = s.store_param_remainders;
  c.exp_avg_dtype = s.exp_avg_dtype;
  c.exp_avg_sq_dtype = s.exp_avg_sq_dtype;
  c.main_params_dtype = s.main_params_dtype;
  c.tp_only_amax_red = s.tp_only_amax_red;
  return c;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : path) {
    if (ch == '.') {
      out.push_back(cur);
      cur.clear();
    } else
      cur += ch;
  }
  if (!path.empty()) out.push_back(cur);
  return out;
}

// '*' matches one segment; a final "**" matches any remaining depth (zero or more).
bool path_matches(const std::vector<std::string>& pattern, const std::vector<std::string>& path) {
  size_t i = 0;
  for (; i < pattern.size(); ++i) {
    if (pattern[i] == "**") return true;
    if (i >= path.size()) return false;
    if (pattern[i] != "*" && pattern[i] != path[i]) return false;
  }
  return i == path.size();
}

// Records once what a node sets itself: many overrides may match one node, and a list that
// grew with each would make memory grow with overrides x modules.
void note_set(StrategyNode* node, const std::string& what) {
  if (std::find(node->set.begin(), node->set.end(), what) == node->set.end()) node->set.push_back(what);
}

void apply_override(const OverrideSpec& o, StrategyNode* node) {
  for (const auto& [axis, dim] : o.map) {
    const int a = axis_from_name(axis);
    if (a < 0) continue;  // the parser already rejected unknown axes
    // "dp": "out" means: in this module dp splits "out" wherever an op has that dim; ops
    // without it keep what they inherited. null (empty) replicates the whole module.
    AxisDims& dims = node->config.axis_dims[a];
    if (dim.empty()) {
      dims.clear();
    } else {
      dims.erase(std::remove(dims.begin(), dims.end(), dim), dims.end());
      dims.insert(dims.begin(), dim);
    }
    note_set(node, "map." + axis);
  }
  if (o.recompute) {
    node->config.recompute = *o.recompute;
    note_set(node, "recompute");
  }
  if (o.stage) {
    node->config.chunk = *o.stage;
    node->chunk_fixed = true;
    note_set(node, "stage");
  }
}

// Chunk of each module: layers by the split; other modules before the first layer go to the
// first chunk, those after the last layer to the last chunk.
void assign_chunks(const OpGraph& graph, StrategyTree* tree) {
  const int chunks = tree->model_chunks();
  std::vector<int> chunk_of_layer;
  for (int c = 0; c < chunks; ++c)
    for (int k = 0; k < tree->chunk_layers[c]; ++k) chunk_of_layer.push_back(c);
  int first_layer_op = static_cast<int>(graph.ops.size());
  for (size_t i = 0; i < graph.ops.size(); ++i)
    if (graph.modules[graph.ops[i].module].layer >= 0) {
      first_layer_op = static_cast<int>(i);
      break;
    }
  // Walk ops so a leaf module's position is that of its first op.
  std::vector<int> first_op(graph.modules.size(), -1);
  for (size_t i = 0; i < graph.ops.size(); ++i)
    if (first_op[graph.ops[i].module] < 0) first_op[graph.ops[i].module] = static_cast<int>(i);
  for (size_t m = 0; m < graph.modules.size(); ++m) {
    StrategyNode& node = tree->nodes[m];
    if (node.chunk_fixed) continue;  // placed by an override
    const Module& mod = graph.modules[m];
    if (mod.layer >= 0 && mod.layer < static_cast<int>(chunk_of_layer.size()))
      node.config.chunk = chunk_of_layer[mod.layer];
    else
      node.config.chunk = (first_op[m] >= 0 && first_op[m] > first_layer_op) ? chunks - 1 : 0;
  }
}

}  // namespace

StrategyTree build_strategy_tree(const Config& config, const OpGraph& graph) {
  const StrategySpec& s = config.strategy;
  StrategyTree tree;
  const int ep_axis = ep_axis_size(s);
  tree.mesh.size = {s.pp, s.dp / ep_axis, ep_axis, s.cp, s.tp};
  tree.schedule = s.schedule;
  // docs/frameworks/pipeline.md, "Pipeline point-to-point": which schedules wait on their p2p. Megatron's
  // 1F1B always, its interleaved one without overlap_p2p_comm; DeepSpeed's PipelineEngine runs
  // its 1F1B TrainSchedule with blocking p2p.send / p2p.recv and partitions what it sends over
  // the model-parallel group (is_pipe_partitioned, is_grad_partitioned: tp > 1). PyTorch's
  // Schedule1F1B (torch.distributed.pipelining, framework fsdp) fuses each steady-state forward's
  // sends with the next backward's receives, and each backward's sends with the next forward's
  // receives, and waits on both: Megatron's two steady-state calls.
  const bool megatron_schedule =
      s.framework == Framework::Megatron && s.pp > 1 &&
      (s.schedule == Schedule::OneFOneB || s.schedule == Schedule::Interleaved1F1B);
  const bool deepspeed_pipe =
      s.framework == Framework::DeepSpeed && s.pp > 1 && s.schedule == Schedule::OneFOneB;
  const bool torch_1f1b = s.framework == Framework::Fsdp && s.pp > 1 && s.schedule == Schedule::OneFOneB;
  tree.blocking_p2p = deepspeed_pipe || torch_1f1b ||
                      (megatron_schedule && (s.schedule == Schedule::OneFOneB || !s.overlap_p2p_comm));
  tree.p2p_paired_steady_state = s.schedule == Schedule::Interleaved1F1B;
  // PyTorch's ScheduleInterleaved1F1B (a PipelineScheduleMulti in the PyTorch TorchTitan ran)
  // waits on each time step's sends and receives together (compile/torch_lockstep_p2p.h).
  tree.torch_lockstep_p2p =
      s.framework == Framework::Fsdp && s.pp > 1 && s.schedule == Schedule::Interleaved1F1B;
  // Legacy Megatron skipped it under sequence parallelism, whose tensors are already tp slices.
  tree.scatter_gather_p2p = (s.scatter_gather_p2p || deepspeed_pipe) && !s.sequence_parallel;
  tree.stages = s.pp;
  tree.virtual_stages = chunks_per_stage(s);
  tree.chunk_stage = chunk_placement(s.pp, tree.virtual_stages, v_placement(s));
  tree.copies = model_copies(s);
  tree.micro_batch = s.micro_batch;
  tree.micro_batches =
      static_cast<int>(config.training.global_batch / (static_cast<int64_t>(s.dp) * s.micro_batch));
  tree.sequence_parallel = s.sequence_parallel;
  const int chunks = tree.model_chunks();
  if (!s.stage_layers.empty())
    tree.chunk_layers = s.stage_layers;
  else if (uneven_pipeline(s))
    tree.chunk_layers = megatron_stage_layers(s, std::max(graph.num_layers, 0));
  else
    tree.chunk_layers = split_layers(std::max(graph.num_layers, 0), chunks);

  const std::vector<std::vector<std::string>> patterns = [&] {
    std::vector<std::vector<std::string>> p;
    for (const auto& o : s.overrides) p.push_back(split_path(o.path));
    return p;
  }();
  std::vector<int> override_hits(s.overrides.size(), 0);

  tree.nodes.resize(graph.modules.size());
  // Modules are stored parents-first, so one forward pass resolves inheritance.
  for (size_t m = 0; m < graph.modules.size(); ++m) {
    const Module& mod = graph.modules[m];
    StrategyNode& node = tree.nodes[m];
    node.module = static_cast<int>(m);
    if (mod.parent < 0) {
      node.config = root_config(s, config.training.precision);
      node.config.cp_a2a_size = cp_a2a_group_size(s, config.cluster.gpus_per_node);
    } else {
      node.config = tree.nodes[mod.parent].config;
    }
    node.chunk_fixed = mod.parent >= 0 && tree.nodes[mod.parent].chunk_fixed;
    const auto path = split_path(mod.path);
    for (size_t i = 0; i < s.overrides.size(); ++i) {
      if (!path_matches(patterns[i], path)) continue;
      apply_override(s.overrides[i], &node);
      ++override_hits[i];
    }
  }
  for (size_t i = 0; i < s.overrides.size(); ++i) {
    const std::string where = "strategy.overrides[" + std::to_string(i) + "]";
    if (!override_hits[i])
      throw invalid_config(where + ".path", "override path '" + s.overrides[i].path +
                                                "' matches no module of " + graph.model_name);
    if (s.overrides[i].stage && (*s.overrides[i].stage < 0 || *s.overrides[i].stage >= chunks))
      throw invalid_config(where + ".stage", "stage " + std::to_string(*s.overrides[i].stage) +
                                                 " is outside 0.." + std::to_string(chunks - 1));
  }
  assign_chunks(graph, &tree);
  return tree;
}

std::string tree_to_text(const StrategyTree& tree, const OpGraph& graph) {
  std::ostringstream out;
  out << graph.model_name << ": mesh";
  for (int a = 0; a < kNumMeshAxes; ++a) out << ' ' << axis_name(MeshAxis(a)) << '=' << tree.mesh.size[a];
  out << "; schedule " << to_string(tree.schedule) << ", " << tree.micro_batches << " micro-batches of "
      << tree.micro_batch << ", " << tree.stages << " stages";
  if (tree.virtual_stages > 1) out << " x " << tree.virtual_stages << " chunks";
  if (tree.copies > 1) out << ", " << tree.copies << " copies of the model";
  out << "\n";
  auto describe = [&](const ParallelConfig& c) {
    std::string d;
    for (int a = 1; a < kNumMeshAxes; ++a) {
      if (tree.mesh.size[a] <= 1) continue;
      d += std::string(" ") + axis_name(MeshAxis(a)) + "->";
      if (c.axis_dims[a].empty()) d += "replicate";
      for (size_t i = 0; i < c.axis_dims[a].size(); ++i) d += (i ? "|" : "") + c.axis_dims[a][i];
    }
    d += std::string(" recompute=") + to_string(c.recompute);
    return d;
  };
  // Top-level modules, layers (runs of consecutive layers on one chunk collapsed), nodes that
  // set something, and the ops of the first layer with the dims each mesh axis splits there.
  auto depth_of = [&](int m) {
    int depth = 0;
    for (int p = graph.modules[m].parent; p >= 0; p = graph.modules[p].parent) ++depth;
    return depth;
  };
  auto where = [&](const StrategyNode& node) {
    std::string w = "[stage " + std::to_string(tree.stage_of_chunk(node.config.chunk));
    for (int copy = 1; copy < tree.copies; ++copy)
      w += " and " + std::to_string(tree.stage_of_chunk(node.config.chunk, copy));
    if (tree.virtual_stages > 1) w += ", chunk " + std::to_string(node.config.chunk);
    return w + "]";
  };
  const int first_layer = [&] {
    for (size_t m = 0; m < graph.modules.size(); ++m)
      if (graph.modules[m].kind == "layer") return static_cast<int>(m);
    return -1;
  }();
  for (size_t m = 0; m < graph.modules.size(); ++m) {
    const Module& mod = graph.modules[m];
    const StrategyNode& node = tree.nodes[m];
    const int depth = depth_of(static_cast<int>(m));
    const std::string indent(static_cast<size_t>(depth) * 2, ' ');
    if (mod.kind == "layer") {
      // Collapse a run of sibling layers with the same chunk and nothing set.
      size_t last = m;
      for (size_t n = m + 1; n < graph.modules.size(); ++n) {
        const Module& other = graph.modules[n];
        if (other.parent == mod.parent && other.kind == "layer") {
          if (tree.nodes[n].config.chunk != node.config.chunk || !tree.nodes[n].set.empty()) break;
          last = n;
        }
      }
      out << indent << mod.path;
      if (last != m) out << " .. " << graph.modules[last].path;
      out << "  " << where(node) << "\n";
      if (static_cast<int>(m) == first_layer) {
        // What the macros resolve to inside one layer, op by op.
        for (size_t i = 0; i < graph.ops.size(); ++i) {
          const Op& op = graph.ops[i];
          if (graph.modules[op.module].layer != mod.layer) continue;
          const auto dims = resolve_op_axis_dims(op, tree.nodes[op.module].config, tree.mesh);
          std::string split;
          for (int a = 1; a < kNumMeshAxes; ++a)
            if (dims[a] >= 0)
              split += std::string(" ") + axis_name(MeshAxis(a)) + "->" + op.dims[dims[a]].name;
          out << indent << "    " << graph.modules[op.module].path << "." << op.name << ":"
              << (split.empty() ? " replicated" : split) << "\n";
        }
      }
      m = last;
      continue;
    }
    const bool show = m == 0 || depth <= 1 || !node.set.empty() || graph.modules[mod.parent].kind != "layer";
    if (!show || (depth > 1 && graph.modules[mod.parent].kind == "layer")) continue;
    out << indent << (m == 0 ? "(model)" : mod.path) << "  " << where(node);
    if (m == 0 || !node.set.empty()) out << describe(node.config);
    for (const auto& what : node.set) out << "  (sets " << what << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace proteus
