// TorchTitan's op-level selective activation checkpointing (compile/torch_op_sac.h;
// docs/frameworks/recompute.md "TorchTitan's selective activation checkpointing"): which ops its policy
// saves, what the replay runs again, what the forward keeps, and FSDP2's gathers for it.
#include <doctest/doctest.h>

#include <string>

#include "../core/src/compile/torch_op_sac.h"
#include "../core/src/search/bounds.h"
#include "compile_fixtures.h"
#include "search_test_helpers.h"

using namespace proteus;

namespace {

// The tiny Llama (hidden 1024, 8 heads of 128, 2 KV heads, SwiGLU 4096, 2 layers) with flash
// attention, 8 GPUs of one micro-batch of 2048 tokens each, FSDP2 (zero 3).
std::string llama_config(const std::string& recompute, const std::string& framework = "fsdp",
                         bool compiled = false) {
  return test::config_json(
      test::tiny_llama_model(R"(,"flash_attention":true)"), R"({"preset":"dgx-h100","nodes":1})", 8,
      R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework + R"(","recompute":")" + recompute +
          R"(")" + (compiled ? R"(,"torch_compile":true})" : "}"));
}

int op_named(const OpGraph& g, const std::string& path) {
  for (size_t i = 0; i < g.ops.size(); ++i)
    if (g.modules[g.ops[i].module].path + "." + g.ops[i].name == path) return static_cast<int>(i);
  FAIL("no op " << path);
  return -1;
}

// The work of simulated rank 0's first compute task labelled `label` in `phase`.
ComputeWork task_work(const CompiledModel& c, const std::string& label, Phase phase) {
  for (const Task& t : c.exec.tasks)
    if (t.kind == TaskKind::Compute && t.rank == 0 && t.phase == phase && c.exec.labels[t.label] == label)
      return c.exec.works[t.work];
  FAIL("no task " << label);
  return {};
}

double task_flops(const CompiledModel& c, const std::string& label, Phase phase) {
  return task_work(c, label, phase).flops;
}

}  // namespace

TEST_CASE("torch op SAC: every second aten.mm of a block is recomputed, attention is kept") {
  const CompiledModel c = test::compile_text(llama_config("selective"));
  const std::vector<double> share = torch_op_sac_saved_shares(c.graph);
  auto share_of = [&](const std::string& path) {
    return share[static_cast<size_t>(op_named(c.graph, path))];
  };
  // wq (mm 1) saved; wk (2) recomputed, wv (3) saved: half of kv_proj; wo (4) recomputed.
  CHECK(share_of("layers.0.attention.q_proj") == 1.0);
  CHECK(share_of("layers.0.attention.kv_proj") == 0.5);
  CHECK(share_of("layers.0.attention.attn") == 1.0);
  CHECK(share_of("layers.0.attention.o_proj") == 0.0);
  // w1 (5) saved, w3 (6) recomputed: half of the gated fc1; w2 (7) saved. The count restarts
  // in each block.
  CHECK(share_of("layers.1.mlp.fc1") == 0.5);
  CHECK(share_of("layers.1.mlp.fc2") == 1.0);
  CHECK(share_of("layers.1.attention.q_proj") == 1.0);
  // Norms, rotary, SiLU-product and adds are recomputed; the output layer is outside a block.
  CHECK(share_of("layers.0.attention.ln1") == 0.0);
  CHECK(share_of("layers.0.mlp.act") == 0.0);
  CHECK(share_of("head.lm_head") == -1.0);
}

