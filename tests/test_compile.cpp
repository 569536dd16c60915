// The compiler: layouts, derived communication, pipeline schedules (expected values by hand).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/error.h"
#include "proteus/layout.h"
#include "proteus/schedule.h"
#include "proteus/strategy_tree.h"

using namespace proteus;
using namespace proteus::test;

namespace {

Mesh mesh_of(int pp, int dp, int ep, int cp, int tp) {
  Mesh m;
  m.size = {pp, dp, ep, cp, tp};
  return m;
}

}  // namespace

TEST_CASE("layout: each placement change needs the collective DTensor/SBP would use") {
  const Mesh m = mesh_of(1, 4, 1, 1, 8);
  Layout partial_tp;  // Partial over tp, Shard(0) over dp
  partial_tp.placement[kAxisTp] = kPartial;
  partial_tp.placement[kAxisDp] = 0;
  Layout repl = partial_tp;
  repl.placement[kAxisTp] = kReplicate;
  const double S = 8e6;  // global bytes
  // Partial -> Replicate on tp: all-reduce of the rank's buffer, S / dp shards = 2e6 bytes.
  auto steps = redistribute(partial_tp, repl, S, m);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].kind == CollectiveKind::AllReduce);
  CHECK(steps[0].axes == axis_bit(kAxisTp));
  CHECK(steps[0].bytes == doctest::Approx(2e6));
  // Partial -> Shard(1) on tp: reduce-scatter of the same (unreduced) buffer.
  Layout shard = repl;
  shard.placement[kAxisTp] = 1;
  steps = redistribute(partial_tp, shard, S, m);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].kind == CollectiveKind::ReduceScatter);
  CHECK(steps[0].bytes == doctest::Approx(2e6));
  // Shard(1) -> Replicate: all-gather; S is the gathered output, 2e6 bytes.
  steps = redistribute(shard, repl, S, m);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].kind == CollectiveKind::AllGather);
  CHECK(steps[0].bytes == doctest::Approx(2e6));
  // Shard(1) -> Shard(2): all-to-all of the local buffer, 2e6 / 8.
  Layout shard2 = repl;
  shard2.placement[kAxisTp] = 2;
  steps = redistribute(shard, shard2, S, m);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].kind == CollectiveKind::AllToAll);
  CHECK(steps[0].bytes == doctest::Approx(2e6 / 8));
  // Replicate -> Shard: a local slice, no communication.
  CHECK(redistribute(repl, shard, S, m).empty());
  // Partial over dp and cp together: one all-reduce over the product group.
  const Mesh m2 = mesh_of(1, 4, 1, 2, 1);
  Layout p2;
  p2.placement[kAxisDp] = kPartial;
  p2.placement[kAxisCp] = kPartial;
  steps = redistribute(p2, Layout{}, S, m2);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].axes == (axis_bit(kAxisDp) | axis_bit(kAxisCp)));
  CHECK(steps[0].bytes == doctest::Approx(S));
}

