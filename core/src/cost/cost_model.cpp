// Compute cost (cost_model.h; DESIGN.md §3 "CostModel", "GEMM efficiency"; docs/fidelity.md).
//
// GEMM efficiency (M x N x K, batch B) on a GPU with `sm_count` SMs and tiles tile_m x tile_n:
//   tiles        = ceil(M / tile_m) * ceil(N / tile_n) * B
//   waves        = ceil(tiles / SMs)
//   quantization = tiles / (waves * SMs)                    (the last wave leaves SMs idle)
//   ceiling      = gemm_ceiling * K / (K + h) * min(M, N) / (min(M, N) + h)
// gemm_ceiling is the measured maximum achievable matmul TFLOP/s over the peak in the run's
// precision (gpu.max_achievable_TFLOPS, from mamf-finder measurements) where the preset has
// one, never above gemm_max_efficiency: that stays the best any GEMM reaches in any precision,
// which the strategy search's lower bound relies on.
//   efficiency   = quantization * ceiling
// with one half-point h = tile_m * tile_n / (tile_m + tile_n) (64 for 128 x 128 tiles), derived
// from the tile shape because GpuSpec has no calibrated half-points:
//   - K: a tile loads (tile_m + tile_n) operand elements per unit of K and stores
//     tile_m * tile_n outputs once; at K = h the epilogue's traffic equals the main loop's, so
//     half the tile's time is overhead. K / (K + h_K) is the main loop's share, with
//     h_K = h * output bytes / operand bytes: an FP8 GEMM loads 1-byte operands and stores a
//     16-bit output (Transformer Engine, torchao), so its epilogue weighs twice as much
//     (h_K = 2h); 16- and 32-bit GEMMs store what they load (h_K = h). Checked against
//     cuBLASLt's FP8 sweep on H100 (docs/fidelity/gemm.md, "FP8 GEMMs by shape"). A GEMM that
//     accumulates into a buffer reads and writes it instead (Megatron's weight gradient into an
//     fp32 main_grad: h_K = 4h for bf16 operands; "Weight gradients accumulated into main_grad").
//   - thin shapes: an m-row tile reuses each loaded element of the other operand m times per
//     byte, a full tile h times (m * tile_n / (m + tile_n) ~ m for m << tile_n); m / (m + h)
//     is that reuse relative to a full tile's, saturating at 1 for wide GEMMs.
// Tile padding (a 16-row GEMM in a 128-row tile) is not counted separately: the thin-shape
// factor stands for it, as cuBLAS picks narrower tiles for thin shapes.
//
// Time of a compute task (+ kernels * kernel_launch_us in every case):
//   Matmul, Conv2d (implicit GEMM: M = batch*h*w, N = cout, K = cin*kh*kw, filled in by the
//   compiler), Router and Custom ops with a GEMM shape: max(flops / (peak * efficiency),
//   bytes / (hbm * memory_bound_efficiency)); without a shape, efficiency = gemm_max_efficiency.
//   Attention: max(flops / (peak * attention_efficiency * factor), bytes / (hbm * memory_bound_efficiency)),
//   factor = the run's kernel's measured rate over the reference kernel's at the op's key length,
//   head dimension, mask and direction (attention_table.h, docs/fidelity/attention.md "Attention by kernel").
//   Embedding, Norm, Elementwise, Softmax, Pool, Dispatch, Loss, Interaction: memory-bound,
//   bytes / (hbm * memory_bound_efficiency).
// A GEMM shape that the GPU's measured throughput table covers (gpu.gemm_table, gemm_table.h)
// takes the table's TFLOP/s instead of peak * efficiency, still bounded by memory traffic; an
// FP16 GEMM reads the BF16 table where there is no FP16 one and the two peaks are equal.
// A measured table entry for op_signature(work, precision) replaces all of this (launches
// included: a measured time is the op's whole time).
// A GEMM's throughput (table or peak * efficiency, both burst measurements at boost clock) is
// capped by the GPU's sustained matmul rate in its precision (gpu.sustained_TFLOPS, MSMF): the
// rate a GEMM that would exceed the power limit at boost settles at in a training run.
// Every compute-bound op then runs at gpu.compute_throughput_fraction (a part under a lower
// power limit than the preset's).
// Identical GEMMs in flight at once (work.concurrent_gemms: TE's split GEMMs on its round-robin
// compute streams) are rated as one batched GEMM of all their tiles.
// A GEMM beside a userbuffers kernel (work.sm_reserved SMs taken) computes at
// (sm_count - sm_reserved) / sm_count of its throughput, its waves counted over those SMs (TE's
// SM count target for cuBLAS); a measured time is stretched alike. The table is
// CostModel::measured_us, then the GPU's own (cluster.gpu.measured_us).
#include "proteus/cost_model.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include "proteus/error.h"
#include "proteus/op_graph.h"
#include "proteus/training_spec.h"
#include "proteus/units.h"

