// The "training", "strategy" and "simulation" objects.
#include <cctype>
#include "limits.h"
#include "readers.h"

namespace proteus::config_detail {

namespace {

namespace L = config_limits;

bool is_identifier(const std::string& text) {
  if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) return false;
  for (char c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// Module paths: segments separated by '.', each a name ([A-Za-z0-9_-]+), '*' (one segment),
// or '**' as the last segment (any depth).
void check_module_path(const std::string& text, const std::string& path) {
  if (text.empty()) throw invalid_config(path, "the module path must not be empty");
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string segment = text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool last = dot == std::string::npos;
    bool ok = !segment.empty();
    if (segment == "*" || (segment == "**" && last)) {
      ok = true;
    } else {
      for (char c : segment) {
        ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
      }
    }
    if (!ok) {
      throw invalid_config(path,
                           "module path \"" + text + "\" is malformed at segment \"" + segment +
                               "\": use names like \"layers.3.mlp\", '*' for one segment, and a trailing "
                               "\"**\" for any depth");
    }
    if (last) break;
    start = dot + 1;
  }
}

// The modules are what selective recompute recomputes: given without it, they would do nothing.
void check_recompute_modules_used(const StrategySpec& s, const std::string& path) {
  bool selective = s.recompute == Recompute::Selective;
  for (const OverrideSpec& o : s.overrides) selective = selective || o.recompute == Recompute::Selective;
  if (!selective)
    throw invalid_config(
        path, std::string("recompute_modules choose what selective recompute recomputes; recompute is \"") +
                  to_string(s.recompute) + "\" (set \"selective\", here or in an override)");
}

OverrideSpec read_override(const Json& value, const std::string& path) {
  ObjectReader in(value, path, {"path", "map", "recompute", "stage"});
  OverrideSpec spec;
  spec.path = as_string(in.required("path", "the module(s) this override applies to"), in.path_of("path"));
  check_module_path(spec.path, in.path_of("path"));
  if (in.has("map")) {
    const std::string map_path = in.path_of("map");
    const Json& map = in.at("map");
    if (!map.is_object())
      throw invalid_config(map_path, "map must be an object {mesh axis: dim name or null}");
    for (const auto& item : map.items()) {
      const std::string& axis = item.key();
      const std::string axis_path = join_path(map_path, axis);
      if (axis != "pp" && axis != "dp" && axis != "ep" && axis != "cp" && axis != "tp") {
        throw invalid_config(axis_path,
                             "\"" + axis + "\" is not a mesh axis; expected one of: pp, dp, ep, cp, tp");
      }
      std::string dim;
      if (!item.value().is_null()) {
        dim = as_string(item.value(), axis_path);
        if (!dim.empty() && !is_identifier(dim)) {
          throw invalid_config(axis_path, "\"" + dim +
                                              "\" is not a dim name (letters, digits and '_'); "
                                              "use null to replicate along " +
                                              axis);
        }
      }
      spec.map[axis] = dim;
    }
  }
  if (in.has("recompute")) {
    spec.recompute = as_enum(in.at("recompute"), in.path_of("recompute"),
                             {Recompute::None, Recompute::Selective, Recompute::Full});
  }
  if (in.has("stage"))
    spec.stage = static_cast<int>(as_integer(in.at("stage"), in.path_of("stage"), 0, L::kMaxParallel - 1));
  if (!in.has("map") && !in.has("recompute") && !in.has("stage")) {
    throw invalid_config(path, "this override changes nothing: give \"map\", \"recompute\" or \"stage\"");
  }
  return spec;
}

}  // namespace

// Megatron-Core's --recompute-modules: a list of its names, each once (transformer_config.py
// asserts the names; a repeated one would be a typo here).
RecomputeModules read_recompute_modules(const Json& value, const std::string& path) {
  const Json& list = as_array(value, path, static_cast<size_t>(kNumRecomputeModules) + 1);
  RecomputeModules set = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = index_path(path, i);
    const std::string name = as_string(list[i], at);
    const std::optional<RecomputeModule> m = recompute_module_named(name);
    if (!m) {
      std::string names;
      for (int k = 0; k < kNumRecomputeModules; ++k)
        names += std::string(k ? ", " : "") + "\"" + to_string(static_cast<RecomputeModule>(k)) + "\"";
      throw invalid_config(at, "unknown recompute module \"" + name + "\"; Megatron-Core's are " + names);
    }
    if (set & recompute_bit(*m)) throw invalid_config(at, "\"" + name + "\" is listed twice");
    set |= recompute_bit(*m);
  }
  return set;
}