TEST_CASE("torch op SAC: the replay is full recompute less the saved ops' forward") {
  const CompiledModel none = test::compile_text(llama_config("none"));
  const CompiledModel full = test::compile_text(llama_config("full"));
  const CompiledModel sac = test::compile_text(llama_config("selective"));
  // Global batch 8 x 2048 tokens; per layer the saved linears wq (1024 -> 1024), wv (-> 256), w1
  // (-> 4096), w2 (4096 -> 1024), 2 flops per multiply-add and one per output for the bias, and
  // attention's 4 b s^2 h.
  const double tokens = 8.0 * 2048;
  auto linear = [&](double in, double out) { return tokens * out * (2 * in + 1); };
  const double per_layer_saved_gemms =
      linear(1024, 1024) + linear(1024, 256) + linear(1024, 4096) + linear(4096, 1024);
  const double attention = 4.0 * 8 * 2048 * 2048 * 1024;
  const double full_extra = full.stats.hardware_flops_per_iteration - none.stats.hardware_flops_per_iteration;
  const double sac_extra = sac.stats.hardware_flops_per_iteration - none.stats.hardware_flops_per_iteration;
  CHECK(sac_extra == doctest::Approx(full_extra - 2 * (per_layer_saved_gemms + attention)));
  // On the timeline: the saved ops' replay serves the cache (no work), kv_proj replays wk only,
  // wo its whole forward.
  CHECK(task_flops(sac, "layers.0.attention.attn", Phase::Recompute) == 0);
  CHECK(task_flops(sac, "layers.0.mlp.fc2", Phase::Recompute) == 0);
  CHECK(task_flops(sac, "layers.0.attention.kv_proj", Phase::Recompute) ==
        doctest::Approx(task_flops(sac, "layers.0.attention.kv_proj", Phase::Forward) / 2));
  CHECK(task_flops(sac, "layers.0.attention.o_proj", Phase::Recompute) ==
        doctest::Approx(task_flops(sac, "layers.0.attention.o_proj", Phase::Forward)));
  // The block's last add feeds only the next block, which kept its own input: eager replays it,
  // torch.compile's partitioner does not (no backward reads it).
  const CompiledModel compiled = test::compile_text(llama_config("selective", "fsdp", true));
  CHECK(task_flops(sac, "layers.0.mlp.mlp_residual", Phase::Recompute) > 0);
  CHECK(task_flops(compiled, "layers.0.mlp.mlp_residual", Phase::Recompute) == 0);
  CHECK(task_flops(compiled, "layers.0.attention.attn_residual", Phase::Recompute) > 0);  // ln2 reads it
}

TEST_CASE("torch op SAC: SDPA served from its cache still has repeat_kv's copy run again") {
  // The policy saves SDPA's outputs, not the copy of K and V to every head that feeds it; the
  // backward needs SDPA's inputs, so the replay makes them again: per rank K + V of 2 KV heads x
  // 128 x 2048 tokens x 2 bytes, read once and written n_rep = 4 times.
  const double kv_bytes = 2.0 * 2 * 128 * 2048 * 2;
  const CompiledModel sac = test::compile_text(llama_config("selective"));
  const ComputeWork replay = task_work(sac, "layers.0.attention.attn", Phase::Recompute);
  CHECK(replay.flops == 0);
  CHECK(replay.side_bytes == doctest::Approx(5 * kv_bytes));
  CHECK(replay.side_bytes == task_work(sac, "layers.0.attention.attn", Phase::Forward).side_bytes);
  // The cached linears replay nothing.
  CHECK(task_work(sac, "layers.0.mlp.fc2", Phase::Recompute).side_bytes == 0);
  // Multi-head attention (kv_heads = heads) repeats nothing, so its replay copies nothing.
  std::string mha_model = test::tiny_llama_model(R"(,"flash_attention":true)");
  mha_model.replace(mha_model.find(R"("kv_heads":2)"), 12, R"("kv_heads":8)");
  const CompiledModel mha = test::compile_text(
      test::config_json(mha_model, R"({"preset":"dgx-h100","nodes":1})", 8,
                        R"({"dp":8,"micro_batch":1,"zero":3,"framework":"fsdp","recompute":"selective"})"));
  CHECK(task_work(mha, "layers.0.attention.attn", Phase::Recompute).side_bytes == 0);
}