namespace proteus {
namespace {

bool has_gemm_shape(const ComputeWork& w) {
  return w.gemm_m > 0 && w.gemm_n > 0 && w.gemm_k > 0 && w.gemm_batch > 0;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Output bytes per operand byte of a GEMM (the K half-point's scale, above): 16- and 32-bit
// GEMMs store elements as wide as they load; FP8 GEMMs load 1-byte operands and store 16-bit
// results.
double output_per_operand_bytes(Precision precision) { return precision == Precision::Fp8 ? 2.0 : 1.0; }

double operand_bytes(Precision precision) {
  switch (precision) {
    case Precision::Fp8:
      return 1;
    case Precision::Fp16:
    case Precision::Bf16:
      return 2;
    case Precision::Fp32:
    case Precision::Tf32:
      break;
  }
  return 4;
}

// The epilogue's bytes per operand byte: its output written once, or, for a GEMM that accumulates
// into a buffer (ComputeWork::accumulate_bytes_per_output: Megatron's weight gradient into
// main_grad), that buffer read and written.
double epilogue_per_operand_bytes(Precision precision, const ComputeWork& work) {
  if (work.accumulate_bytes_per_output > 0)
    return work.accumulate_bytes_per_output / operand_bytes(precision);
  return output_per_operand_bytes(precision);
}

// The tile's half-point h = tile_m * tile_n / (tile_m + tile_n) (above).
double tile_half_point(const GpuSpec& gpu) {
  const double tile_m = std::max(1, gpu.gemm_tile_m), tile_n = std::max(1, gpu.gemm_tile_n);
  return tile_m * tile_n / (tile_m + tile_n);
}

// An accumulating GEMM's time over the same GEMM writing its output once: the ratio of the
// roofline's K factors, K / (K + h_K), for the two epilogues. It scales a measured table's rate
// and a measured time, both of GEMMs that write their output (XLA's tables, measure_ops.py).
double accumulate_time_factor(const GpuSpec& gpu, Precision precision, const ComputeWork& work) {
  if (work.accumulate_bytes_per_output <= 0 || work.gemm_k <= 0) return 1.0;
  const double kd = static_cast<double>(work.gemm_k), half = tile_half_point(gpu);
  return (kd + half * epilogue_per_operand_bytes(precision, work)) /
         (kd + half * output_per_operand_bytes(precision));
}

// Efficiency of the SMs a GEMM runs on: `sms` of them (all of the GPU's but those a userbuffers
// kernel holds: TE passes the rest to cuBLAS as its SM count target, _math_sms, so the waves are
// planned over them). The share of the GPU those SMs are is sm_share's, applied by the caller.
double gemm_efficiency_batched(const GpuSpec& gpu, Precision precision, int64_t m, int64_t n, int64_t k,
                               int64_t batch, int sm_count, double epilogue_per_operand) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const int64_t tile_m = std::max(1, gpu.gemm_tile_m), tile_n = std::max(1, gpu.gemm_tile_n);
  const double sms = std::max(1, sm_count);
  const double tiles = static_cast<double>(ceil_div(m, tile_m)) * static_cast<double>(ceil_div(n, tile_n)) *
                       static_cast<double>(batch);
  const double waves = std::ceil(tiles / sms);
  const double quantization = tiles / (waves * sms);
  const double half = tile_half_point(gpu);
  const double half_k = half * epilogue_per_operand;
  const double kd = static_cast<double>(k), mn = static_cast<double>(std::min(m, n));
  const double ceiling = gpu.gemm_ceiling(precision) * kd / (kd + half_k) * mn / (mn + half);
  return quantization * ceiling;
}

// The GEMMs whose tiles share the GPU's waves with this one: its batch, times the identical
// chunks in flight beside it (ComputeWork::concurrent_gemms). Their rate is the rate of one
// batched GEMM of that many members; each takes its own FLOPs' share of the time.
int64_t wave_batch(const ComputeWork& work) { return work.gemm_batch * std::max(1, work.concurrent_gemms); }

// The SMs a GEMM runs on: the GPU's, less those a userbuffers kernel beside it holds (at least 1).
int free_sms(const GpuSpec& gpu, const ComputeWork& work) {
  return std::max(1, gpu.sm_count - std::max(0, work.sm_reserved));
}

// Share of the GPU's math throughput a GEMM gets when a communication kernel holds
// work.sm_reserved SMs beside it (TE userbuffers launch the GEMM with an SM margin): the GEMM's
// throughput scales with the SMs it runs on.
double sm_share(const GpuSpec& gpu, const ComputeWork& work) {
  if (work.sm_reserved <= 0 || gpu.sm_count <= 1) return 1.0;
  return static_cast<double>(free_sms(gpu, work)) / static_cast<double>(gpu.sm_count);
}

// The precision whose measured table times a GEMM: its own, or for FP16 the BF16 table where
// the preset measured only BF16 and the GPU's two peaks are equal. Both are 16-bit tensor-core
// inputs issued by the same MMA instructions at the same rate (H100 datasheet: 989.4 dense
// TFLOP/s for each; A100 312; B200 2250), so the measured tiles and waves are the same; XLA's
// tables measure BF16 and not FP16 for that reason.
Precision table_precision(const GpuSpec& gpu, Precision precision) {
  if (precision != Precision::Fp16 || gpu.gemm_table.TFLOPS.count(Precision::Fp16) > 0) return precision;
  const bool same_peak = gpu.peak_TFLOPS(Precision::Fp16) == gpu.peak_TFLOPS(Precision::Bf16);
  return same_peak ? Precision::Bf16 : precision;
}

bool is_memory_bound(OpKind kind) {
  switch (kind) {
    case OpKind::Embedding:
    case OpKind::Norm:
    case OpKind::Elementwise:
    case OpKind::Softmax:
    case OpKind::Pool:
    case OpKind::Dispatch:
    case OpKind::Loss:
    case OpKind::Interaction:
      return true;
    default:
      return false;
  }
}

}  // namespace

// A GEMM's sustained TFLOP/s: its burst rate, capped where the GPU has a sustained measurement
// in the precision (an FP16 GEMM reads the BF16 one, as it reads the BF16 table).
double sustained_gemm_TFLOPS(const GpuSpec& gpu, Precision precision, double burst_TFLOPS) {
  const auto& caps = gpu.sustained_TFLOPS;
  auto cap = caps.find(precision);
  if (cap == caps.end() && table_precision(gpu, precision) != precision)
    cap = caps.find(table_precision(gpu, precision));
  return cap == caps.end() ? burst_TFLOPS : std::min(burst_TFLOPS, cap->second);
}

double GpuSpec::gemm_ceiling(Precision p) const {
  const auto measured = max_achievable_TFLOPS.find(p);
  const double peak = peak_TFLOPS(p);
  if (measured == max_achievable_TFLOPS.end() || peak <= 0) return gemm_max_efficiency;
  return std::min(gemm_max_efficiency, measured->second / peak);
}

double CostModel::gemm_efficiency(int64_t m, int64_t n, int64_t k) const {
  return gemm_efficiency_batched(gpu, precision, m, n, k, 1, gpu.sm_count,
                                 output_per_operand_bytes(precision));
}

Precision CostModel::precision_of(const ComputeWork& work) const {
  if (precision != Precision::Fp8) return precision;
  if (work.high_precision || (work.op_kind == OpKind::Attention && !fp8_attention)) return Precision::Bf16;
  return precision;
}

// MXFP8's block-scaled GEMMs against the per-tensor-scaled FP8 GEMMs the tables, the ceilings
// and measure_ops.py's FP8 times measure; attention, memory-bound kernels and the GEMMs kept in
// 16 bits are not block-scaled.
double CostModel::gemm_time_factor(const ComputeWork& work, Precision op_precision) const {
  const bool block_scaled = op_precision == Precision::Fp8 && fp8_recipe == Fp8Recipe::Mxfp8 &&
                            work.op_kind != OpKind::Attention && !is_memory_bound(work.op_kind);
  return block_scaled ? gpu.mxfp8_gemm_slowdown : 1.0;
}

double CostModel::attention_efficiency_of(const ComputeWork& work) const {
  if (!fused_attention || !has_gemm_shape(work)) return gpu.attention_efficiency;
  // The kernel's inner loop runs over the keys (gemm_n): what the paper varies as the sequence
  // length at a fixed token count. gemm_k is the head dimension.
  const AttentionShape shape{work.gemm_n, work.gemm_k, causal_attention, work.backward};
  const double factor = attention_kernel_factor(gpu.attention_table, attention_kernel, shape);
  return gpu.attention_efficiency * factor;  // 1.0 where the table cannot say: the roofline level
}

double CostModel::compute_time_s(const ComputeWork& work) const {
  const Precision op_precision = precision_of(work);
  if (!measured_us.empty() || !gpu.measured_us.empty()) {
    const std::string signature = op_signature(work, op_precision);
    for (const auto* table : {&measured_us, &gpu.measured_us}) {
      const auto it = table->find(signature);
      if (it != table->end())
        return it->second * kSecondsPerUs * work.gemm_kernel_share / sm_share(gpu, work) *
               gemm_time_factor(work, op_precision) * accumulate_time_factor(gpu, op_precision, work);
    }
  }
  const double hbm_Bps = gpu.hbm_GBps * kBytesPerGB * gpu.memory_bound_efficiency;
  if ((work.bytes > 0 || work.side_bytes > 0) && hbm_Bps <= 0)
    throw invalid_config("cluster.gpu.hbm_GBps", "the GPU needs a positive HBM bandwidth");
  const double memory_s = work.bytes > 0 ? work.bytes / hbm_Bps : 0;
  // Side kernels (FP8 casts) run before the op: their own launches and memory time, added.
  const double side_s =
      work.side_bytes > 0 ? work.side_bytes / hbm_Bps + gpu.kernel_launch_us * kSecondsPerUs : 0;
  const double launch_s = std::max(0, work.kernels) * gpu.kernel_launch_us * kSecondsPerUs + side_s;
  if (is_memory_bound(work.op_kind) || work.flops <= 0) return memory_s + launch_s;

  if (work.op_kind != OpKind::Attention && has_gemm_shape(work)) {
    const auto measured_TFLOPS = gemm_table_TFLOPS(gpu.gemm_table, table_precision(gpu, op_precision),
                                                   work.gemm_m, work.gemm_n, work.gemm_k, wave_batch(work));
    if (measured_TFLOPS) {
      const double TFLOPS = sustained_gemm_TFLOPS(gpu, op_precision, *measured_TFLOPS);
      const double flops_s =
          work.flops / (TFLOPS * kFlopsPerTFLOP * gpu.compute_throughput_fraction * sm_share(gpu, work));
      return std::max(flops_s * gemm_time_factor(work, op_precision) *
                          accumulate_time_factor(gpu, op_precision, work),
                      memory_s) +
             launch_s;
    }
  }
  const double peak_flops = gpu.peak_TFLOPS(op_precision) * kFlopsPerTFLOP;
  double efficiency = gpu.gemm_ceiling(op_precision);
  if (work.op_kind == OpKind::Attention) {
    efficiency = attention_efficiency_of(work);
  } else if (has_gemm_shape(work)) {
    efficiency =
        gemm_efficiency_batched(gpu, op_precision, work.gemm_m, work.gemm_n, work.gemm_k, wave_batch(work),
                                free_sms(gpu, work), epilogue_per_operand_bytes(op_precision, work));
  }
  if (peak_flops <= 0 || efficiency <= 0)
    throw invalid_config("cluster.gpu", "the GPU needs a positive peak and efficiency for " +
                                            std::string(to_string(work.op_kind)) + " in " +
                                            to_string(op_precision));
  double rate_flops = peak_flops * efficiency;
  if (work.op_kind != OpKind::Attention)
    rate_flops = sustained_gemm_TFLOPS(gpu, op_precision, rate_flops / kFlopsPerTFLOP) * kFlopsPerTFLOP;
  const double flops_s = work.flops / (rate_flops * gpu.compute_throughput_fraction * sm_share(gpu, work));
  return std::max(flops_s * gemm_time_factor(work, op_precision), memory_s) + launch_s;
}

std::string op_signature(const ComputeWork& work, Precision precision) {
  char buffer[192];
  if (has_gemm_shape(work)) {
    // An attention backward does twice its forward's GEMMs (dQ, dK, dV, dP); same shape,
    // another kernel: "attention_backward". A linear layer's input and weight gradients are
    // GEMMs of their own shapes (compile/linear_gemm_shapes.h), each its own signature.
    const bool backward =
        work.op_kind == OpKind::Attention &&
        work.flops > 6.0 * static_cast<double>(work.gemm_m) * static_cast<double>(work.gemm_n) *
                         static_cast<double>(work.gemm_k) * static_cast<double>(work.gemm_batch);
    std::snprintf(buffer, sizeof buffer, "%s:M=%lld,N=%lld,K=%lld,B=%lld:%s",
                  backward ? "attention_backward" : to_string(work.op_kind),
                  static_cast<long long>(work.gemm_m), static_cast<long long>(work.gemm_n),
                  static_cast<long long>(work.gemm_k), static_cast<long long>(work.gemm_batch),
                  to_string(precision));
  } else {
    std::snprintf(buffer, sizeof buffer, "%s:flops=%.0f,bytes=%.0f:%s", to_string(work.op_kind), work.flops,
                  work.bytes, to_string(precision));
  }
  return buffer;
}

}  // namespace proteus
