// config_to_json: the resolved Config with every field explicit, in the schema parse_config
// reads, so that parse_config(config_to_json(c)) gives c back. Only the fields of the model's
// kind are written (the others keep their defaults, which parsing restores).
#include <nlohmann/json.hpp>
#include "proteus/config.h"

namespace proteus {

namespace {

using Out = nlohmann::ordered_json;

Out moe_json(const MoeSpec& moe) {
  return Out{{"experts", moe.experts},
             {"top_k", moe.top_k},
             {"expert_ffn_hidden", moe.expert_ffn_hidden},
             {"capacity_factor", moe.capacity_factor},
             {"routing", to_string(moe.routing)},
             {"imbalance", moe.imbalance},
             {"shared_expert_ffn_hidden", moe.shared_expert_ffn_hidden},
             {"first_dense_layers", moe.first_dense_layers},
             {"router_bias", moe.router_bias}};
}

Out graph_op_json(const GraphOpSpec& op) {
  Out out{{"name", op.name}, {"type", op.type}};
  if (op.type == "linear") {
    out["in_features"] = op.in_features;
    out["out_features"] = op.out_features;
  } else if (op.type == "conv2d") {
    out["in_channels"] = op.in_channels;
    out["out_channels"] = op.out_channels;
    out["kernel"] = op.kernel;
    out["stride"] = op.stride;
    out["image"] = op.image;
  } else if (op.type == "elementwise") {
    out["elements"] = op.elements;
  } else {
    out["flops_per_sample"] = op.flops_per_sample;
    out["bytes_per_sample"] = op.bytes_per_sample;
    out["params"] = op.params;
  }
  return out;
}

Out model_json(const ModelSpec& m) {
  Out out{{"kind", to_string(m.kind)}, {"name", m.name}};
  switch (m.kind) {
    case ModelKind::Transformer:
      out["layers"] = m.layers;
      out["hidden"] = m.hidden;
      out["heads"] = m.heads;
      out["kv_heads"] = m.kv_heads;
      out["ffn_hidden"] = m.ffn_hidden;
      out["seq_len"] = m.seq_len;
      out["vocab"] = m.vocab;
      out["mlp"] = to_string(m.mlp);
      out["norm"] = to_string(m.norm);
      out["tied_embeddings"] = m.tied_embeddings;
      out["bias"] = m.bias;
      out["dropout"] = m.dropout;
      out["flash_attention"] = m.flash_attention;
      out["causal"] = m.causal;
      out["learned_positions"] = m.learned_positions;
      out["type_vocab"] = m.type_vocab;
      out["pooler"] = m.pooler;
      out["moe"] = moe_json(m.moe);
      out["head_dim"] = m.head_dim;
      out["qk_norm"] = m.qk_norm;
      out["attention_sinks"] = m.attention_sinks;
      out["sliding_window"] = m.sliding_window;
      out["full_attention_every"] = m.full_attention_every;
      out["mtp_layers"] = m.mtp_layers;
      if (m.mla.enabled()) {
        out["mla"] = Out{{"q_lora_rank", m.mla.q_lora_rank},
                         {"kv_lora_rank", m.mla.kv_lora_rank},
                         {"qk_nope_head_dim", m.mla.qk_nope_head_dim},
                         {"qk_rope_head_dim", m.mla.qk_rope_head_dim},
                         {"v_head_dim", m.mla.v_head_dim}};
      }
      break;
    case ModelKind::Cnn:
      out["arch"] = to_string(m.arch);
      out["image_size"] = m.image_size;
      out["channels"] = m.channels;
      out["classes"] = m.classes;
      out["aux_logits"] = m.aux_logits;
      break;
    case ModelKind::Dlrm:
      out["dense_features"] = m.dense_features;
      out["bottom_mlp"] = m.bottom_mlp;
      out["top_mlp"] = m.top_mlp;
      out["tables"] = m.tables;
      out["table_rows"] = m.table_rows;
      out["embedding_dim"] = m.embedding_dim;
      out["lookups_per_table"] = m.lookups_per_table;
      break;
    case ModelKind::Graph: {
      out["input_elements"] = m.input_elements;
      Out ops = Out::array();
      for (const GraphOpSpec& op : m.ops) ops.push_back(graph_op_json(op));
      out["ops"] = std::move(ops);
      break;
    }
  }
  return out;
}

Out by_precision_json(const std::map<Precision, double>& values) {
  Out out = Out::object();
  for (const auto& [precision, value] : values) out[to_string(precision)] = value;
  return out;
}

Out cluster_json(const ClusterSpec& c) {
  const GpuSpec& g = c.gpu;
  Out gpu{{"name", g.name},
          {"memory_GiB", g.memory_GiB},
          {"hbm_GBps", g.hbm_GBps},
          {"sm_count", g.sm_count},
          {"peak_TFLOPS", Out{{"fp32", g.peak_fp32_TFLOPS},
                              {"tf32", g.peak_tf32_TFLOPS},
                              {"fp16", g.peak_fp16_TFLOPS},
                              {"bf16", g.peak_bf16_TFLOPS},
                              {"fp8", g.peak_fp8_TFLOPS}}},
          {"gemm_max_efficiency", g.gemm_max_efficiency},
          {"gemm_tile_m", g.gemm_tile_m},
          {"gemm_tile_n", g.gemm_tile_n},
          {"attention_efficiency", g.attention_efficiency},
          {"memory_bound_efficiency", g.memory_bound_efficiency},
          {"kernel_launch_us", g.kernel_launch_us},
          {"compute_slowdown_with_comm", g.compute_slowdown_with_comm},
          {"comm_slowdown_with_compute", g.comm_slowdown_with_compute}};
  if (g.compute_throughput_fraction != 1.0)
    gpu["compute_throughput_fraction"] = g.compute_throughput_fraction;
  if (g.mxfp8_gemm_slowdown != 1.0) gpu["mxfp8_gemm_slowdown"] = g.mxfp8_gemm_slowdown;
  if (!g.measured_us.empty()) {
    Out table = Out::object();
    for (const auto& [signature, us] : g.measured_us) table[signature] = us;
    gpu["measured_us"] = std::move(table);
  }
  if (!g.max_achievable_TFLOPS.empty())
    gpu["max_achievable_TFLOPS"] = by_precision_json(g.max_achievable_TFLOPS);
  if (!g.sustained_TFLOPS.empty()) gpu["sustained_TFLOPS"] = by_precision_json(g.sustained_TFLOPS);
  if (!g.gemm_table.empty()) {
    const GemmTable& table = g.gemm_table;
    Out per_precision = Out::object();
    for (const auto& [precision, values] : table.TFLOPS) {
      Out rows_m = Out::array();
      for (size_t i = 0; i < table.m.size(); ++i) {
        Out rows_n = Out::array();
        for (size_t j = 0; j < table.n.size(); ++j) {
          const size_t first = (i * table.n.size() + j) * table.k.size();
          rows_n.push_back(
              std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(first),
                                  values.begin() + static_cast<std::ptrdiff_t>(first + table.k.size())));
        }
        rows_m.push_back(std::move(rows_n));
      }
      per_precision[to_string(precision)] = std::move(rows_m);
    }
    gpu["gemm_table"] =
        Out{{"m", table.m}, {"n", table.n}, {"k", table.k}, {"TFLOPS", std::move(per_precision)}};
  }
  if (!g.attention_table.empty()) {
    const AttentionTable& table = g.attention_table;
    Out per_kernel = Out::object();
    for (const auto& [kernel, curves] : table.TFLOPS) {
      Out out{{"forward_causal", curves.forward_causal}};
      if (!curves.forward.empty()) out["forward"] = curves.forward;
      if (!curves.backward.empty()) out["backward"] = curves.backward;
      per_kernel[to_string(kernel)] = std::move(out);
    }
    gpu["attention_table"] = Out{{"head_dim", table.head_dim},
                                 {"reference", to_string(table.reference)},
                                 {"seq", table.seq},
                                 {"TFLOPS", std::move(per_kernel)}};
    if (table.level_seq > 0) gpu["attention_table"]["level_seq"] = table.level_seq;
  }
  const IntraNodeSpec& n = c.intra_node;
  Out intra{{"kind", to_string(n.kind)},
            {"link_GBps", n.link_GBps},
            {"links", n.links},
            {"bus_efficiency", n.bus_efficiency},
            {"latency_us", n.latency_us},
            {"pcie_GBps", n.pcie_GBps},
            {"pcie_fanout", n.pcie_fanout},
            {"cpu_link_GBps", n.cpu_link_GBps},
            {"pcie_latency_us", n.pcie_latency_us}};
  if (n.links.empty()) intra["links"] = Out::array();
  if (n.pcie_fanout.empty()) intra["pcie_fanout"] = Out::array();
  if (n.nvls) intra["nvls"] = true;
  if (!n.collective_efficiency.empty()) {
    const NodeCollectiveEfficiency& t = n.collective_efficiency;
    intra["collective_efficiency"] = Out{{"members", t.members},       {"all_reduce", t.all_reduce},
                                         {"all_gather", t.all_gather}, {"reduce_scatter", t.reduce_scatter},
                                         {"all_to_all", t.all_to_all}, {"send_recv", t.send_recv}};
  }
  const InterNodeSpec& e = c.inter_node;
  Out inter{{"nics_per_node", e.nics_per_node},
            {"nic_GBps", e.nic_GBps},
            {"latency_us", e.latency_us},
            {"bus_efficiency", e.bus_efficiency},
            {"oversubscription", e.oversubscription},
            {"nodes_per_leaf", e.nodes_per_leaf}};
  Out collectives{{"base_latency_us", c.collectives.base_latency_us}};
  return Out{{"name", c.name},
             {"nodes", c.nodes},
             {"gpus_per_node", c.gpus_per_node},
             {"gpu", std::move(gpu)},
             {"intra_node", std::move(intra)},
             {"inter_node", std::move(inter)},
             {"collectives", std::move(collectives)}};
}

Out strategy_json(const StrategySpec& s) {
  Out overrides = Out::array();
  for (const OverrideSpec& o : s.overrides) {
    Out item{{"path", o.path}};
    if (!o.map.empty()) {
      Out map = Out::object();
      for (const auto& [axis, dim] : o.map) map[axis] = dim.empty() ? Out(nullptr) : Out(dim);
      item["map"] = std::move(map);
    }
    if (o.recompute) item["recompute"] = to_string(*o.recompute);
    if (o.stage) item["stage"] = *o.stage;
    overrides.push_back(std::move(item));
  }
  Out stage_layers = Out::array();
  for (int n : s.stage_layers) stage_layers.push_back(n);
  Out schedule = to_string(s.schedule);
  if (s.schedule == Schedule::Explicit) {
    schedule =
        Out{{"stages", s.schedule_stages}, {"placement", s.schedule_v_placement ? "v" : "interleaved"}};
    if (s.schedule_copies != 1) schedule["copies"] = s.schedule_copies;
  }
  Out out{{"dp", s.dp},
          {"tp", s.tp},
          {"pp", s.pp},
          {"cp", s.cp},
          {"ep", s.ep},
          {"micro_batch", s.micro_batch},
          {"schedule", std::move(schedule)},
          {"virtual_stages", s.virtual_stages},
          {"sequence_parallel", s.sequence_parallel},
          {"zero", s.zero},
          {"recompute", to_string(s.recompute)},
          {"overlap_grad_reduce", s.overlap_grad_reduce},
          {"overlap_param_gather", s.overlap_param_gather},
          {"grad_bucket_MB", s.grad_bucket_MB},
          {"framework", to_string(s.framework)},
          {"grad_sync", to_string(s.grad_sync)},
          {"cp_comm_type", to_string(s.cp_comm_type)},
          {"cp_a2a_size", s.cp_a2a_size},
          {"tp_comm_overlap", s.tp_comm_overlap},
          {"overrides", std::move(overrides)},
          {"stage_layers", std::move(stage_layers)}};
  if (s.microbatch_group_size > 0) out["microbatch_group_size"] = s.microbatch_group_size;
  if (s.recompute_modules != kDefaultRecomputeModules)
    out["recompute_modules"] = recompute_module_names(s.recompute_modules);
  if (s.torch_compile) out["torch_compile"] = true;
  // Megatron's fused kernels: written only when turned off, as Megatron's --no-*-fusion flags.
  if (!s.bias_dropout_fusion) out["bias_dropout_fusion"] = false;
  if (!s.bias_activation_fusion) out["bias_activation_fusion"] = false;
  if (!s.masked_softmax_fusion) out["masked_softmax_fusion"] = false;
  if (!s.apply_rope_fusion) out["apply_rope_fusion"] = false;
  if (!s.gradient_accumulation_fusion) out["gradient_accumulation_fusion"] = false;
  // Written only when chosen, so configs that leave it to the framework resolve as before.
  if (s.attention_kernel != AttentionKernel::Auto) out["attention_kernel"] = to_string(s.attention_kernel);
  if (s.fp8_param_gather) out["fp8_param_gather"] = true;
  if (s.store_param_remainders) out["store_param_remainders"] = true;
  if (s.distributed_optimizer != DistributedOptimizer::Megatron)
    out["distributed_optimizer"] = to_string(s.distributed_optimizer);
  if (s.exp_avg_dtype != StateDtype::Fp32) out["exp_avg_dtype"] = to_string(s.exp_avg_dtype);
  if (s.exp_avg_sq_dtype != StateDtype::Fp32) out["exp_avg_sq_dtype"] = to_string(s.exp_avg_sq_dtype);
  if (s.main_params_dtype != StateDtype::Fp32) out["main_params_dtype"] = to_string(s.main_params_dtype);
  if (s.tp_only_amax_red) out["tp_only_amax_red"] = true;
  if (!s.grad_reduce_in_fp32) out["grad_reduce_in_fp32"] = false;
  if (s.grad_accum_in_fp32) out["grad_accum_in_fp32"] = true;
  if (s.first_stage_layers > 0) out["first_stage_layers"] = s.first_stage_layers;
  if (s.last_stage_layers > 0) out["last_stage_layers"] = s.last_stage_layers;
  if (s.embedding_as_layer) out["account_for_embedding_in_pipeline_split"] = true;
  if (s.loss_as_layer) out["account_for_loss_in_pipeline_split"] = true;
  if (s.optimizer_post_validation) out["optimizer_post_validation"] = true;
  if (s.overlap_p2p_comm_given) out["overlap_p2p_comm"] = s.overlap_p2p_comm;
  if (s.align_grad_reduce_given) out["align_grad_reduce"] = s.align_grad_reduce;
  if (s.scatter_gather_p2p) out["scatter_gather_p2p"] = true;
  if (s.zb_plan_given) out["zb_plan"] = to_string(s.zb_plan);
  // MoE knobs: written where they can matter, so dense configs resolve as before.
  if (s.ep > 1 || expert_tp_of(s) != s.tp || s.moe_dispatcher != MoeDispatcher::AllToAll) {
    out["expert_tp"] = expert_tp_of(s);
    out["moe_dispatcher"] = to_string(s.moe_dispatcher);
  }
  return out;
}

}  // namespace

std::string config_to_json(const Config& config, int indent) {
  const TrainingSpec& t = config.training;
  const SimulationSpec& sim = config.simulation;
  Out training{{"global_batch", t.global_batch},
               {"seq_len", t.seq_len},
               {"precision", to_string(t.precision)},
               {"optimizer", to_string(t.optimizer)}};
  if (t.precision == Precision::Fp8) {
    training["fp8_recipe"] = to_string(t.fp8_recipe);
    training["fp8_attention"] = t.fp8_attention;
  }
  Out out{{"schema", 1},
          {"name", config.name},
          {"model", model_json(config.model)},
          {"cluster", cluster_json(config.cluster)},
          {"training", std::move(training)},
          {"strategy", strategy_json(config.strategy)},
          {"simulation", Out{{"symmetry", sim.symmetry},
                             {"max_tasks", sim.max_tasks},
                             {"max_events", sim.max_events},
                             {"max_timeline_spans", sim.max_timeline_spans}}}};
  return out.dump(indent < 0 ? -1 : indent);
}

}  // namespace proteus
