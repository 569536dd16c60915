// Tensor parallelism as PyTorch runs it under framework "fsdp" (TorchTitan: DTensor's
// ColwiseParallel / RowwiseParallel / SequenceParallel, and with strategy.tp_comm_overlap
// Inductor's async TP over symmetric memory), against Megatron-Core with Transformer Engine
// (docs/frameworks/tensor-parallelism-and-moe.md "DTensor tensor parallelism and PyTorch's async TP").
#include <doctest/doctest.h>

#include <string>
#include <vector>
#include "compile_fixtures.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"

using namespace proteus;

namespace {

// GPT-style, 2 layers, hidden 512, ffn 2048, seq 256, micro-batch 1: dp 4 x tp 2 with sequence
// parallelism on one DGX H100 node, ZeRO-3 (FSDP2 under fsdp, Megatron's ZeRO-3 otherwise).
std::string small(const char* framework, bool async_tp) {
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 4,
                           std::string(R"({"dp":4,"tp":2,"sequence_parallel":true,"zero":3,"framework":")") +
                               framework + R"(","tp_comm_overlap":)" + (async_tp ? "true" : "false") + "}");
}

// Rank 0's compute tasks and tensor-parallel collectives of one label and phase, in program
// order (ZeRO-3's weight gathers over dp carry the op's label too and are left out).
std::vector<int> tasks_of(const ExecGraph& g, const char* label, Phase phase) {
  std::vector<int> out;
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const Task& t = g.tasks[i];
    if (t.rank != 0 || t.phase != phase || g.labels[static_cast<size_t>(t.label)] != label) continue;
    if (t.kind == TaskKind::Collective &&
        g.collectives[static_cast<size_t>(t.collective)].axes != axis_bit(kAxisTp))
      continue;
    out.push_back(static_cast<int>(i));
  }
  return out;
}

const Task& task(const ExecGraph& g, int t) { return g.tasks[static_cast<size_t>(t)]; }
const ComputeWork& work(const ExecGraph& g, int t) { return g.works[static_cast<size_t>(task(g, t).work)]; }
using test::collective_of_task;
using test::depends_on;

// The one collective among rank 0's tasks of a label and phase.
int collective_of(const ExecGraph& g, const char* label, Phase phase) {
  int found = -1, n = 0;
  for (int t : tasks_of(g, label, phase))
    if (task(g, t).kind == TaskKind::Collective) {
      found = t;
      ++n;
    }
  REQUIRE(n == 1);
  return found;
}

