// Framework "deepspeed": knobs DeepSpeed's engines and Megatron-DeepSpeed do not have, or have
// only at some ZeRO stages (docs/frameworks/data-parallelism.md, "What DeepSpeed overlaps" and
// "DeepSpeed's BF16_Optimizer"; docs/frameworks/context-parallelism.md, "DeepSpeed-Ulysses").
// The defaults (refresh_framework_defaults) are always valid: each error is a value the config
// gave.
#include <string>

#include "json_reader.h"
#include "validate.h"

namespace proteus::config_detail {

namespace {

using std::to_string;

// data_types.grad_accum_dtype "fp32" selects BF16_Optimizer for bf16 at ZeRO stage 0 or 1
// (engine._do_optimizer_sanity_check); fp16 with fp32 accumulation is an "unsupported mix" without
// ZeRO and ignored by the ZeRO optimizer, which also takes it at stages 2-3.
void check_grad_accum_dtype(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (!s.grad_accum_in_fp32) return;
  if (c.training.precision != Precision::Bf16)
    throw invalid_config("strategy.grad_accum_in_fp32",
                         "true: DeepSpeed accumulates gradients in fp32 apart from the model's dtype only "
                         "for bf16 (BF16_Optimizer); precision is \"" +
                             std::string(to_string(c.training.precision)) + "\"");
  if (s.zero >= 2)
    throw invalid_config("strategy.grad_accum_in_fp32",
                         "true at zero=" + to_string(s.zero) +
                             ": DeepSpeed's BF16_Optimizer runs at ZeRO stage 0 or 1; its ZeRO-2/3 "
                             "optimizer keeps the gradients as simulated without it");
}

// BF16_Optimizer keeps and all-reduces fp32 gradients once, after the last micro-batch
// (deepspeed/runtime/bf16_optimizer.py, engine.allreduce_gradients).
void check_bf16_optimizer(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (!deepspeed_bf16_optimizer(s, c.training.precision)) return;
  if (!s.grad_reduce_in_fp32)
    throw invalid_config("strategy.grad_reduce_in_fp32",
                         "false: DeepSpeed trains bf16 with fp32 gradient accumulation (grad_accum_in_fp32, "
                         "its default at zero 0) through its BF16_Optimizer, which accumulates and "
                         "all-reduces fp32 gradients; remove the field, or use DeepSpeed's ZeRO optimizer "
                         "(zero 1 without grad_accum_in_fp32: bf16 gradients)");
  if (s.grad_sync == GradSync::PerMicroBatch)
    throw invalid_config("strategy.grad_sync",
                         "per_micro_batch: DeepSpeed's BF16_Optimizer (bf16 with fp32 gradient accumulation) "
                         "all-reduces the gradients once, at the gradient accumulation boundary; use "
                         "at_boundary");
}

// overlap_comm exists for ZeRO-1/2 outside the pipeline engine and for ZeRO-3; without ZeRO the
// engine all-reduces after the backward (allreduce_gradients), the pipeline engine after its
// schedule (ReduceGrads). ZeRO-1/2 and BF16_Optimizer all-gather the updated weights inside step().
void check_overlaps(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (s.overlap_grad_reduce && !deepspeed_can_overlap_grad_reduce(s)) {
    const std::string where = s.pp > 1      ? "under its pipeline engine (pp=" + to_string(s.pp) + ")"
                              : s.zero == 0 ? "without ZeRO (zero=0)"
                                            : "under its BF16_Optimizer (grad_accum_in_fp32)";
    throw invalid_config("strategy.overlap_grad_reduce",
                         "true: DeepSpeed reduces gradients after the backward " + where +
                             "; its overlap_comm applies to ZeRO-1/2 without a pipeline and to ZeRO-3. "
                             "Remove the field or set it false");
  }
  if (s.overlap_param_gather && deepspeed_gathers_weights_in_step(s, c.training.precision)) {
    throw invalid_config("strategy.overlap_param_gather",
                         "true: DeepSpeed's " +
                             std::string(deepspeed_bf16_optimizer(s, c.training.precision)
                                             ? "BF16_Optimizer (bf16, fp32 gradient accumulation)"
                                             : "ZeRO-" + to_string(s.zero) + " optimizer") +
                             " all-gathers the updated weights inside step(), before the next forward; "
                             "remove the field or set it false");
  }
}

// Megatron-DeepSpeed splits the sequence with DeepSpeed-Ulysses only (--ds-sequence-parallel-size:
// deepspeed.sequence.layer.DistributedAttention, an all-to-all of heads), and refuses it beside
// Megatron's sequence parallelism (megatron/initialize.py: "not compatible with Megatron-LM's
// sequence parallel").
void check_ulysses(const Config& c) {
  const StrategySpec& s = c.strategy;
  if (s.cp == 1) return;
  if (s.cp_comm_type != CpCommType::A2a) {
    throw invalid_config(
        "strategy.cp_comm_type",
        std::string("\"") + to_string(s.cp_comm_type) +
            "\": Megatron-DeepSpeed splits the sequence with DeepSpeed-Ulysses, an "
            "all-to-all of heads; use \"a2a\", or framework \"megatron\" for ring attention");
  }
  if (s.sequence_parallel) {
    throw invalid_config("strategy.sequence_parallel",
                         "true with cp=" + to_string(s.cp) +
                             ": Megatron-DeepSpeed refuses its DeepSpeed-Ulysses sequence parallelism "
                             "beside Megatron-LM's sequence parallelism; set it false");
  }
}

}  // namespace

void check_deepspeed(const Config& config) {
  if (config.strategy.framework != Framework::DeepSpeed) {
    if (config.strategy.grad_accum_in_fp32)
      throw invalid_config("strategy.grad_accum_in_fp32",
                           "is DeepSpeed's data_types.grad_accum_dtype (framework \"deepspeed\"); Megatron's "
                           "and FSDP's gradient dtype is grad_reduce_in_fp32");
    return;
  }
  check_grad_accum_dtype(config);
  check_bf16_optimizer(config);
  check_overlaps(config);
  check_ulysses(config);
}

}  // namespace proteus::config_detail
