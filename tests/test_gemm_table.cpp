// Deterministic log2/exp2 (det_math.h) and the measured GEMM table (gemm_table.h).
#include <doctest/doctest.h>

#include <cmath>
#include "error_path.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/det_math.h"
#include "proteus/error.h"
#include "proteus/gemm_table.h"
#include "proteus/presets.h"
#include "relative_approx.h"

using namespace proteus;

TEST_CASE("det_math: log2 and exp2 agree with the exact values to a few ulp") {
  // Powers of two are exact: frexp gives m = 1/2, shifted to 1, where the series is 0.
  for (int e = -1000; e <= 1000; e += 37) {
    CHECK(det_log2(std::ldexp(1.0, e)) == static_cast<double>(e));
    CHECK(det_exp2(static_cast<double>(e)) == std::ldexp(1.0, e));
  }
  // Elsewhere within 4e-16 relative of libm (log2 3 = 1.5849625007211562, 2^0.5 = sqrt 2).
  CHECK(det_log2(3.0) == proteus::test::approx(1.5849625007211562).epsilon(4e-16));
  CHECK(det_exp2(0.5) == proteus::test::approx(std::sqrt(2.0)).epsilon(4e-16));
  for (double x = 1e-9; x < 1e12; x *= 1.7) {
    CAPTURE(x);
    CHECK(std::fabs(det_log2(x) - std::log2(x)) <= 4e-16 * std::fmax(1.0, std::fabs(std::log2(x))));
    CHECK(std::fabs(det_exp2(det_log2(x)) - x) <= 1e-14 * x);
  }
  for (double y = -60; y < 60; y += 0.37) {
    CAPTURE(y);
    CHECK(std::fabs(det_exp2(y) - std::exp2(y)) <= 4e-16 * std::exp2(y));
  }
  CHECK(std::isinf(det_log2(0.0)));
  CHECK(det_exp2(-2000) == 0);
  CHECK(std::isinf(det_exp2(2000)));
}

namespace {

// 2 x 2 x 2 grid over {256, 1024}: throughput doubles per quadrupling of K (a power law of
// exponent 1/2), constant in M and N.
GemmTable power_law_table() {
  GemmTable t;
  t.m = {256, 1024};
  t.n = {256, 1024};
  t.k = {256, 1024};
  t.TFLOPS[Precision::Bf16] = {100, 200, 100, 200, 100, 200, 100, 200};
  return t;
}

}  // namespace

TEST_CASE("gemm table: log-space interpolation, saturation above the grid, nothing below") {
  const GemmTable t = power_law_table();
  // Grid points read back the measurement.
  CHECK(*gemm_table_TFLOPS(t, Precision::Bf16, 256, 256, 256, 1) ==
        proteus::test::approx(100).epsilon(1e-14));
  CHECK(*gemm_table_TFLOPS(t, Precision::Bf16, 1024, 1024, 1024, 1) ==
        proteus::test::approx(200).epsilon(1e-14));
  // K = 512, halfway in log2: the power law's 100 * 2^(1/2) = 141.42 (interpolating linearly in
  // K would give 100 + 100 * 256/768 = 133.3). M and N inside the grid change nothing.
  CHECK(*gemm_table_TFLOPS(t, Precision::Bf16, 256, 256, 512, 1) == doctest::Approx(141.4213562373095));
  CHECK(*gemm_table_TFLOPS(t, Precision::Bf16, 300, 700, 512, 1) == doctest::Approx(141.4213562373095));
  // K = 362: 100 * (362/256)^(1/2) = 118.91.
  CHECK(*gemm_table_TFLOPS(t, Precision::Bf16, 256, 1024, 362, 1) ==
        proteus::test::approx(118.9139).epsilon(1e-5));
  // Above the grid the largest measured size's value; the batch counts as rows.
  CHECK(*gemm_table_TFLOPS(t, Precision::Bf16, 8192, 65536, 4096, 1) ==
        proteus::test::approx(200).epsilon(1e-14));
  CHECK(gemm_table_TFLOPS(t, Precision::Bf16, 128, 256, 256, 2).has_value());
  // Below the grid, or another precision: the roofline applies.
  CHECK_FALSE(gemm_table_TFLOPS(t, Precision::Bf16, 128, 256, 256, 1).has_value());
  CHECK_FALSE(gemm_table_TFLOPS(t, Precision::Bf16, 256, 256, 64, 1).has_value());
  CHECK_FALSE(gemm_table_TFLOPS(t, Precision::Fp8, 1024, 1024, 1024, 1).has_value());
}

