// Transformer Engine's GEMM profiling guide (NVIDIA/TransformerEngine
// docs/examples/gemm_profiling/gemm_profiling.rst, benchmarks/gemm/benchmark_gemm.py
// --pre-quantize: operands quantized before the timed loop, so kernels alone) times the 12 GEMMs
// of one transformer layer on a B300 SXM6: hidden 4096, FFN 16384 (not gated), 15,872 tokens,
// forward, data gradient and weight gradient, 19.17 TFLOP. A measurement of shapes the presets'
// tables were not read from, so a check of the B300 preset's GEMM costs (docs/fidelity/gemm.md,
// "MXFP8 GEMMs").
#include <doctest/doctest.h>

#include <array>
#include <string>
#include "gemm_work.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "relative_approx.h"

using namespace proteus;
using namespace proteus::test;

namespace {

using proteus::test::approx;

// Per layer, milliseconds: BF16, FP8 with per-tensor (current) scales, MXFP8.
constexpr double kB300Bf16_ms = 13.102, kB300Current_ms = 6.812, kB300Mxfp8_ms = 7.161;

// The layer's GEMMs as (M, N, K): forward, data gradient (K and N swapped), weight gradient
// (the tokens contracted).
constexpr long kTokens = 15872;
constexpr std::array<std::array<long, 3>, 12> kLayer{{{kTokens, 12288, 4096},
                                                      {kTokens, 4096, 4096},
                                                      {kTokens, 16384, 4096},
                                                      {kTokens, 4096, 16384},
                                                      {kTokens, 4096, 12288},
                                                      {kTokens, 4096, 4096},
                                                      {kTokens, 4096, 16384},
                                                      {kTokens, 16384, 4096},
                                                      {4096, 12288, kTokens},
                                                      {4096, 4096, kTokens},
                                                      {4096, 16384, kTokens},
                                                      {16384, 4096, kTokens}}};

double layer_ms(Precision precision, Fp8Recipe recipe) {
  CostModel m = cost_model_of(parse_config(
      R"({"model": "llama3-8b", "training": {"global_batch": 8, "seq_len": 4096}, "strategy": {"dp": 8},
          "cluster": {"preset": "gb300-nvl72", "nodes": 1, "gpus_per_node": 8}})"));
  m.precision = precision;
  m.fp8_recipe = recipe;
  const double operand_bytes = precision == Precision::Fp8 ? 1 : 2;
  double total_s = 0;
  for (const auto& [mm, n, k] : kLayer) {
    total_s += m.compute_time_s(
        gemm(mm, n, k, operand_bytes));  // with its launch: the guide's CUDA events time back-to-back calls
  }
  return total_s * 1e3;
}

}  // namespace

TEST_CASE("TE's B300 layer benchmark: the preset's GEMMs are within 5% in BF16, FP8 and MXFP8") {
  const double bf16 = layer_ms(Precision::Bf16, Fp8Recipe::Delayed);
  const double current = layer_ms(Precision::Fp8, Fp8Recipe::Current);
  const double mxfp8 = layer_ms(Precision::Fp8, Fp8Recipe::Mxfp8);
  CHECK(bf16 == approx(kB300Bf16_ms).epsilon(0.05));
  CHECK(current == approx(kB300Current_ms).epsilon(0.05));
  CHECK(mxfp8 == approx(kB300Mxfp8_ms).epsilon(0.05));
  // The precisions' ratio, which the training speed-up of FP8 over BF16 follows, closer still.
  CHECK(bf16 / current == approx(kB300Bf16_ms / kB300Current_ms).epsilon(0.02));
}
