// Megatron-Core's Q/K/V split and Transformer Engine's layout check (model/layers.h,
// split_qkv_copy_bytes; docs/frameworks/attention-and-kernels.md "Q, K and V out of linear_qkv"): the copies
// around the fused attention kernel, by layout case, and where the compiler charges them.
#include <doctest/doctest.h>

#include <string>
#include "../core/src/model/layers.h"
#include "compile_fixtures.h"

using namespace proteus;
using namespace proteus::model;

namespace {

const ComputeWork& attention_work(const CompiledModel& c, Phase phase) {
  const ComputeWork* w = test::compute_work_ending(c, phase, "layers.0.attention.attn");
  REQUIRE(w != nullptr);
  return *w;
}

// The tiny Llama (GQA: 8 heads, 2 KV heads; rotary) with TE's fused attention.
std::string llama_config(const std::string& strategy_extra) {
  return test::config_json(test::tiny_llama_model(R"(,"flash_attention":true)"),
                           R"({"preset":"dgx-h100","nodes":1})", 8,
                           R"({"dp":8,"micro_batch":1)" + strategy_extra + "}");
}

}  // namespace

// Q of 1000 bytes, K + V of 500.
TEST_CASE("split qkv: each layout case, by hand") {
  // Multi-head without rotary or QK norm: Q, K, V stay interleaved in linear_qkv's output
  // (sbh3d), the kernel reads them there and its gradients land in one buffer: nothing.
  CHECK(split_qkv_copy_bytes(1000, 500, false, false).forward == 0);
  CHECK(split_qkv_copy_bytes(1000, 500, false, false).backward == 0);
  // Multi-head with rotary: Q and K are new tensors, V a strided view: V copied (read, write);
  // the backward's torch.cat reads and writes dQ, dK, dV.
  CHECK(split_qkv_copy_bytes(1000, 500, false, true).forward == 2 * 250);
  CHECK(split_qkv_copy_bytes(1000, 500, false, true).backward == 2 * 1500);
  // GQA with rotary: query.reshape copies Q as well.
  CHECK(split_qkv_copy_bytes(1000, 500, true, true).forward == 2 * 1000 + 2 * 250);
  // GQA without: Q reshaped, then K and V made contiguous.
  CHECK(split_qkv_copy_bytes(1000, 500, true, false).forward == 2 * 1000 + 2 * 500);
  CHECK(split_qkv_copy_bytes(1000, 500, true, false).backward == 2 * 1500);
}

TEST_CASE("split qkv: Megatron's attention carries them as side kernels; PyTorch's has repeat_kv's") {
  // Per rank one micro-batch of 2048 tokens: Q 2048 x 8 x 128 x 2 B = 4,194,304 B; K + V
  // 2048 x 2 x 2 x 128 x 2 B = 2,097,152 B. GQA with rotary: forward 2Q + V copies, backward
  // the cat of dQ, dK, dV.
  const double q = 4194304, kv = 2097152;
  const CompiledModel megatron = test::compile_text(llama_config(""));
  CHECK(attention_work(megatron, Phase::Forward).side_bytes == doctest::Approx(2 * q + kv));
  CHECK(attention_work(megatron, Phase::BackwardInput).side_bytes == doctest::Approx(2 * (q + kv)));
  const CompiledModel fsdp = test::compile_text(llama_config(R"(,"zero":3,"framework":"fsdp")"));
  // TorchTitan splits nothing (wq, wk, wv are three linears) but repeats K and V 4 times
  // (test_torch_repeat_kv.cpp): read once, written 4 times, and back.
  CHECK(attention_work(fsdp, Phase::Forward).side_bytes == doctest::Approx(5 * kv));
  CHECK(attention_work(fsdp, Phase::BackwardInput).side_bytes == doctest::Approx(5 * kv));
  // Multi-head with learned positions (GPT): the packed layout, no copies.
  std::string gpt_model = test::gpt_model(2, 1024, 8, 2048, 32000);
  gpt_model.insert(gpt_model.size() - 1, R"(,"flash_attention":true)");
  const CompiledModel gpt = test::compile_text(
      test::config_json(gpt_model, R"({"preset":"dgx-h100","nodes":1})", 8, R"({"dp":8})"));
  CHECK(attention_work(gpt, Phase::Forward).bytes < 1e8);  // fused: no s^2 scores in memory
  CHECK(attention_work(gpt, Phase::Forward).side_bytes == 0);
  CHECK(attention_work(gpt, Phase::BackwardInput).side_bytes == 0);
}
