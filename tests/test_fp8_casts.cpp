// FP8 linears as Transformer Engine runs them (docs/frameworks/fp8.md "FP8 casts, gathers and saved
// inputs"): the sequence-parallel all-gathers move the FP8 copy (1 byte per element), the norm
// feeding a LayerNormLinear writes FP8 itself under delayed scaling, the transposes run where
// TE runs them, and the input saved for the weight gradient is the FP8 copy.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "proteus/compile.h"

using namespace proteus;

namespace {

// GPT-style (LayerNorm, GELU MLP 4h), 2 layers, hidden 512, 8 heads, seq 256, vocab 8000, on one
// DGX H100 node: tp 2 with sequence parallelism, dp 4, micro-batch 1, one micro-batch.
// Per rank and micro-batch, E = 256 tokens x 512 = 131,072 elements of a hidden-wide
// activation; its sequence shard is E/2 = 65,536.
std::string config(const std::string& training, const std::string& extra_strategy = "",
                   const std::string& extra_model = "") {
  std::string model = test::gpt_model(2, 512, 8, 256, 8000);
  model.insert(model.size() - 1, extra_model);
  return "{\"model\":" + model + ",\"cluster\":{\"preset\":\"dgx-h100\",\"nodes\":1},\"training\":{" +
         "\"global_batch\":4,\"optimizer\":\"adam\"," + training +
         "},\"strategy\":{\"tp\":2,\"dp\":4,\"sequence_parallel\":true,\"micro_batch\":1" + extra_strategy +
         "}}";
}

const std::string kBf16 = "\"precision\":\"bf16\"";
const std::string kDelayed = "\"precision\":\"fp8\",\"fp8_recipe\":\"delayed\"";
constexpr double E = 256.0 * 512;

bool is(const CompiledModel& c, const Task& t, const std::string& label, Phase phase) {
  return t.rank == 0 && t.micro_batch == 0 && t.phase == phase &&
         c.exec.labels[static_cast<size_t>(t.label)] == label;
}

// Bytes (S) of the tp all-gathers of rank 0, micro-batch 0, labelled `label`, in `phase`.
double tp_gathers(const CompiledModel& c, const std::string& label, Phase phase) {
  double bytes = 0;
  for (const Task& t : c.exec.tasks) {
    if (t.kind != TaskKind::Collective || !is(c, t, label, phase)) continue;
    const Collective& col = c.exec.collectives[static_cast<size_t>(t.collective)];
    if (col.kind == CollectiveKind::AllGather && col.axes == axis_bit(kAxisTp)) bytes += col.bytes;
  }
  return bytes;
}

// The compute work of `label` in `phase` (rank 0, micro-batch 0).
const ComputeWork& work(const CompiledModel& c, const std::string& label, Phase phase) {
  for (const Task& t : c.exec.tasks)
    if (t.kind == TaskKind::Compute && is(c, t, label, phase))
      return c.exec.works[static_cast<size_t>(t.work)];
  FAIL("no compute task " << label);
  static ComputeWork none;
  return none;
}

}  // namespace

TEST_CASE("fp8 casts: sequence-parallel all-gathers move the FP8 copy, 1 byte per element") {
  const CompiledModel bf = test::compile_text(config(kBf16));
  const CompiledModel f8 = test::compile_text(config(kDelayed));
  const CompiledModel mx = test::compile_text(config("\"precision\":\"fp8\",\"fp8_recipe\":\"mxfp8\""));
  // Forward: ln1's output gathered for q/kv (TE gathers ln_out in FP8): S = E x 2 bytes in
  // bf16, E x 1 in FP8, E x (1 + 1/32) with MXFP8's E8M0 scale per 32 values.
  CHECK(tp_gathers(bf, "layers.0.attention.ln1", Phase::Forward) == doctest::Approx(2 * E));
  CHECK(tp_gathers(f8, "layers.0.attention.ln1", Phase::Forward) == doctest::Approx(E));
  CHECK(tp_gathers(mx, "layers.0.attention.ln1", Phase::Forward) == doctest::Approx(E * (1 + 1.0 / 32)));
  CHECK(tp_gathers(f8, "layers.1.mlp.ln2", Phase::Forward) == doctest::Approx(E));
  // Backward: the saved FP8 shard gathered again once for the weight gradients of q and kv
  // (by kv_proj's backward, which runs first), and for fc1's.
  double regather_qkv = 0;
  for (const char* op : {"layers.0.attention.q_proj", "layers.0.attention.kv_proj"})
    for (Phase ph : {Phase::BackwardInput, Phase::BackwardWeight}) regather_qkv += tp_gathers(f8, op, ph);
  CHECK(regather_qkv == doctest::Approx(E));
  CHECK(tp_gathers(f8, "layers.0.mlp.fc1", Phase::BackwardInput) +
            tp_gathers(f8, "layers.0.mlp.fc1", Phase::BackwardWeight) ==
        doctest::Approx(E));
  // The row-parallel o_proj and fc2: output gradient (E elements) gathered in FP8.
  CHECK(tp_gathers(bf, "layers.0.attention.o_proj", Phase::BackwardInput) == doctest::Approx(2 * E));
  CHECK(tp_gathers(f8, "layers.0.attention.o_proj", Phase::BackwardInput) == doctest::Approx(E));
  CHECK(tp_gathers(f8, "layers.0.mlp.fc2", Phase::BackwardInput) == doctest::Approx(E));
  // The output layer stays 16-bit: the final norm's output is gathered at 2 bytes.
  CHECK(tp_gathers(f8, "final_norm.final_norm", Phase::Forward) == doctest::Approx(2 * E));
}

