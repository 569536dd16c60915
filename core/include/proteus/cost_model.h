// Compute cost (DESIGN.md §3, "CostModel"): roofline with calibrated efficiencies.
//   GEMM: time = flops / (peak * eff), eff = wave quantization (tiles / (waves * SMs)) times a
//         size-dependent ceiling that rises with K and falls for thin shapes, capped by the
//         GPU's gemm_max_efficiency, and by its sustained matmul rate (MSMF) where measured;
//         never faster than its HBM traffic allows.
//   attention: flops / (peak * attention_efficiency * kernel factor), bounded by memory traffic;
//         the factor is the run's kernel against the preset's reference kernel by shape
//         (attention_table.h; 1 without a table).
//   memory-bound ops: bytes / (hbm * memory_bound_efficiency).
//   MXFP8 GEMMs: the FP8 time times gpu.mxfp8_gemm_slowdown (block-scaled kernels).
//   plus kernel_launch_us per kernel. An optional measured table overrides matching ops.
#pragma once
#include <map>
#include <string>
#include "proteus/cluster_spec.h"
#include "proteus/exec_graph.h"

namespace proteus {

struct CostModel {
  GpuSpec gpu;
  Precision precision = Precision::Bf16;
  // Transformer Engine runs attention in bf16 under FP8 training unless fp8_dpa is set
  // (docs/frameworks/fp8.md, "FP8"): attention then uses the bf16 peak, as do GEMMs marked
  // ComputeWork::high_precision.
  bool fp8_attention = false;
  // The FP8 recipe: MXFP8's block-scaled GEMMs run gpu.mxfp8_gemm_slowdown times longer than
  // the per-tensor-scaled GEMMs the FP8 tables measure.
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;
  // The attention kernel the run's framework uses (attention_kernel_of), the model's mask, and
  // whether attention is a fused (flash-style) kernel at all: the measured kernel table applies
  // to fused attention only.
  AttentionKernel attention_kernel = AttentionKernel::Cudnn;
  bool causal_attention = true;
  bool fused_attention = true;
  std::map<std::string, double> measured_us;  // op signature -> microseconds (optional)
  double compute_time_s(const ComputeWork& work) const;
  double gemm_efficiency(int64_t m, int64_t n, int64_t k) const;
  Precision precision_of(const ComputeWork& work) const;  // the precision the op's kernel runs in
  // 1, or gpu.mxfp8_gemm_slowdown for a GEMM run block-scaled (the mxfp8 recipe's FP8 GEMMs).
  double gemm_time_factor(const ComputeWork& work, Precision op_precision) const;
  // attention_efficiency scaled by the run's kernel against the preset's reference kernel.
  double attention_efficiency_of(const ComputeWork& work) const;
};

// A GEMM's sustained TFLOP/s in `precision`: burst_TFLOPS (a measured table's or the
// roofline's rate, both at boost clock) capped by gpu.sustained_TFLOPS where the GPU has it.
double sustained_gemm_TFLOPS(const GpuSpec& gpu, Precision precision, double burst_TFLOPS);

// Signature used by measured tables (CostModel::measured_us, then GpuSpec::measured_us):
// "matmul:M=..,N=..,K=..,B=..:bf16" (forward, input and weight gradient alike), "attention:..."
// and "attention_backward:..." (M = s, N = s_kv, K = head_dim, B = batch * heads per GPU), or
// "<kind>:flops=..,bytes=..:<precision>" for ops without a GEMM shape. docs/fidelity/gemm.md.
std::string op_signature(const ComputeWork& work, Precision precision);

}  // namespace proteus
