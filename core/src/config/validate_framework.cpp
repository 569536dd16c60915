// Combinations of ZeRO stage, framework, pipeline, context and tensor parallelism that the
// chosen framework does not run (docs/frameworks.md): errors naming the field to change,
// never a silent simulation of something no framework does.
#include <string>
#include <utility>
#include "json_reader.h"
#include "validate.h"

namespace proteus::config_detail {

namespace {

using std::to_string;

void check_zero(const Config& c) {
  const StrategySpec& s = c.strategy;
  const std::string zero = "zero=" + to_string(s.zero);
  const bool refused = !framework_runs_zero(s, s.zero);
  if (refused && s.framework == Framework::DeepSpeed) {
    throw invalid_config("strategy.zero",
                         zero + " with pp=" + to_string(s.pp) +
                             ": DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 "
                             "(\"incompatible with pipeline parallelism\"); use zero 0 or 1, "
                             "or framework \"fsdp\"");
  }
  if (refused && s.framework == Framework::Megatron) {
    throw invalid_config("strategy.zero",
                         zero + " with pp=" + to_string(s.pp) +
                             ": Megatron-Core pipelines shard with the distributed optimizer "
                             "(zero 1); for sharded gradients or parameters under a pipeline "
                             "set framework \"fsdp\" (FSDP2 with torch.distributed.pipelining)");
  }
  if (refused && s.framework == Framework::Fsdp) {
    throw invalid_config("strategy.zero",
                         "FSDP has no optimizer-only sharding (its strategies shard "
                         "gradients and optimizer state, zero 2, or everything, zero 3); "
                         "use zero 2 or 3, or framework \"megatron\" for the distributed optimizer");
  }
  if (s.framework == Framework::Fsdp && s.pp > 1 && s.grad_sync == GradSync::PerMicroBatch) {
    // torch.distributed.pipelining: PipelineStage.backward_maybe_with_nosync.
    throw invalid_config("strategy.grad_sync",
                         "FSDP under a pipeline (pp=" + to_string(s.pp) +
                             ") reduces gradients at the last micro-batch only: torch.distributed.pipelining "
                             "turns gradient sync off for the others; use \"at_boundary\"");
  }
  if (s.framework == Framework::DeepSpeed && s.pp > 1 && s.schedule != Schedule::OneFOneB) {
    // deepspeed/runtime/pipe/engine.py: train_batch runs schedule.TrainSchedule, its 1F1B, only.
    throw invalid_config("strategy.schedule",
                         std::string("\"") + to_string(s.schedule) +
                             "\": DeepSpeed's pipeline engine runs one schedule, its TrainSchedule (1F1B); "
                             "use \"1f1b\", or framework \"megatron\" or \"fsdp\" for the others");
  }
  if (s.framework == Framework::Fsdp && s.schedule == Schedule::Interleaved1F1B &&
      s.microbatch_group_size > 0 && s.microbatch_group_size != s.pp) {
    // ScheduleInterleaved1F1B: rounds of m / max(1, m / pp) micro-batches, pp where m is a
    // multiple of pp (compile/torch_lockstep_p2p.h); Megatron-Core's group size is not its knob.
    throw invalid_config("strategy.microbatch_group_size",
                         "PyTorch's ScheduleInterleaved1F1B (framework \"fsdp\") runs groups of pp=" +
                             to_string(s.pp) + " micro-batches; microbatch_group_size is Megatron-Core's");
  }
}

void check_overlaps(const Config& c) {
  const StrategySpec& s = c.strategy;
  // Megatron-Core refuses --tp-comm-overlap without tensor and sequence parallelism
  // (Megatron-Bridge CommOverlapConfig: "tensor_model_parallel_size < 2" / "not sequence_parallel"
  // turn it off): the userbuffers overlap the sequence-parallel all-gathers and reduce-scatters.
  if (s.tp_comm_overlap && (s.tp < 2 || !s.sequence_parallel)) {
    throw invalid_config("strategy.tp_comm_overlap",
                         "Transformer Engine's TP communication overlap needs tp > 1 and sequence_parallel "
                         "(it overlaps the sequence-parallel all-gathers and reduce-scatters); tp=" +
                             to_string(s.tp) +
                             ", sequence_parallel=" + (s.sequence_parallel ? "true" : "false"));
  }
  // Megatron asserts --fp8-param-gather runs with the distributed optimizer or FSDP
  // (arguments.py); torchao's float8 all-gather is an FSDP2 option: both need sharded weights
  // or optimizer states, and FP8 training.
  if (s.fp8_param_gather && (c.training.precision != Precision::Fp8 || s.zero < 1)) {
    throw invalid_config("strategy.fp8_param_gather",
                         "gathering parameters in FP8 needs training.precision \"fp8\" and zero >= 1 "
                         "(Megatron's distributed optimizer or FSDP); precision is \"" +
                             std::string(to_string(c.training.precision)) + "\", zero=" + to_string(s.zero));
  }
  // 16-bit gradients exist only under mixed precision: fp32/tf32 training's gradients are fp32.
  if (!s.grad_reduce_in_fp32 && !is_mixed_precision(c.training.precision)) {
    throw invalid_config("strategy.grad_reduce_in_fp32",
                         "false keeps gradients in the 16-bit training dtype, which needs mixed precision "
                         "(fp16, bf16 or fp8); precision is \"" +
                             std::string(to_string(c.training.precision)) + "\"");
  }
  // Megatron's --tp-only-amax-red picks the group of FP8 amax reductions: FP8 only.
  if (s.tp_only_amax_red && c.training.precision != Precision::Fp8) {
    throw invalid_config("strategy.tp_only_amax_red",
                         "the amax reduction group applies to FP8 training only; precision is \"" +
                             std::string(to_string(c.training.precision)) + "\"");
  }
  // PyTorch's context_parallel (framework fsdp) passes K/V around the ring, by all-gather or by
  // all-to-all rotation (torch/distributed/tensor/experimental/_attention.py, _RotateMethod):
  // cp_comm_type all_gather or p2p. Scattering heads by all-to-all (Ulysses) is Transformer
  // Engine's, which the framework does not run.
  if (s.framework == Framework::Fsdp &&
      (s.cp_comm_type == CpCommType::A2a || s.cp_comm_type == CpCommType::A2aP2p)) {
    throw invalid_config("strategy.cp_comm_type",
                         std::string("\"") + to_string(s.cp_comm_type) +
                             "\" is Transformer Engine's all-to-all of heads; PyTorch's context_parallel "
                             "(framework \"fsdp\") passes K/V around the ring: \"all_gather\" or \"p2p\"");
  }
  if (s.cp_a2a_size > 0 && s.cp_comm_type != CpCommType::A2aP2p) {
    throw invalid_config("strategy.cp_a2a_size",
                         "cp_a2a_size is the inner group of cp_comm_type \"a2a+p2p\"; "
                         "it means nothing for \"" +
                             std::string(to_string(s.cp_comm_type)) + "\"");
  }
  if (s.cp_comm_type == CpCommType::A2aP2p && s.cp_a2a_size > 0 && s.cp % s.cp_a2a_size != 0) {
    // Megatron: prod(hierarchical_context_parallel_sizes) == context_parallel_size.
    throw invalid_config("strategy.cp_a2a_size", "cp_a2a_size=" + to_string(s.cp_a2a_size) +
                                                     " must divide cp=" + to_string(s.cp) +
                                                     " (Megatron's hierarchical sizes multiply to cp)");
  }
  if (s.cp > 1 && (s.cp_comm_type == CpCommType::A2a || s.cp_comm_type == CpCommType::A2aP2p) &&
      c.model.kind == ModelKind::Transformer) {
    const int64_t heads = c.model.heads;
    const int64_t a2a = cp_a2a_group_size(s, c.cluster.gpus_per_node);
    const int64_t kv = c.model.kv_heads == 0 ? heads : c.model.kv_heads;
    if (heads % (int64_t{s.tp} * a2a) != 0 || kv % (int64_t{s.tp} * a2a) != 0) {
      // a2a is framework deepspeed's only flavour (check_ulysses, validate_deepspeed.cpp): the way
      // out there is another cp, or Megatron's ring. Recent DeepSpeed splits indivisible heads
      // unevenly (deepspeed/sequence/layer.py, uneven_heads_all2all); Proteus does not simulate it.
      const std::string way_out =
          s.framework == Framework::DeepSpeed
              ? "choose a cp that divides them (DeepSpeed's uneven split of heads is not simulated), or "
                "framework \"megatron\" with cp_comm_type \"p2p\" (ring attention)"
              : "use \"p2p\" or \"all_gather\"";
      throw invalid_config("strategy.cp_comm_type",
                           std::string(to_string(s.cp_comm_type)) + " scatters attention heads over tp x " +
                               to_string(a2a) + " ranks, which must divide heads=" + to_string(heads) +
                               " and kv_heads=" + to_string(kv) + "; " + way_out);
    }
  }
}

// Megatron-Core and DeepSpeed (Megatron-DeepSpeed) already run fused kernels (Transformer
// Engine, Apex, their jit-fused bias-GeLU/SwiGLU): torch_compile is TorchTitan's switch.
void check_compile(const Config& c) {
  if (c.strategy.torch_compile && c.strategy.framework != Framework::Fsdp) {
    throw invalid_config(
        "strategy.torch_compile",
        std::string("torch.compile is modelled for framework \"fsdp\" (TorchTitan's "
                    "training.compile); framework \"") +
            to_string(c.strategy.framework) +
            "\" runs fused kernels already (Transformer Engine, Apex): remove torch_compile");
  }
}

// Megatron's --no-*-fusion switches: under framework "fsdp" torch_compile decides which
// kernels are fused, so turning one of Megatron's off there would be a silent no-op.
void check_megatron_fusions(const Config& c) {
  if (c.strategy.framework != Framework::Fsdp) return;
  const StrategySpec& s = c.strategy;
  for (const auto& [field, fused] : {std::pair{"bias_dropout_fusion", s.bias_dropout_fusion},
                                     std::pair{"bias_activation_fusion", s.bias_activation_fusion},
                                     std::pair{"masked_softmax_fusion", s.masked_softmax_fusion},
                                     std::pair{"apply_rope_fusion", s.apply_rope_fusion}}) {
    if (fused) continue;
    throw invalid_config(std::string("strategy.") + field,
                         std::string(field) +
                             " is Megatron's switch (frameworks \"megatron\" and \"deepspeed\"); under "
                             "framework \"fsdp\" torch_compile decides what is fused: remove it");
  }
}

// strategy.gradient_accumulation_fusion is Megatron's --no-gradient-accumulation-fusion, simulated for
// framework megatron only (compile/linear_kernels.h): turning it off elsewhere would be a silent
// no-op.
void check_gradient_accumulation_fusion(const Config& c) {
  if (c.strategy.gradient_accumulation_fusion || c.strategy.framework == Framework::Megatron) return;
  throw invalid_config(
      "strategy.gradient_accumulation_fusion",
      "gradient_accumulation_fusion is Megatron's switch, simulated under framework \"megatron\" only; "
      "under framework \"" +
          std::string(to_string(c.strategy.framework)) +
          "\" the weight gradients are accumulated the framework's own way: remove it");
}

// strategy.store_param_remainders: the fp32 master weight is rebuilt from the bf16 weight (its
// high 16 bits) and the stored low 16 bits, so the weights must be bf16 and the states an
// fp32-master Adam's. FSDP2 keeps fp32 shards (no master copy) and DeepSpeed has no such option.
void check_param_remainders(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (!s.store_param_remainders) return;
  const Precision p = c.training.precision;
  if (p != Precision::Bf16 && p != Precision::Fp8) {
    throw invalid_config(
        "strategy.store_param_remainders",
        "16-bit remainders of the fp32 master weights complete bf16 weights; precision is \"" +
            std::string(to_string(p)) + "\" (use bf16 or fp8, or remove the field)");
  }
  if (c.training.optimizer != Optimizer::Adam) {
    throw invalid_config("strategy.store_param_remainders",
                         "remainders are an option of Adam (NeMo's distributed_fused_adam, Transformer "
                         "Engine's FusedAdam); training.optimizer is \"sgd\"");
  }
  if (s.fp8_param_gather) {
    throw invalid_config("strategy.store_param_remainders",
                         "with fp8_param_gather the weights are FP8, so there are no bf16 bits to complete: "
                         "the optimizer keeps whole fp32 master weights (NeMo sets store_params under "
                         "fp8_params); remove one of the two");
  }
  if (s.framework != Framework::Megatron) {
    throw invalid_config("strategy.store_param_remainders",
                         std::string("framework \"") + to_string(s.framework) +
                             "\" keeps whole fp32 master weights or shards (NeMo's and Megatron-Core's "
                             "optimizers store remainders: framework \"megatron\")");
  }
}

// The precision-aware optimizer's state dtypes (strategy.exp_avg_dtype, exp_avg_sq_dtype,
// main_params_dtype): Megatron-Core's OptimizerConfig asserts Adam and the distributed optimizer
// (optimizer_config.py __post_init__) and hands the dtypes to Transformer Engine's FusedAdam,
// which updates fp32 weights in place (its moments may still be 16- or 8-bit) and keeps master
// weights only of 16-bit ones; it keeps remainders only of fp32 masters ("Works only when ...
// master weight type is FP32").
void check_optimizer_dtypes(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (!low_precision_optimizer_states(s)) return;
  const char* field = s.main_params_dtype != StateDtype::Fp32 ? "strategy.main_params_dtype"
                      : s.exp_avg_dtype != StateDtype::Fp32   ? "strategy.exp_avg_dtype"
                                                              : "strategy.exp_avg_sq_dtype";
  if (s.framework != Framework::Megatron) {
    throw invalid_config(field,
                         std::string("optimizer state dtypes are Megatron-Core's precision-aware optimizer "
                                     "(framework \"megatron\"); framework is \"") +
                             to_string(s.framework) + "\"");
  }
  if (c.training.optimizer != Optimizer::Adam) {
    throw invalid_config(
        field,
        "Megatron's precision-aware optimizer runs Adam only (Transformer Engine's FusedAdam); "
        "training.optimizer is \"sgd\"");
  }
  if (s.zero < 1) {
    throw invalid_config(field,
                         "Megatron's precision-aware optimizer needs the distributed optimizer (zero >= 1; "
                         "Megatron asserts --use-distributed-optimizer)");
  }
  if (s.main_params_dtype != StateDtype::Fp32 && !is_mixed_precision(c.training.precision)) {
    throw invalid_config("strategy.main_params_dtype",
                         "fp32 weights are their own master weights, so there is no master copy to keep in "
                         "fp16 (precision is \"" +
                             std::string(to_string(c.training.precision)) + "\"; use bf16, fp16 or fp8)");
  }
  if (s.main_params_dtype != StateDtype::Fp32 && s.store_param_remainders) {
    throw invalid_config(
        "strategy.main_params_dtype",
        "remainders complete fp32 master weights; with fp16 masters Transformer Engine keeps "
        "whole fp16 masters: remove store_param_remainders or main_params_dtype");
  }
}

}  // namespace

void check_framework(const Config& config) {
  check_zero(config);
  check_overlaps(config);
  check_compile(config);
  check_megatron_fusions(config);
  check_gradient_accumulation_fusion(config);
  check_param_remainders(config);
  check_optimizer_dtypes(config);
  check_deepspeed(config);
}

}  // namespace proteus::config_detail

namespace proteus {

int cp_a2a_group_size(const StrategySpec& s, int gpus_per_node) {
  if (s.cp_comm_type == CpCommType::A2a) return s.cp;
  if (s.cp_comm_type != CpCommType::A2aP2p) return 1;
  if (s.cp_a2a_size > 0) return s.cp_a2a_size;
  // a2a inside a node (NVLink), p2p between nodes (TE: hierarchical cp_group = [a2a, p2p]).
  int a2a = 1;
  while (a2a * 2 <= s.cp && s.cp % (a2a * 2) == 0 && int64_t{s.tp} * a2a * 2 <= gpus_per_node) a2a *= 2;
  return a2a;
}

}  // namespace proteus
