// Megatron's fused kernels and its --no-*-fusion flags (docs/frameworks/attention-and-kernels.md, "Megatron's
// fused kernels"): with a fusion off the op moves what Megatron's unfused PyTorch path moves, by hand-counted
// bytes; everything else stays as it was.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/import.h"

using namespace proteus;
using namespace proteus::test;

namespace {

// GPT-style (LayerNorm, GELU, linear biases, dropout, learned positions, attention without flash):
// 2 layers, h 1024, 8 heads, ffn 4096, sequence 2048; 8 GPUs of one DGX H100, DP 8, micro-batch 1,
// so each rank's micro-batch is [1, 2048, 1024] and E = 2,097,152 activations of 2 bytes.
std::string gpt_config(const std::string& strategy_extra) {
  const std::string model =
      "{\"kind\":\"transformer\",\"name\":\"tiny-gpt\",\"layers\":2,\"hidden\":1024,\"heads\":8,"
      "\"ffn_hidden\":4096,\"seq_len\":2048,\"vocab\":32000,\"mlp\":\"gelu\",\"norm\":\"layernorm\","
      "\"bias\":true,\"dropout\":true,\"flash_attention\":false}";
  return config_json(model, "{\"preset\":\"dgx-h100\",\"nodes\":1}", 8,
                     "{\"dp\":8,\"micro_batch\":1" + strategy_extra + "}");
}

// The tiny Llama without biases (flash attention), DP 8 as above.
std::string llama_config(const std::string& strategy_extra) {
  return config_json(tiny_llama_model(",\"bias\":false"), "{\"preset\":\"dgx-h100\",\"nodes\":1}", 8,
                     "{\"dp\":8,\"micro_batch\":1" + strategy_extra + "}");
}

double bytes_of(const CompiledModel& c, const std::string& label, Phase phase) {
  return rank0_bytes(c, label, phase);
}

double iteration_s(const std::string& config) {
  return nlohmann::json::parse(simulate_json(config, {}))["summary"]["iteration_time_s"].get<double>();
}

constexpr double kE = 2048.0 * 1024;  // elements of one rank's [1, 2048, 1024] activation
constexpr double kBf16 = 2;

}  // namespace

TEST_CASE("Megatron fusions: each flag off adds exactly the unfused path's bytes") {
  const CompiledModel fused = compile_text(gpt_config(""));
  // Megatron's defaults are the fused kernels: writing them out changes nothing.
  const CompiledModel explicit_fused = compile_text(gpt_config(
      ",\"bias_dropout_fusion\":true,\"bias_activation_fusion\":true,\"masked_softmax_fusion\":true"));
  CHECK(bytes_of(explicit_fused, "layers.0.mlp.act", Phase::Forward) ==
        bytes_of(fused, "layers.0.mlp.act", Phase::Forward));

  SUBCASE("--no-bias-dropout-fusion: dropout(y + bias) written and read back, the bias added apart") {
    const CompiledModel off = compile_text(gpt_config(",\"bias_dropout_fusion\":false"));
    // The dropout kernel writes dropout(y) (2 B per element) and `x + bias` reads y and writes
    // it again (2 + 2); the residual add then reads dropout(y) (2).
    const std::string drop = "layers.0.attention.attn_dropout", add = "layers.0.attention.attn_residual";
    CHECK(bytes_of(off, drop, Phase::Forward) - bytes_of(fused, drop, Phase::Forward) ==
          doctest::Approx((kBf16 + 2 * kBf16) * kE));
    CHECK(bytes_of(off, add, Phase::Forward) - bytes_of(fused, add, Phase::Forward) ==
          doctest::Approx(kBf16 * kE));
    // The backward is the same kernels either way.
    CHECK(bytes_of(off, drop, Phase::BackwardInput) == bytes_of(fused, drop, Phase::BackwardInput));
    // Other ops do not move.
    CHECK(bytes_of(off, "layers.0.mlp.act", Phase::Forward) ==
          bytes_of(fused, "layers.0.mlp.act", Phase::Forward));
  }
  SUBCASE("--no-bias-gelu-fusion: fc1's output read and written once more by `x + bias`") {
    const CompiledModel off = compile_text(gpt_config(",\"bias_activation_fusion\":false"));
    const double fc1_out = 2048.0 * 4096 * kBf16;
    CHECK(bytes_of(off, "layers.0.mlp.act", Phase::Forward) -
              bytes_of(fused, "layers.0.mlp.act", Phase::Forward) ==
          doctest::Approx(2 * fc1_out));
    CHECK(bytes_of(off, "layers.0.mlp.act", Phase::BackwardInput) ==
          bytes_of(fused, "layers.0.mlp.act", Phase::BackwardInput));
  }
  SUBCASE(
      "--no-masked-softmax-fusion: a masked_fill over the scores before the softmax and in its backward") {
    const CompiledModel off = compile_text(gpt_config(",\"masked_softmax_fusion\":false"));
    // 8 heads x 2048 x 2048 scores per rank; masked_fill reads 2, reads the 1-byte mask, writes 2.
    const double scores = 8.0 * 2048 * 2048;
    const std::string attn = "layers.0.attention.attn";
    CHECK(bytes_of(off, attn, Phase::Forward) - bytes_of(fused, attn, Phase::Forward) ==
          doctest::Approx(5 * scores));
    CHECK(bytes_of(off, attn, Phase::BackwardInput) - bytes_of(fused, attn, Phase::BackwardInput) ==
          doctest::Approx(5 * scores));
  }
}

