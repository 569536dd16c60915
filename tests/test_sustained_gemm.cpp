// A GPU's GEMM measurements are bursts at boost clock (XLA's table: a warm-up and five timed
// kernels per shape; mamf-finder's MAMF). In a training run a GEMM that would draw more than the
// power limit at boost settles at the GPU's maximum sustainable matmul rate (MSMF, measured by
// mamf-finder with the whole node busy); one that draws less keeps its burst rate. So
// gpu.sustained_TFLOPS caps GEMM throughput per precision (docs/fidelity/gemm.md, "Sustained GEMMs");
// attention and memory-bound kernels are not capped.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include "../core/src/search/bounds.h"
#include "error_path.h"
#include "gemm_work.h"
#include "proteus/api.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "relative_approx.h"

using namespace proteus;
using namespace proteus::test;

namespace {

using proteus::test::approx;

// stas00/ml-engineering's MSMF of an H200 SXM (700 W) with the node busy: bf16 and fp8.
constexpr double kH200Msmf_bf16_TFLOPS = 755, kH200Msmf_fp8_TFLOPS = 1354;

const std::string kOneNode =
    R"({"model": "llama3-8b", "training": {"global_batch": 8, "seq_len": 4096, "precision": "bf16"},
        "strategy": {"dp": 8}, "cluster": {"preset": "dgx-h100", "nodes": 1)";

CostModel h100(Precision precision, bool capped) {
  CostModel m = cost_model_of(parse_config(kOneNode + "}}"));
  if (!capped) m.gpu.sustained_TFLOPS.clear();
  m.precision = precision;
  return m;
}

// The TFLOP/s of `w` less its launches.
double TFLOPS(const CostModel& c, const ComputeWork& w) { return w.flops / busy_s(c, w) / 1e12; }

}  // namespace

TEST_CASE("sustained GEMMs: the Hopper presets carry the H200's measured MSMF") {
  for (const char* preset : {"dgx-h100", "dgx-h200", "hgx-h800"}) {
    const Config c = parse_config(std::string(R"({"model": "llama3-8b", "cluster": {"preset": ")") + preset +
                                  R"("}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})");
    CAPTURE(preset);
    CHECK(c.cluster.gpu.sustained_TFLOPS.at(Precision::Bf16) == kH200Msmf_bf16_TFLOPS);
    CHECK(c.cluster.gpu.sustained_TFLOPS.at(Precision::Fp8) == kH200Msmf_fp8_TFLOPS);
  }
}

TEST_CASE(
    "sustained GEMMs: a GEMM above the power limit at boost settles at MSMF, one below keeps its rate") {
  const CostModel burst = h100(Precision::Bf16, false), sustained = h100(Precision::Bf16, true);
  REQUIRE(!burst.gpu.gemm_table.TFLOPS.empty());
  // XLA's table has 16384 x 4096 x 4096 at 793 TFLOP/s in bursts: above the H200's 755.
  const ComputeWork big = gemm(16384, 4096, 4096);
  REQUIRE(TFLOPS(burst, big) > kH200Msmf_bf16_TFLOPS);
  CHECK(TFLOPS(sustained, big) == approx(kH200Msmf_bf16_TFLOPS).epsilon(1e-9));
  // 2048 x 1024 x 1024 bursts at a few hundred TFLOP/s, far below the cap: unchanged.
  const ComputeWork small = gemm(2048, 1024, 1024);
  REQUIRE(TFLOPS(burst, small) < 0.8 * kH200Msmf_bf16_TFLOPS);
  CHECK(busy_s(sustained, small) == approx(busy_s(burst, small)).epsilon(1e-12));
  // An FP16 GEMM reads the BF16 cap, as it reads the BF16 table (the same MMA rate).
  const CostModel fp16 = h100(Precision::Fp16, true);
  CHECK(TFLOPS(fp16, big) == approx(kH200Msmf_bf16_TFLOPS).epsilon(1e-9));
}

