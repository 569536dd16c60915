// Eager PyTorch vs torch.compile (docs/fidelity/overheads.md, "Eager PyTorch and torch.compile"): under
// framework "fsdp" without strategy.torch_compile, RMSNorm, rotary and SwiGLU move the bytes
// of TorchTitan's eager ops; with torch_compile (Inductor's fusion), and under Megatron's fused
// kernels, the op graph's fused bytes.
#include <doctest/doctest.h>

#include <string>
#include "compile_fixtures.h"
#include "proteus/error.h"
#include "relative_approx.h"

using namespace proteus;
using namespace proteus::test;

namespace {

// The tiny Llama on one DGX H100, FSDP over 8 GPUs, micro-batch 1.
std::string llama_config(const std::string& strategy_extra) {
  return config_json(tiny_llama_model(), "{\"preset\":\"dgx-h100\",\"nodes\":1}", 8,
                     "{\"dp\":8,\"zero\":3,\"micro_batch\":1" + strategy_extra + "}");
}

double bytes_of(const CompiledModel& c, const std::string& label, Phase phase) {
  return rank0_bytes(c, label, phase);
}

}  // namespace

TEST_CASE(
    "eager kernels: TorchTitan's eager ops move 9x (RMSNorm), 5x (rotary), 5/3 (SwiGLU) the forward bytes") {
  const CompiledModel eager = compile_text(llama_config(",\"framework\":\"fsdp\""));
  const CompiledModel compiled = compile_text(llama_config(",\"framework\":\"fsdp\",\"torch_compile\":true"));
  const CompiledModel megatron = compile_text(llama_config(""));
  // Fused (Inductor, or Megatron's TE kernels): one read of the input, one write of the output.
  // ln1: x [1, 2048, 1024] bf16 read and y written, 4,194,304 B each, + the weight 1024 x 2 B
  // (gathered whole under FSDP) = 8,390,656 B.
  const std::string ln1 = "layers.0.attention.ln1";
  CHECK(bytes_of(compiled, ln1, Phase::Forward) == 8'390'656.0);
  CHECK(bytes_of(megatron, ln1, Phase::Forward) == 8'390'656.0);
  // Eager: x.float() 2+4, pow 4+4, mean 4, mul 4+4, type_as 4+2, * weight 2+2 = 36 B per
  // element against the fused 4: 9 x 8,390,656 = 75,515,904 B.
  CHECK(bytes_of(eager, ln1, Phase::Forward) == doctest::Approx(75'515'904.0));
  // rotary_q: queries [1, 2048, 8 x 128] read and written, 2 x 4,194,304 B fused; eager 20 B per
  // element (float 2+4, complex multiply 4+4, type_as 4+2) against 4: 5 x 8,388,608 = 41,943,040.
  const std::string rotary = "layers.0.attention.rotary_q";
  CHECK(bytes_of(compiled, rotary, Phase::Forward) == 8'388'608.0);
  CHECK(bytes_of(eager, rotary, Phase::Forward) == doctest::Approx(41'943'040.0));
  // SwiGLU: reads [gate | up] [1, 2048, 8192] = 33,554,432 B, writes [1, 2048, 4096] =
  // 16,777,216 B: 50,331,648 fused; eager silu 2+2 then mul 2+2+2 = 10 B per output element
  // against 6: 5/3 x 50,331,648 = 83,886,080.
  const std::string act = "layers.0.mlp.act";
  CHECK(bytes_of(compiled, act, Phase::Forward) == 50'331'648.0);
  CHECK(bytes_of(eager, act, Phase::Forward) == doctest::Approx(83'886'080.0));
  // A residual add is one kernel either way.
  const std::string add = "layers.0.attention.attn_residual";
  CHECK(bytes_of(eager, add, Phase::Forward) == bytes_of(compiled, add, Phase::Forward));
  // The eager iteration is slower by exactly that traffic, nothing else changes.
  CHECK(eager.exec.works.size() == compiled.exec.works.size());
}

