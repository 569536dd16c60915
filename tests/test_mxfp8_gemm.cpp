// MXFP8's GEMMs are block-scaled: each operand carries an E8M0 scale per 32 values that the
// kernel loads and applies in its main loop, where a per-tensor-scaled FP8 GEMM applies two
// scalars in its epilogue. The FP8 tables and ceilings of the presets measure per-tensor GEMMs,
// so under the mxfp8 recipe an FP8 GEMM takes gpu.mxfp8_gemm_slowdown times their time
// (docs/fidelity/gemm.md, "MXFP8 GEMMs"). Attention and the GEMMs TE keeps in 16 bits are not
// block-scaled; the other recipes are per-tensor.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include "gemm_work.h"
#include "gpu_field_checks.h"
#include "proteus/api.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "relative_approx.h"

using namespace proteus;
using namespace proteus::test;

namespace {

using proteus::test::approx;

// Transformer Engine's GEMM profiling guide, B300, operands quantized before timing: the 12
// GEMMs of one layer take 7.161 ms in MXFP8 and 6.812 ms with per-tensor (current) scales.
constexpr double kTeMxfp8_ms = 7.161, kTeCurrent_ms = 6.812;
constexpr double kBlackwellSlowdown = 1.051;

// One DGX B200 node in FP8; the caller closes the cluster object (and may add a "gpu" override).
std::string one_b200_node(const char* recipe) {
  return std::string(R"({"model": "llama3-8b", "training": {"global_batch": 16, "seq_len": 8192,
          "precision": "fp8", "fp8_recipe": ")") +
         recipe +
         R"("}, "strategy": {"dp": 8, "micro_batch": 2, "zero": 1},
          "cluster": {"preset": "dgx-b200", "nodes": 1)";
}

CostModel b200(Fp8Recipe recipe) {
  CostModel m = cost_model_of(parse_config(one_b200_node("current") + "}}"));
  m.fp8_recipe = recipe;
  return m;
}

}  // namespace

TEST_CASE("MXFP8 GEMMs: the presets' slowdown is TE's measured ratio on Blackwell, 1 elsewhere") {
  CHECK(kTeMxfp8_ms / kTeCurrent_ms == approx(kBlackwellSlowdown).epsilon(5e-4));
  for (const auto& [preset, gpus] :
       {std::pair{"dgx-b200", "8"}, {"gb200-nvl72", "72"}, {"gb300-nvl72", "72"}}) {
    CAPTURE(preset);
    const Config c =
        parse_config(std::string(R"({"model": "llama3-8b", "cluster": {"preset": ")") + preset +
                     R"("}, "training": {"global_batch": 72}, "strategy": {"dp": )" + gpus + "}}");
    CHECK(c.cluster.gpu.mxfp8_gemm_slowdown == kBlackwellSlowdown);
  }
  const Config hopper = parse_config(
      R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100"}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})");
  CHECK(hopper.cluster.gpu.mxfp8_gemm_slowdown == 1.0);
}

TEST_CASE("MXFP8 GEMMs: a block-scaled GEMM takes the slowdown times the per-tensor FP8 time") {
  const CostModel per_tensor = b200(Fp8Recipe::Current), block_scaled = b200(Fp8Recipe::Mxfp8);
  REQUIRE(per_tensor.gpu.gemm_table.TFLOPS.count(Precision::Fp8) == 1);  // XLA's sm_100 FP8 table
  // TE's measured layer: QKV 15872 x 12288 x 4096 and FFN-down 15872 x 4096 x 16384.
  for (const ComputeWork& w : {gemm(15872, 12288, 4096, 1), gemm(15872, 4096, 16384, 1)}) {
    CHECK(busy_s(block_scaled, w) == approx(kBlackwellSlowdown * busy_s(per_tensor, w)).epsilon(1e-12));
    CHECK(busy_s(b200(Fp8Recipe::Delayed), w) == approx(busy_s(per_tensor, w)));
  }
  // A measured FP8 time (scripts/measure_ops.py times per-tensor-scaled _scaled_mm) alike.
  CostModel measured_pt = per_tensor, measured_mx = block_scaled;
  const ComputeWork timed = gemm(1024, 4096, 1024, 1);
  measured_pt.measured_us[op_signature(timed, Precision::Fp8)] = 42;
  measured_mx.measured_us = measured_pt.measured_us;
  CHECK(measured_pt.compute_time_s(timed) == approx(42e-6));
  CHECK(measured_mx.compute_time_s(timed) == approx(kBlackwellSlowdown * 42e-6).epsilon(1e-12));
  // Off the table (the roofline's FP8 ceiling) alike.
  CostModel roofline_pt = per_tensor, roofline_mx = block_scaled;
  roofline_pt.gpu.gemm_table = {};
  roofline_mx.gpu.gemm_table = {};
  const ComputeWork w = gemm(8192, 8192, 8192, 1);
  CHECK(busy_s(roofline_mx, w) == approx(kBlackwellSlowdown * busy_s(roofline_pt, w)).epsilon(1e-12));
}