TEST_CASE("torch op SAC: the forward keeps the block's input and the saved outputs") {
  const CompiledModel full = test::compile_text(llama_config("full"));
  const CompiledModel sac = test::compile_text(llama_config("selective"));
  // Per rank and layer (2048 tokens, bf16): q 4 MiB, v (half of kv_proj's 512) 1 MiB, the
  // attention output 4 MiB and its fp32 logsumexp (8 heads) 64 KiB, w1's output 16 MiB, w2's
  // 4 MiB; full recompute keeps the block's input alone, as this does besides.
  const double mib = 1024.0 * 1024.0, per_layer = (4 + 1 + 4 + 16 + 4) * mib + 2048.0 * 8 * 4;
  CHECK(sac.stats.activation_bytes_per_microbatch_per_stage[0] -
            full.stats.activation_bytes_per_microbatch_per_stage[0] ==
        doctest::Approx(2 * per_layer));
}

TEST_CASE("torch op SAC is framework fsdp's selective recompute; Megatron's stays its modules") {
  const CompiledModel megatron = test::compile_text(llama_config("selective", "megatron"));
  // Megatron's selective recompute replays the attention core and nothing else.
  CHECK(task_flops(megatron, "layers.0.attention.attn", Phase::Recompute) ==
        doctest::Approx(task_flops(megatron, "layers.0.attention.attn", Phase::Forward)));
  for (const Task& t : megatron.exec.tasks) {
    if (t.rank != 0 || t.phase != Phase::Recompute || t.kind != TaskKind::Compute) continue;
    const std::string& label = megatron.exec.labels[t.label];
    CHECK(label.substr(label.size() - 15) == ".attention.attn");
  }
}

TEST_CASE("torch op SAC: FSDP2's prefetched gathers serve the replay, cached ops included") {
  // As under full recompute (tests/test_frameworks.cpp): layer 0's weights are gathered before
  // layer 1's replay, and no gather waits for a replayed or cache-served op.
  const CompiledModel c = test::compile_text(llama_config("selective"));
  int first_layer1_replay = -1, last_layer0_gather = -1, recompute_gathers = 0;
  for (size_t i = 0; i < c.exec.tasks.size(); ++i) {
    const Task& t = c.exec.tasks[i];
    if (t.rank != 0 || t.micro_batch != 0) continue;
    const std::string& label = c.exec.labels[t.label];
    if (t.kind == TaskKind::Compute && t.phase == Phase::Recompute && label.rfind("layers.1.", 0) == 0 &&
        first_layer1_replay < 0)
      first_layer1_replay = static_cast<int>(i);
    if (t.kind != TaskKind::Collective || c.exec.collectives[t.collective].kind != CollectiveKind::AllGather)
      continue;
    if (t.phase == Phase::Recompute) ++recompute_gathers;
    if (t.phase == Phase::BackwardInput && label.rfind("layers.0.", 0) == 0)
      last_layer0_gather = static_cast<int>(i);
  }
  REQUIRE(first_layer1_replay >= 0);
  REQUIRE(last_layer0_gather >= 0);
  CHECK(last_layer0_gather < first_layer1_replay);
  CHECK(recompute_gathers == 0);
}

