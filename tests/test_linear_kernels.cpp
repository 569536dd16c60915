// The GEMM kernels a linear op runs as, by framework (compile/linear_kernels.h): Megatron's
// fused linear_qkv times q_proj and kv_proj as their shares of one GEMM of N = (a + 2k) d / tp;
// a PyTorch model under FSDP runs wk, wv and w1, w3 as GEMMs of their own.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

// Llama-like: hidden 1024, 16 heads of 64, 4 kv heads, SwiGLU ffn 2048, seq 512, micro-batch 2
// (1024 tokens), TP 4 with sequence parallelism: per rank q 256 wide, [K | V] 128, fc1 2 x 512.
std::string llama_config(const std::string& framework) {
  const std::string model = R"({"kind":"transformer","name":"test-llama","layers":2,"hidden":1024,"heads":16,
    "kv_heads":4,"ffn_hidden":2048,"seq_len":512,"vocab":8192,"mlp":"swiglu","norm":"rmsnorm",
    "flash_attention":true,"learned_positions":false,"bias":false})";
  const std::string zero = framework == "fsdp" ? R"("zero":3,)" : R"("zero":1,)";
  return test::config_json(model, R"({"preset":"dgx-h100","nodes":1})", 4,
                           R"({"framework":")" + framework + R"(",)" + zero +
                               R"("tp":4,"dp":2,"micro_batch":2,"sequence_parallel":true})");
}

ComputeWork work_of(const CompiledModel& c, const std::string& suffix, Phase phase) {
  const ComputeWork* w = test::compute_work_ending(c, phase, suffix);
  REQUIRE_MESSAGE(w != nullptr, "no task " << suffix);
  return *w;
}

// The GEMM alone: no memory traffic, side kernels or launches.
ComputeWork flops_only(ComputeWork w) {
  w.bytes = w.side_bytes = 0;
  w.kernels = 0;
  w.sm_reserved = 0;
  return w;
}

double flops_of(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

}  // namespace

TEST_CASE("linear kernels: Megatron's linear_qkv is one GEMM, q_proj and kv_proj each its share") {
  for (const std::string framework : {"megatron", "deepspeed"}) {
    CAPTURE(framework);
    const Config config = parse_config(llama_config(framework));
    const CompiledModel c = compile(config);
    const ComputeWork q = work_of(c, "attention.q_proj", Phase::Forward);
    const ComputeWork kv = work_of(c, "attention.kv_proj", Phase::Forward);
    // Forward tokens x (16 + 2 x 4) x 64 / 4 x hidden; the FLOPs stay each op's own.
    CHECK(q.gemm_m == 1024);
    CHECK(q.gemm_n == 384);
    CHECK(kv.gemm_n == 384);
    CHECK(q.gemm_k == 1024);
    CHECK(q.flops == doctest::Approx(flops_of(1024, 256, 1024)));
    CHECK(kv.flops == doctest::Approx(flops_of(1024, 128, 1024)));
    CHECK(q.gemm_kernel_share == doctest::Approx(256.0 / 384));
    CHECK(kv.gemm_kernel_share == doctest::Approx(128.0 / 384));
    CHECK(q.kernels == 1);  // one launch for the fused kernel
    CHECK(kv.kernels == 0);
    // The input gradient reduces over the fused output (K), the weight gradient's rows are it (M).
    CHECK(work_of(c, "attention.q_proj", Phase::BackwardInput).gemm_k == 384);
    CHECK(work_of(c, "attention.kv_proj", Phase::BackwardInput).gemm_k == 384);
    CHECK(work_of(c, "attention.q_proj", Phase::BackwardWeight).gemm_m == 384);
    CHECK(work_of(c, "attention.kv_proj", Phase::BackwardWeight).gemm_m == 384);
    // The two shares take exactly the time of the fused GEMM, which is less than two GEMMs.
    const CostModel cost = cost_model_of(config);
    ComputeWork fused = flops_only(q);
    fused.flops = flops_of(1024, 384, 1024);
    const double shares_s = cost.compute_time_s(flops_only(q)) + cost.compute_time_s(flops_only(kv));
    CHECK(shares_s == proteus::test::approx(cost.compute_time_s(fused)).epsilon(1e-12));
    ComputeWork q_alone = flops_only(q), kv_alone = flops_only(kv);
    q_alone.gemm_n = 256;
    kv_alone.gemm_n = 128;
    CHECK(shares_s < cost.compute_time_s(q_alone) + cost.compute_time_s(kv_alone));
  }
}

