// The language model's cross-entropy in memory (compile/cross_entropy_memory.h;
// docs/frameworks/attention-and-kernels.md "The cross-entropy's memory"): what Megatron's in-place fp32 loss
// and PyTorch's F.cross_entropy(logits.float()) hold while they run, and TorchTitan's published peak.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../core/src/compile/cross_entropy_memory.h"
#include "compile_fixtures.h"
#include "search_test_helpers.h"

using namespace proteus;

namespace {

// Rank 0's activation bytes allocated as the first `phase` task of `label` starts, and those it
// leaves allocated when it ends (what it keeps).
struct LossMemory {
  double at_start = 0, kept = 0;
};

LossMemory loss_memory(const CompiledModel& c, Phase phase) {
  for (size_t t = 0; t < c.exec.tasks.size(); ++t) {
    const Task& task = c.exec.tasks[t];
    if (task.kind != TaskKind::Compute || task.rank != 0 || task.phase != phase ||
        c.exec.labels[task.label] != "head.loss")
      continue;
    LossMemory m;
    for (const MemEvent& e : test::task_mem_events(c.exec, t))
      if (e.category == MemCategory::Activations) (e.at_end ? m.kept : m.at_start) += e.bytes;
    m.kept += m.at_start;
    return m;
  }
  FAIL("no loss task");
  return {};
}

// The tiny Llama (vocab 32,000) on 8 GPUs, one micro-batch of 2048 tokens per rank, bf16.
std::string llama_config(const std::string& framework, int tp) {
  const std::string dp = std::to_string(8 / tp);
  return test::config_json(test::tiny_llama_model(R"(,"flash_attention":true)"),
                           R"({"preset":"dgx-h100","nodes":1})", 8 / tp,
                           R"({"dp":)" + dp + R"(,"tp":)" + std::to_string(tp) +
                               R"(,"micro_batch":1,"zero":3,"framework":")" + framework + R"("})");
}

constexpr double kLogits = 2048.0 * 32000;  // per rank without tensor parallelism

}  // namespace

TEST_CASE("cross-entropy memory: bytes per logit as each framework's code allocates them") {
  // Megatron: the .float() copy becomes the softmax in place (bf16 logits 2 + fp32 4 while the
  // forward runs, 4 kept); the backward's gradient is that buffer, cast to bf16 (2 more).
  const CrossEntropyMemory megatron = megatron_cross_entropy_memory(2);
  CHECK(megatron.saved == 4);
  CHECK(megatron.forward_peak == 6);
  CHECK(megatron.backward_extra == 2);
  // fp32 logits: .float() returns them, modified in place; the gradient needs no cast.
  CHECK(megatron_cross_entropy_memory(4).forward_peak == 4);
  CHECK(megatron_cross_entropy_memory(4).backward_extra == 0);
  // PyTorch: logits 2, fp32 copy 4 and log_softmax's output 4 at once; the backward's
  // nll_loss_backward and _log_softmax_backward_data results, 4 + 4, beside the saved output.
  const CrossEntropyMemory torch = torch_cross_entropy_memory(2, false);
  CHECK(torch.saved == 4);
  CHECK(torch.forward_peak == 10);
  CHECK(torch.backward_extra == 8);
  CHECK(torch_cross_entropy_memory(4, false).forward_peak == 8);
  // DTensor's loss_parallel: shifted logits and exp beside the copy (2 + 4 + 4 + 4); the fused
  // backward's zeros, exp and sum beside the saved output.
  const CrossEntropyMemory parallel = torch_cross_entropy_memory(2, true);
  CHECK(parallel.saved == 4);
  CHECK(parallel.forward_peak == 14);
  CHECK(parallel.backward_extra == 12);
}

TEST_CASE("cross-entropy memory: the loss's tasks hold it, at the rank's share of the logits") {
  // Bytes per rank: the forward holds the peak as it starts and keeps the fp32 softmax; the
  // backward holds its extra while it runs and releases the softmax.
  const LossMemory torch_fwd = loss_memory(test::compile_text(llama_config("fsdp", 1)), Phase::Forward);
  CHECK(torch_fwd.at_start == doctest::Approx(10 * kLogits));
  CHECK(torch_fwd.kept == doctest::Approx(4 * kLogits));
  const LossMemory torch_bwd = loss_memory(test::compile_text(llama_config("fsdp", 1)), Phase::BackwardInput);
  CHECK(torch_bwd.at_start == doctest::Approx(8 * kLogits));
  CHECK(torch_bwd.kept == doctest::Approx(-4 * kLogits));
  const CompiledModel megatron = test::compile_text(llama_config("megatron", 1));
  CHECK(loss_memory(megatron, Phase::Forward).at_start == doctest::Approx(6 * kLogits));
  CHECK(loss_memory(megatron, Phase::Forward).kept == doctest::Approx(4 * kLogits));
  CHECK(loss_memory(megatron, Phase::BackwardInput).at_start == doctest::Approx(2 * kLogits));
  // Tensor parallelism splits the vocabulary: half the logits per rank; TorchTitan then runs
  // DTensor's loss_parallel.
  const CompiledModel tp2 = test::compile_text(llama_config("megatron", 2));
  CHECK(loss_memory(tp2, Phase::Forward).at_start == doctest::Approx(6 * kLogits / 2));
  const CompiledModel torch_tp2 = test::compile_text(llama_config("fsdp", 2));
  CHECK(loss_memory(torch_tp2, Phase::Forward).at_start == doctest::Approx(14 * kLogits / 2));
  CHECK(loss_memory(torch_tp2, Phase::BackwardInput).at_start == doctest::Approx(12 * kLogits / 2));
}

TEST_CASE("cross-entropy memory: TorchTitan's Llama 3.1 8B peak against its published memory") {
  // pytorch/torchtitan docs/performance.md (eaea6f6) Table 1: FSDP on 8 H100 (96 GiB), local
  // batch 2 x 8192, selective AC: 82.4 GiB, the caching allocator's max_reserved (train.py logs
  // device_mem_stats.max_reserved_gib), which is at least the tensors' peak. With 128,256 logits a
  // token the loss's fp32 tensors are 23.5 GiB at their peak; without them the prediction was
  // 54.4 GiB, a third below.
  const std::string config =
      R"({"model":{"preset":"llama3-8b","seq_len":8192},)"
      R"("cluster":{"preset":"dgx-h100","nodes":1,"gpu":{"memory_GiB":96,"hbm_GBps":2400}},)"
      R"("training":{"global_batch":16,"seq_len":8192,"precision":"bf16","optimizer":"adam"},)"
      R"("strategy":{"dp":8,"micro_batch":2,"zero":3,"recompute":"selective","framework":"fsdp"}})";
  const double peak_GiB = test::simulate(parse_config(config)).peak_bytes / kBytesPerGiB;
  CHECK(peak_GiB < 82.4);
  CHECK(peak_GiB > 0.85 * 82.4);
}