TEST_CASE("gemm table: the H100 preset's XLA measurements drive GEMM time") {
  const Config config = parse_config(R"({"model": {"preset": "llama3-8b"}, "cluster": {"preset": "dgx-h100"},
      "training": {"global_batch": 8, "precision": "bf16"}, "strategy": {"tp": 1, "pp": 1, "dp": 8}})");
  CostModel cost;
  cost.gpu = config.cluster.gpu;
  cost.precision = Precision::Bf16;
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.gemm_m = w.gemm_n = w.gemm_k = 4096;
  w.gemm_batch = 1;
  w.kernels = 1;
  w.flops = 2.0 * 4096 * 4096 * 4096;
  w.bytes = 3.0 * 4096 * 4096 * 2;
  // XLA sm_90 bf16, 4096^3: 783.3 TFLOP/s in a burst, above the 755 the GPU sustains at its
  // power limit (gpu.sustained_TFLOPS, test_sustained_gemm.cpp): 137.4e9 / 755e12 = 182.0 us,
  // plus one 4 us launch; without the cap the table's own rate.
  CHECK(cost.compute_time_s(w) ==
        proteus::test::approx(2.0 * 4096 * 4096 * 4096 / 755e12 + 4e-6).epsilon(1e-9));
  CostModel burst = cost;
  burst.gpu.sustained_TFLOPS.clear();
  CHECK(burst.compute_time_s(w) ==
        proteus::test::approx(2.0 * 4096 * 4096 * 4096 / 783.3e12 + 4e-6).epsilon(1e-9));
  // 2048 x 2048 x 2048 measured 632.0 TFLOP/s; 16 x 4096 x 4096 is below the grid: roofline.
  w.gemm_m = w.gemm_n = w.gemm_k = 2048;
  w.flops = 2.0 * 2048 * 2048 * 2048;
  w.bytes = 3.0 * 2048 * 2048 * 2;
  CHECK(cost.compute_time_s(w) == proteus::test::approx(w.flops / 632.0e12 + 4e-6).epsilon(1e-9));
  // fp8 has no table on H100: the roofline with the preset's efficiencies.
  cost.precision = Precision::Fp8;
  const double eff = cost.gemm_efficiency(2048, 2048, 2048);
  CHECK(cost.compute_time_s(w) ==
        proteus::test::approx(std::max(w.flops / (1978.9e12 * eff), w.bytes / (3350e9 * 0.85)) + 4e-6)
            .epsilon(1e-9));
}

TEST_CASE("gemm table: an FP16 GEMM reads the BF16 table where the GPU runs both at one peak") {
  // H100: fp16 and bf16 tensor cores are both 989.4 dense TFLOP/s and XLA measured bf16 only.
  // Before, an fp16 GEMM took the roofline (0.8 of peak times shape factors): 707 TFLOP/s at
  // 2048^3 against bf16's measured 632.0, 737 at 4096^3 against 783.3, for no difference in
  // the hardware.
  const Config config = parse_config(R"({"model": {"preset": "llama3-8b"}, "cluster": {"preset": "dgx-h100"},
      "training": {"global_batch": 8, "precision": "fp16"}, "strategy": {"tp": 1, "pp": 1, "dp": 8}})");
  CostModel cost;
  cost.gpu = config.cluster.gpu;
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.gemm_m = w.gemm_n = w.gemm_k = 2048;
  w.flops = 2.0 * 2048 * 2048 * 2048;
  w.bytes = 3.0 * 2048 * 2048 * 2;
  cost.precision = Precision::Bf16;
  const double bf16_s = cost.compute_time_s(w);
  cost.precision = Precision::Fp16;
  CHECK(cost.compute_time_s(w) == bf16_s);
  CHECK(bf16_s == proteus::test::approx(w.flops / 632.0e12 + 4e-6).epsilon(1e-9));  // XLA sm_90, 2048^3
  // A GPU whose fp16 peak differs from its bf16 one keeps the roofline for fp16.
  cost.gpu.peak_fp16_TFLOPS = 2 * cost.gpu.peak_bf16_TFLOPS;
  const double eff = cost.gemm_efficiency(2048, 2048, 2048);
  CHECK(cost.compute_time_s(w) ==
        doctest::Approx(std::max(w.flops / (2 * 989.4e12 * eff), w.bytes / (3350e9 * 0.79)) + 4e-6)
            .epsilon(1e-9));
  // A measured fp16 table is the fp16 table.
  cost.gpu = config.cluster.gpu;
  cost.gpu.gemm_table.TFLOPS[Precision::Fp16] =
      std::vector<double>(cost.gpu.gemm_table.TFLOPS.at(Precision::Bf16).size(), 500.0);
  CHECK(cost.compute_time_s(w) == proteus::test::approx(w.flops / 500.0e12 + 4e-6).epsilon(1e-9));
}

