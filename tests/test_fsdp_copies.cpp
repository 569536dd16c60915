// PyTorch FSDP2's copies around its collectives (framework fsdp; compile/fsdp_copies.h,
// docs/frameworks/data-parallelism.md "FSDP2 copy-in and copy-out"): the all-gather copy-out reads the
// gathered buffer and writes the unsharded parameters (2 x their bf16 bytes per gather), the reduce-scatter
// copy-in reads the bf16 gradients and writes the fp32 send buffer (2 + 4 bytes per element), both on the
// compute stream. Other frameworks have neither.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include "compile_fixtures.h"
#include "proteus/api.h"
#include "proteus/compile.h"

using namespace proteus;

namespace {

// 2 layers, hidden 512, 8 heads, seq 256, vocab 8000, on one DGX A100: dp 8, one micro-batch.
std::string fsdp_config(const std::string& framework, const std::string& extra = "") {
  return test::config_json(
      test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 8,
      R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework + "\"" + extra + "}");
}

struct Copies {
  int count = 0;
  double bytes = 0;
};

// Tasks of rank 0 with label `label`: how many and their bytes; each on the compute stream.
Copies copies(const CompiledModel& c, const std::string& label, Phase phase) {
  Copies out;
  for (const Task& t : c.exec.tasks) {
    if (t.rank != 0 || t.phase != phase || c.exec.labels[t.label] != label) continue;
    CHECK(t.kind == TaskKind::Compute);
    CHECK(t.stream == Stream::Compute);
    ++out.count;
    out.bytes += c.exec.works[t.work].bytes;
  }
  return out;
}

// Elements of the weights each op uses (an op per gather), and of the distinct weights.
// The weights the ops read (layer < -1: every op; else the ops of that layer).
double gathered_elements(const CompiledModel& c, int layer = -2) {
  double e = 0;
  for (const Op& op : c.graph.ops) {
    if (layer >= -1 && c.graph.modules[op.module].layer != layer) continue;
    for (const TensorUse& w : op.weights) e += static_cast<double>(c.graph.tensors[w.tensor].elements());
  }
  return e;
}

double distinct_weight_elements(const CompiledModel& c) {
  std::set<int> seen;
  double e = 0;
  for (const Op& op : c.graph.ops)
    for (const TensorUse& w : op.weights)
      if (seen.insert(w.tensor).second) e += static_cast<double>(c.graph.tensors[w.tensor].elements());
  return e;
}

}  // namespace

TEST_CASE("fsdp copies: the model's weights, counted by hand") {
  const CompiledModel c = test::compile_text(fsdp_config("fsdp"));
  // GPT, h 512, ffn 2048, vocab 8000, seq 256, tied embeddings, layernorm with bias, biased linears:
  // per layer QKV 512x1536+1536, proj 512x512+512, fc1 512x2048+2048, fc2 2048x512+512, two
  // layernorms 2x(512+512) = 3,152,384; word embedding 8000x512 = 4,096,000; position 256x512 =
  // 131,072; final layernorm 1,024.
  const double layer =
      512.0 * 1536 + 1536 + 512.0 * 512 + 512 + 512.0 * 2048 + 2048 + 2048.0 * 512 + 512 + 4 * 512;
  CHECK(layer == 3152384);
  CHECK(distinct_weight_elements(c) == doctest::Approx(2 * layer + 8000.0 * 512 + 256.0 * 512 + 1024));
}

TEST_CASE("fsdp copies: copy-out is 2 x the gathered bf16 bytes per gather, on the compute stream") {
  const CompiledModel c = test::compile_text(fsdp_config("fsdp"));
  // Forward: one gather per weighted op; backward: gathered again (reshard after forward),
  // except the weights kept from the forward to the backward: the last block's (TorchTitan's
  // apply_fsdp: reshard_after_forward false for it) and the root module's, the ops outside the
  // layers (FSDP2 never reshards the root after its forward). Each copy-out reads the gathered
  // bf16 buffer and writes the parameters: 2 + 2 bytes each.
  const int last_layer = c.graph.num_layers - 1;
  int weighted_ops = 0, kept_weighted_ops = 0;
  for (const Op& op : c.graph.ops) {
    weighted_ops += op.weights.empty() ? 0 : 1;
    const int layer = c.graph.modules[op.module].layer;
    if (layer == last_layer || layer < 0) kept_weighted_ops += op.weights.empty() ? 0 : 1;
  }
  REQUIRE(kept_weighted_ops > 0);
  const Copies fwd = copies(c, "fsdp_all_gather_copy_out", Phase::Forward);
  const Copies bwd = copies(c, "fsdp_all_gather_copy_out", Phase::BackwardInput);
  CHECK(fwd.count == weighted_ops);
  CHECK(bwd.count == weighted_ops - kept_weighted_ops);
  CHECK(fwd.bytes == doctest::Approx(2 * 2 * gathered_elements(c)));
  CHECK(bwd.bytes ==
        doctest::Approx(fwd.bytes - 2 * 2 * (gathered_elements(c, last_layer) + gathered_elements(c, -1))));
  // Each copy-out waits for its all-gather, and the op using the weights waits for the copy-out.
  for (size_t t = 0; t < c.exec.tasks.size(); ++t) {
    if (c.exec.labels[c.exec.tasks[t].label] != "fsdp_all_gather_copy_out") continue;
    const int d0 = c.exec.dep_offsets[t], d1 = c.exec.dep_offsets[t + 1];
    REQUIRE(d1 - d0 == 1);
    const Task& dep = c.exec.tasks[static_cast<size_t>(c.exec.deps[static_cast<size_t>(d0)])];
    CHECK(dep.kind == TaskKind::Collective);
    CHECK(c.exec.collectives[static_cast<size_t>(dep.collective)].kind == CollectiveKind::AllGather);
    CHECK(dep.stream == Stream::ParamComm);
  }
}

TEST_CASE("fsdp copies: reduce-scatter copy-in reads bf16 and writes fp32 gradients, once per weight") {
  const CompiledModel c = test::compile_text(fsdp_config("fsdp"));
  // One micro-batch: every weight's gradient is reduce-scattered once; 2 + 4 bytes per element.
  const Copies in = copies(c, "fsdp_reduce_scatter_copy_in", Phase::BackwardWeight);
  CHECK(in.count >= 1);
  CHECK(in.bytes == doctest::Approx(6 * distinct_weight_elements(c)));
}

TEST_CASE("fsdp copies: DeepSpeed ZeRO-3 (its own gather and reduce paths) has none") {
  const CompiledModel ds = test::compile_text(fsdp_config("deepspeed"));
  CHECK(copies(ds, "fsdp_all_gather_copy_out", Phase::Forward).count == 0);
  CHECK(copies(ds, "fsdp_all_gather_copy_out", Phase::BackwardInput).count == 0);
  CHECK(copies(ds, "fsdp_reduce_scatter_copy_in", Phase::BackwardWeight).count == 0);
}
