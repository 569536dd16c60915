#include "optimizer_state.h"

namespace proteus {
namespace {

// Bytes per element of a state at rest. FP8 is Transformer Engine's Float8Tensor, made by a
// Float8Quantizer with its default columnwise=True, so make_empty allocates the E4M3 data (1 byte)
// and its transpose (1 byte) (fused_adam.py _initialize_state; float8_tensor.py make_empty). The
// per-tensor fp32 scales (4 bytes per tensor) are not counted.
double state_bytes(StateDtype d) {
  switch (d) {
    case StateDtype::Fp32:
      return 4;
    case StateDtype::Bf16:
    case StateDtype::Fp16:
    case StateDtype::Fp8:
      return 2;
  }
  return 4;
}

// FusedAdam.step with a state that is not fp32 (TE fused_adam.py): get_unscaled_state makes an
// fp32 copy, the fp32 multi-tensor kernel updates that copy (its 4 + 4 bytes are in the fp32
// traffic), then _apply_scale writes it back. Per element:
//   bf16: .float() read 2 write 4; back: .bfloat16() read 4 write 2, copy_ read 2 write 2 = 16.
//   fp16: .float() 2 + 4, mul_(scale) 4 + 4; back: aminmax read 4, mul_(1/scale) 4 + 4,
//         copy_ read 4 write 2 = 32.
//   fp8:  .float() (dequantize) read 1 write 4; back: aminmax read 4, copy_ into the
//         Float8Tensor quantizes: read 4, write data 1 + transpose 1 = 15.
double conversion_bytes(StateDtype d) {
  switch (d) {
    case StateDtype::Fp32:
      return 0;
    case StateDtype::Bf16:
      return 16;
    case StateDtype::Fp16:
      return 32;
    case StateDtype::Fp8:
      return 15;
  }
  return 0;
}

}  // namespace

OptimizerStates optimizer_states(const StrategySpec& s, const TrainingSpec& t) {
  return {t.optimizer,
          is_mixed_precision(t.precision),
          s.store_param_remainders,
          s.main_params_dtype,
          s.exp_avg_dtype,
          s.exp_avg_sq_dtype};
}

OptimizerStates optimizer_states(const ParallelConfig& root, const TrainingSpec& t) {
  return {t.optimizer,
          is_mixed_precision(t.precision),
          root.store_param_remainders,
          root.main_params_dtype,
          root.exp_avg_dtype,
          root.exp_avg_sq_dtype};
}

// Static memory per parameter (Megatron, REFERENCE.md §2): mixed-precision Adam keeps an fp32
// master 4 + m 4 + v 4 = 12 bytes; fp32 training m 4 + v 4. SGD keeps one momentum (+ the master
// under mixed precision). Remainders: the master's low 16 bits, 2 bytes (NeMo's
// distributed_fused_adam, Megatron-Core's precision-aware optimizer); fp16 masters 2 bytes; the
// moments in their dtypes.
double optimizer_state_bytes_per_param(const OptimizerStates& s) {
  const double master = !s.mixed ? 0 : s.param_remainders ? 2 : state_bytes(s.master);
  if (s.optimizer == Optimizer::Adam) return master + state_bytes(s.exp_avg) + state_bytes(s.exp_avg_sq);
  return master + 4;
}

// Adam, mixed precision: read fp32 master 4, grad 4, m 4, v 4; write master 4, m 4, v 4, 16-bit
// weight 2 = 30. Adam, fp32: read w 4, g 4, m 4, v 4; write w 4, m 4, v 4 = 28. SGD with momentum:
// read w, g, mom; write w, mom (+ the 16-bit copy under mixed precision). Remainders: the fp32
// master is rebuilt from the bf16 weight and its remainder and split back (Apex's
// distributed_adam_cuda / TE's multi_tensor_adam_param_remainder): read weight 2, remainder 2,
// grad 4, m 4, v 4; write weight 2, remainder 2, m 4, v 4 = 28. Each state that is not fp32 adds
// its conversions to and from the fp32 copy the kernel updates (conversion_bytes).
double optimizer_step_bytes_per_param(const OptimizerStates& s) {
  if (s.optimizer != Optimizer::Adam) return s.mixed ? 22 : 20;
  const double kernel = s.param_remainders ? 28 : s.mixed ? 30 : 28;
  const double master = s.mixed && !s.param_remainders ? conversion_bytes(s.master) : 0;
  return kernel + master + conversion_bytes(s.exp_avg) + conversion_bytes(s.exp_avg_sq);
}

// FusedAdam.step appends every unscaled fp32 copy of a parameter group to unscaled_lists before
// it runs the group's kernel and frees them only after writing them back ("del unscaled_lists"),
// so a group's copies are alive together: 4 bytes per non-fp32 state per parameter. Megatron's
// groups split off only the parameters without weight decay (norms, biases) and experts, so the
// largest group is nearly the whole shard, which is what is counted. Remainders are used in
// place (int16), never copied.
double optimizer_step_transient_bytes_per_param(const OptimizerStates& s) {
  if (s.optimizer != Optimizer::Adam) return 0;
  auto copy = [](StateDtype d) { return d == StateDtype::Fp32 ? 0.0 : 4.0; };
  const double master = s.mixed && !s.param_remainders ? copy(s.master) : 0;
  return master + copy(s.exp_avg) + copy(s.exp_avg_sq);
}

// TorchTitan's step (framework fsdp; its build_optimizers passes foreach = not
// optimizer.fused, False by default): torch.optim.AdamW's _multi_tensor_adamw, one pass over
// the fp32 shards per foreach op: _foreach_mul_(params) 4 + 4 (weight decay),
// _foreach_lerp_(exp_avgs, grads) 4 + 4 + 4, _foreach_mul_(exp_avg_sqs) 4 + 4,
// _foreach_addcmul_(exp_avg_sqs, grads, grads) 4 + 4 + 4, _foreach_sqrt 4 + 4, _foreach_div_
// 4 + 4, _foreach_add_(eps) 4 + 4, _foreach_addcdiv_(params, exp_avgs, denom) 4 + 4 + 4 + 4 =
// 80 bytes. SGD with momentum (_multi_tensor_sgd): _foreach_mul_(bufs) 8, _foreach_add_(bufs,
// grads) 12, _foreach_add_(params, bufs) 12 = 32. Before it, train.py's clip_grad_norm_
// (foreach): _foreach_norm(grads) 4 and _foreach_mul_(grads, clip_coef_clamped) 4 + 4 = 12.
// FSDP2's sharded parameters, gradients and states are fp32 whatever the training precision (its
// MixedPrecisionPolicy casts at the all-gather), so no 16-bit copy is written.
double torch_optimizer_bytes_per_param(Optimizer opt) {
  constexpr double kClipGradNorm = 12;
  return (opt == Optimizer::Adam ? 80 : 32) + kClipGradNorm;
}

}  // namespace proteus