// Over tp, per micro-batch: all-gathers in the backward.
int tp_backward_gathers(const CompiledModel& c) {
  int n = 0;
  for (const Task& t : c.exec.tasks) {
    if (t.rank != 0 || t.kind != TaskKind::Collective) continue;
    if (t.phase != Phase::BackwardInput && t.phase != Phase::BackwardWeight) continue;
    const Collective& k = c.exec.collectives[static_cast<size_t>(t.collective)];
    if (k.kind == CollectiveKind::AllGather && k.axes == axis_bit(kAxisTp)) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("async TP: a GEMM + reduce-scatter runs as tp chunks, copy-engine pulls and one reduction kernel") {
  // fc2's output, 256 tokens x 512 x 2 bytes = S = 262144 bytes, is partial over tp = 2.
  // torch's fused_matmul_reduce_scatter: chunk for the peer (M/tp = 128 rows), the peer pulls it
  // (S/tp = 131072 bytes, copy engine) while the own chunk computes, then torch.sum over the
  // stacked partials reads S and writes S/tp.
  const CompiledModel c = test::compile_text(small("fsdp", true));
  const ExecGraph& g = c.exec;
  const std::vector<int> fc2 = tasks_of(g, "layers.0.mlp.fc2", Phase::Forward);
  REQUIRE(fc2.size() == 3);
  CHECK(task(g, fc2[0]).kind == TaskKind::Compute);
  CHECK(task(g, fc2[2]).kind == TaskKind::Compute);
  for (int chunk : {fc2[0], fc2[2]}) {
    CHECK(work(g, chunk).gemm_m == 128);
    CHECK(work(g, chunk).sm_reserved == 0);       // no SM-based communication kernel beside it
    CHECK(work(g, chunk).concurrent_gemms == 1);  // issued one after another on the current stream
  }
  const Collective& pull = collective_of_task(g, fc2[1]);
  CHECK(pull.kind == CollectiveKind::RingExchange);
  CHECK(pull.bytes == doctest::Approx(131072));
  CHECK(pull.sm_free);
  CHECK(depends_on(g, fc2[1], fc2[0]));
  CHECK_FALSE(depends_on(g, fc2[2], fc2[1]));  // the own chunk does not wait for the pull

  const std::vector<int> reduce = tasks_of(g, "async_tp_reduce", Phase::Forward);
  REQUIRE(reduce.size() == 2 * 2);  // proj and fc2, two layers
  const int fc2_reduce = reduce[1];
  CHECK(task(g, fc2_reduce).kind == TaskKind::Compute);
  CHECK(work(g, fc2_reduce).bytes == doctest::Approx(262144 * 1.5));
  CHECK(depends_on(g, fc2_reduce, fc2[1]));
  // The dropout after fc2 reads the scattered output: it waits for the reduction.
  const std::vector<int> residual = tasks_of(g, "layers.0.mlp.mlp_dropout", Phase::Forward);
  REQUIRE(!residual.empty());
  bool waits = false;
  for (int t : residual) waits = waits || depends_on(g, t, fc2_reduce);
  CHECK(waits);

  // Megatron-Core with TE's userbuffers: 4 chunks on 116 of 132 SMs, each followed by a
  // reduce-scatter of S/4, and no reduction kernel.
  const CompiledModel te = test::compile_text(small("megatron", true));
  const std::vector<int> te_fc2 = tasks_of(te.exec, "layers.0.mlp.fc2", Phase::Forward);
  REQUIRE(te_fc2.size() == 8);
  CHECK(work(te.exec, te_fc2[0]).sm_reserved == 16);
  CHECK(work(te.exec, te_fc2[0]).concurrent_gemms == 3);  // TE's round-robin compute streams
  CHECK(collective_of_task(te.exec, te_fc2[1]).kind == CollectiveKind::ReduceScatter);
  CHECK(tasks_of(te.exec, "async_tp_reduce", Phase::Forward).empty());
}

TEST_CASE("async TP: no GEMM gives up SMs to bulk kernels; the backward's reduce-scatter is NCCL's") {
  // TE's bulk overlaps (qkv/fc1 dgrad and wgrad beside a 16-SM kernel) do not exist in PyTorch:
  // Inductor fuses only reduce_scatter(A @ B), and an input gradient is a sum over the linears
  // reading the gathered input, so its reduce-scatter stays a NCCL collective.
  const CompiledModel c = test::compile_text(small("fsdp", true));
  const ExecGraph& g = c.exec;
  for (Phase ph : {Phase::BackwardInput, Phase::BackwardWeight})
    for (int t : tasks_of(g, "layers.0.mlp.fc1", ph))
      if (task(g, t).kind == TaskKind::Compute) CHECK(work(g, t).sm_reserved == 0);
  const int rs = collective_of(g, "layers.0.mlp.ln2", Phase::BackwardInput);
  CHECK(collective_of_task(g, rs).kind == CollectiveKind::ReduceScatter);
  CHECK_FALSE(collective_of_task(g, rs).sm_free);
}

TEST_CASE("DTensor TP: a linear keeps its gathered input, so its weight gradient gathers nothing") {
  // The backward's all-gathers over tp: under both, per layer the output gradients of proj and
  // fc2 (gathered for their data-gradient GEMMs), and once the embedding's output gradient;
  // Megatron also gathers the inputs of qkv and fc1 in each layer and of the output layer again,
  // kept as the sequence shard, for their weight gradients.
  const CompiledModel torch = test::compile_text(small("fsdp", false));
  const CompiledModel megatron = test::compile_text(small("megatron", false));
  CHECK(tp_backward_gathers(torch) == 2 * 2 + 1);
  CHECK(tp_backward_gathers(megatron) == 2 * 2 + 1 + 2 * 2 + 1);
  // Kept whole instead of as the shard, 256 x 512 x 2 = 262144 bytes against half of it: the
  // inputs of qkv and fc1 in 2 layers and of the output layer.
  const double kept_torch = torch.stats.activation_bytes_per_microbatch_per_stage[0];
  const double kept_megatron = megatron.stats.activation_bytes_per_microbatch_per_stage[0];
  CHECK(kept_torch - kept_megatron == doctest::Approx((2 * 2 + 1) * 131072.0));
}

TEST_CASE("DTensor TP: an input gradient's reduce-scatter starts after the op's weight gradient") {
  // PyTorch autograd runs fc1's backward node whole (data and weight gradient) before the
  // gradient flows on, and DTensor's reduce-scatter (the backward of the all-gather before fc1)
  // is issued then; the layer norm's backward waits for it. Megatron issues it after the
  // data-gradient GEMM and overlaps it with the weight-gradient GEMM.
  for (const char* framework : {"fsdp", "megatron"}) {
    CAPTURE(framework);
    const bool torch = std::string(framework) == "fsdp";
    const Config config = parse_config(small(framework, false));
    const CompiledModel c = compile(config);
    const ExecGraph& g = c.exec;
    const int rs = collective_of(g, "layers.0.mlp.ln2", Phase::BackwardInput);
    int dgrad = -1, wgrad = -1;
    for (int t : tasks_of(g, "layers.0.mlp.fc1", Phase::BackwardInput))
      if (task(g, t).kind == TaskKind::Compute) dgrad = t;
    for (int t : tasks_of(g, "layers.0.mlp.fc1", Phase::BackwardWeight))
      if (task(g, t).kind == TaskKind::Compute) wgrad = t;
    REQUIRE(dgrad >= 0);
    REQUIRE(wgrad >= 0);
    CHECK(depends_on(g, rs, wgrad) == torch);
    CHECK(depends_on(g, rs, dgrad) == !torch);
    const Trace tr =
        execute(g, cost_model_of(config), build_topology(config.cluster), exec_options_of(config, false));
    const double rs_start = tr.task_start_s[static_cast<size_t>(rs)];
    const double w_end = tr.task_end_s[static_cast<size_t>(wgrad)];
    if (torch)
      CHECK(rs_start >= w_end);
    else
      CHECK(rs_start < w_end);
  }
}

TEST_CASE("DTensor TP under FP8: the input is cast on its shard and gathered in FP8, then kept whole") {
  // torchao's Float8ColwiseParallel / PrepareFloat8ModuleInput (TorchTitan's float8 TP) cast
  // the sequence shard and all-gather the FP8 tensor, as TE does; the linear then keeps the
  // gathered FP8 input. So the forward's cast moves the same bytes under both frameworks, and
  // the gathered input's FP8 copy, not the shard, is what the backward keeps.
  auto fp8 = [](const char* framework) {
    return test::compile_text(
        R"({"model":)" + test::gpt_model(2, 512, 8, 256, 8000) +
        R"(,"cluster":{"preset":"dgx-h100","nodes":1},"training":{"global_batch":4,"precision":"fp8",)"
        R"("fp8_recipe":"current","optimizer":"adam"},"strategy":{"dp":4,"tp":2,"sequence_parallel":true,)"
        R"("zero":3,"framework":")" +
        framework + "\"}}");
  };
  const CompiledModel torch = fp8("fsdp"), megatron = fp8("megatron");
  // Current scaling's cast of the layer norm's output: read 2 + write 1 bytes per element of
  // the 128 x 512 shard; the norm computed the amax.
  for (const char* label : {"layers.0.attention.q_proj", "layers.0.mlp.fc1"}) {
    CAPTURE(label);
    const ComputeWork* t = test::compute_work_ending(torch, Phase::Forward, label);
    const ComputeWork* m = test::compute_work_ending(megatron, Phase::Forward, label);
    REQUIRE(t != nullptr);
    REQUIRE(m != nullptr);
    CHECK(t->side_bytes == doctest::Approx(3.0 * 128 * 512));
    CHECK(m->side_bytes == doctest::Approx(3.0 * 128 * 512));
  }
  // fc1's input, 256 x 512 elements: kept as 128 x 512 FP8 bytes (+ the norm's output where its
  // backward reads it) under Megatron, as 256 x 512 under torch; 2 layers, qkv and fc1 each,
  // and the output layer's bf16 input (not an FP8 linear: 131072 more, as in bf16).
  const double more = torch.stats.activation_bytes_per_microbatch_per_stage[0] -
                      megatron.stats.activation_bytes_per_microbatch_per_stage[0];
  CHECK(more == doctest::Approx(2 * 2 * 65536.0 + 131072.0));
}