TEST_CASE("sustained GEMMs: the roofline's FP8 GEMMs (MAMF ceiling) are capped alike") {
  CostModel burst = h100(Precision::Fp8, false), sustained = h100(Precision::Fp8, true);
  ComputeWork w = gemm(16384, 16384, 16384);
  w.bytes /= 2;  // 1-byte operands
  // The MAMF ceiling (1402.6 of 1978.9) at this size exceeds the 1354 sustained.
  REQUIRE(TFLOPS(burst, w) > kH200Msmf_fp8_TFLOPS);
  CHECK(TFLOPS(sustained, w) == approx(kH200Msmf_fp8_TFLOPS).epsilon(1e-9));
}

TEST_CASE("sustained GEMMs: attention and memory-bound kernels are not capped") {
  CostModel burst = h100(Precision::Bf16, false), sustained = h100(Precision::Bf16, true);
  // Caps far below any rate, so that anything capped would show.
  burst.gpu.sustained_TFLOPS.clear();
  sustained.gpu.sustained_TFLOPS = {{Precision::Bf16, 10.0}};
  ComputeWork att;
  att.op_kind = OpKind::Attention;
  att.flops = 1e12;
  att.bytes = 1e8;
  CHECK(sustained.compute_time_s(att) == approx(burst.compute_time_s(att)));
  ComputeWork add;
  add.op_kind = OpKind::Elementwise;
  add.bytes = 1e9;
  add.flops = 1e9;
  CHECK(sustained.compute_time_s(add) == approx(burst.compute_time_s(add)));
  CHECK(TFLOPS(sustained, gemm(4096, 4096, 4096)) == approx(10.0).epsilon(1e-9));
}

TEST_CASE("sustained GEMMs: a power limit scales the capped rate") {
  CostModel capped = h100(Precision::Bf16, true);
  capped.gpu.compute_throughput_fraction = 0.9;
  CHECK(TFLOPS(capped, gemm(16384, 4096, 4096)) == approx(0.9 * kH200Msmf_bf16_TFLOPS).epsilon(1e-9));
}

TEST_CASE("sustained GEMMs: the field is checked, named in errors and kept by show") {
  for (const char* bad : {"0", "-5", "\"x\""}) {
    const std::string cfg = kOneNode + R"(, "gpu": {"sustained_TFLOPS": {"bf16": )" + bad + "}}}}";
    CHECK(error_path([&] { parse_config(cfg); }) == "cluster.gpu.sustained_TFLOPS.bf16");
  }
  CHECK(error_path([&] { parse_config(kOneNode + R"(, "gpu": {"sustained_TFLOPS": {"int4": 9}}}})"); }) ==
        "cluster.gpu.sustained_TFLOPS.int4");
  const Config c = parse_config(kOneNode + R"(, "gpu": {"sustained_TFLOPS": {"bf16": 700}}}})");
  CHECK(c.cluster.gpu.sustained_TFLOPS.at(Precision::Bf16) == 700);
  CHECK(parse_config(config_to_json(c)).cluster.gpu.sustained_TFLOPS == c.cluster.gpu.sustained_TFLOPS);
}

TEST_CASE("sustained GEMMs: the search's compute bound takes the cap and stays above every op's rate") {
  const CostModel burst = h100(Precision::Bf16, false), sustained = h100(Precision::Bf16, true);
  const double bound = search_detail::best_compute_rate(sustained.gpu, Precision::Bf16);
  CHECK(bound < search_detail::best_compute_rate(burst.gpu, Precision::Bf16));
  for (int64_t side : {1024, 4096, 16384}) {
    const ComputeWork w = gemm(side, side, side);
    CHECK(w.flops / busy_s(sustained, w) <= bound);
  }
  ComputeWork att;
  att.op_kind = OpKind::Attention;
  att.flops = 1e13;
  att.gemm_m = att.gemm_n = 16384;
  att.gemm_k = 128;
  CHECK(att.flops / busy_s(sustained, att) <= bound);
}