TrainingSpec read_training(const Json& value, const std::string& path, const ModelSpec& model) {
  ObjectReader in(value, path,
                  {"global_batch", "seq_len", "precision", "optimizer", "fp8_recipe", "fp8_attention"});
  TrainingSpec training;
  training.global_batch = in.required_integer("global_batch", 1, L::kMaxBatch, "samples per iteration");
  training.seq_len = in.integer("seq_len", 0, 0, L::kMaxSeqLen);
  training.precision =
      in.enumeration("precision", Precision::Bf16,
                     {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16, Precision::Fp8});
  training.optimizer = in.enumeration("optimizer", Optimizer::Adam, {Optimizer::Adam, Optimizer::Sgd});
  training.fp8_recipe = in.enumeration("fp8_recipe", Fp8Recipe::Delayed,
                                       {Fp8Recipe::Delayed, Fp8Recipe::Current, Fp8Recipe::Mxfp8});
  training.fp8_attention = in.boolean("fp8_attention", false);
  if (training.precision != Precision::Fp8 && (in.has("fp8_recipe") || in.has("fp8_attention"))) {
    throw invalid_config(in.path_of(in.has("fp8_recipe") ? "fp8_recipe" : "fp8_attention"),
                         std::string("FP8 settings apply only with precision \"fp8\" (precision is \"") +
                             to_string(training.precision) + "\")");
  }
  if (model.kind == ModelKind::Transformer) {
    if (training.seq_len == 0) training.seq_len = model.seq_len;
    if (model.learned_positions && training.seq_len > model.seq_len) {
      throw invalid_config(in.path_of("seq_len"),
                           "seq_len=" + std::to_string(training.seq_len) + " is longer than the model's " +
                               std::to_string(model.seq_len) + " learned positions (model.seq_len)");
    }
  } else {
    if (training.seq_len > 1) {
      throw invalid_config(in.path_of("seq_len"), "seq_len applies only to transformer models (got " +
                                                      std::to_string(training.seq_len) + " for a " +
                                                      to_string(model.kind) + " model)");
    }
    training.seq_len = 1;
  }
  return training;
}

// "schedule": {"stages": [["F0", "F1", "B0", ...], ...], "placement": "interleaved" | "v",
// "copies": 1 | 2}: the order each stage runs its passes in (schedule.h checks it once the
// micro-batch count is known). Two copies (DualPipe) are placed in a V: copy 0's chunks go
// down the stages, copy 1's come back up, so a stage's ".1" entries are copy 1's.
void read_explicit_schedule(const Json& value, const std::string& path, StrategySpec* strategy) {
  ObjectReader in(value, path, {"stages", "placement", "copies"});
  strategy->schedule = Schedule::Explicit;
  strategy->schedule_copies = static_cast<int>(in.integer("copies", 1, 1, 2));
  const std::string placement = in.string("placement", strategy->schedule_copies == 2 ? "v" : "interleaved");
  if (placement != "interleaved" && placement != "v")
    throw invalid_config(in.path_of("placement"),
                         "placement \"" + placement + "\" is not one of: interleaved, v");
  if (strategy->schedule_copies == 2 && placement != "v")
    throw invalid_config(in.path_of("placement"),
                         "two copies of the model are placed in a V (DualPipe: copy 1's chunks come back "
                         "up the stages); placement \"" +
                             placement + "\" cannot hold them");
  strategy->schedule_v_placement = placement == "v";
  const Json& stages = as_array(in.required("stages", "each stage's list of passes"), in.path_of("stages"),
                                static_cast<size_t>(L::kMaxParallel));
  for (size_t s = 0; s < stages.size(); ++s) {
    const std::string stage_path = index_path(in.path_of("stages"), s);
    const Json& passes = as_array(stages[s], stage_path, static_cast<size_t>(L::kMaxJsonValues));
    std::vector<std::string> order;
    for (size_t i = 0; i < passes.size(); ++i)
      order.push_back(as_string(passes[i], index_path(stage_path, i)));
    strategy->schedule_stages.push_back(std::move(order));
  }
}