TEST_CASE("linear kernels: under FSDP wk and wv, w1 and w3 are GEMMs of their own") {
  const CompiledModel c = test::compile_text(llama_config("fsdp"));
  const ComputeWork q = work_of(c, "attention.q_proj", Phase::Forward);
  const ComputeWork kv = work_of(c, "attention.kv_proj", Phase::Forward);
  const ComputeWork fc1 = work_of(c, "mlp.fc1", Phase::Forward);
  CHECK(q.gemm_n == 256);  // wq as it is
  CHECK(q.gemm_kernel_share == 1);
  CHECK(q.kernels == 1);
  CHECK(kv.gemm_n == 64);  // wk, then wv: 4 x 64 / 4 each
  CHECK(kv.flops == doctest::Approx(flops_of(1024, 128, 1024)));
  CHECK(kv.gemm_kernel_share == 2);
  CHECK(kv.kernels == 2);
  CHECK(fc1.gemm_n == 512);  // w1, then w3: 2048 / 4 each
  CHECK(fc1.kernels == 2);
  CHECK(work_of(c, "attention.kv_proj", Phase::BackwardInput).gemm_k == 64);
  CHECK(work_of(c, "mlp.fc1", Phase::BackwardWeight).gemm_m == 512);
  // Two kernels of half the width take twice one's time.
  const CostModel cost = cost_model_of(parse_config(llama_config("fsdp")));
  ComputeWork one = flops_only(kv);
  one.flops /= 2;
  CHECK(cost.compute_time_s(flops_only(kv)) ==
        proteus::test::approx(2 * cost.compute_time_s(one)).epsilon(1e-12));
}

TEST_CASE("linear kernels: a measured time of the fused or the split shape is scaled to the op") {
  const Config config = parse_config(llama_config("megatron"));
  const CompiledModel c = compile(config);
  CostModel cost = cost_model_of(config);
  const ComputeWork q = work_of(c, "attention.q_proj", Phase::Forward);
  cost.measured_us[op_signature(q, cost.precision_of(q))] = 300;  // the fused linear_qkv GEMM
  CHECK(cost.compute_time_s(q) == doctest::Approx(300e-6 * 256 / 384));
  const Config torch = parse_config(llama_config("fsdp"));
  const CompiledModel t = compile(torch);
  CostModel torch_cost = cost_model_of(torch);
  const ComputeWork kv = work_of(t, "attention.kv_proj", Phase::Forward);
  torch_cost.measured_us[op_signature(kv, torch_cost.precision_of(kv))] = 40;  // wk alone
  CHECK(torch_cost.compute_time_s(kv) == doctest::Approx(80e-6));
}

TEST_CASE("linear kernels: TorchTitan's op-level checkpointing replays one of wk, wv") {
  // Its policy saves every second aten.mm of a block (docs/frameworks/recompute.md): wv and w1
  // kept, wk and w3 replayed, each one kernel of the split shape with half the op's FLOPs.
  std::string config = llama_config("fsdp");
  config.insert(config.rfind('}', config.rfind('}') - 1), R"(,"recompute":"selective")");
  const CompiledModel c = test::compile_text(config);
  const ComputeWork kv = work_of(c, "attention.kv_proj", Phase::Recompute);
  CHECK(kv.gemm_n == 64);
  CHECK(kv.kernels == 1);
  CHECK(kv.gemm_kernel_share == 1);
  CHECK(kv.flops == doctest::Approx(flops_of(1024, 64, 1024)));
  const ComputeWork fc1 = work_of(c, "mlp.fc1", Phase::Recompute);
  CHECK(fc1.gemm_n == 512);
  CHECK(fc1.kernels == 1);
}