TEST_CASE("schedule: 1F1B, GPipe, interleaved and ZB-H1 orders") {
  // 1F1B, p=4, m=6, stage 0: p-s-1 = 3 warm-up forwards, then F/B pairs, then the rest.
  CHECK(to_string(stage_schedule(Schedule::OneFOneB, 4, 6, 1, 0)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  // Last stage: no warm-up.
  CHECK(to_string(stage_schedule(Schedule::OneFOneB, 4, 6, 1, 3)) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  CHECK(to_string(stage_schedule(Schedule::GPipe, 4, 3, 1, 1)) == "F0 F1 F2 B0 B1 B2");
  // Interleaved, p=2, v=2, m=4, stage 0 (Megatron): warm-up (p-s-1)*2 + (v-1)*p = 4 passes;
  // virtual micro-batch k: mb (k/(p v))*p + k%p, chunk (k/p)%v forward, v-1-(k/p)%v backward.
  CHECK(to_string(stage_schedule(Schedule::Interleaved1F1B, 2, 4, 2, 0)) ==
        "F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3");
  // ZB-H1, p=4, m=6, unit-time F/B/W played with the rules of schedule.h (B when its gradient is
  // there, else F while fewer than p-s micro-batches await B, else a waiting W; at most p-1 W
  // wait). Stage 0: F0..F3 fill the warm-up; B0 arrives at t=7 after the gradient crosses
  // stages 3, 2, 1; F4 and F5 keep 4 in flight; the W passes fill the waits for B2..B5.
  CHECK(to_string(stage_schedule(Schedule::ZbH1, 4, 6, 1, 0)) ==
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 W0 B3 W1 W2 B4 W3 W4 B5 W5");
  // The last stage defers its W passes to the end, where it would wait for nothing (Qi et al.
  // Figure 3: the last stage runs F and B back to back).
  CHECK(to_string(stage_schedule(Schedule::ZbH1, 4, 3, 1, 3)) == "F0 B0 F1 B1 F2 B2 W0 W1 W2");
}

TEST_CASE("layers split evenly, first and last chunks lighter") {
  const auto split = split_layers(126, 16);  // Llama 3 405B on 16 stages
  CHECK(split.front() == 7);
  CHECK(split.back() == 7);
  for (size_t i = 1; i + 1 < split.size(); ++i) CHECK(split[i] == 8);
  CHECK(split_layers(96, 16) == std::vector<int>(16, 6));
  const auto s = split_layers(10, 4);  // ceil = 3, deficit 2 -> 2, 3, 3, 2
  CHECK(s == std::vector<int>{2, 3, 3, 2});
}

TEST_CASE("Megatron tensor parallelism: 2 all-reduces per layer forward and backward, s*b*h*2 bytes") {
  const int h = 1024, heads = 16, s = 512, t = 4;
  const int b = 2;
  const std::string cfg =
      config_json(gpt_model(2, h, heads, s, 32000), R"({"preset":"dgx-a100-80g","nodes":1})", 2 * b * 2,
                  R"({"dp":2,"tp":4,"pp":1,"micro_batch":2})");
  const CompiledModel c = compile_text(cfg);
  const double bytes = double(s) * b * h * 2;  // activation [b, s, h] in bf16, per data-parallel rank
  const AxisMask tp = axis_bit(kAxisTp);
  CollCount f = count_collectives(c, CollectiveKind::AllReduce, tp, Phase::Forward, "layers.0.");
  CHECK(f.count == 2);
  CHECK(f.bytes == doctest::Approx(bytes));
  CollCount bw = count_collectives(c, CollectiveKind::AllReduce, tp, Phase::BackwardInput, "layers.0.");
  CHECK(bw.count == 2);
  CHECK(bw.bytes == doctest::Approx(bytes));
  CHECK(count_collectives(c, CollectiveKind::AllGather, tp, Phase::Forward, "layers.0.").count == 0);
  (void)t;
}

TEST_CASE(
    "sequence parallelism: 2 all-gathers + 2 reduce-scatters per layer, same bytes, backward mirrored") {
  const int h = 1024, heads = 16, s = 512, b = 1;
  const std::string cfg =
      config_json(gpt_model(2, h, heads, s, 32000), R"({"preset":"dgx-a100-80g","nodes":1})", 8,
                  R"({"dp":2,"tp":4,"pp":1,"micro_batch":1,"sequence_parallel":true})");
  const CompiledModel c = compile_text(cfg);
  const double bytes = double(s) * b * h * 2;
  const AxisMask tp = axis_bit(kAxisTp);
  CollCount ag = count_collectives(c, CollectiveKind::AllGather, tp, Phase::Forward, "layers.0.");
  CollCount rs = count_collectives(c, CollectiveKind::ReduceScatter, tp, Phase::Forward, "layers.0.");
  CHECK(ag.count == 2);
  CHECK(rs.count == 2);
  CHECK(ag.bytes == doctest::Approx(bytes));
  CHECK(rs.bytes == doctest::Approx(bytes));
  CHECK(count_collectives(c, CollectiveKind::AllReduce, tp, Phase::Forward, "layers.0.").count == 0);
  // Backward: the gradient of each all-gather is a reduce-scatter and vice versa.
  CHECK(count_collectives(c, CollectiveKind::AllGather, tp, Phase::BackwardInput, "layers.0.").count == 2);
  CHECK(count_collectives(c, CollectiveKind::ReduceScatter, tp, Phase::BackwardInput, "layers.0.").count ==
        2);
}

// Megatron's full recompute (tensor_parallel.checkpoint: CheckpointFunction.backward calls the
// layer's forward again) and torch.utils.checkpoint re-run the layer's code, its tensor-parallel
// collectives included; the column-parallel linears still keep the sequence-parallel shard of
// their input and gather it again for the weight gradient. Korthikanti et al. 2022, Table 4 (22B,
// TP 8): full recompute adds 7.6 ms per layer to the backward (19.5 against 11.9 ms), the
// 7.7 ms forward with its all-reduces.
TEST_CASE("full recompute re-runs the layer's tensor-parallel collectives") {
  const int h = 1024, heads = 16, s = 512, b = 1;
  const std::string model = gpt_model(2, h, heads, s, 32000);
  const std::string cluster = R"({"preset":"dgx-a100-80g","nodes":1})";
  const double bytes = double(s) * b * h * 2;
  const AxisMask tp = axis_bit(kAxisTp);
  SUBCASE("sequence parallelism: the forward's 2 all-gathers and 2 reduce-scatters again") {
    const CompiledModel c = compile_text(
        config_json(model, cluster, 8,
                    R"({"dp":2,"tp":4,"pp":1,"micro_batch":1,"sequence_parallel":true,"recompute":"full"})"));
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
      const CollCount f = count_collectives(c, kind, tp, Phase::Forward, "layers.0.");
      const CollCount r = count_collectives(c, kind, tp, Phase::Recompute, "layers.0.");
      CHECK(f.count == 2);
      CHECK(r.count == 2);
      CHECK(r.bytes == doctest::Approx(bytes));
    }
    // The weight gradients of the two column-parallel linears gather their input again.
    CHECK(count_collectives(c, CollectiveKind::AllGather, tp, Phase::BackwardWeight, "layers.0.").count == 2);
  }
  SUBCASE("tensor parallelism alone: the forward's 2 all-reduces again") {
    const CompiledModel c = compile_text(
        config_json(model, cluster, 8, R"({"dp":2,"tp":4,"pp":1,"micro_batch":1,"recompute":"full"})"));
    const CollCount r = count_collectives(c, CollectiveKind::AllReduce, tp, Phase::Recompute, "layers.0.");
    CHECK(r.count == 2);
    CHECK(r.bytes == doctest::Approx(bytes));
  }
  SUBCASE("selective recompute replays the attention core alone: no collective") {
    const CompiledModel c = compile_text(config_json(
        model, cluster, 8,
        R"({"dp":2,"tp":4,"pp":1,"micro_batch":1,"sequence_parallel":true,"recompute":"selective"})"));
    for (CollectiveKind kind :
         {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce})
      CHECK(count_collectives(c, kind, tp, Phase::Recompute, "layers.0.").count == 0);
  }
}

// Full recompute checkpoints the transformer layers only (Megatron-Core's
// TransformerBlock._checkpointed_forward; torch.utils.checkpoint around TorchTitan's blocks):
// the embedding, the final norm, the output layer and the loss run once. Until session 24 every
// module was replayed, the output layer's GEMM and the loss included.
TEST_CASE("full recompute replays the layers, not the embedding, the output layer or the loss") {
  const int h = 1024, s = 512, vocab = 32000, layers = 2;
  const std::string model = gpt_model(layers, h, 16, s, vocab);
  const std::string cluster = R"({"preset":"dgx-a100-80g","nodes":1})";
  const CompiledModel none = compile_text(config_json(model, cluster, 8, R"({"dp":8,"micro_batch":1})"));
  const CompiledModel full =
      compile_text(config_json(model, cluster, 8, R"({"dp":8,"micro_batch":1,"recompute":"full"})"));
  for (const Task& t : full.exec.tasks)
    if (t.kind == TaskKind::Compute && t.phase == Phase::Recompute)
      CHECK(full.exec.labels[t.label].rfind("layers.", 0) == 0);
  // The replay is the layers' forward: per token and layer 24 h^2 GEMM flops (QKV, projection,
  // the 4h MLP) and 4 s h of attention, plus the layer's memory-bound ops' few flops.
  const double tokens = 8.0 * s;
  const double gemm_and_attention = layers * tokens * (24.0 * h * h + 4.0 * s * h);
  const double extra = full.stats.hardware_flops_per_iteration - none.stats.hardware_flops_per_iteration;
  CHECK(extra >= gemm_and_attention);
  // The output layer alone would add 2 h V a token, 1.2 times the two layers' replay.
  CHECK(extra < 1.01 * gemm_and_attention);
}

TEST_CASE(
    "data-parallel gradients: all-reduce of parameters x 4 bytes; ZeRO-2/3 reduce-scatter per micro-batch; ZeRO-3 "
    "weight gathers") {
  const std::string model = gpt_model(2, 512, 8, 256, 8000);
  auto grad_bytes = [&](const CompiledModel& c, CollectiveKind kind) {
    double sum = 0;
    for (const CollectiveStat& s : c.stats.collectives)
      if (s.purpose == "gradient" && s.kind == to_string(kind) && s.axes == "dp") sum += s.bytes_per_rank;
    return sum;
  };
  const CompiledModel z0 = compile_text(
      config_json(model, R"({"preset":"dgx-a100-80g","nodes":1})", 16, R"({"dp":8,"micro_batch":1})"));
  // Every weight is replicated over dp: the rank reduces all parameters, fp32 main grads (4 bytes).
  const double params = static_cast<double>(z0.stats.parameters);
  CHECK(grad_bytes(z0, CollectiveKind::AllReduce) == doctest::Approx(params * 4));
  CHECK(grad_bytes(z0, CollectiveKind::ReduceScatter) == 0);
  const CompiledModel z2 = compile_text(config_json(model, R"({"preset":"dgx-a100-80g","nodes":1})", 16,
                                                    R"({"dp":8,"micro_batch":1,"zero":2})"));
  CHECK(grad_bytes(z2, CollectiveKind::AllReduce) == 0);
  // ZeRO-2 reduce-scatters every micro-batch (DeepSpeed, docs/frameworks/data-parallelism.md): global batch
  // 16 on dp 8 at micro-batch 1 is 2 micro-batches, so twice the parameters x 4 bytes.
  CHECK(grad_bytes(z2, CollectiveKind::ReduceScatter) == doctest::Approx(2 * params * 4));
  const auto weight_gathers = [](const CompiledModel& c) {
    int64_t n = 0;
    for (const CollectiveStat& s : c.stats.collectives)
      if (s.purpose == "weight" && s.kind == "all_gather") n += s.count;
    return n;
  };
  // DeepSpeed's ZeRO-3 fetches each module's weights before its forward and its backward, per
  // micro-batch (2 micro-batches here), except the modules whose parameters are all under its
  // persistence threshold (1e5 elements: the norms), which stay whole.
  const CompiledModel ds3 =
      compile_text(config_json(model, R"({"preset":"dgx-a100-80g","nodes":1})", 16,
                               R"({"dp":8,"micro_batch":1,"zero":3,"framework":"deepspeed"})"));
  int partitioned_ops = 0;
  for (const Op& op : ds3.graph.ops)
    partitioned_ops += std::any_of(op.weights.begin(), op.weights.end(), [&](const TensorUse& w) {
      return ds3.graph.tensors[w.tensor].elements() >= 100000;
    });
  CHECK(partitioned_ops <
        static_cast<int>(std::count_if(
            ds3.graph.ops.begin(), ds3.graph.ops.end(), [](const Op& op) { return !op.weights.empty(); })));
  // ... and after the step one gather of the persistent parameters' updates (one bucket).
  CHECK(weight_gathers(ds3) == 2 * 2 * partitioned_ops + 1);
  // Megatron-FSDP gathers by unit: unit 0 (embedding, final norm, output layer) once an
  // iteration, kept for every micro-batch; each of the 2 layers before its forward and again
  // before its backward, per micro-batch.
  const CompiledModel z3 = compile_text(config_json(model, R"({"preset":"dgx-a100-80g","nodes":1})", 16,
                                                    R"({"dp":8,"micro_batch":1,"zero":3})"));
  CHECK(weight_gathers(z3) == 1 + 2 * (2 * 2));
  CHECK(grad_bytes(z3, CollectiveKind::ReduceScatter) == doctest::Approx(2 * params * 4));
}

TEST_CASE(
    "pipeline: p2p of s*b*h*2 bytes per micro-batch per boundary, both directions; tied embedding all-reduce") {
  const int h = 512, s = 256, b = 2;
  const CompiledModel c =
      compile_text(config_json(gpt_model(8, h, 8, s, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 16,
                               R"({"dp":2,"pp":4,"micro_batch":2})"));
  REQUIRE(c.stats.p2p_bytes_per_boundary.size() == 3);
  for (double bytes : c.stats.p2p_bytes_per_boundary) CHECK(bytes == doctest::Approx(double(s) * b * h * 2));
  // Stage 1 sends activations forward and gradients backward for each of its 4 micro-batches.
  int64_t sends = 0;
  for (const CollectiveStat& st : c.stats.collectives)
    if (st.stage == 1 && st.kind == "send_recv") sends += st.count;
  CHECK(sends == 2 * 4);
  CHECK(c.stats.stage_orders[0] == "F0 F1 F2 F3 B0 B1 B2 B3");  // p=4, m=4: 3 warm-up, then F3 B0, ...
  // Tied input/output embeddings live on stages 0 and 3: one all-reduce between them.
  int tied = 0;
  for (const CollectiveStat& st : c.stats.collectives)
    if (st.purpose == "tied_embedding") {
      tied += static_cast<int>(st.count);
      CHECK(st.group_size == 2);
    }
  CHECK(tied == 2);  // one on stage 0 and one on stage 3
}

TEST_CASE("invalid strategies name their JSON path") {
  auto path_of = [](const std::string& json) { return test::error_path([&] { compile_text(json); }); };
  const std::string model = gpt_model(4, 512, 8, 256, 8000);
  const std::string node = R"({"preset":"dgx-a100-80g","nodes":1})";
  CHECK(path_of(config_json(model, node, 16, R"({"dp":8,"tp":3})")) != test::kNoError);
  CHECK(path_of(config_json(gpt_model(4, 512, 32, 256, 8000), node, 16,
                            R"({"dp":8,"micro_batch":1,"tp":1,"pp":1})")) == test::kNoError);
  CHECK(path_of(config_json(model, node, 16, R"({"dp":1,"tp":1,"pp":8})")) == "strategy.pp");
  CHECK(path_of(config_json(model, node, 16, R"({"dp":4,"tp":1,"pp":1})")).rfind("strategy", 0) == 0);
  CHECK(path_of(config_json(model, node, 12, R"({"dp":8})")) == "training.global_batch");
  CHECK(path_of(config_json(model, node, 16,
                            R"({"dp":8,"overrides":[{"path":"nothing.here","map":{"dp":null}}]})")) ==
        "strategy.overrides[0].path");
}

TEST_CASE("MoE with expert parallelism: two all-to-alls per MoE layer per direction, of the routed tokens") {
  // 4 experts, top-2, ep=4 inside dp=4; seq 128, micro-batch 1, hidden 256, bf16.
  const std::string model =
      R"({"kind":"transformer","name":"tiny-moe","layers":2,"hidden":256,"heads":4,"kv_heads":4,
      "ffn_hidden":512,"seq_len":128,"vocab":1000,"mlp":"swiglu","norm":"rmsnorm","tied_embeddings":false,"bias":false,
      "dropout":false,"learned_positions":false,"moe":{"experts":4,"top_k":2}})";
  const CompiledModel c =
      compile_text(config_json(model, R"({"preset":"dgx-h100","nodes":1,"gpus_per_node":4})", 8,
                               R"({"dp":4,"ep":4,"micro_batch":1})"));
  // Routed tensor per rank: E x c x h x 2 bytes for the rank's own sample, c = ceil(1.0*128*2/4) = 64
  // slots per expert: 4 * 64 * 256 * 2 = 131072 bytes, sent as one all-to-all over ep.
  const AxisMask ep = axis_bit(kAxisEp);
  CollCount f = count_collectives(c, CollectiveKind::AllToAll, ep, Phase::Forward, "layers.0.");
  CHECK(f.count == 2);
  CHECK(f.bytes == doctest::Approx(4.0 * 64 * 256 * 2));
  CHECK(count_collectives(c, CollectiveKind::AllToAll, ep, Phase::BackwardInput, "layers.0.").count == 2);
  // Expert weights are sharded by ep, so their gradients need no reduction over ep; dense
  // weights are reduced over the whole data-parallel group (dp/ep x ep).
  for (const CollectiveStat& s : c.stats.collectives)
    if (s.purpose == "gradient") CHECK(s.axes == "ep");  // dp/ep = 1 here: the dense group is the ep axis
}

TEST_CASE("CNN hybrid (one weird trick): all-gather before the classifier, reduce-scatter after") {
  const CompiledModel c = compile_text(R"({"preset":"alexnet-hybrid"})");
  const AxisMask dp = axis_bit(kAxisDp);
  // Forward: the features (Shard(batch)) are gathered before each model-parallel FC layer:
  // 1024 samples x 9216 floats x 4 bytes = 37.7 MB before fc1.
  CollCount ag = count_collectives(c, CollectiveKind::AllGather, dp, Phase::Forward, "classifier.");
  CHECK(ag.count == 3);
  CollCount first =
      count_collectives(c, CollectiveKind::AllGather, dp, Phase::Forward, "classifier.dropout1");
  CHECK(first.count == 1);
  CHECK(first.bytes == doctest::Approx(1024.0 * 9216 * 4));
  // Backward: the input gradients are partial sums over the model-parallel dim, reduce-scattered
  // back to the batch-sharded layout.
  CHECK(count_collectives(c, CollectiveKind::ReduceScatter, dp, Phase::BackwardInput, "classifier.").count ==
        3);
  // Only the convolutions' weights are data-parallel: their gradients, 2,469,696 params x 4 bytes.
  double grad = 0;
  for (const CollectiveStat& s : c.stats.collectives)
    if (s.purpose == "gradient") grad += s.bytes_per_rank;
  CHECK(grad == doctest::Approx(2469696.0 * 4));
}

TEST_CASE("DLRM table-wise model parallelism: all-to-all before the interaction and back") {
  const CompiledModel c = compile_text(R"({"preset":"dlrm-table-parallel"})");
  const AxisMask dp = axis_bit(kAxisDp);
  CHECK(count_collectives(c, CollectiveKind::AllToAll, dp, Phase::Forward, "embeddings").count == 1);
  CHECK(count_collectives(c, CollectiveKind::AllToAll, dp, Phase::BackwardInput, "").count == 1);
  // Tables are sharded (one per GPU): no gradient reduction for them; the MLPs are data-parallel.
  for (const CollectiveStat& s : c.stats.collectives)
    // MLPs: ~3.9M params x 4 bytes = 15.5 MB; one table alone would be 1e6 x 64 x 4 = 256 MB.
    if (s.purpose == "gradient") CHECK(s.bytes_per_rank < 20e6);
}

TEST_CASE("layers that do not divide into pp stages are split evenly, first and last stages lighter") {
  // 126 layers on 16 stages (Llama 3 405B's split): 7, 8 x 14, 7; no stage_layers needed.
  const CompiledModel c = compile_text(config_json(
      R"({"kind":"transformer","name":"126-layer","layers":126,"hidden":256,"heads":4,"seq_len":128,"vocab":1000})",
      R"({"preset":"dgx-h100","nodes":2})", 16, R"({"pp":16,"micro_batch":1})"));
  std::vector<int> expected(16, 8);
  expected.front() = expected.back() = 7;
  CHECK(c.tree.chunk_layers == expected);
}
