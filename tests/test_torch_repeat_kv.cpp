// TorchTitan's repeat_kv (model/layers.h, repeat_kv_bytes; docs/frameworks/attention-and-kernels.md "Grouped
// K and V repeated before SDPA"): under grouped-query attention its Llama expands K and V to every query head
// before F.scaled_dot_product_attention, a copy each way and the repeated tensors saved.
#include <doctest/doctest.h>

#include <string>
#include "../core/src/model/layers.h"
#include "compile_fixtures.h"

using namespace proteus;
using namespace proteus::model;

namespace {

// The tiny Llama (8 heads, 2 KV heads: n_rep 4; 2 layers) with flash attention on 8 GPUs,
// one micro-batch of 2048 tokens per rank, FSDP2-style ZeRO-3.
std::string llama_config(const std::string& framework, const std::string& recompute, bool gqa = true) {
  std::string model = test::tiny_llama_model(R"(,"flash_attention":true)");
  if (!gqa) model.replace(model.find(R"("kv_heads":2)"), 12, R"("kv_heads":8)");
  return test::config_json(model, R"({"preset":"dgx-h100","nodes":1})", 8,
                           R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework +
                               R"(","recompute":")" + recompute + R"("})");
}

double activations_per_micro_batch(const CompiledModel& c) {
  return c.stats.activation_bytes_per_microbatch_per_stage.at(0);
}

// Per rank: K + V of 2 KV heads x 128 x 2048 tokens x 2 bytes.
constexpr double kKvBytes = 2.0 * 2 * 128 * 2048 * 2;

}  // namespace

TEST_CASE("repeat_kv: a copy to n_rep heads each way, the repeated tensors saved") {
  // Read K/V once and write them n_rep times; the gradient's sum reads n_rep and writes one.
  CHECK(repeat_kv_bytes(1000, 4).forward == 5000);
  CHECK(repeat_kv_bytes(1000, 4).backward == 5000);
  // SDPA keeps the repeated tensors where it would have kept the grouped ones.
  CHECK(repeat_kv_bytes(1000, 4).saved == 3000);
  // Multi-head attention: repeat_kv returns its input, nothing is copied.
  CHECK(repeat_kv_bytes(1000, 1).forward == 0);
  CHECK(repeat_kv_bytes(1000, 1).backward == 0);
  CHECK(repeat_kv_bytes(1000, 1).saved == 0);
}

TEST_CASE("repeat_kv: without recompute TorchTitan keeps n_rep - 1 more K/V per layer than Megatron") {
  // Everything else each framework saves is alike here (same tensors, no dropout): the
  // difference is SDPA's repeated K and V, 3 more copies of K/V in each of the 2 layers.
  const double megatron = activations_per_micro_batch(test::compile_text(llama_config("megatron", "none")));
  const double fsdp = activations_per_micro_batch(test::compile_text(llama_config("fsdp", "none")));
  CHECK(fsdp - megatron == doctest::Approx(2 * 3 * kKvBytes));
}

TEST_CASE("repeat_kv: full AC makes the repeated K/V again instead of keeping them") {
  // Full AC keeps each block's input only, whichever framework: the forward keeps no repeated
  // K/V, TorchTitan no more than Megatron. (Op-level SAC saves mm and SDPA outputs, never a
  // copy's: test_torch_op_sac.cpp's "the forward keeps the block's input and the saved outputs"
  // holds that on this GQA model.)
  const double fsdp = activations_per_micro_batch(test::compile_text(llama_config("fsdp", "full")));
  const double megatron = activations_per_micro_batch(test::compile_text(llama_config("megatron", "full")));
  CHECK(fsdp == doctest::Approx(megatron));
}

TEST_CASE("repeat_kv: multi-head attention repeats nothing") {
  // kv_heads = heads: n_rep 1, so TorchTitan's attention carries no side kernels.
  const CompiledModel mha = test::compile_text(llama_config("fsdp", "none", false));
  const ComputeWork* w = test::compute_work_ending(mha, Phase::Forward, "layers.0.attention.attn");
  REQUIRE(w != nullptr);
  CHECK(w->side_bytes == 0);
}

TEST_CASE("repeat_kv: under context parallelism each rank repeats its own K/V shard") {
  // cp 2: the model code repeats the rank's half of the sequence, before PyTorch's ring gathers
  // it, so the copies move half of what they move without cp.
  for (const std::string method : {"all_gather", "p2p"}) {
    CAPTURE(method);
    const CompiledModel cp = test::compile_text(test::config_json(
        test::tiny_llama_model(R"(,"flash_attention":true)"), R"({"preset":"dgx-h100","nodes":1})", 4,
        std::string(R"({"dp":4,"cp":2,"micro_batch":1,"zero":3,"framework":"fsdp","cp_comm_type":")") +
            method + R"("})"));
    // The p2p ring runs the attention as cp blocks, each with its share of the side kernels.
    double side_bytes = 0;
    for (const Task& t : cp.exec.tasks)
      if (t.kind == TaskKind::Compute && t.rank == 0 && t.micro_batch == 0 && t.phase == Phase::Forward &&
          cp.exec.labels[static_cast<size_t>(t.label)] == "layers.0.attention.attn")
        side_bytes += cp.exec.works[static_cast<size_t>(t.work)].side_bytes;
    CHECK(side_bytes == doctest::Approx(5 * kKvBytes / 2));
  }
}
