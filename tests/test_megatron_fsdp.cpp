// Megatron-FSDP: framework megatron at ZeRO-3 (data_parallel_sharding_strategy
// optim_grads_params; docs/frameworks/data-parallelism.md "Megatron-FSDP"). Megatron-Core's
// FullyShardedDataParallel makes each TransformerLayer an FSDP unit and puts the other
// parameters (embedding, final norm, output layer) in unit 0; megatron_fsdp.py gathers a unit in
// its pre-forward and pre-backward hooks, releases it after its forward and after its backward
// (unit 0 is never released), and reduce-scatters a unit's gradients in its post-backward, every
// micro-batch; AllGatherPipeline prefetches the next units while what it prefetches is under
// half of max(1e9, twice the mean unit) elements.
#include <doctest/doctest.h>

#include <string>
#include "compile_fixtures.h"
#include "proteus/compile.h"

using namespace proteus;

namespace {

// `layers` layers of hidden h (ffn 4h, 8 heads, seq 256, vocab 8000) on one DGX A100, dp 8, ZeRO-3.
std::string zero3(const std::string& framework, int layers, int h) {
  return test::config_json(test::gpt_model(layers, h, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})",
                           8, R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework + "\"}");
}

// Whether rank 0's forward all-gather of layer `layer` waits on a layer's compute of the same
// micro-batch: issued from a layer's pre-forward hook (a prefetch window of fewer units than
// the layers before it), or not (issued with the root's, from the embedding's).
bool layer_gather_waits_for_layer_compute(const CompiledModel& c, int layer) {
  const std::string prefix = "layers." + std::to_string(layer) + ".";
  for (size_t i = 0; i < c.exec.tasks.size(); ++i) {
    const Task& t = c.exec.tasks[i];
    if (t.kind != TaskKind::Collective || t.rank != 0 || t.phase != Phase::Forward || t.micro_batch != 0 ||
        c.exec.collectives[static_cast<size_t>(t.collective)].kind != CollectiveKind::AllGather ||
        c.exec.labels[static_cast<size_t>(t.label)].rfind(prefix, 0) != 0)
      continue;
    for (int d = c.exec.dep_offsets[i]; d < c.exec.dep_offsets[i + 1]; ++d) {
      const Task& dep = c.exec.tasks[static_cast<size_t>(c.exec.deps[static_cast<size_t>(d)])];
      if (dep.kind == TaskKind::Compute && dep.micro_batch == 0 &&
          c.exec.labels[static_cast<size_t>(dep.label)].rfind("layers.", 0) == 0)
        return true;
    }
    return false;
  }
  FAIL("no forward all-gather of " << prefix);
  return false;
}

}  // namespace

TEST_CASE("megatron-fsdp: one gather per unit and pass, every layer gathered again for its backward") {
  const int layers = 3;
  const CompiledModel megatron = test::compile_text(zero3("megatron", layers, 512));
  // Forward: unit 0 (at the embedding) and each layer. Backward: every layer, its post-forward
  // hook having released it; unit 0 is kept. One reduce-scatter per unit.
  CHECK(test::dp_collectives(megatron, CollectiveKind::AllGather, Phase::Forward) == 1 + layers);
  CHECK(test::dp_collectives(megatron, CollectiveKind::AllGather, Phase::BackwardInput) == layers);
  int reduce_scatters = 0;
  for (const CollectiveStat& s : megatron.stats.collectives)
    if (s.kind == "reduce_scatter" && s.purpose == "gradient") reduce_scatters += static_cast<int>(s.count);
  CHECK(reduce_scatters == 1 + layers);
  // A layer's gather is one collective of all its weights (the unit's bucket group).
  const test::CollCount layer1 = test::count_collectives(megatron, CollectiveKind::AllGather,
                                                         axis_bit(kAxisDp), Phase::Forward, "layers.1.");
  CHECK(layer1.count == 1);
  // FSDP2 under TorchTitan keeps the last block from its forward: one backward gather fewer.
  const CompiledModel fsdp2 = test::compile_text(zero3("fsdp", layers, 512));
  CHECK(test::dp_collectives(fsdp2, CollectiveKind::AllGather, Phase::BackwardInput) == layers - 1);
}

TEST_CASE("megatron-fsdp: unit 0 is gathered by the first micro-batch and serves every other") {
  // Global batch 32 on dp 8 at micro-batch 1: 4 micro-batches. Unit 0's buckets are released
  // only when the iteration's gradient sync resets the all-gather pipeline; FSDP2 reshards its
  // root after each backward and gathers it again.
  const int layers = 2, micro_batches = 4;
  const auto four = [](const std::string& framework) {
    return test::compile_text(test::config_json(
        test::gpt_model(layers, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 32,
        R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework + R"("})"));
  };
  CHECK(test::dp_collectives(four("megatron"), CollectiveKind::AllGather, Phase::Forward) ==
        1 + micro_batches * layers);
  CHECK(test::dp_collectives(four("fsdp"), CollectiveKind::AllGather, Phase::Forward) ==
        micro_batches * (1 + layers));
}

TEST_CASE("megatron-fsdp: the prefetch reaches as many units as half of max(1e9, 2 x mean unit) elements") {
  // Hidden 512: 3.1M elements a layer, so the embedding's gather prefetches every layer.
  CHECK_FALSE(layer_gather_waits_for_layer_compute(test::compile_text(zero3("megatron", 4, 512)), 2));
  // FSDP2 prefetches one block ahead: layer 2's gather is issued in layer 1's pre-forward.
  CHECK(layer_gather_waits_for_layer_compute(test::compile_text(zero3("fsdp", 4, 512)), 2));
  // Hidden 8192: 805M elements a layer, the prefetch size 805M: one layer ahead, as FSDP2.
  CHECK(layer_gather_waits_for_layer_compute(test::compile_text(zero3("megatron", 4, 8192)), 2));
}
