#include "linear_kernels.h"

#include <algorithm>
#include <cmath>

#include "linear_gemm_shapes.h"
#include "proteus/strategy_tree.h"

namespace proteus {
namespace {

int64_t scaled(int64_t extent, double scale) {
  return std::max<int64_t>(1, std::llround(static_cast<double>(extent) * scale));
}

// A pass's GEMM whose forward N is scaled: the forward's N, the input gradient's K (it reduces
// over the forward's outputs) and the weight gradient's M (its rows are the weight's outputs),
// as linear_gemm_shapes.h transposes them.
void scale_forward_n(ComputeWork* w, GemmPass pass, double n_scale, int launches) {
  if (w->flops <= 0 || w->gemm_m <= 0 || w->gemm_n <= 0 || w->gemm_k <= 0) return;
  int64_t& extent = pass == GemmPass::Forward     ? w->gemm_n
                    : pass == GemmPass::InputGrad ? w->gemm_k
                                                  : w->gemm_m;
  const int64_t own = extent;
  extent = scaled(own, n_scale);
  w->gemm_kernel_share = static_cast<double>(own) / static_cast<double>(extent);
  w->kernels = launches;
}

}  // namespace

void apply_linear_kernels(const Op& op, const ParallelConfig& cfg, OpPlan* p) {
  if (op.kind != OpKind::Matmul || op.weights.empty()) return;
  double n_scale = 1;
  int launches = 1;
  if (cfg.fused_qkv_gemm && op.fused_qkv_n_scale > 1) {
    n_scale = op.fused_qkv_n_scale;
    launches = op.fused_qkv_second ? 0 : 1;
  } else if (cfg.torch_linear_gemms && op.torch_linears > 1) {
    n_scale = 1.0 / op.torch_linears;
    launches = op.torch_linears;
  } else {
    return;
  }
  scale_forward_n(&p->fwd, GemmPass::Forward, n_scale, launches);
  scale_forward_n(&p->bwd_input, GemmPass::InputGrad, n_scale, launches);
  scale_forward_n(&p->bwd_weight, GemmPass::WeightGrad, n_scale, launches);
}

void apply_wgrad_accumulation(const Op& op, const ParallelConfig& cfg, Precision precision, OpPlan* p) {
  if (!(cfg.wgrad_into_main_grad || cfg.wgrad_add_to_main_grad)) return;
  if (op.kind != OpKind::Matmul || op.weights.empty() || p->bwd_weight.flops <= 0) return;
  const bool fp32 = precision == Precision::Fp32 || precision == Precision::Tf32;
  const double main_grad_bytes = cfg.grad_reduce_in_fp32 || fp32 ? 4.0 : 2.0;
  if (cfg.wgrad_into_main_grad) {
    p->bwd_weight.accumulate_bytes_per_output = 2 * main_grad_bytes;  // read, then write
    return;
  }
  // Unfused: the GEMM writes the gradient in the training dtype (fp32, or 16 bits, FP8 included);
  // Megatron's backward hook then runs main_grad.add_(grad): that gradient read, main_grad read
  // and written, per weight element of the rank.
  double elements = 0;
  for (const WeightPlan& w : p->weights) elements += w.local_params;
  p->bwd_weight.side_bytes += elements * ((fp32 ? 4.0 : 2.0) + 2 * main_grad_bytes);
}

}  // namespace proteus
