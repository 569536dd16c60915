// Megatron's fused weight-gradient accumulation (compile/linear_kernels.h,
// apply_wgrad_accumulation): a linear's weight-gradient GEMM adds into main_grad, so its epilogue
// reads and writes main_grad (fp32, or 16-bit when gradients are reduced in 16 bits) instead of
// writing its output once. The roofline's K half-point scales with the epilogue's bytes per operand
// byte (docs/fidelity/gemm.md, "FP8 GEMMs by shape"), so an accumulating GEMM of K = k takes
// (k + h_acc) / (k + h) of its time.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

// An H100-like GPU without measured tables: 132 SMs, 989.4 bf16 and 1978.9 fp8 TFLOP/s, a 0.8
// ceiling, 128 x 256 tiles (half-point h = 128 * 256 / 384), no launch time.
CostModel h100(Precision precision) {
  CostModel m;
  m.gpu.sm_count = 132;
  m.gpu.hbm_GBps = 3350;
  m.gpu.peak_bf16_TFLOPS = 989.4;
  m.gpu.peak_fp8_TFLOPS = 1978.9;
  m.gpu.gemm_max_efficiency = 0.8;
  m.gpu.gemm_tile_m = 128;
  m.gpu.gemm_tile_n = 256;
  m.gpu.kernel_launch_us = 0;
  m.precision = precision;
  return m;
}

constexpr double kHalf = 128.0 * 256.0 / 384.0;

// A weight-gradient GEMM of the weight's out x in, reduced over k tokens (FLOPs only).
ComputeWork wgrad(int64_t k, double accumulate_bytes) {
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.gemm_m = 6144;
  w.gemm_n = 12288;
  w.gemm_k = k;
  w.flops = 2.0 * 6144 * 12288 * static_cast<double>(k);
  w.accumulate_bytes_per_output = accumulate_bytes;
  return w;
}

// GPT-style, 2 layers, hidden 512, 8 heads, seq 256, TP 2 with sequence parallelism, DP 4.
std::string gpt(const std::string& precision, const std::string& strategy_extra) {
  return test::config_json_in(precision, test::gpt_model(2, 512, 8, 256, 8000),
                              R"({"preset":"dgx-h100","nodes":1})", 4,
                              R"({"tp":2,"dp":4,"sequence_parallel":true)" + strategy_extra + "}");
}

double accumulate_of(const std::string& config, const std::string& label, Phase phase) {
  const CompiledModel compiled = test::compile_text(config);  // outlives the work it points into
  const ComputeWork* w = test::compute_work_ending(compiled, phase, label);
  REQUIRE_MESSAGE(w != nullptr, "no task " << label);
  return w->accumulate_bytes_per_output;
}

}  // namespace

TEST_CASE("wgrad accumulation: the epilogue's main_grad read and write lengthen the K half-point") {
  // bf16 operands into an fp32 main_grad: 4 + 4 bytes per output against 2 per operand, h_K = 4h;
  // written once in bf16 it is h.
  const CostModel bf16 = h100(Precision::Bf16);
  for (const int64_t k : {2048, 8192}) {
    CAPTURE(k);
    const double ratio = bf16.compute_time_s(wgrad(k, 8)) / bf16.compute_time_s(wgrad(k, 0));
    CHECK(ratio == proteus::test::approx((k + 4 * kHalf) / (k + kHalf)).epsilon(1e-12));
  }
  // 16-bit main_grad: 2 + 2 bytes, h_K = 2h.
  CHECK(bf16.compute_time_s(wgrad(2048, 4)) / bf16.compute_time_s(wgrad(2048, 0)) ==
        proteus::test::approx((2048 + 2 * kHalf) / (2048 + kHalf)).epsilon(1e-12));
  // FP8 operands (1 byte) into a bf16 main_grad: h_K = 4h against the 2h of a bf16 output.
  const CostModel fp8 = h100(Precision::Fp8);
  CHECK(fp8.compute_time_s(wgrad(4096, 4)) / fp8.compute_time_s(wgrad(4096, 0)) ==
        proteus::test::approx((4096 + 4 * kHalf) / (4096 + 2 * kHalf)).epsilon(1e-12));
}

