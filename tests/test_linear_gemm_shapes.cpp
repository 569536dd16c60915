// A linear layer's backward GEMMs run at their own shapes (compile/linear_gemm_shapes.h):
// the input gradient tokens x in x out, the weight gradient out x in x tokens, whose K is the
// micro-batch's token count.
#include <doctest/doctest.h>

#include <string>

#include "../core/src/compile/linear_gemm_shapes.h"
#include "compile_fixtures.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

// The work of simulated rank 0's first compute task labelled `label` in `phase`.
ComputeWork work_of(const CompiledModel& c, const std::string& label, Phase phase) {
  const ComputeWork* w = test::compute_work_ending(c, phase, label);
  REQUIRE_MESSAGE(w != nullptr, "no task " << label);
  return *w;
}

// GPT, hidden 1024, 16 heads, ffn 4096, seq 512, TP 4 (sequence parallel), micro-batch 2: 1024
// tokens per micro-batch.
CompiledModel gpt_tp4() {
  return test::compile_text(test::config_json(test::gpt_model(2, 1024, 16, 512, 8192),
                                              R"({"preset":"dgx-h100","nodes":1})", 4,
                                              R"({"tp":4,"dp":2,"micro_batch":2,"sequence_parallel":true})"));
}

}  // namespace

TEST_CASE("a linear's input and weight gradients are GEMMs of their own shapes") {
  const CompiledModel c = gpt_tp4();
  // fc1, column-parallel: forward tokens x ffn/tp x hidden.
  const ComputeWork f = work_of(c, "layers.0.mlp.fc1", Phase::Forward);
  const ComputeWork d = work_of(c, "layers.0.mlp.fc1", Phase::BackwardInput);
  const ComputeWork w = work_of(c, "layers.0.mlp.fc1", Phase::BackwardWeight);
  CHECK(f.gemm_m == 1024);
  CHECK(f.gemm_n == 1024);  // 4096 / 4
  CHECK(f.gemm_k == 1024);
  // fc2, row-parallel: forward tokens x hidden x ffn/tp; dX tokens x ffn/tp x hidden; dW is the
  // weight (hidden x ffn/tp) reduced over the tokens.
  const ComputeWork f2 = work_of(c, "layers.0.mlp.fc2", Phase::Forward);
  const ComputeWork d2 = work_of(c, "layers.0.mlp.fc2", Phase::BackwardInput);
  const ComputeWork w2 = work_of(c, "layers.0.mlp.fc2", Phase::BackwardWeight);
  CHECK(f2.gemm_n == 1024);
  CHECK(f2.gemm_k == 1024);
  // o_proj, row-parallel: forward 1024 tokens x 1024 (hidden) x 256 (16 heads x 64 / 4). (q_proj
  // and kv_proj are timed as Megatron's fused linear_qkv: test_linear_kernels.cpp.)
  const ComputeWork fo = work_of(c, "layers.0.attention.o_proj", Phase::Forward);
  const ComputeWork d_o = work_of(c, "layers.0.attention.o_proj", Phase::BackwardInput);
  const ComputeWork wo = work_of(c, "layers.0.attention.o_proj", Phase::BackwardWeight);
  CHECK(fo.gemm_m == 1024);
  CHECK(fo.gemm_n == 1024);
  CHECK(fo.gemm_k == 256);
  CHECK(d_o.gemm_m == 1024);  // tokens
  CHECK(d_o.gemm_n == 256);   // in: the rank's heads
  CHECK(d_o.gemm_k == 1024);  // reduced over out
  CHECK(wo.gemm_m == 1024);   // out
  CHECK(wo.gemm_n == 256);    // in
  CHECK(wo.gemm_k == 1024);   // reduced over the tokens
  // Every GEMM of a linear does 2·M·N·K, the same in each pass (the bias's FLOPs beside it).
  for (const ComputeWork* x : {&f, &d, &w, &f2, &d2, &w2, &fo, &d_o, &wo})
    CHECK(x->flops ==
          proteus::test::approx(2.0 * x->gemm_m * x->gemm_n * x->gemm_k * x->gemm_batch).epsilon(1e-3));
  // The weight gradient's output is the rank's weight shard.
  CHECK(static_cast<double>(wo.gemm_m) * wo.gemm_n == 1024.0 * 1024 / 4);
}

TEST_CASE("linear_pass_shape: only a linear layer's backward is transposed") {
  Op linear;
  linear.kind = OpKind::Matmul;
  linear.weights.push_back({});
  const GemmShape fwd{4096, 1024, 8192};
  const GemmShape d = linear_pass_shape(linear, GemmPass::InputGrad, fwd);
  const GemmShape w = linear_pass_shape(linear, GemmPass::WeightGrad, fwd);
  CHECK((d.m == 4096 && d.n == 8192 && d.k == 1024));
  CHECK((w.m == 1024 && w.n == 8192 && w.k == 4096));
  const GemmShape f = linear_pass_shape(linear, GemmPass::Forward, fwd);
  CHECK((f.m == 4096 && f.n == 1024 && f.k == 8192));
  // Attention's backward is its own kernel over the same (seq, seq_kv, head_dim) shape.
  Op attention;
  attention.kind = OpKind::Attention;
  const GemmShape a = linear_pass_shape(attention, GemmPass::InputGrad, fwd);
  CHECK((a.m == fwd.m && a.n == fwd.n && a.k == fwd.k));
}
