// FP8 amax reductions as Transformer Engine runs them under Megatron-Core
// (docs/frameworks/fp8.md "FP8 amax reduction"): delayed scaling's all-reduce of the whole amax
// buffer at the exit of each chunk's fp8_autocast and after the backward of its first FP8
// module; current scaling's one-fp32 all-reduce over tp before each sequence-parallel cast.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/compile.h"

using namespace proteus;

namespace {

// GPT-style, hidden 512, 8 heads, seq 256, vocab 8000, on one DGX H100 node, FP8 with `recipe`.
std::string fp8_config(int layers, const std::string& strategy, const char* recipe,
                       int64_t global_batch = 8) {
  return "{\"model\":" + test::gpt_model(layers, 512, 8, 256, 8000) +
         ",\"cluster\":{\"preset\":\"dgx-h100\",\"nodes\":1},\"training\":{\"global_batch\":" +
         std::to_string(global_batch) + ",\"precision\":\"fp8\",\"fp8_recipe\":\"" + recipe +
         "\",\"optimizer\":\"adam\"},\"strategy\":" + strategy + "}";
}

struct Amax {
  int count = 0;
  double bytes = 0;
  AxisMask axes = 0;
  Stream stream = Stream::TpComm;
};

// The fp8_amax all-reduces of simulated rank `rank` in `phase` (every micro-batch).
Amax amax_reductions(const CompiledModel& c, Phase phase, int rank = 0) {
  Amax a;
  for (const Task& t : c.exec.tasks) {
    if (t.kind != TaskKind::Collective || t.rank != rank || t.phase != phase) continue;
    const Collective& col = c.exec.collectives[static_cast<size_t>(t.collective)];
    const std::string& label = c.exec.labels[static_cast<size_t>(t.label)];
    const bool delayed = label == "fp8_amax_reduction";
    const bool current =
        col.kind == CollectiveKind::AllReduce && col.bytes == 4 && col.axes == axis_bit(kAxisTp);
    if (!delayed && !current) continue;
    ++a.count;
    a.bytes = col.bytes;
    a.axes = col.axes;
    a.stream = t.stream;
  }
  return a;
}

// The label of the compute-queue task before and after `task` on its rank.
std::pair<std::string, std::string> neighbours(const CompiledModel& c, int task) {
  const Task& t = c.exec.tasks[static_cast<size_t>(task)];
  const auto& q =
      c.exec.queues[static_cast<size_t>(t.rank) * kNumStreams + static_cast<size_t>(Stream::Compute)];
  for (size_t i = 1; i + 1 < q.size(); ++i)
    if (q[i] == task)
      return {c.exec.labels[static_cast<size_t>(c.exec.tasks[static_cast<size_t>(q[i - 1])].label)],
              c.exec.labels[static_cast<size_t>(c.exec.tasks[static_cast<size_t>(q[i + 1])].label)]};
  return {};
}

}  // namespace

TEST_CASE("fp8 amax: delayed scaling all-reduces the rank's amax buffer once per forward and backward pass") {
  // tp 2 x dp 2 x pp 2 on 8 H100, 2 layers (one per stage), micro-batch 1, global batch 8:
  // m = 8 / (dp 2 x 1) = 4 micro-batches. Megatron's TE modules per layer: linear_qkv (the op
  // graph's q_proj + kv_proj, one GEMM on one input), linear_proj, linear_fc1, linear_fc2 = 4
  // GEMMs; the output layer is not a TE module. Per stage 4 GEMMs:
  //   forward buffer  4 GEMMs x 3 amaxes (input, weight, output) x 4 bytes = 48 bytes,
  //   backward buffer 4 GEMMs x 2 amaxes (grad_output, grad_input) x 4 bytes = 32 bytes,
  // over the amax reduction group tp x dp of the stage (not pp), on the compute stream
  // (async_op=False), once per micro-batch each way: 4 + 4 per iteration.
  const CompiledModel c =
      test::compile_text(fp8_config(2, R"({"tp":2,"dp":2,"pp":2,"micro_batch":1})", "delayed"));
  for (int rank = 0; rank < 2; ++rank) {  // one simulated rank per stage
    const Amax fwd = amax_reductions(c, Phase::Forward, rank);
    const Amax bwd = amax_reductions(c, Phase::BackwardInput, rank);
    CHECK(fwd.count == 4);
    CHECK(bwd.count == 4);
    CHECK(fwd.bytes == 48);
    CHECK(bwd.bytes == 32);
    CHECK(fwd.axes == (axis_bit(kAxisTp) | axis_bit(kAxisDp)));
    CHECK(fwd.stream == Stream::Compute);
    CHECK(bwd.stream == Stream::Compute);
  }
  // Placement on stage 1 (layer 1, then the final norm and the output layer): the forward
  // reduction follows the layer's last op (the autocast wraps TransformerBlock's layers) and
  // precedes the final norm; the backward one follows the backward of linear_qkv (q_proj), the
  // region's first FP8 module.
  for (size_t i = 0; i < c.exec.tasks.size(); ++i) {
    const Task& t = c.exec.tasks[i];
    if (t.rank != 1 || t.micro_batch != 0 ||
        c.exec.labels[static_cast<size_t>(t.label)] != "fp8_amax_reduction")
      continue;
    const auto [before, after] = neighbours(c, static_cast<int>(i));
    if (t.phase == Phase::Forward) {
      CHECK(before.rfind("layers.1.", 0) == 0);
      CHECK(after.rfind("layers.", 0) != 0);
    } else {
      CHECK(before == "layers.1.attention.q_proj");
    }
  }
  // Interleaved, 4 layers on pp 2 x 2 chunks: TE keeps one buffer per (recipe, group) with every
  // module of the rank, so each chunk's reduction carries both chunks' 2 layers: 8 GEMMs,
  // 96 bytes forward, 64 backward.
  const CompiledModel v = test::compile_text(fp8_config(
      4, R"({"tp":2,"dp":2,"pp":2,"micro_batch":1,"schedule":"interleaved-1f1b","virtual_stages":2})",
      "delayed"));
  CHECK(amax_reductions(v, Phase::Forward).count == 2 * 4);
  CHECK(amax_reductions(v, Phase::Forward).bytes == 96);
  CHECK(amax_reductions(v, Phase::BackwardInput).bytes == 64);
}