StrategySpec read_strategy(const Json& value, const std::string& path) {
  ObjectReader in(value, path,
                  {"dp",
                   "tp",
                   "pp",
                   "cp",
                   "ep",
                   "micro_batch",
                   "schedule",
                   "virtual_stages",
                   "microbatch_group_size",
                   "sequence_parallel",
                   "zero",
                   "recompute",
                   "recompute_modules",
                   "overlap_grad_reduce",
                   "overlap_param_gather",
                   "grad_reduce_in_fp32",
                   "grad_accum_in_fp32",
                   "grad_bucket_MB",
                   "overrides",
                   "stage_layers",
                   "framework",
                   "grad_sync",
                   "cp_comm_type",
                   "cp_a2a_size",
                   "attention_kernel",
                   "tp_comm_overlap",
                   "torch_compile",
                   "bias_dropout_fusion",
                   "bias_activation_fusion",
                   "masked_softmax_fusion",
                   "apply_rope_fusion",
                   "gradient_accumulation_fusion",
                   "fp8_param_gather",
                   "store_param_remainders",
                   "distributed_optimizer",
                   "exp_avg_dtype",
                   "exp_avg_sq_dtype",
                   "main_params_dtype",
                   "tp_only_amax_red",
                   "first_stage_layers",
                   "last_stage_layers",
                   "account_for_embedding_in_pipeline_split",
                   "account_for_loss_in_pipeline_split",
                   "expert_tp",
                   "moe_dispatcher",
                   "optimizer_post_validation",
                   "overlap_p2p_comm",
                   "align_grad_reduce",
                   "scatter_gather_p2p",
                   "zb_plan"});
  StrategySpec strategy;
  strategy.dp = static_cast<int>(in.integer("dp", 1, 1, L::kMaxParallel));
  strategy.tp = static_cast<int>(in.integer("tp", 1, 1, L::kMaxParallel));
  strategy.pp = static_cast<int>(in.integer("pp", 1, 1, L::kMaxParallel));
  strategy.cp = static_cast<int>(in.integer("cp", 1, 1, L::kMaxParallel));
  strategy.ep = static_cast<int>(in.integer("ep", 1, 1, L::kMaxParallel));
  strategy.expert_tp = static_cast<int>(in.integer("expert_tp", 0, 1, L::kMaxParallel));
  strategy.moe_dispatcher = in.enumeration("moe_dispatcher", MoeDispatcher::AllToAll,
                                           {MoeDispatcher::AllToAll, MoeDispatcher::AllGather});
  strategy.micro_batch = in.integer("micro_batch", 1, 1, L::kMaxBatch);
  if (in.has("schedule") && in.at("schedule").is_object()) {
    read_explicit_schedule(in.at("schedule"), in.path_of("schedule"), &strategy);
  } else {
    strategy.schedule =
        in.enumeration("schedule", Schedule::OneFOneB,
                       {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved1F1B, Schedule::ZbH1,
                        Schedule::ZbH2, Schedule::ZbV, Schedule::DualPipeV, Schedule::DualPipe});
  }
  strategy.virtual_stages = static_cast<int>(in.integer("virtual_stages", 1, 1, L::kMaxVirtualStages));
  strategy.microbatch_group_size = static_cast<int>(in.integer("microbatch_group_size", 0, 0, L::kMaxBatch));
  strategy.sequence_parallel = in.boolean("sequence_parallel", false);
  strategy.zero = static_cast<int>(in.integer("zero", 0, 0, 3));
  strategy.recompute =
      in.enumeration("recompute", Recompute::None, {Recompute::None, Recompute::Selective, Recompute::Full});
  if (in.has("recompute_modules"))
    strategy.recompute_modules =
        read_recompute_modules(in.at("recompute_modules"), in.path_of("recompute_modules"));
  strategy.overlap_grad_reduce_given = in.has("overlap_grad_reduce");
  strategy.overlap_grad_reduce =
      in.boolean("overlap_grad_reduce", true);  // parse_config resolves the default
  strategy.overlap_param_gather_given = in.has("overlap_param_gather");
  strategy.overlap_param_gather = in.boolean("overlap_param_gather", true);
  strategy.grad_reduce_in_fp32_given = in.has("grad_reduce_in_fp32");
  strategy.grad_reduce_in_fp32 =
      in.boolean("grad_reduce_in_fp32", true);  // parse_config resolves the default
  strategy.grad_accum_in_fp32_given = in.has("grad_accum_in_fp32");
  strategy.grad_accum_in_fp32 = in.boolean("grad_accum_in_fp32", false);  // parse_config resolves the default
  strategy.grad_bucket_MB_given = in.has("grad_bucket_MB");
  strategy.grad_bucket_MB =
      in.number("grad_bucket_MB", 25, 0, L::kMaxGradBucket_MB, true);  // parse_config resolves the default
  strategy.framework = in.enumeration("framework", Framework::Megatron,
                                      {Framework::Megatron, Framework::DeepSpeed, Framework::Fsdp});
  strategy.grad_sync_given = in.has("grad_sync");
  strategy.grad_sync = in.enumeration("grad_sync", default_grad_sync(strategy),
                                      {GradSync::AtBoundary, GradSync::PerMicroBatch});
  strategy.cp_comm_type_given = in.has("cp_comm_type");
  strategy.cp_comm_type =
      in.enumeration("cp_comm_type", CpCommType::P2p,
                     {CpCommType::P2p, CpCommType::AllGather, CpCommType::A2a, CpCommType::A2aP2p});
  strategy.cp_a2a_size = static_cast<int>(in.integer("cp_a2a_size", 0, 0, L::kMaxParallel));
  strategy.attention_kernel = in.enumeration(
      "attention_kernel", AttentionKernel::Auto,
      {AttentionKernel::Auto, AttentionKernel::Cudnn, AttentionKernel::Fa2, AttentionKernel::Fa3});
  strategy.tp_comm_overlap = in.boolean("tp_comm_overlap", false);
  strategy.torch_compile = in.boolean("torch_compile", false);
  strategy.bias_dropout_fusion = in.boolean("bias_dropout_fusion", true);
  strategy.bias_activation_fusion = in.boolean("bias_activation_fusion", true);
  strategy.masked_softmax_fusion = in.boolean("masked_softmax_fusion", true);
  strategy.apply_rope_fusion = in.boolean("apply_rope_fusion", true);
  strategy.gradient_accumulation_fusion = in.boolean("gradient_accumulation_fusion", true);
  strategy.fp8_param_gather = in.boolean("fp8_param_gather", false);
  strategy.store_param_remainders = in.boolean("store_param_remainders", false);
  strategy.distributed_optimizer =
      in.enumeration("distributed_optimizer", DistributedOptimizer::Megatron,
                     {DistributedOptimizer::Megatron, DistributedOptimizer::Apex});
  const std::initializer_list<StateDtype> moment_dtypes = {StateDtype::Fp32, StateDtype::Bf16,
                                                           StateDtype::Fp16, StateDtype::Fp8};
  strategy.exp_avg_dtype = in.enumeration("exp_avg_dtype", StateDtype::Fp32, moment_dtypes);
  strategy.exp_avg_sq_dtype = in.enumeration("exp_avg_sq_dtype", StateDtype::Fp32, moment_dtypes);
  strategy.main_params_dtype =
      in.enumeration("main_params_dtype", StateDtype::Fp32, {StateDtype::Fp32, StateDtype::Fp16});
  strategy.tp_only_amax_red = in.boolean("tp_only_amax_red", false);
  strategy.optimizer_post_validation = in.boolean("optimizer_post_validation", false);
  strategy.overlap_p2p_comm_given = in.has("overlap_p2p_comm");
  strategy.overlap_p2p_comm = in.boolean("overlap_p2p_comm", true);
  strategy.align_grad_reduce_given = in.has("align_grad_reduce");
  strategy.align_grad_reduce = in.boolean("align_grad_reduce", true);
  strategy.zb_plan_given = in.has("zb_plan");
  strategy.zb_plan =
      in.enumeration("zb_plan", default_zb_plan(strategy.framework), {ZbPlan::Profiled, ZbPlan::Unit});
  strategy.scatter_gather_p2p = in.boolean("scatter_gather_p2p", false);
  if (in.has("overrides")) {
    const Json& overrides =
        as_array(in.at("overrides"), in.path_of("overrides"), static_cast<size_t>(L::kMaxOverrides));
    for (size_t i = 0; i < overrides.size(); ++i) {
      strategy.overrides.push_back(read_override(overrides[i], index_path(in.path_of("overrides"), i)));
    }
  }
  // Megatron-Core refuses counts below 1 (TransformerConfig); absent is 0.
  strategy.first_stage_layers = static_cast<int>(in.integer("first_stage_layers", 0, 1, L::kMaxLayers));
  strategy.last_stage_layers = static_cast<int>(in.integer("last_stage_layers", 0, 1, L::kMaxLayers));
  strategy.embedding_as_layer = in.boolean("account_for_embedding_in_pipeline_split", false);
  strategy.loss_as_layer = in.boolean("account_for_loss_in_pipeline_split", false);
  if (in.has("recompute_modules")) check_recompute_modules_used(strategy, in.path_of("recompute_modules"));
  if (in.has("stage_layers")) {
    std::vector<int64_t> layers = as_integer_array(in.at("stage_layers"), in.path_of("stage_layers"),
                                                   static_cast<size_t>(L::kMaxLayers), 1, L::kMaxLayers);
    strategy.stage_layers.assign(layers.begin(), layers.end());
  }
  return strategy;
}

SimulationSpec read_simulation(const Json& value, const std::string& path) {
  ObjectReader in(value, path, {"symmetry", "max_tasks", "max_events", "max_timeline_spans"});
  const SimulationSpec defaults;
  SimulationSpec simulation;
  simulation.symmetry = in.boolean("symmetry", defaults.symmetry);
  simulation.max_tasks = in.integer("max_tasks", defaults.max_tasks, 1, L::kMaxExactInteger);
  simulation.max_events = in.integer("max_events", defaults.max_events, 1, L::kMaxExactInteger);
  simulation.max_timeline_spans =
      in.integer("max_timeline_spans", defaults.max_timeline_spans, 0, L::kMaxExactInteger);
  return simulation;
}

}  // namespace proteus::config_detail
