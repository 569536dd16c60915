// Names, as they appear in config JSON, of the enums that select framework semantics
// (docs/frameworks.md): framework, grad_sync, cp_comm_type, attention_kernel, fp8_recipe; and the framework's
// defaults (gradient synchronisation and dtype, overlaps, buckets, CP exchange), which the reader
// and the search both apply.
#include <algorithm>

#include "limits.h"
#include "proteus/strategy_spec.h"
#include "proteus/training_spec.h"

namespace proteus {

const char* to_string(Framework framework) {
  switch (framework) {
    case Framework::Megatron:
      return "megatron";
    case Framework::DeepSpeed:
      return "deepspeed";
    case Framework::Fsdp:
      return "fsdp";
  }
  return "?";
}

const char* to_string(GradSync sync) {
  switch (sync) {
    case GradSync::AtBoundary:
      return "at_boundary";
    case GradSync::PerMicroBatch:
      return "per_micro_batch";
  }
  return "?";
}

const char* to_string(CpCommType type) {
  switch (type) {
    case CpCommType::P2p:
      return "p2p";
    case CpCommType::AllGather:
      return "all_gather";
    case CpCommType::A2a:
      return "a2a";
    case CpCommType::A2aP2p:
      return "a2a+p2p";
  }
  return "?";
}

const char* to_string(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::Auto:
      return "auto";
    case AttentionKernel::Cudnn:
      return "cudnn";
    case AttentionKernel::Fa2:
      return "fa2";
    case AttentionKernel::Fa3:
      return "fa3";
  }
  return "?";
}

// docs/frameworks/attention-and-kernels.md, "Attention kernels": what each framework's attention call
// dispatches to.
AttentionKernel attention_kernel_of(const StrategySpec& strategy) {
  if (strategy.attention_kernel != AttentionKernel::Auto) return strategy.attention_kernel;
  switch (strategy.framework) {
    case Framework::Megatron:
      return AttentionKernel::Cudnn;  // TE get_attention_backend: FusedAttention preferred on sm90
    case Framework::DeepSpeed:
      return AttentionKernel::Fa2;  // Megatron-DeepSpeed --use-flash-attn-v2
    case Framework::Fsdp:
      return AttentionKernel::Fa2;  // F.scaled_dot_product_attention: FLASH_ATTENTION first
  }
  return AttentionKernel::Cudnn;
}

const char* to_string(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::Delayed:
      return "delayed";
    case Fp8Recipe::Current:
      return "current";
    case Fp8Recipe::Mxfp8:
      return "mxfp8";
  }
  return "?";
}

GradSync default_grad_sync(const StrategySpec& strategy) {
  const bool sharded_grads =
      strategy.zero >= 2 && !(strategy.framework == Framework::Fsdp && strategy.pp > 1);
  return sharded_grads ? GradSync::PerMicroBatch : GradSync::AtBoundary;
}

bool default_grad_reduce_in_fp32(const StrategySpec& strategy, Precision precision) {
  if (!is_mixed_precision(precision) || strategy.framework != Framework::DeepSpeed) return true;
  return deepspeed_bf16_optimizer(strategy, precision);
}

bool default_grad_accum_in_fp32(const StrategySpec& s, Precision precision) {
  return s.framework == Framework::DeepSpeed && precision == Precision::Bf16 && s.zero == 0;
}

// PyTorch DDP's bucket_cap_mb default (torch.nn.parallel.DistributedDataParallel).
constexpr double kTorchDdpBucket_MB = 25;

double default_grad_bucket_MB(const StrategySpec& s) {
  const double bytes = grad_bytes_per_element(s.grad_reduce_in_fp32);
  switch (s.framework) {
    // megatron/training/training.py get_model, "In the Megatron FSDP and DDP use path": DDP and
    // Megatron-FSDP (zero 2-3, whose FSDP units stay whole; compile/fsdp_units.cpp) alike.
    case Framework::Megatron:
      if (!s.overlap_grad_reduce) return config_limits::kMaxGradBucket_MB;  // "bucket_size to infinity"
      return std::max(40e6, 1e6 * s.dp * s.cp) * bytes / 1e6;
    case Framework::DeepSpeed:  // DeepSpeedZeroConfig.reduce_bucket_size, allreduce_bucket_size
      return 5e8 * bytes / 1e6;
    case Framework::Fsdp:  // DDP at zero 0; FSDP2 ignores it
      return kTorchDdpBucket_MB;
  }
  return kTorchDdpBucket_MB;
}

void refresh_framework_defaults(StrategySpec* strategy, Precision precision) {
  StrategySpec& s = *strategy;
  if (!s.grad_sync_given) s.grad_sync = default_grad_sync(s);
  // Before the gradient dtype and the overlaps: it selects DeepSpeed's BF16_Optimizer.
  if (!s.grad_accum_in_fp32_given) s.grad_accum_in_fp32 = default_grad_accum_in_fp32(s, precision);
  if (!s.grad_reduce_in_fp32_given) s.grad_reduce_in_fp32 = default_grad_reduce_in_fp32(s, precision);
  const bool deepspeed = s.framework == Framework::DeepSpeed;
  // DeepSpeedZeroConfig.overlap_comm: None -> stage == 3 (deepspeed/runtime/zero/config.py). ZeRO-3
  // prefetches each module's weights; ZeRO-1/2 and BF16_Optimizer gather them inside step().
  if (!s.overlap_grad_reduce_given) s.overlap_grad_reduce = !deepspeed || s.zero == 3;
  if (!s.overlap_param_gather_given) s.overlap_param_gather = !deepspeed || s.zero == 3;
  // After the gradient dtype and the overlap, which it depends on.
  if (!s.grad_bucket_MB_given) s.grad_bucket_MB = default_grad_bucket_MB(s);
  // Megatron-DeepSpeed's sequence parallelism is DeepSpeed-Ulysses (--ds-sequence-parallel-size);
  // PyTorch's context_parallel rotates K/V by all-gather unless told otherwise
  // (_ContextParallelOptions.rotate_method, TorchTitan's context_parallel_rotate_method
  // "allgather"); Megatron-Core's --cp-comm-type defaults to p2p.
  if (!s.cp_comm_type_given)
    s.cp_comm_type = deepspeed                        ? CpCommType::A2a
                     : s.framework == Framework::Fsdp ? CpCommType::AllGather
                                                      : CpCommType::P2p;
}

}  // namespace proteus