TEST_CASE("MXFP8 GEMMs: attention, 16-bit GEMMs, casts and 16-bit runs keep their time") {
  const CostModel per_tensor = b200(Fp8Recipe::Current), block_scaled = b200(Fp8Recipe::Mxfp8);
  ComputeWork lm_head = gemm(16384, 128256, 4096, 1);
  lm_head.high_precision = true;  // TE runs the output layer and the router in 16 bits
  CHECK(block_scaled.compute_time_s(lm_head) == per_tensor.compute_time_s(lm_head));
  ComputeWork attention;
  attention.op_kind = OpKind::Attention;
  attention.flops = 1e12;
  attention.bytes = 1e8;
  CHECK(block_scaled.compute_time_s(attention) == per_tensor.compute_time_s(attention));
  ComputeWork cast;
  cast.op_kind = OpKind::Elementwise;
  cast.bytes = 1e9;
  CHECK(block_scaled.compute_time_s(cast) == per_tensor.compute_time_s(cast));
  CostModel bf16 = block_scaled, bf16_pt = per_tensor;
  bf16.precision = bf16_pt.precision = Precision::Bf16;
  CHECK(bf16.compute_time_s(gemm(8192, 8192, 8192)) == bf16_pt.compute_time_s(gemm(8192, 8192, 8192)));
}

TEST_CASE("MXFP8 GEMMs: the field is checked, named in errors and kept by show") {
  check_gpu_field(one_b200_node("mxfp8"), "mxfp8_gemm_slowdown", {"0.99", "0", "-1", "\"fast\""}, 1.2,
                  [](const Config& c) { return c.cluster.gpu.mxfp8_gemm_slowdown; });
}

TEST_CASE("MXFP8 GEMMs: a run's FP8 GEMMs slow by the factor, current scaling does not") {
  SimulateOptions options;
  options.fit_advice = false;
  const auto matmul_s = [&](const char* recipe, const char* gpu) {
    const auto out = nlohmann::json::parse(simulate_json(one_b200_node(recipe) + gpu + "}}", options));
    return out["breakdown"]["compute_by_op_kind_s"]["matmul"].get<double>();
  };
  const char* none = R"(, "gpu": {"mxfp8_gemm_slowdown": 1.0})";
  // The layers' GEMMs slow by 5.1%; the 16-bit output layer and the launches do not, so the
  // whole matmul time by less, and by more than 3% (the layers' GEMMs are most of it).
  const double ratio = matmul_s("mxfp8", "") / matmul_s("mxfp8", none);
  CHECK(ratio < kBlackwellSlowdown);
  CHECK(ratio > 1.03);
  CHECK(matmul_s("current", "") == matmul_s("current", none));
}

TEST_CASE("MXFP8 GEMMs: a run on a GPU without the measurement says its GEMMs are costed per-tensor") {
  SimulateOptions options;
  options.fit_advice = false;
  const auto warned = [&](const std::string& preset, const char* recipe) {
    std::string config = one_b200_node(recipe) + "}}";
    config.replace(config.find("dgx-b200"), 8, preset);
    const auto out = nlohmann::json::parse(simulate_json(config, options));
    for (const auto& w : out["warnings"])
      if (w.get<std::string>().find("cluster.gpu.mxfp8_gemm_slowdown") != std::string::npos) return true;
    return false;
  };
  CHECK(warned("dgx-h100", "mxfp8"));  // Hopper: no block-scaled tensor cores measured
  CHECK_FALSE(warned("dgx-b200", "mxfp8"));
  CHECK_FALSE(warned("dgx-h100", "current"));
}