TEST_CASE("gemm table: a malformed table is an error naming the field") {
  const auto config_with = [](const std::string& table) {
    return R"({"model": {"preset": "gpt2-small"}, "cluster": {"preset": "dgx-a100-80g", "gpu": {"gemm_table": )" +
           table + R"(}}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})";
  };
  const auto message = [&](const std::string& table) {
    return test::error_path([&] { parse_config(config_with(table)); });
  };
  CHECK(message(R"({"m": [256, 256], "n": [1, 2], "k": [1, 2], "TFLOPS": {"bf16": []}})") ==
        "cluster.gpu.gemm_table.m[1]");
  CHECK(message(R"({"m": [1, 2], "n": [1, 2], "k": [1, 2], "TFLOPS": {"bf16": [[[1, 2], [1, 2]]]}})") ==
        "cluster.gpu.gemm_table.TFLOPS.bf16");
  CHECK(message(R"({"m": [1, 2], "n": [1, 2], "k": [1, 2], "TFLOPS": {"int4": []}})") ==
        "cluster.gpu.gemm_table.TFLOPS.int4");
  CHECK(
      message(
          R"({"m": [1, 2], "n": [1, 2], "k": [1, 2], "TFLOPS": {"bf16": [[[1, 2], [1, 2]], [[1, 2], [1, -2]]]}})") ==
      "cluster.gpu.gemm_table.TFLOPS.bf16[1][1][1]");
}

TEST_CASE("gemm ceiling: measured maximum achievable matmul TFLOP/s per precision (MAMF)") {
  const auto gpu_of = [](const char* preset) {
    return parse_config(std::string(R"({"model": {"preset": "gpt2-small"}, "cluster": {"preset": ")") +
                        preset + R"("}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})")
        .cluster.gpu;
  };
  // H100 FP8: 1402.6 of 1978.9 TFLOP/s = 0.7088; bf16 has no entry: gemm_max_efficiency 0.8.
  const GpuSpec h100 = gpu_of("dgx-h100");
  CHECK(h100.gemm_ceiling(Precision::Fp8) == doctest::Approx(1402.6 / 1978.9));
  CHECK(h100.gemm_ceiling(Precision::Bf16) == doctest::Approx(0.8));
  // B200: bf16 1745.0 / 2250 = 0.776 is gemm_max_efficiency; FP8 3432.5 / 4500 = 0.7628.
  const GpuSpec b200 = gpu_of("dgx-b200");
  CHECK(b200.gemm_ceiling(Precision::Bf16) == doctest::Approx(0.776));
  CHECK(b200.gemm_ceiling(Precision::Fp8) == doctest::Approx(3432.5 / 4500));
  // A measurement above gemm_max_efficiency does not raise the ceiling (the search's bound).
  GpuSpec g = h100;
  g.max_achievable_TFLOPS[Precision::Bf16] = 950;
  CHECK(g.gemm_ceiling(Precision::Bf16) == doctest::Approx(0.8));
  // An FP8 GEMM on H100 below the XLA grid costs flops / (peak x ceiling x shape factors).
  CostModel cost;
  cost.gpu = h100;
  cost.precision = Precision::Fp8;
  const double half = 128.0 * 256 / (128 + 256);  // H100 tile 128 x 256
  // 8192 x 8192 x 8192: 64 x 32 = 2048 tiles over 132 SMs in 16 waves: quantization 2048/2112.
  // FP8's K half-point is 2 x half (1-byte operands, 16-bit output: test_fp8_gemm_shape.cpp).
  const double expected =
      (2048.0 / 2112) * (1402.6 / 1978.9) * (8192 / (8192 + 2 * half)) * (8192 / (8192 + half));
  CHECK(cost.gemm_efficiency(8192, 8192, 8192) == proteus::test::approx(expected).epsilon(1e-12));
}

