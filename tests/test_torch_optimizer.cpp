// TorchTitan's optimizer step (framework fsdp, compile/op_index.cpp): torch.optim.AdamW's foreach
// implementation after clip_grad_norm_, counted pass by pass from torch/optim/adamw.py
// (_multi_tensor_adamw) and torch/nn/utils/clip_grad.py, against the fused step Megatron and
// DeepSpeed run (one read and one write of each tensor).
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "proteus/compile.h"
#include "proteus/config.h"

using namespace proteus;

namespace {

// Bytes of rank 0's optimizer step under ZeRO-3 over 8 GPUs (the same shards either way).
double step_bytes(const std::string& framework, const std::string& extra = "") {
  const CompiledModel c = compile(parse_config(test::config_json(
      test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 8,
      R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework + "\"" + extra + "}")));
  double bytes = 0;
  for (const Task& t : c.exec.tasks)
    if (t.rank == 0 && t.phase == Phase::Optimizer && t.kind == TaskKind::Compute)
      bytes += c.exec.works[static_cast<size_t>(t.work)].bytes;
  return bytes;
}

}  // namespace

TEST_CASE("torch optimizer: TorchTitan's foreach AdamW and gradient clipping move 92 bytes per parameter") {
  // Fused mixed-precision Adam (DeepSpeed): read master, grad, m, v (16), write master, m, v (12)
  // and the 16-bit copy (2) = 30, with fp32 gradients (DeepSpeed's default are bf16: 28).
  // foreach AdamW: weight decay 8, lerp 12, mul 8, addcmul 12, sqrt 8, div 8, add 8,
  // addcdiv 16 = 80; clip_grad_norm_: norm 4, mul 8 = 12.
  const double fused = step_bytes("deepspeed", R"(,"grad_reduce_in_fp32":true)");
  CHECK(step_bytes("deepspeed") / fused == doctest::Approx(28.0 / 30.0));
  REQUIRE(fused > 0);
  CHECK(step_bytes("fsdp") / fused == doctest::Approx(92.0 / 30.0));
  // FSDP2's sharded gradient is fp32 even when it reduces in bf16: the step reads 4 bytes.
  CHECK(step_bytes("fsdp", R"(,"grad_reduce_in_fp32":false)") == doctest::Approx(step_bytes("fsdp")));
}
