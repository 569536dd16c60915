// Compute cost model (core/src/cost/cost_model.cpp). Expected values derived by hand from the
// formulas in the comments, on an A100-like GPU written out here (not a preset).
#include <doctest/doctest.h>
#include <cmath>
#include "gemm_work.h"
#include "proteus/cost_model.h"
#include "relative_approx.h"

using namespace proteus;
using namespace proteus::test;

namespace {

using proteus::test::approx;

// A100 SXM4 80GB-like: 108 SMs, 312 TFLOPS bf16, 19.5 fp32, 2039 GB/s HBM; calibration:
// gemm_max_efficiency 0.8, 128 x 128 tiles, attention 0.5, memory-bound 0.8, 4 us per launch.
CostModel a100() {
  CostModel m;
  m.gpu.name = "A100-test";
  m.gpu.sm_count = 108;
  m.gpu.hbm_GBps = 2039;
  m.gpu.peak_fp32_TFLOPS = 19.5;
  m.gpu.peak_tf32_TFLOPS = 156;
  m.gpu.peak_fp16_TFLOPS = 312;
  m.gpu.peak_bf16_TFLOPS = 312;
  m.gpu.gemm_max_efficiency = 0.8;
  m.gpu.gemm_tile_m = 128;
  m.gpu.gemm_tile_n = 128;
  m.gpu.attention_efficiency = 0.5;
  m.gpu.memory_bound_efficiency = 0.8;
  m.gpu.kernel_launch_us = 4;
  m.precision = Precision::Bf16;
  return m;
}

}  // namespace

TEST_CASE("GEMM efficiency: a large square GEMM runs near the ceiling") {
  const CostModel c = a100();
  // 8192^3: tiles = 64 * 64 = 4096, waves = ceil(4096 / 108) = 38, quantization =
  // 4096 / 4104 = 0.99805; half-point h = 128*128/256 = 64; K and min(M,N) factors
  // 8192 / 8256 = 0.992248 each: 0.8 * 0.99805 * 0.992248^2 = 0.78610.
  const double eff = c.gemm_efficiency(8192, 8192, 8192);
  CHECK(eff == approx(0.78610).epsilon(1e-4));
  CHECK(eff > 0.95 * c.gpu.gemm_max_efficiency);
  CHECK(eff <= c.gpu.gemm_max_efficiency);
}

TEST_CASE("GEMM efficiency: one tile more than the SMs costs half the waves") {
  const CostModel c = a100();
  // N = 128 (one tile column), K = 4096. M = 108 tiles: one full wave, quantization 1.
  // M = 109 tiles: 2 waves, quantization 109 / 216 = 0.5046; the ceiling is the same (same K,
  // same min(M, N) = 128), so the ratio is 0.5046.
  const double full = c.gemm_efficiency(128 * 108, 128, 4096);
  const double one_more = c.gemm_efficiency(128 * 109, 128, 4096);
  CHECK(one_more / full == approx(109.0 / 216.0));
  // And full itself: 0.8 * 1 * 4096/4160 * 128/192 = 0.52513.
  CHECK(full == approx(0.8 * 4096.0 / 4160 * 128.0 / 192).epsilon(1e-9));
}

TEST_CASE("GEMM efficiency: thin GEMMs are much less efficient; efficiency rises with K") {
  const CostModel c = a100();
  // M = 16, N = K = 8192: 64 tiles in one wave (64/108 = 0.59259), K factor 0.992248,
  // thin factor 16 / (16 + 64) = 0.2: 0.8 * 0.59259 * 0.992248 * 0.2 = 0.094077.
  const double thin = c.gemm_efficiency(16, 8192, 8192);
  CHECK(thin == approx(0.094077).epsilon(1e-4));
  CHECK(thin < 0.15 * c.gemm_efficiency(8192, 8192, 8192));  // 0.094 vs 0.15 * 0.786 = 0.118
  double previous = 0;
  for (int64_t k = 16; k <= 65536; k *= 2) {
    const double eff = c.gemm_efficiency(4096, 4096, k);
    CHECK(eff > previous);  // K / (K + 64) increases with K; nothing else depends on K
    previous = eff;
  }
}

TEST_CASE("compute time: memory-bound op = bytes / (hbm * efficiency) + launch") {
  const CostModel c = a100();
  ComputeWork w;
  w.op_kind = OpKind::Elementwise;
  w.bytes = 1e9;
  w.flops = 1e9;  // ignored: elementwise kernels are memory-bound
  // 1e9 / (2039e9 * 0.8) = 613.046 us, + 4 us launch.
  CHECK(c.compute_time_s(w) == approx(1e9 / (2039e9 * 0.8) + 4e-6));
  w.op_kind = OpKind::Norm;
  w.kernels = 3;
  CHECK(c.compute_time_s(w) == approx(1e9 / (2039e9 * 0.8) + 12e-6));
}

