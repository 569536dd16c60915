#include "validate.h"

#include <cmath>
#include <cstdio>
#include <string>
#include "json_reader.h"
#include "limits.h"
#include "proteus/strategy_tree.h"

namespace proteus::config_detail {

namespace {

using std::to_string;

std::string format_count(double value) {
  if (value < 1e15) return std::to_string(static_cast<int64_t>(value));
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string format_real(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

void check_mesh_size(const Config& c) {
  const StrategySpec& s = c.strategy;
  // In double: each degree is at most 2^20, so the product is exact whenever it could match.
  double product = double(s.dp) * s.tp * s.pp * s.cp;
  double gpus = double(c.cluster.nodes) * c.cluster.gpus_per_node;
  if (product != gpus) {
    throw invalid_config("strategy", "dp*tp*pp*cp = " + format_count(product) + " but the cluster has " +
                                         format_count(gpus) + " GPUs (" + to_string(c.cluster.nodes) +
                                         " nodes x " + to_string(c.cluster.gpus_per_node) + ")");
  }
}

void check_tensor_parallel(const Config& c) {
  const StrategySpec& s = c.strategy;
  const ModelSpec& m = c.model;
  if (s.tp == 1 || m.kind != ModelKind::Transformer) return;
  auto require_divides = [&](int64_t value, const char* name) {
    if (value % s.tp != 0) {
      throw invalid_config("strategy.tp",
                           "tp=" + to_string(s.tp) + " does not divide " + name + "=" + to_string(value));
    }
  };
  require_divides(m.heads, "heads");
  require_divides(m.kv_heads, "kv_heads");
  require_divides(m.ffn_hidden, "ffn_hidden");
  if (m.moe.experts > 0) require_divides(m.moe.expert_ffn_hidden, "moe.expert_ffn_hidden");
  if (m.moe.shared_expert_ffn_hidden > 0)
    require_divides(m.moe.shared_expert_ffn_hidden, "moe.shared_expert_ffn_hidden");
}

// Layers (transformer) or ops (graph) that pipeline stages split; 0 when the model has no
// such sequence (CNN, DLRM: stages are given per module with overrides).
int64_t pipeline_units(const ModelSpec& m) {
  if (m.kind == ModelKind::Transformer) return m.layers;
  if (m.kind == ModelKind::Graph) return static_cast<int64_t>(m.ops.size());
  return 0;
}

const char* unit_name(const ModelSpec& m) { return m.kind == ModelKind::Graph ? "ops" : "layers"; }

void check_pipeline(const Config& c) {
  const StrategySpec& s = c.strategy;
  const int64_t units = pipeline_units(c.model);
  if (units > 0 && s.pp > units) {
    throw invalid_config("strategy.pp", "pp=" + to_string(s.pp) +
                                            " is more pipeline stages than the model's " + to_string(units) +
                                            " " + unit_name(c.model));
  }
  if (s.virtual_stages > 1 && s.schedule != Schedule::Interleaved1F1B) {
    throw invalid_config("strategy.virtual_stages",
                         "virtual_stages=" + to_string(s.virtual_stages) +
                             " needs schedule \"interleaved-1f1b\" (the schedule is \"" +
                             to_string(s.schedule) + "\")");
  }
  if (s.schedule == Schedule::Explicit && static_cast<int64_t>(s.schedule_stages.size()) != s.pp) {
    throw invalid_config("strategy.schedule.stages", "the explicit schedule lists " +
                                                         to_string(s.schedule_stages.size()) +
                                                         " stages but pp=" + to_string(s.pp));
  }
  if (s.schedule == Schedule::DualPipe && s.pp % 2 != 0) {  // DualPipe.step: assert num_ranks % 2 == 0
    throw invalid_config(
        "strategy.pp",
        "dualpipe needs an even pp (half the ranks lead each direction); pp=" + to_string(s.pp));
  }
  // Two copies in a V on an odd pp would put both copies of the middle chunk on one stage.
  if (s.schedule == Schedule::Explicit && s.schedule_copies == 2 && s.pp % 2 != 0) {
    throw invalid_config("strategy.pp",
                         "an explicit schedule with two copies of the model needs an even pp "
                         "(the middle stage would hold both copies of one chunk); pp=" +
                             to_string(s.pp));
  }
  // --enable-optimizer-post-validation belongs to the zero-bubble runtime; Megatron's own
  // schedules all-reduce the gradient norm and the fp16 inf/nan flag before every step.
  if (s.optimizer_post_validation && !zero_bubble_schedule(s.schedule) && s.schedule != Schedule::Explicit) {
    throw invalid_config("strategy.optimizer_post_validation",
                         std::string("optimizer post-validation is the zero-bubble runtime's "
                                     "(--enable-optimizer-post-validation): it needs schedule zb-h1, zb-h2, "
                                     "zb-v or an explicit order, not ") +
                             to_string(s.schedule));
  }
  // The zero-bubble runtime plans only its own schedules.
  if (s.zb_plan_given && !zero_bubble_schedule(s.schedule)) {
    throw invalid_config(
        "strategy.zb_plan",
        std::string("zb_plan chooses how the zero-bubble runtime orders zb-h1, zb-h2 or zb-v; "
                    "the schedule is ") +
            to_string(s.schedule));
  }
  // --overlap-p2p-communication acts on Megatron's interleaved schedule only: Megatron-LM's
  // validate_args turns it off for the non-interleaved one (which always waits on its p2p), and
  // the other frameworks' and schedules' runtimes place their own sends and receives.
  if (s.overlap_p2p_comm_given && !overlap_p2p_comm_applies(s)) {
    throw invalid_config(
        "strategy.overlap_p2p_comm",
        std::string("overlap_p2p_comm is Megatron-Core's option for its interleaved schedule "
                    "(framework megatron, schedule interleaved-1f1b, pp > 1); this run has "
                    "framework ") +
            to_string(s.framework) + ", schedule " + to_string(s.schedule) + ", pp=" + std::to_string(s.pp) +
            ". Megatron's 1f1b always waits on its p2p; remove the field");
  }
  // Megatron-Core sets grad_sync_func only under overlap_grad_reduce, and only its pipeline
  // schedules call it (pp 1 launches from the hooks either way). Megatron-FSDP (zero 3) reduces
  // per FSDP unit from its own hooks in Proteus.
  if (s.align_grad_reduce_given && !align_grad_reduce_applies(s)) {
    throw invalid_config("strategy.align_grad_reduce",
                         std::string("align_grad_reduce is Megatron-Core's option for its pipeline schedules "
                                     "with overlapped gradient reduction (framework megatron, pp > 1, "
                                     "overlap_grad_reduce true, zero < 3); this run has framework ") +
                             to_string(s.framework) + ", pp=" + std::to_string(s.pp) +
                             ", overlap_grad_reduce " + (s.overlap_grad_reduce ? "true" : "false") +
                             ", zero " + std::to_string(s.zero) + ". Remove the field");
  }
  // Apex's DistributedFusedAdam shards the optimizer states over the data-parallel ranks and keeps a
  // full gradient buffer: ZeRO-1, as NeMo runs it under its Megatron-Core models.
  if (s.distributed_optimizer == DistributedOptimizer::Apex && !distributed_optimizer_applies(s)) {
    throw invalid_config("strategy.distributed_optimizer",
                         std::string("\"apex\" is Apex's DistributedFusedAdam as NeMo runs it (framework "
                                     "megatron, zero 1); this run has framework ") +
                             to_string(s.framework) + ", zero " + std::to_string(s.zero) +
                             ". Use zero 1 or remove the field");
  }
  if (s.scatter_gather_p2p && s.framework != Framework::Megatron) {
    throw invalid_config("strategy.scatter_gather_p2p",
                         std::string("scatter_gather_p2p is legacy Megatron-LM's "
                                     "--scatter-gather-tensors-in-pipeline (framework megatron), not ") +
                             to_string(s.framework) + "'s");
  }
  const int64_t chunks = int64_t{s.pp} * chunks_per_stage(s) / model_copies(s);
  // With --account-for-embedding/loss-in-pipeline-split the embedding and the loss take a
  // layer's slot each, so Megatron-Core builds a first (last) chunk of no transformer layer when
  // the slots are one per chunk (get_num_layers_to_build: num_layers_per_vp - 1 = 0); the
  // zero-bubble repository's --allow-padding-num-layers does the same for 30 layers on pp 8 x v 4.
  const int64_t slots =
      units + (units > 0 && s.embedding_as_layer ? 1 : 0) + (units > 0 && s.loss_as_layer ? 1 : 0);
  if (units > 0 && chunks > slots) {
    throw invalid_config(
        s.schedule == Schedule::Interleaved1F1B ? "strategy.virtual_stages" : "strategy.schedule",
        "pp*chunks per stage = " + to_string(chunks) + " model chunks is more than the model's " +
            to_string(units) + " " + unit_name(c.model) +
            (slots > units ? " + " + to_string(slots - units) + " (embedding/loss)" : std::string()));
  }
  if (!s.stage_layers.empty()) {
    if (units == 0) {
      throw invalid_config(
          "strategy.stage_layers",
          std::string("stage_layers applies to transformer and graph models; place the modules of a ") +
              to_string(c.model.kind) + " model with overrides[].stage");
    }
    if (static_cast<int64_t>(s.stage_layers.size()) != chunks) {
      throw invalid_config("strategy.stage_layers",
                           "stage_layers has " + to_string(s.stage_layers.size()) +
                               " entries but pp*chunks per stage = " + to_string(chunks));
    }
    int64_t sum = 0;
    for (int n : s.stage_layers) sum += n;
    if (sum != units) {
      throw invalid_config("strategy.stage_layers", "stage_layers adds up to " + to_string(sum) +
                                                        " but the model has " + to_string(units) + " " +
                                                        unit_name(c.model));
    }
  }
  if (uneven_pipeline(s)) {
    if (units == 0) {
      throw invalid_config(s.first_stage_layers > 0  ? "strategy.first_stage_layers"
                           : s.last_stage_layers > 0 ? "strategy.last_stage_layers"
                           : s.embedding_as_layer    ? "strategy.account_for_embedding_in_pipeline_split"
                                                     : "strategy.account_for_loss_in_pipeline_split",
                           std::string("applies to transformer and graph models, not a ") +
                               to_string(c.model.kind) + " model");
    }
    megatron_stage_layers(s, static_cast<int>(units));  // throws naming the option
  }
  for (size_t i = 0; i < s.overrides.size(); ++i) {
    const auto& stage = s.overrides[i].stage;
    if (stage && *stage >= s.pp) {
      throw invalid_config("strategy.overrides[" + to_string(i) + "].stage",
                           "stage=" + to_string(*stage) + " does not exist: pp=" + to_string(s.pp) +
                               " gives stages 0.." + to_string(s.pp - 1));
    }
  }
}

void check_batch(const Config& c) {
  const StrategySpec& s = c.strategy;
  const int64_t global = c.training.global_batch;
  if (global % s.dp != 0) {
    throw invalid_config("training.global_batch", "global_batch=" + to_string(global) +
                                                      " is not divisible by dp=" + to_string(s.dp) +
                                                      " (each replica gets an equal share)");
  }
  const int64_t per_replica = global / s.dp;
  if (s.micro_batch > per_replica) {
    throw invalid_config("strategy.micro_batch", "micro_batch=" + to_string(s.micro_batch) +
                                                     " is larger than the per-replica batch " +
                                                     to_string(per_replica) + " (global_batch " +
                                                     to_string(global) + " / dp " + to_string(s.dp) + ")");
  }
  if (per_replica % s.micro_batch != 0) {
    throw invalid_config("training.global_batch",
                         "global_batch=" + to_string(global) +
                             " is not divisible by dp*micro_batch = " + to_string(s.dp) + "*" +
                             to_string(s.micro_batch) + " = " + to_string(int64_t{s.dp} * s.micro_batch));
  }
  const int64_t micro_batches = per_replica / s.micro_batch;
  // Megatron-Core (schedules.py, forward_backward_pipelining_with_interleaving) takes groups of
  // n = microbatch_group_size_per_vp_stage micro-batches, p <= n <= m, and refuses a last group
  // of fewer than p; n defaults to p, which needs m to be a multiple of p.
  const int64_t group = s.microbatch_group_size;
  if (s.schedule == Schedule::Interleaved1F1B && group > 0 &&
      (group < s.pp || group > micro_batches ||
       (micro_batches % group != 0 && micro_batches % group < s.pp))) {
    throw invalid_config("strategy.microbatch_group_size",
                         "microbatch_group_size=" + to_string(group) + " must lie in [pp=" + to_string(s.pp) +
                             ", micro-batches=" + to_string(micro_batches) +
                             "] and leave a last group of 0 or at least pp micro-batches (Megatron-Core)");
  }
  // The zero-bubble runtime's V planner (v_schedule.py try_v_schedule) asserts in its warm-up
  // with 1 < micro-batches < pp, at any pass times: its first plan already fails.
  if (s.schedule == Schedule::ZbV && s.zb_plan == ZbPlan::Profiled && micro_batches > 1 &&
      micro_batches < s.pp) {
    throw invalid_config("strategy.schedule",
                         "the zero-bubble runtime plans zb-v for at least pp=" + to_string(s.pp) +
                             " micro-batches (global_batch / (dp*micro_batch)); there are " +
                             to_string(micro_batches) + " (zb_plan \"unit\" plays the unit-time order)");
  }
  // DualPipeV.step asserts num_chunks >= num_ranks * 2 (deepseek-ai/DualPipe dualpipev.py):
  // its main step runs micro_batches - 2 pp + rank + 1 times.
  if (s.schedule == Schedule::DualPipeV && micro_batches < 2 * int64_t{s.pp}) {
    throw invalid_config("strategy.schedule",
                         "dualpipe-v needs at least 2*pp=" + to_string(2 * int64_t{s.pp}) +
                             " micro-batches (global_batch / (dp*micro_batch)); there are " +
                             to_string(micro_batches));
  }
  // DualPipe.step asserts num_chunks % 2 == 0 and num_chunks >= num_ranks * 2 (dualpipe.py):
  // half the micro-batches enter at each end.
  if (s.schedule == Schedule::DualPipe && (micro_batches % 2 != 0 || micro_batches < 2 * int64_t{s.pp})) {
    throw invalid_config(
        "strategy.schedule",
        "dualpipe needs an even number of micro-batches (global_batch / (dp*micro_batch)), at "
        "least 2*pp=" +
            to_string(2 * int64_t{s.pp}) + "; there are " + to_string(micro_batches));
  }
  // Each copy runs an equal run of the micro-batches (PipelineSchedule::copies).
  if (s.schedule == Schedule::Explicit && s.schedule_copies == 2 && micro_batches % 2 != 0) {
    throw invalid_config("strategy.schedule.copies",
                         "two copies of the model each run half the micro-batches, so their number "
                         "(global_batch / (dp*micro_batch)) must be even; there are " +
                             to_string(micro_batches));
  }
  if (s.schedule == Schedule::Interleaved1F1B && group == 0 && micro_batches % s.pp != 0) {
    throw invalid_config("strategy.schedule",
                         "the interleaved schedule needs the number of micro-batches (" +
                             to_string(micro_batches) +
                             " = global_batch / (dp*micro_batch)) to be a multiple of pp=" + to_string(s.pp));
  }
}

// Megatron-Core (megatron/core/parallel_state.py): expert_tp is tp or, with MoE parallel
// folding, 1; the expert-parallel group then takes in the tp ranks (ep a multiple of tp).
void check_expert_tensor_parallel(const StrategySpec& s, int experts) {
  if (expert_tp_of(s) != s.tp) {
    if (expert_tp_of(s) != 1) {
      throw invalid_config("strategy.expert_tp",
                           "expert_tp=" + to_string(expert_tp_of(s)) +
                               " is modelled only as tp=" + to_string(s.tp) +
                               " (experts split like the dense MLP) or 1 (experts whole, the tp ranks folded "
                               "into expert parallelism)");
    }
    if (experts == 0)
      throw invalid_config("strategy.expert_tp",
                           "expert_tp needs a mixture-of-experts model (model.moe.experts > 0)");
    if (s.ep % s.tp != 0) {
      throw invalid_config("strategy.ep",
                           "with expert_tp=1 the tp ranks join the expert-parallel group: ep=" +
                               to_string(s.ep) + " must be a multiple of tp=" + to_string(s.tp));
    }
  }
  if (s.moe_dispatcher != MoeDispatcher::AllToAll && experts == 0)
    throw invalid_config("strategy.moe_dispatcher",
                         "moe_dispatcher needs a mixture-of-experts model (model.moe.experts > 0)");
  // Megatron's all-gather dispatcher with experts split by tp gathers the tokens over tp x ep
  // and reduce-scatters the combined output; in the op graph the tp reduction would act on every
  // routed copy (top_k times the bytes), so it is refused rather than mis-costed.
  if (s.moe_dispatcher == MoeDispatcher::AllGather && s.tp > 1 && !experts_fold_tp(s)) {
    throw invalid_config("strategy.moe_dispatcher",
                         "allgather with experts split by tp=" + to_string(s.tp) +
                             " (expert_tp = tp) is not simulated: use alltoall, or expert_tp 1");
  }
}

void check_expert_parallel(const Config& c) {
  const StrategySpec& s = c.strategy;
  const int experts = c.model.kind == ModelKind::Transformer ? c.model.moe.experts : 0;
  check_expert_tensor_parallel(s, experts);
  if (s.ep == 1) return;
  if (experts == 0) {
    throw invalid_config(
        "strategy.ep", "ep=" + to_string(s.ep) + " needs a mixture-of-experts model (model.moe.experts > 0)");
  }
  const int ep_in_dp = ep_axis_size(s);
  if (s.dp % ep_in_dp != 0) {
    throw invalid_config("strategy.ep",
                         "ep=" + to_string(s.ep) + (ep_in_dp != s.ep ? " / tp=" + to_string(s.tp) : "") +
                             " does not divide dp=" + to_string(s.dp) +
                             " (expert-parallel groups are carved out of the data-parallel ranks)");
  }
  if (experts % s.ep != 0) {
    throw invalid_config("strategy.ep",
                         "ep=" + to_string(s.ep) + " does not divide moe.experts=" + to_string(experts));
  }
}

void check_context_parallel(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (s.cp == 1) return;
  if (c.model.kind != ModelKind::Transformer) {
    throw invalid_config("strategy.cp",
                         std::string("context parallelism splits the sequence; it applies only to "
                                     "transformer models, not to a ") +
                             to_string(c.model.kind) + " model");
  }
  if (c.training.seq_len % s.cp != 0) {
    throw invalid_config(
        "strategy.cp", "cp=" + to_string(s.cp) + " does not divide seq_len=" + to_string(c.training.seq_len));
  }
}

// Rates that work is divided by must not be so small that times overflow (a result of "null").
void check_rates(const Config& c) {
  namespace L = config_limits;
  auto at_least = [](double value, double min, const std::string& path, bool zero_allowed) {
    if (zero_allowed && value == 0) return;
    if (!(value >= min)) {
      throw invalid_config(path, field_name(path) + " must be at least " + format_real(min) + " (got " +
                                     format_real(value) +
                                     "); smaller rates are far below any real hardware " +
                                     "and make every predicted time overflow");
    }
  };
  const GpuSpec& g = c.cluster.gpu;
  at_least(g.hbm_GBps, L::kMinBandwidth_GBps, "cluster.gpu.hbm_GBps", false);
  at_least(g.peak_fp32_TFLOPS, L::kMinTFLOPS, "cluster.gpu.peak_TFLOPS.fp32", false);
  at_least(g.peak_tf32_TFLOPS, L::kMinTFLOPS, "cluster.gpu.peak_TFLOPS.tf32", true);
  at_least(g.peak_fp16_TFLOPS, L::kMinTFLOPS, "cluster.gpu.peak_TFLOPS.fp16", true);
  at_least(g.peak_bf16_TFLOPS, L::kMinTFLOPS, "cluster.gpu.peak_TFLOPS.bf16", true);
  at_least(g.peak_fp8_TFLOPS, L::kMinTFLOPS, "cluster.gpu.peak_TFLOPS.fp8", true);
  at_least(g.gemm_max_efficiency, L::kMinEfficiency, "cluster.gpu.gemm_max_efficiency", false);
  at_least(g.attention_efficiency, L::kMinEfficiency, "cluster.gpu.attention_efficiency", false);
  at_least(g.memory_bound_efficiency, L::kMinEfficiency, "cluster.gpu.memory_bound_efficiency", false);
  const IntraNodeSpec& n = c.cluster.intra_node;
  at_least(n.link_GBps, L::kMinBandwidth_GBps, "cluster.intra_node.link_GBps",
           n.kind == IntraNodeKind::PcieTree);
  at_least(n.bus_efficiency, L::kMinEfficiency, "cluster.intra_node.bus_efficiency", false);
  at_least(n.pcie_GBps, L::kMinBandwidth_GBps, "cluster.intra_node.pcie_GBps", false);
  at_least(n.cpu_link_GBps, L::kMinBandwidth_GBps, "cluster.intra_node.cpu_link_GBps", true);
  const InterNodeSpec& net = c.cluster.inter_node;
  at_least(net.nic_GBps, L::kMinBandwidth_GBps, "cluster.inter_node.nic_GBps", false);
  at_least(net.bus_efficiency, L::kMinEfficiency, "cluster.inter_node.bus_efficiency", false);
}

}  // namespace

void validate_config(const Config& config) {
  check_rates(config);
  check_mesh_size(config);
  check_tensor_parallel(config);
  check_context_parallel(config);
  check_expert_parallel(config);
  check_pipeline(config);
  check_batch(config);
  check_framework(config);
  check_recompute_modules(config);
}

}  // namespace proteus::config_detail