TEST_CASE("fp8 casts: fused norm, cast and transpose kernels as TE runs them (delayed scaling)") {
  const CompiledModel bf = test::compile_text(config(kBf16));
  const CompiledModel f8 = test::compile_text(config(kDelayed));
  // q_proj (LayerNormLinear, column-parallel, gathered input): the norm writes FP8 itself, so no
  // cast before the GEMM; the FP8 transpose of the gathered input (read 1 + write 1 per
  // element) runs before the weight gradient: 2E. kv_proj reads the same cast tensor: nothing.
  CHECK(work(f8, "layers.0.attention.q_proj", Phase::Forward).side_bytes == 0);
  CHECK(work(f8, "layers.0.attention.q_proj", Phase::BackwardWeight).side_bytes == doctest::Approx(2 * E));
  CHECK(work(f8, "layers.0.attention.kv_proj", Phase::Forward).side_bytes == 0);
  // ln1 writes its E/2 local elements in 1 byte instead of 2.
  CHECK(work(bf, "layers.0.attention.ln1", Phase::Forward).bytes -
            work(f8, "layers.0.attention.ln1", Phase::Forward).bytes ==
        doctest::Approx(E / 2));
  // q_proj's output gradient (256 tokens x 512/2 columns = E/2, not gathered): one
  // cast_transpose, read 2 + write 1 + 1 = 4 bytes per element: 2E.
  CHECK(work(f8, "layers.0.attention.q_proj", Phase::BackwardInput).side_bytes == doctest::Approx(2 * E));
  // o_proj (row-parallel): its input, the attention output (256 x 512/2 = E/2), cast_transpose
  // 4 x E/2 = 2E; its output gradient cast on the E/2 shard (read 2 + write 1), gathered, then
  // transposed (2 per gathered element): 3 x E/2 + 2 x E = 3.5E.
  CHECK(work(f8, "layers.0.attention.o_proj", Phase::Forward).side_bytes == doctest::Approx(2 * E));
  CHECK(work(f8, "layers.0.attention.o_proj", Phase::BackwardInput).side_bytes == doctest::Approx(3.5 * E));
  // fc2: input = GELU output, 256 x 2048/2 = 4E/2 = 2E elements, cast_transpose 4 x 2E = 8E.
  CHECK(work(f8, "layers.0.mlp.fc2", Phase::Forward).side_bytes == doctest::Approx(8 * E));
}

TEST_CASE(
    "fp8 casts: current scaling runs the norm unfused; without sequence parallelism nothing is gathered") {
  const CompiledModel cur = test::compile_text(config("\"precision\":\"fp8\",\"fp8_recipe\":\"current\""));
  // The norm computes the amax and writes 16-bit (normalization.cpp: unfused for current
  // scaling), then the row-wise cast of the E/2 shard: read 2 + write 1 = 1.5E before the
  // gather; the transpose after the backward's re-gather: 2E.
  CHECK(work(cur, "layers.0.attention.q_proj", Phase::Forward).side_bytes == doctest::Approx(1.5 * E));
  CHECK(work(cur, "layers.0.attention.q_proj", Phase::BackwardWeight).side_bytes == doctest::Approx(2 * E));
  // fc2's input is not a norm's: amax read 2 + cast read 2 + write 1 + transpose write 1 = 6
  // per element of its 2E elements.
  CHECK(work(cur, "layers.0.mlp.fc2", Phase::Forward).side_bytes == doctest::Approx(12 * E));
  // No sequence parallelism (tp 2 replicates the LayerNorm output): the fused norm writes FP8
  // and its transpose follows at once (nvte_transpose after the norm): 2 x E in the forward.
  std::string no_sp = config(kDelayed);
  no_sp.replace(no_sp.find("\"sequence_parallel\":true"), 24, "\"sequence_parallel\":false");
  const CompiledModel f8 = test::compile_text(no_sp);
  CHECK(work(f8, "layers.0.attention.q_proj", Phase::Forward).side_bytes == doctest::Approx(2 * E));
  CHECK(work(f8, "layers.0.attention.q_proj", Phase::BackwardWeight).side_bytes == 0);
  CHECK(tp_gathers(f8, "layers.0.attention.ln1", Phase::Forward) == 0);
}

TEST_CASE("fp8 casts: an FP8 linear saves the FP8 copy of its input for the weight gradient") {
  auto activations = [](const std::string& text) {
    return test::compile_text(text).stats.activation_bytes_per_microbatch_per_stage[0];
  };
  // Saved inputs per layer and rank, bf16 -> FP8 (1 byte instead of 2 per element):
  //   q/kv: ln1's output shard E/2;  o_proj: attention output E/2;  fc1: ln2's output shard E/2;
  //   fc2: GELU output 2E.  Saving: E/2 + E/2 + E/2 + 2E = 3.5E per layer, 7E for two layers.
  CHECK(activations(config(kBf16)) - activations(config(kDelayed)) == doctest::Approx(7 * E));
  // With flash attention the attention's backward reads its 16-bit output O, so o_proj's FP8
  // copy comes on top of it (+E/2 instead of -E/2): 3.5E - E = 2.5E per layer.
  const std::string flash = ",\"flash_attention\":true";
  CHECK(activations(config(kBf16, "", flash)) - activations(config(kDelayed, "", flash)) ==
        doctest::Approx(5 * E));
  // Selective recompute replays the attention core, so O is made again in the backward and only
  // the FP8 copy is held: back to 3.5E per layer.
  const std::string selective = ",\"recompute\":\"selective\"";
  CHECK(activations(config(kBf16, selective, flash)) - activations(config(kDelayed, selective, flash)) ==
        doctest::Approx(7 * E));
}