namespace {

GpuSpec b200_gpu() {
  return parse_config(R"({"model": {"preset": "llama3-8b"}, "cluster": {"preset": "dgx-b200"},
      "training": {"global_batch": 8, "precision": "fp8"}, "strategy": {"tp": 1, "pp": 1, "dp": 8}})")
      .cluster.gpu;
}

ComputeWork square_matmul(int64_t size) {
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.gemm_m = w.gemm_n = w.gemm_k = size;
  w.gemm_batch = 1;
  w.kernels = 1;
  const double s = static_cast<double>(size);
  w.flops = 2.0 * s * s * s;
  w.bytes = 3.0 * s * s * 2;
  return w;
}

}  // namespace

TEST_CASE("gemm table: the B200 preset holds XLA's sm_100 measurements, bf16 and fp8 e4m3") {
  // Values of XLA's matmul_interpolator_data.h, "sm_100", b: 1 (tensorflow a305421c), in FLOP/s,
  // / 1e12 to one decimal as for H100 (scripts/xla_matmul_table.py).
  const GpuSpec gpu = b200_gpu();
  const auto at = [&](Precision p, int64_t m, int64_t n, int64_t k) {
    return *gemm_table_TFLOPS(gpu.gemm_table, p, m, n, k, 1);
  };
  // m 256 n 256 k 256: bf16 6765006451612, f8e4m3fn x f8e4m3fn 6919866364198.
  CHECK(at(Precision::Bf16, 256, 256, 256) == proteus::test::approx(6.8).epsilon(1e-14));
  CHECK(at(Precision::Fp8, 256, 256, 256) == proteus::test::approx(6.9).epsilon(1e-14));
  // m 1024 n 2048 k 512: 293652898673594 and 333874945273631.
  CHECK(at(Precision::Bf16, 1024, 2048, 512) == proteus::test::approx(293.7).epsilon(1e-14));
  CHECK(at(Precision::Fp8, 1024, 2048, 512) == proteus::test::approx(333.9).epsilon(1e-14));
  // m 4096 n 1024 k 1024 (m and n are not interchangeable): 715648970424060 / 850825534072900;
  // m 1024 n 4096 k 1024: 723362913010526 / 863136514469453.
  CHECK(at(Precision::Bf16, 4096, 1024, 1024) == proteus::test::approx(715.6).epsilon(1e-14));
  CHECK(at(Precision::Fp8, 4096, 1024, 1024) == proteus::test::approx(850.8).epsilon(1e-14));
  CHECK(at(Precision::Bf16, 1024, 4096, 1024) == proteus::test::approx(723.4).epsilon(1e-14));
  CHECK(at(Precision::Fp8, 1024, 4096, 1024) == proteus::test::approx(863.1).epsilon(1e-14));
  // 4096^3: 1416867213789406 and 2764981863158106: FP8 doubles the peak (4500 vs 2250 dense)
  // but the measured GEMM gains 1.95x, and both reach less than mamf-finder's best shapes
  // (1745.0 bf16, 3432.5 fp8 TFLOP/s): 4096^3 is not yet saturated on 148 SMs.
  CHECK(at(Precision::Bf16, 4096, 4096, 4096) == proteus::test::approx(1416.9).epsilon(1e-14));
  CHECK(at(Precision::Fp8, 4096, 4096, 4096) == proteus::test::approx(2765.0).epsilon(1e-14));
  CHECK(at(Precision::Fp8, 4096, 4096, 4096) / at(Precision::Bf16, 4096, 4096, 4096) ==
        proteus::test::approx(2764.981863158106 / 1416.867213789406).epsilon(1e-4));
  CHECK(at(Precision::Bf16, 4096, 4096, 4096) < 1745.0);
  CHECK(at(Precision::Fp8, 4096, 4096, 4096) < 3432.5);
  // No table for the precisions XLA did not measure this way (fp16, tf32): the roofline.
  CHECK_FALSE(gemm_table_TFLOPS(gpu.gemm_table, Precision::Fp16, 4096, 4096, 4096, 1).has_value());
}

