// Attention without flash attention, kernel by kernel (docs/frameworks/attention-and-kernels.md, "Attention
// without flash attention"): Megatron's CoreAttention runs baddbmm (QK^T), the fused scale-mask-softmax, the
// attention dropout and bmm (AV), and autograd runs each one's gradient. The s^2 tensors dominate the
// traffic; these tests count it by hand.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "proteus/compile.h"

using namespace proteus;
using namespace proteus::test;

namespace {

// 2 layers, h 1024, 8 heads, sequence 2048 on 8 GPUs of one DGX H100, DP 8, micro-batch 1: each
// rank's micro-batch is [1, 2048, 1024] (E elements) and has 8 x 2048 x 2048 scores (S).
std::string config(bool dropout, const std::string& strategy_extra = "") {
  const std::string model =
      "{\"kind\":\"transformer\",\"name\":\"tiny-gpt\",\"layers\":2,\"hidden\":1024,\"heads\":8,"
      "\"ffn_hidden\":4096,\"seq_len\":2048,\"vocab\":32000,\"mlp\":\"gelu\",\"norm\":\"layernorm\","
      "\"flash_attention\":false,\"dropout\":" +
      std::string(dropout ? "true" : "false") + "}";
  return config_json(model, "{\"preset\":\"dgx-h100\",\"nodes\":1}", 8,
                     "{\"dp\":8,\"micro_batch\":1" + strategy_extra + "}");
}

constexpr double kE = 2048.0 * 1024;
constexpr double kS = 8.0 * 2048 * 2048;
const std::string kAttn = "layers.0.attention.attn";

}  // namespace

TEST_CASE("unfused attention moves its kernels' bytes per score: 13 forward and 19 backward with dropout") {
  const CompiledModel c = compile_text(config(true));
  // Q read (E), K and V read (2E), O written (E), 2 bytes each.
  const double tensors = 4 * kE * 2;
  // Forward: QK^T writes the scores (2); the softmax reads them (2) and writes the probabilities
  // (2); dropout reads them (2), writes the dropped-out ones (2) and the mask (1); AV reads (2).
  CHECK(rank0_bytes(c, kAttn, Phase::Forward) == doctest::Approx(tensors + 13 * kS));
  // Backward: AV's gradient writes dP (2) and reads P for dV (2); dropout's gradient reads dP and
  // the mask and writes (2 + 1 + 2); the softmax's reads its gradient and its output and writes
  // dS (2 + 2 + 2); QK^T's reads dS for dQ and again for dK (2 + 2). The Q, K, V, O side twice:
  // dO, V, K, Q read and dQ, dK, dV written. Before, the model took twice the forward (26).
  CHECK(rank0_bytes(c, kAttn, Phase::BackwardInput) == doctest::Approx(2 * tensors + 19 * kS));
}

TEST_CASE("unfused attention without dropout: 8 bytes per score forward and 14 backward") {
  const CompiledModel c = compile_text(config(false));
  const double tensors = 4 * kE * 2;
  CHECK(rank0_bytes(c, kAttn, Phase::Forward) == doctest::Approx(tensors + 8 * kS));
  CHECK(rank0_bytes(c, kAttn, Phase::BackwardInput) == doctest::Approx(2 * tensors + 14 * kS));
}

TEST_CASE("selective recompute replays the unfused attention core's forward kernels") {
  const CompiledModel c = compile_text(config(true, ",\"recompute\":\"selective\""));
  CHECK(rank0_bytes(c, kAttn, Phase::Recompute) == doctest::Approx(rank0_bytes(c, kAttn, Phase::Forward)));
}
