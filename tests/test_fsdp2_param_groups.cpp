// FSDP2's parameter groups (framework fsdp, ZeRO-3; OpIndex::fsdp_units, docs/frameworks/data-parallelism.md
// "ZeRO-3 (and FSDP)", its row "FSDP2's units"). TorchTitan's apply_fsdp calls fully_shard on
// each TransformerBlock and on the model, whose own group (the root) holds the embedding, final
// norm and output layer. FSDP2 all-gathers a group with one collective (foreach_all_gather) and
// reduce-scatters it with one (foreach_reduce) in the group's post-backward; the root is never
// resharded after its forward (FSDPState._lazy_init), and its post-backward runs in the final
// backward callback, its inputs (token ids) needing no gradient.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include "compile_fixtures.h"
#include "proteus/api.h"
#include "proteus/compile.h"

using namespace proteus;
using json = nlohmann::json;

namespace {

// 2 layers, hidden 512, 8 heads, seq 256, vocab 8000, on one DGX A100: dp 8, one micro-batch.
std::string zero3_config(const std::string& framework) {
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 8,
                           R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework + "\"}");
}

double layer_weight_elements(const CompiledModel& c, int layer) {
  double e = 0;
  for (const Op& op : c.graph.ops)
    if (c.graph.modules[op.module].layer == layer)
      for (const TensorUse& w : op.weights) e += static_cast<double>(c.graph.tensors[w.tensor].elements());
  return e;
}

// Rank 0's span of the first timeline entry on `stream` whose name starts with `prefix`.
std::pair<double, double> span(const json& result, const std::string& stream, const std::string& prefix) {
  for (const json& s : result["timeline"])
    if (s["rank"] == 0 && s["stream"] == stream && s["name"].get<std::string>().rfind(prefix, 0) == 0)
      return {s["start_s"].get<double>(), s["end_s"].get<double>()};
  FAIL("no " << stream << " entry " << prefix);
  return {0, 0};
}

}  // namespace

TEST_CASE("fsdp2 groups: one all-gather per group and pass, one reduce-scatter per group") {
  const CompiledModel c = test::compile_text(zero3_config("fsdp"));
  const int groups = 1 + c.graph.num_layers;  // the root and each block
  // Forward: the root's (before the embedding), then each block's. Backward: only layer 0's;
  // the root and the last block keep what their forward gathered.
  CHECK(test::dp_collectives(c, CollectiveKind::AllGather, Phase::Forward) == groups);
  CHECK(test::dp_collectives(c, CollectiveKind::AllGather, Phase::BackwardInput) == 1);
  int reduce_scatters = 0;
  for (const CollectiveStat& s : c.stats.collectives)
    if (s.kind == "reduce_scatter" && s.purpose == "gradient") reduce_scatters += static_cast<int>(s.count);
  CHECK(reduce_scatters == groups);
  // A block's gather moves its whole bf16 weights at once.
  const test::CollCount layer1 =
      test::count_collectives(c, CollectiveKind::AllGather, axis_bit(kAxisDp), Phase::Forward, "layers.1.");
  CHECK(layer1.count == 1);
  CHECK(layer1.bytes == doctest::Approx(2 * layer_weight_elements(c, 1)));
  // Megatron-FSDP gathers the same groups (tests/test_megatron_fsdp.cpp).
  const CompiledModel megatron = test::compile_text(zero3_config("megatron"));
  const test::CollCount megatron_layer1 = test::count_collectives(
      megatron, CollectiveKind::AllGather, axis_bit(kAxisDp), Phase::Forward, "layers.1.");
  CHECK(megatron_layer1.count == 1);
  CHECK(megatron_layer1.bytes == doctest::Approx(layer1.bytes));
}

TEST_CASE("fsdp2 groups: the root is gathered first, kept through the backward and reduced last") {
  SimulateOptions o;
  o.timeline = true;
  const json r = json::parse(simulate_json(zero3_config("fsdp"), o));
  REQUIRE_MESSAGE(r["ok"] == true, r.dump());
  // One gather for the whole root, labelled by its first op; none for its output layer alone.
  const auto root_gather = span(r, "param_comm", "embedding.");
  for (const json& s : r["timeline"])
    if (s["rank"] == 0 && s["stream"] == "param_comm")
      CHECK(s["name"].get<std::string>().rfind("head.", 0) != 0);
  CHECK(root_gather.second <= span(r, "compute", "layers.0.").first);
  // The root's reduce-scatter (its group is the first bucket in backward order, the output
  // layer's weights being the first gradients) waits for the embedding's weight gradient, the
  // last of the backward.
  CHECK(span(r, "dp_comm", "grad_bucket_0").first >= span(r, "compute", "embedding.word_embedding W").second);
}

TEST_CASE("FSDP2's fp32 shard is the parameter at rest and the optimizer's master, counted once") {
  // Mixed precision (the fixture's default): Megatron's ZeRO-3 keeps a 16-bit shard (2 bytes a
  // parameter over d) beside the optimizer's fp32 master, m and v (12); FSDP2 keeps the fp32
  // shard only, which Adam updates in place: 2 bytes a parameter over d fewer, weights none at
  // rest (the gathered 16-bit copies come and go with their units).
  const CompiledModel megatron = test::compile_text(zero3_config("megatron"));
  const CompiledModel fsdp = test::compile_text(zero3_config("fsdp"));
  const auto& m = megatron.stats.static_bytes_per_stage.at(0);
  const auto& f = fsdp.stats.static_bytes_per_stage.at(0);
  const auto weights = static_cast<size_t>(MemCategory::Weights);
  const auto optimizer = static_cast<size_t>(MemCategory::OptimizerStates);
  CHECK(f[weights] == 0);
  CHECK(f[optimizer] == doctest::Approx(m[optimizer]));
  CHECK(m[weights] == doctest::Approx(m[optimizer] / 6));  // 2 against 12 bytes a parameter
}