TEST_CASE("fp8 amax: current scaling reduces one amax over tp per sequence-parallel cast, none without SP") {
  // tp 2 with sequence parallelism, 2 layers, pp 1, dp 4, micro-batch 1, global batch 8: m = 2.
  // TE Linear._customize_quantizers_float8_current_scaling: column-parallel + SP -> the input's
  // amax all-reduced over tp (linear_qkv, linear_fc1: 2 per layer per forward); row-parallel +
  // SP -> the output gradient's amax (linear_proj, linear_fc2: 2 per layer per backward).
  // 2 layers x 2 = 4 per micro-batch each way, one fp32 (4 bytes) each: 8 forward, 8 backward.
  const CompiledModel sp = test::compile_text(
      fp8_config(2, R"({"tp":2,"dp":4,"micro_batch":1,"sequence_parallel":true})", "current"));
  CHECK(amax_reductions(sp, Phase::Forward).count == 2 * 4);
  CHECK(amax_reductions(sp, Phase::BackwardInput).count == 2 * 4);
  CHECK(amax_reductions(sp, Phase::Forward).stream == Stream::TpComm);
  // Without SP the inputs are whole on every tp rank: no reduction; delayed scaling has none
  // per GEMM; MXFP8 (block scales) has none at all.
  const CompiledModel no_sp =
      test::compile_text(fp8_config(2, R"({"tp":2,"dp":4,"micro_batch":1})", "current"));
  CHECK(amax_reductions(no_sp, Phase::Forward).count == 0);
  CHECK(amax_reductions(no_sp, Phase::BackwardInput).count == 0);
  const CompiledModel mx = test::compile_text(
      fp8_config(2, R"({"tp":2,"dp":4,"micro_batch":1,"sequence_parallel":true})", "mxfp8"));
  CHECK(amax_reductions(mx, Phase::Forward).count == 0);
  CHECK(amax_reductions(mx, Phase::BackwardInput).count == 0);
}

TEST_CASE(
    "fp8 amax: --tp-only-amax-red reduces delayed scaling's amaxes over tp x cp only; errors name the field") {
  // Megatron get_amax_reduction_group(with_context_parallel=True, tp_only_amax_red=True) =
  // _TENSOR_AND_CONTEXT_PARALLEL_GROUP. tp 2 x cp 2 x dp 2 on 8 H100, 2 layers, micro-batch 1,
  // global batch 8: m = 8 / 2 = 4 micro-batches, 4 GEMMs per layer, 2 layers on the one stage:
  // 8 GEMMs x 3 x 4 = 96 bytes forward, 8 x 2 x 4 = 64 backward, as without the flag; the group
  // drops dp: tp | cp instead of tp | cp | dp.
  const std::string mesh = R"("tp":2,"cp":2,"dp":2,"micro_batch":1)";
  const CompiledModel all = test::compile_text(fp8_config(2, "{" + mesh + "}", "delayed"));
  const CompiledModel tp =
      test::compile_text(fp8_config(2, "{" + mesh + ",\"tp_only_amax_red\":true}", "delayed"));
  const Amax a = amax_reductions(all, Phase::Forward), t = amax_reductions(tp, Phase::Forward);
  CHECK(a.axes == (axis_bit(kAxisTp) | axis_bit(kAxisCp) | axis_bit(kAxisDp)));
  CHECK(t.axes == (axis_bit(kAxisTp) | axis_bit(kAxisCp)));
  CHECK(t.count == 4);
  CHECK(t.bytes == 96);
  CHECK(amax_reductions(tp, Phase::BackwardInput).bytes == 64);
  CHECK(amax_reductions(tp, Phase::BackwardInput).axes == (axis_bit(kAxisTp) | axis_bit(kAxisCp)));
  // Without FP8 the flag is an error naming it.
  std::string bf16 = fp8_config(2, "{" + mesh + ",\"tp_only_amax_red\":true}", "delayed");
  const std::string fp8 = "\"precision\":\"fp8\",\"fp8_recipe\":\"delayed\"";
  bf16.replace(bf16.find(fp8), fp8.size(), "\"precision\":\"bf16\"");
  CHECK(test::error_path([&] { test::compile_text(bf16); }) == "strategy.tp_only_amax_red");
}