TEST_CASE("compute time: GEMMs are compute-bound when large, memory-bound when thin") {
  const CostModel c = a100();
  // 8192^3 bf16: 2 * 8192^3 = 1.0995e12 FLOP at 312e12 * 0.78610 -> 4.4830 ms; its traffic
  // 3 * 8192^2 * 2 B = 402.7 MB takes 0.2469 ms: compute-bound. + 4 us.
  const ComputeWork big = gemm(8192, 8192, 8192);
  CHECK(c.compute_time_s(big) == approx(2.0 * 8192 * 8192 * 8192 / (312e12 * 0.78610) + 4e-6).epsilon(1e-4));
  // M = 16: 2 * 16 * 8192^2 = 2.147e9 FLOP at 312e12 * 0.094077 -> 73.16 us; traffic
  // 2 * (16*8192 + 8192^2 + 16*8192) = 134.74 MB at 2039e9 * 0.8 -> 82.60 us: memory-bound,
  // never faster than its HBM traffic: 82.60 + 4 us.
  const ComputeWork thin = gemm(16, 8192, 8192);
  CHECK(2.0 * 16 * 8192 * 8192 / (312e12 * 0.094077) < thin.bytes / (2039e9 * 0.8));
  CHECK(c.compute_time_s(thin) == approx(thin.bytes / (2039e9 * 0.8) + 4e-6));
  // M = 64: 8.59e9 FLOP at 312e12 * 0.8*0.59259*0.992248*(64/128) = 0.235194 -> 117.1 us;
  // traffic 2 * (2 * 64*8192 + 8192^2) = 136.31 MB -> 83.57 us: compute-bound again.
  const ComputeWork m64 = gemm(64, 8192, 8192);
  CHECK(c.compute_time_s(m64) == approx(2.0 * 64 * 8192 * 8192 / (312e12 * 0.235194) + 4e-6).epsilon(1e-4));
}

TEST_CASE("compute time: precision picks the peak; attention and conv2d") {
  CostModel c = a100();
  c.precision = Precision::Fp32;
  // fp32 on 19.5 TFLOPS: 1.0995e12 / (19.5e12 * 0.78610) = 71.73 ms.
  CHECK(c.compute_time_s(gemm(8192, 8192, 8192)) ==
        approx(2.0 * 8192 * 8192 * 8192 / (19.5e12 * 0.78610) + 4e-6).epsilon(1e-4));
  c.precision = Precision::Bf16;
  // Attention: 1e12 FLOP at 312e12 * 0.5 = 6.410 ms (traffic 1e9 B = 0.613 ms is smaller).
  ComputeWork att;
  att.op_kind = OpKind::Attention;
  att.flops = 1e12;
  att.bytes = 1e9;
  CHECK(c.compute_time_s(att) == approx(1e12 / (312e12 * 0.5) + 4e-6));
  // Conv2d as implicit GEMM: ResNet 3x3 conv, batch 32, 56x56, 64 -> 64 channels:
  // M = 32*56*56 = 100352, N = 64, K = 64*9 = 576. tiles = 784 * 1 = 784, waves = 8,
  // quantization 784/864 = 0.907407; ceiling 0.8 * 576/640 * 64/128 = 0.36: eff 0.326667.
  ComputeWork conv;
  conv.op_kind = OpKind::Conv2d;
  conv.gemm_m = 32 * 56 * 56;
  conv.gemm_n = 64;
  conv.gemm_k = 576;
  conv.flops = 2.0 * conv.gemm_m * conv.gemm_n * conv.gemm_k;
  conv.bytes = 1e6;
  CHECK(c.compute_time_s(conv) == approx(conv.flops / (312e12 * 0.326667) + 4e-6).epsilon(1e-5));
}

TEST_CASE("compute time: a measured table overrides the model") {
  CostModel c = a100();
  const ComputeWork w = gemm(1024, 4096, 1024);
  CHECK(op_signature(w, Precision::Bf16) == "matmul:M=1024,N=4096,K=1024,B=1:bf16");
  ComputeWork n;
  n.op_kind = OpKind::Norm;
  n.flops = 100;
  n.bytes = 2048;
  CHECK(op_signature(n, Precision::Fp32) == "norm:flops=100,bytes=2048:fp32");
  c.measured_us["matmul:M=1024,N=4096,K=1024,B=1:bf16"] = 42;
  CHECK(c.compute_time_s(w) == approx(42e-6));
  // Another precision is another signature: the model is used.
  c.precision = Precision::Fp16;
  CHECK(c.compute_time_s(w) != approx(42e-6));
}
