// One MI300X's memory-bound kernels and FP8 GEMMs against Azure's published ND MI300X v5
// microbenchmarks (Azure/AI-benchmarking-guide Azure_Results/ND_MI300X_v5_results.md), the
// measurements the mi300x-8 preset's memory_bound_efficiency and max_achievable_TFLOPS come from
// (docs/fidelity/amd.md, "MI300X and MI355X: published measurements").
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

constexpr double kTB = 1e12;

GpuSpec mi300x() {
  return parse_config(R"({"model": "llama3-8b", "cluster": {"preset": "mi300x-8", "nodes": 1},
                          "training": {"global_batch": 8}, "strategy": {"dp": 8}})")
      .cluster.gpu;
}

// Azure's hipBLASLt FP8 GEMMs (m, n, k and TFLOP/s), the shapes of 4096 and up.
struct Fp8Gemm {
  int64_t m, n, k;
  double TFLOPS;
};
constexpr Fp8Gemm kFp8Gemms[] = {{4096, 4096, 4096, 955.17},
                                 {8192, 8192, 8192, 1159.23},
                                 {16384, 16384, 16384, 1015.1},
                                 {32768, 32768, 32768, 1029.14},
                                 {6144, 12288, 12288, 1159.54}};

double modelled_fp8_TFLOPS(const GpuSpec& gpu, const Fp8Gemm& g) {
  CostModel cost;
  cost.gpu = gpu;
  cost.precision = Precision::Fp8;
  return gpu.peak_TFLOPS(Precision::Fp8) * cost.gemm_efficiency(g.m, g.n, g.k);
}

}  // namespace

TEST_CASE("mi300x: BabelStream's Copy takes its measured time (4.11 TB/s)") {
  // hip-stream's default arrays: 2^25 doubles each; Copy reads one and writes the other, 537 MB
  // (together twice the 256 MB Infinity Cache, so HBM traffic). Its time includes one launch,
  // which the model adds as kernel_launch_us (4 us on ~131 us): 5%.
  CostModel cost;
  cost.gpu = mi300x();
  ComputeWork copy;
  copy.op_kind = OpKind::Elementwise;
  copy.kernels = 1;
  copy.bytes = 2 * std::pow(2.0, 25) * 8;
  const double measured_s = copy.bytes / (4.11 * kTB);
  CHECK(cost.compute_time_s(copy) == proteus::test::approx(measured_s).epsilon(0.05));
  // The sustained rate alone (no launch): 5300 GB/s x 0.775 = Copy's 4.11 TB/s within 0.1%.
  CHECK(cost.gpu.hbm_GBps * cost.gpu.memory_bound_efficiency == proteus::test::approx(4110).epsilon(0.001));
}

TEST_CASE("mi300x: FP8 GEMMs are capped at hipBLASLt's measured best, 1159.5 TFLOP/s") {
  const GpuSpec gpu = mi300x();
  CHECK(gpu.gemm_ceiling(Precision::Fp8) == doctest::Approx(1159.5 / 2614.9));
  CHECK(gpu.gemm_ceiling(Precision::Bf16) == doctest::Approx(0.511));  // MAMF bf16, unchanged
  // The best shape loses its last wave's idle CUs (1152 tiles of 256 x 256 over 304 CUs: 3.79
  // waves, 0.947) and the K and thin-shape factors (0.990 x 0.980): 1065, 8.2% under, within 10%.
  CHECK(modelled_fp8_TFLOPS(gpu, kFp8Gemms[4]) == proteus::test::approx(kFp8Gemms[4].TFLOPS).epsilon(0.10));
  // The square shapes scatter around the model: 4096^3 -3.9%, 8192^3 -18.3% (1024 tiles in 3.37
  // waves), 16384^3 +8.2%, 32768^3 +11.6% (the measured rate falls from 8K to 16K, which no tile
  // count explains, so the 256 x 256 tile stays an assumption): each within 20%.
  for (const Fp8Gemm& g : kFp8Gemms) {
    const double error = modelled_fp8_TFLOPS(gpu, g) / g.TFLOPS - 1;
    CHECK_MESSAGE(std::fabs(error) < 0.2, g.m << "x" << g.n << "x" << g.k << ": " << error);
  }
}