// The backward, autograd node by node (tools/autograd/derivatives.yaml, FunctionsManual.cpp),
// per element of x [1, 2048, 1024] (E = 2,097,152) in 16 bits:
// - RMSNorm input gradient: grad * weight 2+2; _to_copy to fp32 2+4; grad * rsqrt 4+4; rsqrt's
//   gradient grad * x 4+4+4 and its row sum 4; mean_backward's expand / n 4; pow_backward
//   x.pow(1) (a copy) 4+4, 2 * that 4+4, grad * that 4+4+4; the engine's sum of x.float()'s two
//   gradients 4+4+4; _to_copy to bf16 4+2 = 84 B (fused: read grad and x, write 2+2+2 = 6).
//   Weight gradient: grad * output 2+2+2, summed over tokens 2 = 8 B (fused: 4).
// - rotary: _to_copy 2+4, grad * conj(freqs) 4+4, _to_copy 4+2 = 20 B (fused: 2+2).
// - SwiGLU, per output element [1, 2048, 4096]: grad * up 2+2+2, grad * silu(gate) 2+2+2,
//   silu_backward 2+2+2 = 18 B (fused: read grad, gate, up, write both gradients: 10).
TEST_CASE("eager kernels: autograd's backward of TorchTitan's eager ops, counted node by node") {
  const CompiledModel eager = compile_text(llama_config(",\"framework\":\"fsdp\""));
  const CompiledModel compiled = compile_text(llama_config(",\"framework\":\"fsdp\",\"torch_compile\":true"));
  const double e = 2048.0 * 1024;
  const std::string ln1 = "layers.0.attention.ln1";
  // Fused: 6 B per element (4 for the weight gradient), plus the gathered weight's few KB.
  const double fused_dx = bytes_of(compiled, ln1, Phase::BackwardInput);
  const double fused_dw = bytes_of(compiled, ln1, Phase::BackwardWeight);
  CHECK(fused_dx == proteus::test::approx(6 * e).epsilon(1e-3));
  CHECK(fused_dw == proteus::test::approx(4 * e).epsilon(1e-3));
  CHECK(bytes_of(eager, ln1, Phase::BackwardInput) == doctest::Approx(fused_dx * 84 / 6));
  CHECK(bytes_of(eager, ln1, Phase::BackwardWeight) == doctest::Approx(fused_dw * 8 / 4));
  const std::string rotary = "layers.0.attention.rotary_q";
  CHECK(bytes_of(compiled, rotary, Phase::BackwardInput) == doctest::Approx(4 * e));
  CHECK(bytes_of(eager, rotary, Phase::BackwardInput) == doctest::Approx(20 * e));
  const std::string act = "layers.0.mlp.act";
  const double out = 2048.0 * 4096;
  CHECK(bytes_of(compiled, act, Phase::BackwardInput) == doctest::Approx(10 * out));
  CHECK(bytes_of(eager, act, Phase::BackwardInput) == doctest::Approx(18 * out));
}

TEST_CASE("eager kernels: torch_compile outside framework fsdp is an error naming the field") {
  try {
    compile_text(llama_config(",\"torch_compile\":true"));
    FAIL("megatron with torch_compile parsed");
  } catch (const Error& e) {
    CHECK(e.path == "strategy.torch_compile");
  }
  try {
    compile_text(llama_config(",\"framework\":\"deepspeed\",\"torch_compile\":true"));
    FAIL("deepspeed with torch_compile parsed");
  } catch (const Error& e) {
    CHECK(e.path == "strategy.torch_compile");
  }
}

// Megatron's bias-dropout-add (megatron/core/fusions/fused_bias_dropout.py, on by default) reads
// the o_proj / fc2 output and the residual and writes the sum and a 1-byte mask: 7 bytes per
// 16-bit element, the dropped-out tensor never in memory. Eager PyTorch runs dropout (read 2,
// write 2, mask 1) and then the add (read 4, write 2): 11. The backward is the same either way.
TEST_CASE("eager kernels: Megatron's fused bias-dropout-add moves 7 bytes per element, eager 11") {
  // GPT-style with dropout: h 1024, sequence 512, micro-batch 2: n = 2 x 512 x 1024 elements.
  const std::string model = gpt_model(2, 1024, 16, 512, 32000);
  const std::string cluster = "{\"preset\":\"dgx-h100\",\"nodes\":1}";
  const CompiledModel megatron = compile_text(config_json(model, cluster, 16, R"({"dp":8,"micro_batch":2})"));
  const CompiledModel eager = compile_text(
      config_json(model, cluster, 16, R"({"dp":8,"zero":3,"micro_batch":2,"framework":"fsdp"})"));
  const CompiledModel compiled = compile_text(config_json(
      model, cluster, 16, R"({"dp":8,"zero":3,"micro_batch":2,"framework":"fsdp","torch_compile":true})"));
  const double n = 2.0 * 512 * 1024;
  for (const char* block : {"layers.0.attention.attn", "layers.0.mlp.mlp"}) {
    const std::string dropout = std::string(block) + "_dropout", residual = std::string(block) + "_residual";
    auto pair = [&](const CompiledModel& c, Phase phase) {
      return bytes_of(c, dropout, phase) + bytes_of(c, residual, phase);
    };
    CHECK(pair(megatron, Phase::Forward) == doctest::Approx(7 * n));
    CHECK(pair(compiled, Phase::Forward) == doctest::Approx(7 * n));
    CHECK(pair(eager, Phase::Forward) == doctest::Approx(11 * n));
    CHECK(pair(eager, Phase::BackwardInput) == doctest::Approx(pair(megatron, Phase::BackwardInput)));
  }
}