TEST_CASE("Megatron fusions: beyond 4096 keys Megatron's softmax runs unfused whatever the flag") {
  // FusedScaleMaskSoftmax.is_kernel_available: 16 < sk <= 4096. At 8192 keys both settings pay
  // the masked_fill: 5 bytes per score (8 heads x 8192 x 8192 per rank) over the fused count.
  auto at_8k = [](const std::string& extra) {
    std::string c = gpt_config(extra);
    for (size_t i; (i = c.find("2048")) != std::string::npos;) c.replace(i, 4, "8192");
    return compile_text(c);
  };
  const std::string attn = "layers.0.attention.attn";
  const CompiledModel fused = at_8k(""), off = at_8k(",\"masked_softmax_fusion\":false");
  CHECK(bytes_of(off, attn, Phase::Forward) == bytes_of(fused, attn, Phase::Forward));
  CHECK(bytes_of(off, attn, Phase::BackwardInput) == bytes_of(fused, attn, Phase::BackwardInput));
  // Per score: QK^T writes 2, the softmax reads 2 and writes 2, AV reads 2 (+ dropout's 2 and
  // the 1-byte mask), plus masked_fill's 5; Q, K, V and O are small beside 64M scores.
  const double scores = 8.0 * 8192 * 8192;
  CHECK(bytes_of(fused, attn, Phase::Forward) > (3 * 2 + 2 + 5) * scores);
}

TEST_CASE("Megatron fusions: SwiGLU and rotary unfused move what eager PyTorch's do; no bias, no extra add") {
  const CompiledModel fused = compile_text(llama_config(""));
  const CompiledModel off =
      compile_text(llama_config(",\"bias_activation_fusion\":false,\"apply_rope_fusion\":false"));
  // SwiGLU: F.silu (2 + 2) then the multiply (2 + 2 + 2) = 10 B per output element against 6.
  CHECK(bytes_of(off, "layers.0.mlp.act", Phase::Forward) ==
        doctest::Approx(bytes_of(fused, "layers.0.mlp.act", Phase::Forward) * 10 / 6));
  // Its backward, per output element ([1, 2048, 4096]): autograd's 18 B as eager PyTorch's
  // (test_eager_kernels.cpp), plus the gradient of glu's torch.chunk, a cat of the two halves'
  // gradients (read 2 + 2, write 2 + 2); the fused bias_swiglu backward moves 10.
  const double out = 2048.0 * 4096;
  CHECK(bytes_of(fused, "layers.0.mlp.act", Phase::BackwardInput) == doctest::Approx(10 * out));
  CHECK(bytes_of(off, "layers.0.mlp.act", Phase::BackwardInput) == doctest::Approx((18 + 8) * out));
  // Rotary: 20 B per element against 4 (layers.h).
  CHECK(bytes_of(off, "layers.0.attention.rotary_q", Phase::Forward) ==
        doctest::Approx(bytes_of(fused, "layers.0.attention.rotary_q", Phase::Forward) * 5));
  // Megatron has no unfused RMSNorm: the norm keeps its fused bytes.
  CHECK(bytes_of(off, "layers.0.attention.ln1", Phase::Forward) ==
        bytes_of(fused, "layers.0.attention.ln1", Phase::Forward));
  // And the unfused run is slower.
  CHECK(iteration_s(llama_config(",\"bias_activation_fusion\":false")) > iteration_s(llama_config("")));
}

TEST_CASE("Megatron fusions: under framework fsdp the flags are an error naming the field") {
  for (const char* field :
       {"bias_dropout_fusion", "bias_activation_fusion", "masked_softmax_fusion", "apply_rope_fusion"}) {
    const std::string cfg =
        llama_config(",\"framework\":\"fsdp\",\"zero\":3,\"" + std::string(field) + "\":false");
    CHECK(error_path([&] { compile_text(cfg); }) == std::string("strategy.") + field);
  }
}

TEST_CASE("Megatron import and export: the --no-*-fusion flags") {
  const std::string common =
      "--num-layers 2 --hidden-size 512 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256 "
      "--micro-batch-size 1 --global-batch-size 8 --bf16 ";
  MegatronImportOptions on_h100;
  on_h100.cluster_json = "dgx-h100";
  on_h100.nodes = 1;
  const ImportResult gpt =
      import_megatron(common +
                          "--no-bias-dropout-fusion --no-bias-gelu-fusion --no-masked-softmax-fusion "
                          "--no-gradient-accumulation-fusion",
                      on_h100);
  const auto st = nlohmann::json::parse(gpt.config_json)["strategy"];
  CHECK(st["bias_dropout_fusion"] == false);
  CHECK(st["bias_activation_fusion"] == false);
  CHECK(st["masked_softmax_fusion"] == false);
  CHECK_FALSE(st.contains("apply_rope_fusion"));
  CHECK(st["gradient_accumulation_fusion"] == false);
  for (const std::string& i : gpt.ignored) CHECK(i.rfind("--no-gradient-accumulation-fusion", 0) != 0);
  // Under --swiglu the activation's flag is --no-bias-swiglu-fusion; the GELU one is ignored.
  const ImportResult llama = import_megatron(
      common + "--swiglu --position-embedding-type rope --no-bias-gelu-fusion --no-rope-fusion", on_h100);
  const auto lst = nlohmann::json::parse(llama.config_json)["strategy"];
  CHECK_FALSE(lst.contains("bias_activation_fusion"));
  CHECK(lst["apply_rope_fusion"] == false);
  // Export writes the flags back.
  const std::string exported = export_megatron(gpt.config_json);
  for (const char* flag : {"--no-bias-dropout-fusion", "--no-bias-gelu-fusion", "--no-masked-softmax-fusion",
                           "--no-gradient-accumulation-fusion"})
    CHECK(exported.find(flag) != std::string::npos);
  CHECK(export_megatron(llama.config_json).find("--no-rope-fusion") != std::string::npos);
}