TEST_CASE("wgrad accumulation: a measured table's rate and a measured time take the same factor") {
  // dgx-h100 carries XLA's bf16 table (GEMMs that write their output): the accumulating GEMM's
  // time is the table's times the roofline's ratio of K factors.
  const Config config = parse_config(gpt("bf16", ""));
  CostModel cost = cost_model_of(config);
  cost.gpu.kernel_launch_us = 0;
  const double h = static_cast<double>(cost.gpu.gemm_tile_m * cost.gpu.gemm_tile_n) /
                   static_cast<double>(cost.gpu.gemm_tile_m + cost.gpu.gemm_tile_n);
  const double factor = (2048 + 4 * h) / (2048 + h);
  CHECK(cost.compute_time_s(wgrad(2048, 8)) == doctest::Approx(cost.compute_time_s(wgrad(2048, 0)) * factor));
  const ComputeWork plain = wgrad(2048, 0);
  cost.measured_us[op_signature(plain, Precision::Bf16)] = 500;
  CHECK(cost.compute_time_s(plain) == doctest::Approx(500e-6));
  CHECK(cost.compute_time_s(wgrad(2048, 8)) == doctest::Approx(500e-6 * factor));
}

TEST_CASE("wgrad accumulation: Megatron's linears accumulate into main_grad, in its dtype") {
  // fp32 main_grad (Megatron's default under bf16): 4 + 4 bytes; weight gradients only.
  CHECK(accumulate_of(gpt("bf16", ""), "mlp.fc1", Phase::BackwardWeight) == 8);
  CHECK(accumulate_of(gpt("bf16", ""), "attention.o_proj", Phase::BackwardWeight) == 8);
  CHECK(accumulate_of(gpt("bf16", ""), "head.lm_head", Phase::BackwardWeight) == 8);
  CHECK(accumulate_of(gpt("bf16", ""), "mlp.fc1", Phase::BackwardInput) == 0);
  CHECK(accumulate_of(gpt("bf16", ""), "mlp.fc1", Phase::Forward) == 0);
  // Gradients reduced in 16 bits (--grad-reduce-in-bf16, NeMo's grad_sync_dtype=bf16): 2 + 2,
  // also under FP8.
  CHECK(accumulate_of(gpt("bf16", R"(,"grad_reduce_in_fp32":false)"), "mlp.fc1", Phase::BackwardWeight) == 4);
  CHECK(accumulate_of(gpt("fp8", R"(,"grad_reduce_in_fp32":false)"), "mlp.fc2", Phase::BackwardWeight) == 4);
  // PyTorch's autograd under FSDP writes param.grad once.
  CHECK(accumulate_of(gpt("bf16", R"(,"framework":"fsdp","zero":3)"), "mlp.fc1", Phase::BackwardWeight) == 0);
}

TEST_CASE("wgrad accumulation: without the fusion a separate kernel adds the gradient into main_grad") {
  // --no-gradient-accumulation-fusion: the GEMM writes its output once (no accumulating
  // epilogue) and Megatron's backward hook runs main_grad.add_(grad): the bf16 gradient read (2)
  // and the fp32 main_grad read and written (4 + 4), per weight element of the rank.
  const CompiledModel fused = test::compile_text(gpt("bf16", ""));
  const CompiledModel unfused = test::compile_text(gpt("bf16", R"(,"gradient_accumulation_fusion":false)"));
  const ComputeWork* f = test::compute_work_ending(fused, Phase::BackwardWeight, "mlp.fc1");
  const ComputeWork* u = test::compute_work_ending(unfused, Phase::BackwardWeight, "mlp.fc1");
  REQUIRE(f != nullptr);
  REQUIRE(u != nullptr);
  CHECK(u->accumulate_bytes_per_output == 0);
  // fc1's weight shard over tp 2: 2048 x 512 / 2, and its bias 2048 / 2.
  const double elements = 2048.0 * 512 / 2 + 2048.0 / 2;
  CHECK(u->side_bytes - f->side_bytes == doctest::Approx(elements * (2 + 4 + 4)));
  // With 16-bit main_grad: 2 + 2 + 2.
  const CompiledModel unfused16 =
      test::compile_text(gpt("bf16", R"(,"gradient_accumulation_fusion":false,"grad_reduce_in_fp32":false)"));
  const ComputeWork* u16 = test::compute_work_ending(unfused16, Phase::BackwardWeight, "mlp.fc1");
  REQUIRE(u16 != nullptr);
  CHECK(u16->side_bytes - f->side_bytes == doctest::Approx(elements * (2 + 2 + 2)));
}

TEST_CASE("wgrad accumulation: the switch is Megatron's; elsewhere an error naming it") {
  for (const std::string framework :
       {R"("framework":"fsdp","zero":3)", R"("framework":"deepspeed","zero":1)"}) {
    CAPTURE(framework);
    CHECK(test::error_path([&] {
            test::compile_text(gpt("bf16", "," + framework + R"(,"gradient_accumulation_fusion":false)"));
          }) == "strategy.gradient_accumulation_fusion");
  }
}