TEST_CASE("gemm table: B200 interpolates between XLA's points as a power of size") {
  const GpuSpec gpu = b200_gpu();
  const auto at = [&](Precision p, int64_t m, int64_t n, int64_t k) {
    return *gemm_table_TFLOPS(gpu.gemm_table, p, m, n, k, 1);
  };
  // K = 3072 between the measured 2048 and 4096 at m = n = 4096: weight t = log2(1.5) of the
  // upper point, log2 throughput blended: 1277.8^(1-t) x 1416.9^t bf16, 2485.0^(1-t) x 2765.0^t fp8.
  const double t = std::log2(1.5);
  const double bf16 = std::pow(1277.8, 1 - t) * std::pow(1416.9, t);
  const double fp8 = std::pow(2485.0, 1 - t) * std::pow(2765.0, t);
  CHECK(at(Precision::Bf16, 4096, 4096, 3072) == proteus::test::approx(bf16).epsilon(1e-12));
  CHECK(at(Precision::Fp8, 4096, 4096, 3072) == proteus::test::approx(fp8).epsilon(1e-12));
  CHECK(bf16 > 1277.8);
  CHECK(bf16 < 1416.9);
  // Llama 3 8B's MLP up-projection per micro-batch of 2 x 8192 tokens on one GPU:
  // 16384 x 14336 x 4096 is the grid's top row (XLA's b: 4 m: 4096 entries) and above the grid
  // in n, which takes the 4096 edge: 3279.7.
  CHECK(at(Precision::Fp8, 16384, 14336, 4096) == proteus::test::approx(3279.7).epsilon(1e-14));
  // Below the grid in one dimension: no table value (the roofline applies).
  CHECK_FALSE(gemm_table_TFLOPS(gpu.gemm_table, Precision::Fp8, 4096, 4096, 128, 1).has_value());
}

TEST_CASE(
    "gemm table: an FP8 run's GEMMs on B200 take the fp8 table, its high-precision ones the bf16 table") {
  CostModel cost;
  cost.gpu = b200_gpu();
  cost.precision = Precision::Fp8;
  ComputeWork w = square_matmul(4096);
  // 137.4e9 FLOP / 2765.0e12 FLOP/s = 49.7 us, plus one 4 us launch (the HBM time, 100.7 MB /
  // 6.8 TB/s = 14.8 us, is shorter).
  CHECK(cost.compute_time_s(w) == proteus::test::approx(w.flops / 2765.0e12 + 4e-6).epsilon(1e-12));
  // A GEMM the recipe keeps in bf16 (ComputeWork::high_precision) reads the bf16 table.
  w.high_precision = true;
  CHECK(cost.compute_time_s(w) == proteus::test::approx(w.flops / 1416.9e12 + 4e-6).epsilon(1e-12));
  // A bf16 run: the bf16 table too; FP8 makes this GEMM 1.95x faster, not the peaks' 2x.
  w.high_precision = false;
  CostModel bf16 = cost;
  bf16.precision = Precision::Bf16;
  CHECK((bf16.compute_time_s(w) - 4e-6) / (cost.compute_time_s(w) - 4e-6) ==
        proteus::test::approx(2765.0 / 1416.9).epsilon(1e-12));
}