TEST_CASE("torch op SAC under tensor parallelism: the saved reduce-scatters are not run again") {
  // TorchTitan's TP plan (wo and w2 RowwiseParallel with Shard(1) output: a functional
  // reduce-scatter, in the save list; the attention and feed-forward inputs all-gathered by
  // PrepareModuleInput, not in it). Full recompute runs both again; the policy the gathers only.
  auto config = [](const std::string& recompute, const std::string& overlap) {
    return test::config_json(
        test::tiny_llama_model(R"(,"flash_attention":true)"), R"({"preset":"dgx-h100","nodes":1})", 8,
        R"({"dp":4,"tp":2,"micro_batch":1,"zero":3,"framework":"fsdp","sequence_parallel":true,)"
        R"("recompute":")" +
            recompute + R"(")" + overlap + "}");
  };
  const AxisMask tp = axis_bit(kAxisTp);
  for (const std::string overlap : {"", R"(,"tp_comm_overlap":true,"torch_compile":true)"}) {
    CAPTURE(overlap);
    const CompiledModel full = test::compile_text(config("full", overlap));
    const CompiledModel sac = test::compile_text(config("selective", overlap));
    auto recomputed = [&](const CompiledModel& c, CollectiveKind kind) {
      return test::count_collectives(c, kind, tp, Phase::Recompute, "layers.0.").count;
    };
    if (overlap.empty()) {
      CHECK(recomputed(full, CollectiveKind::ReduceScatter) > 0);
      CHECK(recomputed(sac, CollectiveKind::ReduceScatter) == 0);
    } else {  // async TP: the reduce-scatter is torch's fused op, whose last kernel is the reduction
      CHECK(test::count_compute_tasks(full, "async_tp_reduce", Phase::Recompute).count > 0);
      CHECK(test::count_compute_tasks(sac, "async_tp_reduce", Phase::Recompute).count == 0);
    }
    if (overlap.empty())
      CHECK(recomputed(sac, CollectiveKind::AllGather) == recomputed(full, CollectiveKind::AllGather));
    // wo's output then feeds only the saved reduce-scatter: eager PyTorch replays wo all the
    // same, torch.compile's partitioner drops it.
    const double wo_replay = task_flops(sac, "layers.0.attention.o_proj", Phase::Recompute);
    if (overlap.empty())
      CHECK(wo_replay == doctest::Approx(task_flops(sac, "layers.0.attention.o_proj", Phase::Forward)));
    else
      CHECK(wo_replay == 0);
  }
  // What the forward keeps beyond full recompute's block input, per rank and layer (2048 tokens,
  // tp 2, bf16, MiB): q 2, v 0.5, the attention output 2 and its logsumexp (4 heads, fp32), w1's
  // output 8, w2's partial sums 4, and the reduce-scattered outputs of wo and w2, 2 each.
  const double mib = 1024.0 * 1024.0, per_layer = (2 + 0.5 + 2 + 8 + 4 + 2 + 2) * mib + 4.0 * 2048 * 4;
  const CompiledModel full = test::compile_text(config("full", ""));
  const CompiledModel sac = test::compile_text(config("selective", ""));
  CHECK(sac.stats.activation_bytes_per_microbatch_per_stage[0] -
            full.stats.activation_bytes_per_microbatch_per_stage[0] ==
        doctest::Approx(2 * per_layer));
}

TEST_CASE("torch op SAC: the search's analytic bound counts its recompute and stays below") {
  // Long sequences make Megatron's recompute (the attention core) far larger than TorchTitan's
  // (three linears and the memory-bound ops): the bound must take the latter.
  std::string model = test::tiny_llama_model(R"(,"flash_attention":true)");
  const std::string seq_2k = R"("seq_len":2048)";
  model.replace(model.find(seq_2k), seq_2k.size(), R"("seq_len":16384)");
  for (const std::string recompute : {"none", "selective"}) {
    CAPTURE(recompute);
    const Config c = parse_config(test::config_json(
        model, R"({"preset":"dgx-h100","nodes":1})", 8,
        R"({"dp":8,"micro_batch":1,"zero":3,"framework":"fsdp","recompute":")" + recompute + R"("})"));
    const search_detail::ModelProfile profile = search_detail::profile_model(c);
    CHECK(search_detail::analytic_bounds(profile, c).time_s <= test::simulate(c).time_s);
  }
  const Config sac = parse_config(
      test::config_json(model, R"({"preset":"dgx-h100","nodes":1})", 8,
                        R"({"dp":8,"micro_batch":1,"zero":3,"framework":"fsdp","recompute":"selective"})"));
  const search_detail::ModelProfile profile = search_detail::profile_model(sac);
  double layers_forward = 0, replayed = 0;
  for (size_t u = 0; u < profile.fwd_flops.size(); ++u) {
    layers_forward += profile.fwd_flops[u];
    replayed += profile.torch_op_sac_flops[u];
  }
  // Per token: wk, wo and w3 again (out x (2 in + 1) flops each, with the bias), not the
  // attention's 4 s h, which is two thirds of the layers' forward at 16K tokens.
  auto linear = [](double in, double out) { return out * (2 * in + 1); };
  const double linears = linear(1024, 1024 + 256 + 256 + 1024 + 4096 + 4096) + linear(4096, 1024);
  const double again = linear(1024, 256) + linear(1024, 1024) + linear(1024, 4096);
  CHECK(replayed / layers_forward == doctest::Approx(again / (linears + 4.0 * 16384 * 1024)));
}
