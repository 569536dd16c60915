// PyTorch's context-parallel attention (framework fsdp; compile/pass_torch_cp.cpp,
// docs/frameworks/context-parallelism.md "PyTorch's context-parallel attention"): _templated_ring_attention's
// SDPA steps and the K/V and dK/dV transfers between them, on the repeated K/V TorchTitan hands to SDPA.
// Transformer Engine's all-gather (framework megatron) is left as it was.
#include <doctest/doctest.h>

#include <string>
#include <vector>
#include "compile_fixtures.h"
#include "proteus/compile.h"

using namespace proteus;
using test::collective_of_task;
using test::depends_on;

namespace {

// The tiny Llama (8 heads, 2 KV heads: n_rep 4; sequence 2048) with flash attention, dp 2 x cp 4
// on one DGX H100 node, one micro-batch of one sequence per rank: 512 tokens per rank.
std::string cp_config(const std::string& framework, const std::string& method) {
  const std::string zero = framework == "fsdp" ? "3" : "1";
  return test::config_json(test::tiny_llama_model(R"(,"flash_attention":true)"),
                           R"({"preset":"dgx-h100","nodes":1})", 2,
                           R"({"dp":2,"cp":4,"micro_batch":1,"cp_comm_type":")" + method + R"(","zero":)" +
                               zero + R"(,"framework":")" + framework + "\"}");
}

// Per rank, the grouped K + V of its 512 tokens (2 x 2 heads x 128 x 512 x 2 bytes), and as
// SDPA reads them, repeated to the 8 query heads.
constexpr double kLocalKv = 2.0 * 2 * 128 * 512 * 2;
constexpr double kRepeatedKv = 4 * kLocalKv;

// Rank 0's tasks of micro-batch 0 labelled `label` in `phase`, in program order.
std::vector<int> tasks_of(const CompiledModel& c, const std::string& label, Phase phase) {
  std::vector<int> out;
  for (size_t i = 0; i < c.exec.tasks.size(); ++i) {
    const Task& t = c.exec.tasks[i];
    if (t.rank == 0 && t.phase == phase && t.micro_batch == 0 &&
        c.exec.labels[static_cast<size_t>(t.label)] == label)
      out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> of_kind(const CompiledModel& c, const std::vector<int>& tasks, TaskKind kind) {
  std::vector<int> out;
  for (int t : tasks)
    if (c.exec.tasks[static_cast<size_t>(t)].kind == kind) out.push_back(t);
  return out;
}

const char* const kAttn = "layers.0.attention.attn";

}  // namespace

TEST_CASE("torch cp: the all-gather rotater gathers the repeated K/V beside the first step") {
  const CompiledModel c = test::compile_text(cp_config("fsdp", "all_gather"));
  const std::vector<int> tasks = tasks_of(c, kAttn, Phase::Forward);
  const std::vector<int> steps = of_kind(c, tasks, TaskKind::Compute);
  const std::vector<int> comms = of_kind(c, tasks, TaskKind::Collective);
  REQUIRE(steps.size() == 4);  // one SDPA call per cp step
  REQUIRE(comms.size() == 1);
  const Collective& gather = collective_of_task(c.exec, comms[0]);
  CHECK(gather.kind == CollectiveKind::AllGather);
  CHECK(gather.axes == axis_bit(kAxisCp));
  CHECK(gather.bytes == doctest::Approx(4 * kRepeatedKv));  // the gathered output, cp shards
  // Step 0 runs on the local K/V while the gather is in flight; the others wait for it.
  CHECK_FALSE(depends_on(c.exec, steps[0], comms[0]));
  for (size_t i = 1; i < steps.size(); ++i) CHECK(depends_on(c.exec, steps[i], comms[0]));
  // Nothing gathers K/V over cp before the attention any more.
  CHECK(test::count_collectives(c, CollectiveKind::AllGather, axis_bit(kAxisCp), Phase::Forward,
                                "layers.0.attention.rotary_k")
            .count == 0);
}

TEST_CASE("torch cp: the backward rotates fp32 dK/dV after every step, the last one exposed") {
  const CompiledModel c = test::compile_text(cp_config("fsdp", "all_gather"));
  const std::vector<int> tasks = tasks_of(c, kAttn, Phase::BackwardInput);
  const std::vector<int> steps = of_kind(c, tasks, TaskKind::Compute);
  const std::vector<int> comms = of_kind(c, tasks, TaskKind::Collective);
  REQUIRE(steps.size() == 4);
  REQUIRE(comms.size() == 5);  // the K/V gathered again, then 4 dK/dV transfers
  CHECK(collective_of_task(c.exec, comms[0]).kind == CollectiveKind::AllGather);
  for (size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(i);
    const int transfer = comms[i + 1];
    CHECK(collective_of_task(c.exec, transfer).kind == CollectiveKind::RingExchange);
    CHECK(collective_of_task(c.exec, transfer).bytes == doctest::Approx(2 * kRepeatedKv));  // fp32
    CHECK(depends_on(c.exec, transfer, steps[i]));
    if (i >= 2) CHECK(depends_on(c.exec, steps[i], comms[i - 1]));  // the transfer after step i - 2
  }
  // The fp32 accumulation that ends the backward waits for the last transfer.
  const std::vector<int> accumulate = tasks_of(c, "cp_grad_accumulate", Phase::BackwardInput);
  REQUIRE(accumulate.size() == 2);  // one per layer, layer 1's first
  CHECK(depends_on(c.exec, accumulate.back(), comms.back()));
  // dK/dV come back summed by the ring: no reduce-scatter over cp.
  CHECK(test::count_collectives(c, CollectiveKind::ReduceScatter, axis_bit(kAxisCp), Phase::BackwardInput,
                                "layers.0.attention")
            .count == 0);
}

TEST_CASE("torch cp: the all-to-all rotater passes repeated K/V, and fp32 dK/dV beside them") {
  const CompiledModel c = test::compile_text(cp_config("fsdp", "p2p"));
  const std::vector<int> fwd = of_kind(c, tasks_of(c, kAttn, Phase::Forward), TaskKind::Collective);
  REQUIRE(fwd.size() == 3);  // cp - 1 steps
  for (int t : fwd) CHECK(collective_of_task(c.exec, t).bytes == doctest::Approx(kRepeatedKv));
  const std::vector<int> bwd = of_kind(c, tasks_of(c, kAttn, Phase::BackwardInput), TaskKind::Collective);
  REQUIRE(bwd.size() == 4);  // cp - 1 steps of K/V and dK/dV, and dK/dV once more after the last
  for (size_t i = 0; i + 1 < bwd.size(); ++i)
    CHECK(collective_of_task(c.exec, bwd[i]).bytes == doctest::Approx(kRepeatedKv + 2 * kRepeatedKv));
  CHECK(collective_of_task(c.exec, bwd.back()).bytes == doctest::Approx(2 * kRepeatedKv));
}

TEST_CASE("torch cp: Transformer Engine's all-gather gathers the grouped K/V before one kernel") {
  const CompiledModel c = test::compile_text(cp_config("megatron", "all_gather"));
  const std::vector<int> tasks = tasks_of(c, kAttn, Phase::Forward);
  CHECK(of_kind(c, tasks, TaskKind::Compute).size() == 1);
  CHECK(of_kind(c, tasks, TaskKind::Collective).empty());
  const test::CollCount gather = test::count_collectives(c, CollectiveKind::AllGather, axis_bit(kAxisCp),
                                                         Phase::Forward, "layers.0.attention");
  CHECK(gather.count == 1);
  CHECK(gather.bytes == doctest::Approx(4 * kLocalKv));
}