TEST_CASE("gemm table: rows above m = 4096 are XLA's batched entries, b x 4096 rows") {
  // XLA measured b = 2 and 4 independent 4096 x n x k dots (tensorflow a305421c "sm_100",
  // 372d578b "sm_90"); a batch launches one CTA per output tile per member (CUTLASS
  // GemmBatchedIdentityThreadblockSwizzle), the tiles and waves of one (b x 4096)-row GEMM, so the
  // presets file them as the rows m = 8192 and 16384 (docs/fidelity/gemm.md).
  const GpuSpec b200 = b200_gpu();
  const auto at = [](const GpuSpec& gpu, Precision p, int64_t m, int64_t n, int64_t k, int64_t batch) {
    return *gemm_table_TFLOPS(gpu.gemm_table, p, m, n, k, batch);
  };
  CHECK(b200.gemm_table.m == std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384});
  // b 2 m 4096 n 4096 k 4096: bf16 1466617794742374, e4m3 3123541589327515 FLOP/s;
  // b 4: 1670467342710337 and 3279676742061148; b 4 n 256 k 4096: 1152431271775951 / 1804608107563025.
  CHECK(at(b200, Precision::Bf16, 8192, 4096, 4096, 1) == proteus::test::approx(1466.6).epsilon(1e-14));
  CHECK(at(b200, Precision::Fp8, 8192, 4096, 4096, 1) == proteus::test::approx(3123.5).epsilon(1e-14));
  CHECK(at(b200, Precision::Bf16, 16384, 4096, 4096, 1) == proteus::test::approx(1670.5).epsilon(1e-14));
  CHECK(at(b200, Precision::Fp8, 16384, 4096, 4096, 1) == proteus::test::approx(3279.7).epsilon(1e-14));
  CHECK(at(b200, Precision::Bf16, 16384, 256, 4096, 1) == proteus::test::approx(1152.4).epsilon(1e-14));
  CHECK(at(b200, Precision::Fp8, 16384, 256, 4096, 1) == proteus::test::approx(1804.6).epsilon(1e-14));
  // The measured batch itself reads its own value: 4 x (4096 x 4096 x 4096) = 16384 rows.
  CHECK(at(b200, Precision::Bf16, 4096, 4096, 4096, 4) == proteus::test::approx(1670.5).epsilon(1e-14));
  // On B200 throughput still rises past 4096 rows (148 SMs), and stays below mamf-finder's best
  // shapes (1745.0 bf16, 3432.5 fp8 TFLOP/s, stas00/ml-engineering); more rows take the top row.
  for (Precision p : {Precision::Bf16, Precision::Fp8}) {
    CHECK(at(b200, p, 4096, 4096, 4096, 1) < at(b200, p, 8192, 4096, 4096, 1));
    CHECK(at(b200, p, 8192, 4096, 4096, 1) < at(b200, p, 16384, 4096, 4096, 1));
    CHECK(at(b200, p, 65536, 4096, 4096, 1) == at(b200, p, 16384, 4096, 4096, 1));
  }
  CHECK(at(b200, Precision::Bf16, 16384, 4096, 4096, 1) < 1745.0);
  CHECK(at(b200, Precision::Fp8, 16384, 4096, 4096, 1) < 3432.5);
  // 12288 rows: halfway in log2 terms is log2(1.5) of the way, a power-law blend of the two rows.
  const double t = std::log2(1.5);
  CHECK(at(b200, Precision::Bf16, 12288, 4096, 4096, 1) ==
        proteus::test::approx(std::pow(1466.6, 1 - t) * std::pow(1670.5, t)).epsilon(1e-12));

  // H100 (sm_90): b 2 and b 4 at n = k = 4096 measured 807671014191940 and 793131337247852 FLOP/s
  // against b 1's 783328793548203: saturated already at 4096 rows (132 SMs): +3.1% and +1.2%, not
  // even rising from 8192 to 16384 rows (B200: +3.5% and +17.9%), below the 989.4 dense peak.
  const auto gpu_of = [](const char* preset) {
    return parse_config(std::string(R"({"model": {"preset": "gpt2-small"}, "cluster": {"preset": ")") +
                        preset + R"("}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})")
        .cluster.gpu;
  };
  const GpuSpec h100 = gpu_of("dgx-h100");
  CHECK(h100.gemm_table.m == b200.gemm_table.m);
  CHECK(at(h100, Precision::Bf16, 8192, 4096, 4096, 1) == proteus::test::approx(807.7).epsilon(1e-14));
  CHECK(at(h100, Precision::Bf16, 16384, 4096, 4096, 1) == proteus::test::approx(793.1).epsilon(1e-14));
  for (int64_t rows : {8192, 16384}) {
    CHECK(std::abs(at(h100, Precision::Bf16, rows, 4096, 4096, 1) / 783.3 - 1) < 0.05);
    CHECK(at(h100, Precision::Bf16, rows, 4096, 4096, 1) < 989.4);
  }
  // b 2 m 4096 n 256 k 256 (135027895372233) and b 4 (206488812307692): small-n, small-k GEMMs gain
  // most from more rows (more tiles to fill 132 SMs): 82.2 TFLOP/s at 4096 rows.
  CHECK(at(h100, Precision::Bf16, 8192, 256, 256, 1) == proteus::test::approx(135.0).epsilon(1e-14));
  CHECK(at(h100, Precision::Bf16, 16384, 256, 256, 1) == proteus::test::approx(206.5).epsilon(1e-14));
  CHECK(at(h100, Precision::Bf16, 4096, 256, 256, 1) == proteus::test::approx(82.2).epsilon(1e-14));
  // H200 and H800 share the H100 measurement (their presets' sources say why).
  for (const char* preset : {"dgx-h200", "hgx-h800"}) {
    const GpuSpec gpu = gpu_of(preset);
    CHECK(gpu.gemm_table.m == h100.gemm_table.m);
    CHECK(gpu.gemm_table.TFLOPS == h100.gemm_table.TFLOPS);
  }
}
