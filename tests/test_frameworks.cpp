// Framework semantics (docs/frameworks.md): the knobs that choose them, the combinations no
// framework runs (errors naming the field), and the FP8 recipe's precision per op.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include "../core/src/exec/executor_plans.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/error.h"
#include "relative_approx.h"

using nlohmann::json;
using namespace proteus;

namespace {

// Llama 3 8B on 4 DGX H100 nodes, TP4 x PP2 x DP4 (= 32 GPUs), strategy fields merged in.
json config_with(const json& strategy, const json& training = json::object()) {
  json c = json::parse(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "nodes": 4},
                           "training": {"global_batch": 128}, "strategy": {"dp": 4, "tp": 4, "pp": 2}})");
  for (const auto& item : strategy.items()) c["strategy"][item.key()] = item.value();
  for (const auto& item : training.items()) c["training"][item.key()] = item.value();
  return c;
}

std::string error_path(const json& config) {
  try {
    parse_config(config.dump());
  } catch (const Error& error) {
    CHECK(error.code == "invalid_config");
    CHECK(std::string(error.what()).size() > 20);
    return error.path;
  }
  return "(parsed)";
}

}  // namespace

TEST_CASE("frameworks: grad_sync defaults follow the framework") {
  // Megatron (DDP, distributed optimizer): gradients reduced once, at the boundary.
  CHECK(parse_config(config_with({{"zero", 1}}).dump()).strategy.grad_sync == GradSync::AtBoundary);
  // DeepSpeed ZeRO-2 reduce-scatters every micro-batch (DeepSpeed PR #338); pp 1 needed.
  const json ds2 = config_with({{"zero", 2}, {"framework", "deepspeed"}, {"pp", 1}, {"dp", 8}});
  CHECK(parse_config(ds2.dump()).strategy.grad_sync == GradSync::PerMicroBatch);
  // FSDP under a pipeline: torch.distributed.pipelining syncs at the last micro-batch.
  const json fsdp_pp = config_with({{"zero", 3}, {"framework", "fsdp"}});
  CHECK(parse_config(fsdp_pp.dump()).strategy.grad_sync == GradSync::AtBoundary);
  // An explicit choice wins.
  const json ds2_boundary = config_with(
      {{"zero", 2}, {"framework", "deepspeed"}, {"pp", 1}, {"dp", 8}, {"grad_sync", "at_boundary"}});
  CHECK(parse_config(ds2_boundary.dump()).strategy.grad_sync == GradSync::AtBoundary);
  CHECK(parse_config(config_with({}).dump()).strategy.cp_comm_type == CpCommType::P2p);  // TE's default
}

TEST_CASE("frameworks: combinations no framework runs are errors naming the field") {
  // DeepSpeed's PipelineEngine asserts ZeRO stage < 2.
  CHECK(error_path(config_with({{"zero", 2}, {"framework", "deepspeed"}})) == "strategy.zero");
  CHECK(error_path(config_with({{"zero", 3}, {"framework", "deepspeed"}})) == "strategy.zero");
  CHECK(error_path(config_with({{"zero", 1}, {"framework", "deepspeed"}})) == "(parsed)");
  // ... and runs one schedule, its TrainSchedule (1F1B).
  for (const char* schedule : {"interleaved-1f1b", "gpipe", "zb-h1", "dualpipe"})
    CHECK(error_path(config_with({{"zero", 1}, {"framework", "deepspeed"}, {"schedule", schedule}})) ==
          "strategy.schedule");
  // Megatron-Core pipelines use the distributed optimizer.
  CHECK(error_path(config_with({{"zero", 3}})) == "strategy.zero");
  CHECK(error_path(config_with({{"zero", 3}, {"pp", 1}, {"dp", 8}})) == "(parsed)");
  // FSDP has no optimizer-only sharding; under a pipeline it cannot reduce per micro-batch.
  CHECK(error_path(config_with({{"zero", 1}, {"framework", "fsdp"}})) == "strategy.zero");
  CHECK(error_path(config_with({{"zero", 3}, {"framework", "fsdp"}, {"grad_sync", "per_micro_batch"}})) ==
        "strategy.grad_sync");
  CHECK(error_path(config_with({{"framework", "jax"}})) == "strategy.framework");
  CHECK(error_path(config_with({{"grad_sync", "sometimes"}})) == "strategy.grad_sync");
  CHECK(error_path(config_with({{"cp_comm_type", "ring"}})) == "strategy.cp_comm_type");
  // TE's userbuffers overlap the sequence-parallel collectives: sequence parallelism required
  // (tests/test_tp_overlap.cpp).
  CHECK(error_path(config_with({{"tp_comm_overlap", true}})) == "strategy.tp_comm_overlap");
  CHECK(error_path(config_with({{"tp_comm_overlap", true}, {"sequence_parallel", true}})) == "(parsed)");
  // Hierarchical a2a+p2p: tp 4 x a 2 fills a node, so the heads (8 KV heads) split over tp x 2 = 8.
  CHECK(error_path(config_with({{"cp", 2}, {"dp", 2}, {"cp_comm_type", "a2a+p2p"}})) == "(parsed)");
  // Ulysses (a2a) scatters heads over tp x cp: Llama 3 8B has 8 KV heads, tp 4 x cp 4 = 16.
  const json a2a = config_with({{"cp", 4}, {"dp", 1}, {"cp_comm_type", "a2a"}});
  CHECK(error_path(a2a) == "strategy.cp_comm_type");
  CHECK(error_path(config_with({{"cp", 2}, {"dp", 2}, {"cp_comm_type", "a2a"}})) == "(parsed)");
  // Megatron-DeepSpeed splits the sequence with DeepSpeed-Ulysses only (a2a, its default there),
  // and never beside Megatron's sequence parallelism.
  const json ulysses = {{"framework", "deepspeed"}, {"zero", 1}, {"tp", 2}, {"pp", 1}, {"cp", 2}, {"dp", 8}};
  CHECK(error_path(config_with(ulysses)) == "(parsed)");
  CHECK(parse_config(config_with(ulysses).dump()).strategy.cp_comm_type == CpCommType::A2a);
  for (const char* type : {"p2p", "all_gather", "a2a+p2p"}) {
    json other = ulysses;
    other["cp_comm_type"] = type;
    CHECK(error_path(config_with(other)) == "strategy.cp_comm_type");
  }
  // PyTorch's context_parallel (framework fsdp) rotates K/V by all-gather by default.
  CHECK(parse_config(
            config_with({{"framework", "fsdp"}, {"zero", 3}, {"tp", 2}, {"pp", 1}, {"cp", 2}, {"dp", 8}})
                .dump())
            .strategy.cp_comm_type == CpCommType::AllGather);
  CHECK(parse_config(config_with({{"cp", 2}, {"dp", 2}}).dump()).strategy.cp_comm_type == CpCommType::P2p);
  // Ulysses over more ranks than Llama 3 8B's 8 KV heads: the error's way out is one DeepSpeed
  // runs (another cp, or Megatron's ring), not a cp_comm_type it refuses.
  json too_wide = ulysses;
  too_wide["tp"] = 1;
  too_wide["cp"] = 16;
  too_wide["dp"] = 2;
  try {
    parse_config(config_with(too_wide).dump());
    FAIL("Ulysses over 16 ranks with 8 KV heads parsed");
  } catch (const Error& error) {
    CHECK(error.path == "strategy.cp_comm_type");
    const std::string message = error.what();
    CHECK(message.find("kv_heads=8") != std::string::npos);
    CHECK(message.find("framework \"megatron\"") != std::string::npos);
    CHECK(message.find("use \"p2p\" or \"all_gather\"") == std::string::npos);
  }
  json with_sp = ulysses;
  with_sp["sequence_parallel"] = true;
  CHECK(error_path(config_with(with_sp)) == "strategy.sequence_parallel");
  // FP8 settings without FP8.
  CHECK(error_path(config_with({}, {{"fp8_recipe", "current"}})) == "training.fp8_recipe");
  CHECK(error_path(config_with({}, {{"precision", "fp8"}, {"fp8_recipe", "mxfp8"}})) == "(parsed)");
  CHECK(error_path(config_with({}, {{"precision", "fp8"}, {"fp8_recipe", "bf16"}})) == "training.fp8_recipe");
}

TEST_CASE("frameworks: FP8 runs GEMMs at the FP8 peak and attention at the bf16 peak") {
  // H100-like: 989.4 bf16, 1978.9 fp8 TFLOPS; no shape, so efficiency = gemm_max_efficiency 0.8
  // for GEMMs and attention_efficiency 0.5; launch overhead 0 to read the compute time alone.
  CostModel m;
  m.gpu.hbm_GBps = 3350;
  m.gpu.peak_fp32_TFLOPS = 66.9;
  m.gpu.peak_bf16_TFLOPS = 989.4;
  m.gpu.peak_fp8_TFLOPS = 1978.9;
  m.gpu.gemm_max_efficiency = 0.8;
  m.gpu.attention_efficiency = 0.5;
  m.gpu.kernel_launch_us = 0;
  m.precision = Precision::Fp8;
  ComputeWork gemm;
  gemm.op_kind = OpKind::Matmul;
  gemm.flops = 1e12;
  ComputeWork attention = gemm;
  attention.op_kind = OpKind::Attention;
  // 1e12 / (1978.9e12 * 0.8) = 631.66 us; attention 1e12 / (989.4e12 * 0.5) = 2021.4 us.
  CHECK(m.compute_time_s(gemm) == proteus::test::approx(1e12 / (1978.9e12 * 0.8)).epsilon(1e-12));
  CHECK(m.compute_time_s(attention) == proteus::test::approx(1e12 / (989.4e12 * 0.5)).epsilon(1e-12));
  CHECK(m.precision_of(attention) == Precision::Bf16);
  m.fp8_attention = true;  // TE recipe fp8_dpa
  CHECK(m.compute_time_s(attention) == proteus::test::approx(1e12 / (1978.9e12 * 0.5)).epsilon(1e-12));
  // Side kernels (casts) add their memory time and one launch: 1 GB at 3350 GB/s * 0.8 = 373.13 us.
  m.gpu.memory_bound_efficiency = 0.8;
  m.gpu.kernel_launch_us = 4;
  ComputeWork cast = gemm;
  cast.kernels = 0;
  cast.side_bytes = 1e9;
  CHECK(m.compute_time_s(cast) - (m.compute_time_s(gemm) - 4e-6) ==
        proteus::test::approx(1e9 / (3350e9 * 0.8) + 4e-6).epsilon(1e-9));
}

// ---------- the compiler's framework semantics ----------

namespace {

// GPT-style, 2 layers, hidden 512, 8 heads, seq 256, vocab 8000 (tests/compile_fixtures.h), on
// one DGX A100 node: dp 8, micro-batch 1.
std::string small(const std::string& strategy, int64_t global_batch = 8) {
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})",
                           global_batch, strategy);
}

struct Bytes {
  int64_t count = 0;
  double bytes = 0;
};

Bytes stat(const CompiledModel& c, const char* kind, const char* purpose) {
  Bytes b;
  for (const CollectiveStat& s : c.stats.collectives)
    if (s.kind == kind && s.purpose == purpose) {
      b.count += s.count;
      b.bytes += s.bytes_per_rank;
    }
  return b;
}

json simulate(const std::string& config) { return json::parse(simulate_json(config, SimulateOptions{})); }

}  // namespace

TEST_CASE(
    "frameworks: ZeRO-1 is the distributed optimizer: reduce-scatter + all-gather, less traffic than DDP") {
  const CompiledModel z0 = test::compile_text(small(R"({"dp":8,"micro_batch":1})"));
  const CompiledModel z1 = test::compile_text(small(R"({"dp":8,"micro_batch":1,"zero":1})"));
  const double P = static_cast<double>(z0.stats.parameters);
  // DDP: all-reduce of the fp32 main gradients, S = 4P (Megatron: grads reduced in fp32).
  CHECK(stat(z0, "all_reduce", "gradient").bytes == doctest::Approx(4 * P));
  // Distributed optimizer (Megatron distrib_optimizer.html): reduce-scatter S = 4P of the same
  // fp32 gradients, then all-gather of the updated bf16 parameters, S = 2P; no all-reduce.
  CHECK(stat(z1, "all_reduce", "gradient").count == 0);
  CHECK(stat(z1, "reduce_scatter", "gradient").bytes == doctest::Approx(4 * P));
  CHECK(stat(z1, "all_gather", "weight").bytes == doctest::Approx(2 * P));
  // Bytes a rank sends in a ring: all-reduce 2(d-1)/d S, reduce-scatter and all-gather (d-1)/d S:
  // DDP 2*7/8*4P = 7P; ZeRO-1 7/8*(4P + 2P) = 5.25P: never more than DDP.
  const double ddp = 2.0 * 7 / 8 * stat(z0, "all_reduce", "gradient").bytes;
  const double zero1 =
      7.0 / 8 * (stat(z1, "reduce_scatter", "gradient").bytes + stat(z1, "all_gather", "weight").bytes);
  CHECK(zero1 == doctest::Approx(5.25 * P));
  CHECK(zero1 < ddp);
  // Memory (Megatron's table, fp32 grads): 6 + 12/d bytes per parameter: the gradient buffer stays whole.
  const auto& m = z1.stats.static_bytes_per_stage[0];
  CHECK(m[static_cast<int>(MemCategory::Gradients)] == doctest::Approx(4 * P));
  CHECK(m[static_cast<int>(MemCategory::OptimizerStates)] == doctest::Approx(12 * P / 8));
}

TEST_CASE(
    "frameworks: overlap_param_gather gathers the first layers' bucket first, one bucket ahead of the forward") {
  // Buckets are filled in backward order (the last layers' gradients first); the forward needs
  // them in the opposite order. Megatron dispatches bucket k+1's gather when bucket k's is
  // waited on, so the gathers run back to back on the data-parallel stream in forward order and
  // the first forward op waits only for the first of them.
  const CompiledModel c =
      test::compile_text(small(R"({"dp":8,"micro_batch":1,"zero":1,"grad_bucket_MB":4})"));
  std::vector<int> gathers;  // bucket numbers, in the order the data-parallel stream runs them
  for (int id : c.exec.queues[static_cast<size_t>(Stream::DpComm)]) {
    const Task& t = c.exec.tasks[static_cast<size_t>(id)];
    const std::string& label = c.exec.labels[static_cast<size_t>(t.label)];
    if (label.rfind("param_gather_", 0) == 0) gathers.push_back(std::stoi(label.substr(13)));
  }
  // Buckets by hand: a layer holds 12h^2 + 13h = 3.15M parameters (12.6 MB of fp32 gradients),
  // the tied embedding 8000 x 512 (16.4 MB): buckets of 4 MB (Megatron's are all one size), at
  // least 3 in all; gathered last bucket first, down to bucket 0.
  REQUIRE(gathers.size() >= 3);
  for (size_t i = 0; i < gathers.size(); ++i) CHECK(gathers[i] == static_cast<int>(gathers.size() - 1 - i));
  // The tied embedding is registered by the embedding, the model's first parameter, so it is in
  // the last bucket (Megatron buckets in reverse parameters() order) and the first forward op
  // waits for the first gather alone, not for all of them (as when the output layer, its last
  // reader, placed it in bucket 0).
  const std::string first_gather = "param_gather_" + std::to_string(gathers.front());
  std::vector<std::string> embedding_waits_for;
  for (size_t t = 0; t < c.exec.tasks.size(); ++t) {
    const Task& task = c.exec.tasks[t];
    if (task.rank != 0 || task.phase != Phase::Forward ||
        c.exec.labels[static_cast<size_t>(task.label)] != "embedding.word_embedding")
      continue;
    for (int d = c.exec.dep_offsets[t]; d < c.exec.dep_offsets[t + 1]; ++d) {
      const std::string& label = c.exec.labels[static_cast<size_t>(c.exec.tasks[c.exec.deps[d]].label)];
      if (label.rfind("param_gather_", 0) == 0) embedding_waits_for.push_back(label);
    }
    break;
  }
  CHECK(embedding_waits_for == std::vector<std::string>{first_gather});
  // Gathers exposed (one node of A100 is slow enough for a 2-layer model): overlapped, the
  // forward waits for one bucket's gather where the step without overlap ends with all of them
  // (their sum is about a fifth of this step): faster by well over 5%.
  const double on = simulate(
      small(R"({"dp":8,"micro_batch":1,"zero":1,"grad_bucket_MB":4})"))["summary"]["iteration_time_s"];
  const double off =
      simulate(small(R"({"dp":8,"micro_batch":1,"zero":1,"grad_bucket_MB":4,"overlap_param_gather":false})"))
          ["summary"]["iteration_time_s"];
  CHECK(on < 0.95 * off);
}

// The fp32 bytes of rank 0's first gradient bucket: the all-reduce of grad_bucket_0.
double first_grad_bucket_bytes(const CompiledModel& c) {
  return test::count_collectives(c, CollectiveKind::AllReduce, axis_bit(kAxisDp), Phase::Sync,
                                 "grad_bucket_0")
      .bytes;
}

TEST_CASE("frameworks: only PyTorch DDP closes its first gradient bucket at 1 MB") {
  // Backward order: the final norm (2 x 512), fc2's weight (512 x 2048, 4.19 MB of fp32
  // gradients) and bias, fc1's weight (8.39 MB), ... DDP (framework fsdp, zero 0) closes its
  // first bucket once it holds 1 MB (dist._DEFAULT_FIRST_BUCKET_BYTES): after fc2's weight.
  // Megatron's _ParamAndGradBuffer and DeepSpeed fill every bucket to the one size, 25 MB.
  const double norm = 2 * 512 * 4.0, fc2_weight = 512 * 2048 * 4.0;
  const CompiledModel ddp = test::compile_text(small(R"({"dp":8,"micro_batch":1,"framework":"fsdp"})"));
  CHECK(first_grad_bucket_bytes(ddp) == doctest::Approx(norm + fc2_weight));
  for (const char* framework : {"megatron", "deepspeed"}) {
    const CompiledModel c = test::compile_text(
        small(std::string(R"({"dp":8,"micro_batch":1,"framework":")") + framework + "\"}"));
    CHECK(first_grad_bucket_bytes(c) >= 25e6);
  }
}

TEST_CASE(
    "frameworks: ZeRO-2 per micro-batch reduce-scatters m times; at the boundary it keeps a full gradient") {
  // dp 8, micro-batch 1: global batch 8 -> m = 1, global batch 64 -> m = 8 micro-batches.
  const std::string z2 = R"({"dp":8,"micro_batch":1,"zero":2,"framework":"deepspeed"})";
  const CompiledModel one = test::compile_text(small(z2, 8));
  const CompiledModel eight = test::compile_text(small(z2, 64));
  const double P = static_cast<double>(one.stats.parameters);
  // DeepSpeed ZeRO-2 reduces every micro-batch (PR #338): 8x the reduce-scatters and bytes.
  CHECK(stat(eight, "reduce_scatter", "gradient").count == 8 * stat(one, "reduce_scatter", "gradient").count);
  // DeepSpeed reduces the module's bf16 gradients (communication_data_type's default).
  CHECK(stat(eight, "reduce_scatter", "gradient").bytes == doctest::Approx(8 * 2 * P));
  // ... and holds only its 1/d shard of the 16-bit gradient (ZeRO paper 5.2: 2 + (2 + 12)/d per parameter).
  const int grads = static_cast<int>(MemCategory::Gradients);
  CHECK(eight.stats.static_bytes_per_stage[0][grads] == doctest::Approx(2 * P / 8));
  // FSDP no_sync / at the boundary: one reduce-scatter per parameter group (FSDP2's
  // post_backward: the root module's and each of the 2 blocks'), a full fp32 gradient buffer.
  const CompiledModel boundary = test::compile_text(
      small(R"({"dp":8,"micro_batch":1,"zero":2,"framework":"fsdp","grad_sync":"at_boundary"})", 64));
  CHECK(stat(boundary, "reduce_scatter", "gradient").count == 1 + boundary.graph.num_layers);
  CHECK(stat(boundary, "reduce_scatter", "gradient").bytes == doctest::Approx(4 * P));
  CHECK(boundary.stats.static_bytes_per_stage[0][grads] == doctest::Approx(4 * P));
}

TEST_CASE("frameworks: ZeRO-3 gathers on their own stream, twice per micro-batch under full recompute") {
  // 2 layers, 2 micro-batches (global batch 16, dp 8, micro-batch 1).
  const CompiledModel c = test::compile_text(
      small(R"({"dp":8,"micro_batch":1,"zero":3,"recompute":"full","framework":"deepspeed"})", 16));
  // The ops with a partitioned weight (DeepSpeed keeps those under 1e5 elements whole: the norms').
  int partitioned_ops = 0;
  for (const Op& op : c.graph.ops)
    partitioned_ops += std::any_of(op.weights.begin(), op.weights.end(), [&](const TensorUse& w) {
      return c.graph.tensors[w.tensor].elements() >= 100000;
    });
  // Forward, then one gather that serves the recompute and the backward right after it
  // (DeepSpeed, per module): 2 per such op per micro-batch, not 3; and after the step one of
  // the persistent parameters' updates.
  CHECK(stat(c, "all_gather", "weight").count == 2 * 2 * partitioned_ops + 1);
  // Megatron-FSDP, per unit: the root's once an iteration (kept), each layer's twice a micro-batch.
  const CompiledModel megatron =
      test::compile_text(small(R"({"dp":8,"micro_batch":1,"zero":3,"recompute":"full"})", 16));
  CHECK(stat(megatron, "all_gather", "weight").count == 1 + 2 * (2 * megatron.graph.num_layers));
  // Timeline of one layer's op k in a micro-batch's backward (ParamComm = gathers, DpComm = RS):
  //   param_comm: |gather k (recompute+B)|gather k-1| ...
  //   compute:    ..|recompute k|backward k|...
  //   dp_comm:                             |reduce-scatter of k's bucket (after its W)|
  // Gathers never queue behind reduce-scatters: they are on different streams. (The persistent
  // parameters' updates are gathered after the step, Phase::Sync.)
  for (const Task& t : c.exec.tasks) {
    if (t.kind != TaskKind::Collective) continue;
    const Collective& col = c.exec.collectives[static_cast<size_t>(t.collective)];
    if (col.kind == CollectiveKind::AllGather && col.axes == axis_bit(kAxisDp) && t.phase != Phase::Sync)
      CHECK(t.stream == Stream::ParamComm);
    if (col.kind == CollectiveKind::ReduceScatter && col.axes == axis_bit(kAxisDp))
      CHECK(t.stream == Stream::DpComm);
  }
  // With reductions on their own stream, overlapping them is never slower than not.
  const double on =
      simulate(small(R"({"dp":8,"micro_batch":1,"zero":3,"grad_sync":"at_boundary","framework":"fsdp"})",
                     16))["summary"]["iteration_time_s"];
  const double off = simulate(small(
      R"({"dp":8,"micro_batch":1,"zero":3,"grad_sync":"at_boundary","framework":"fsdp","overlap_grad_reduce":false})",
      16))["summary"]["iteration_time_s"];
  CHECK(on <= off);
}

// FSDP2 gathers a block's parameters as one unit, the next block's while this one computes
// (fully_shard per TransformerBlock; implicit forward prefetch): layer 1's forward gathers are
// issued before layer 0's first op runs, as Megatron-FSDP's prefetch issues them; per-op ZeRO-3
// (DeepSpeed's) gathers each op's weights one op ahead.
TEST_CASE("frameworks: FSDP2's forward gathers the next block's weights while this block computes") {
  for (const std::string framework : {"fsdp", "megatron", "deepspeed"}) {
    CAPTURE(framework);
    const CompiledModel c =
        test::compile_text(small(R"({"dp":8,"micro_batch":1,"zero":3,"framework":")" + framework + R"("})"));
    int first_layer0_compute = -1, last_layer1_gather = -1;
    for (size_t i = 0; i < c.exec.tasks.size(); ++i) {
      const Task& t = c.exec.tasks[i];
      if (t.rank != 0 || t.micro_batch != 0 || t.phase != Phase::Forward) continue;
      const std::string& label = c.exec.labels[static_cast<size_t>(t.label)];
      if (t.kind == TaskKind::Compute && label.rfind("layers.0.", 0) == 0 && first_layer0_compute < 0)
        first_layer0_compute = static_cast<int>(i);
      if (t.kind == TaskKind::Collective && label.rfind("layers.1.", 0) == 0 &&
          c.exec.collectives[static_cast<size_t>(t.collective)].kind == CollectiveKind::AllGather)
        last_layer1_gather = static_cast<int>(i);
    }
    REQUIRE(first_layer0_compute >= 0);
    REQUIRE(last_layer1_gather >= 0);
    CHECK((last_layer1_gather < first_layer0_compute) == (framework != "deepspeed"));
  }
  // Llama 3 8B over 16 nodes (FSDP 128, local batch 2 of 8K tokens): a block's 0.44 GB gather
  // takes under 11 ms at the 40 GB/s a GPU's NIC carries, its forward about 25 ms: FSDP2 hides
  // the blocks' gathers (TorchTitan's 128-GPU rows run 2% slower than its 8-GPU rows, not more).
  // What it cannot hide is the root group's: its bf16 gather (embedding and output layer,
  // 2 x 128256 x 4096) before the first block and its fp32 reduce-scatter after the last
  // backward, ring traffic (n - 1)/n of them over the node's 8 NICs.
  const json r = simulate(
      R"({"model": "llama3-8b", "training": {"global_batch": 256, "seq_len": 8192, "precision": "bf16"},
          "strategy": {"dp": 128, "micro_batch": 2, "zero": 3, "framework": "fsdp", "torch_compile": true},
          "cluster": {"preset": "dgx-h100", "nodes": 16}})");
  const double root_params = 2.0 * 128256 * 4096, nics_Bps = 8 * 40e9;
  const double root_unhidden_s = root_params * (2 + 4) * 127 / 128 / nics_Bps;
  const double step_s = r["summary"]["iteration_time_s"].get<double>();
  CHECK(r["summary"]["exposed_comm_fraction"].get<double>() * step_s < root_unhidden_s + 0.005 * step_s);
}

// FSDPParamGroup.pre_backward unshards a block and prefetches the next one in backward order
// (_backward_prefetch): under recompute, layer 0's weights are gathered (issued) before layer 1's
// replay starts, and no gather waits for a replayed op (the replay reads what the prefetch kept).
// Megatron-FSDP's pre-backward hook does the same ("gather parameters once for both the
// recomputation and backward computation"); DeepSpeed's ZeRO-3 keeps gathering each op's weights
// before its replay.
TEST_CASE("frameworks: FSDP2 gathers a checkpointed block's weights while the next block runs its backward") {
  for (const std::string framework : {"fsdp", "megatron", "deepspeed"}) {
    CAPTURE(framework);
    const CompiledModel c = test::compile_text(
        small(R"({"dp":8,"micro_batch":1,"zero":3,"recompute":"full","framework":")" + framework + R"("})"));
    int first_layer1_replay = -1, last_layer0_gather = -1, recompute_gathers = 0;
    for (size_t i = 0; i < c.exec.tasks.size(); ++i) {
      const Task& t = c.exec.tasks[i];
      if (t.rank != 0 || t.micro_batch != 0) continue;
      const std::string& label = c.exec.labels[static_cast<size_t>(t.label)];
      if (t.kind == TaskKind::Compute && t.phase == Phase::Recompute && label.rfind("layers.1.", 0) == 0 &&
          first_layer1_replay < 0)
        first_layer1_replay = static_cast<int>(i);
      if (t.kind != TaskKind::Collective ||
          c.exec.collectives[static_cast<size_t>(t.collective)].kind != CollectiveKind::AllGather)
        continue;
      if (t.phase == Phase::Recompute) ++recompute_gathers;
      if (t.phase != Phase::Forward && label.rfind("layers.0.", 0) == 0)
        last_layer0_gather = static_cast<int>(i);
    }
    REQUIRE(first_layer1_replay >= 0);
    REQUIRE(last_layer0_gather >= 0);
    if (framework != "deepspeed") {
      CHECK(last_layer0_gather < first_layer1_replay);
      CHECK(recompute_gathers == 0);
    } else {
      CHECK(last_layer0_gather > first_layer1_replay);
      CHECK(recompute_gathers > 0);
    }
  }
}

TEST_CASE("frameworks: context parallelism p2p passes K/V blocks around the ring between attention blocks") {
  // 2 layers, hidden 512 (MHA: K/V = 2 x 512 wide), seq 256, micro-batch 1; dp 2 x cp 4 on one
  // A100 node. Local K/V shard B = 1 x 256/4 x 1024 x 2 bytes = 131072 bytes.
  auto cfg = [](const char* type) {
    return test::config_json(
        test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 2,
        std::string(R"({"dp":2,"cp":4,"micro_batch":1,"cp_comm_type":")") + type + "\"}");
  };
  const CompiledModel ring = test::compile_text(cfg("p2p"));
  const double B = 256.0 / 4 * 1024 * 2;
  // Layer 0's attention in the forward, in program order on the compute and TP streams:
  //   compute: |block 0 (local K/V)|      |block 1|      |block 2|      |block 3|
  //   tp_comm:        |step 1: K/V of rank r-1|step 2|step 3|
  // step i is issued after step i-1 (it forwards what arrived), block i waits for step i.
  std::vector<const Task*> attn;
  for (const Task& t : ring.exec.tasks)
    if (t.rank == 0 && t.phase == Phase::Forward &&
        ring.exec.labels[static_cast<size_t>(t.label)] == "layers.0.attention.attn")
      attn.push_back(&t);
  REQUIRE(attn.size() == 4 + 3);
  int steps = 0;
  for (const Task* t : attn)
    if (t->kind == TaskKind::Collective) {
      ++steps;
      const Collective& c = ring.exec.collectives[static_cast<size_t>(t->collective)];
      CHECK(c.axes == axis_bit(kAxisCp));
      CHECK(c.kind == CollectiveKind::RingExchange);
      CHECK(c.bytes == doctest::Approx(B));  // each rank passes its current shard on
    }
  CHECK(steps == 3);
  // The backward passes K/V and dK/dV: 3 steps of 2B each; no K/V all-gather or dK/dV reduce-scatter.
  double back = 0;
  for (const Task& t : ring.exec.tasks)
    if (t.rank == 0 && t.kind == TaskKind::Collective && t.phase == Phase::BackwardInput &&
        ring.exec.labels[static_cast<size_t>(t.label)] == "layers.0.attention.attn")
      back += ring.exec.collectives[static_cast<size_t>(t.collective)].bytes;
  CHECK(back == doctest::Approx(3 * 2 * B));
  // all_gather: one all-gather of the whole K/V before attention (S = 4B), nothing to overlap.
  const CompiledModel gathered = test::compile_text(cfg("all_gather"));
  int gathers = 0;
  for (const Task& t : gathered.exec.tasks)
    if (t.rank == 0 && t.kind == TaskKind::Collective && t.phase == Phase::Forward && t.micro_batch == 0) {
      const Collective& c = gathered.exec.collectives[static_cast<size_t>(t.collective)];
      if (c.axes == axis_bit(kAxisCp) && c.kind == CollectiveKind::AllGather &&
          c.bytes == doctest::Approx(4 * B))
        ++gathers;
    }
  CHECK(gathers == 2);  // one per layer
  // The gathered K/V (4B = 524288 bytes per rank) is held while the attention runs: allocated
  // when its forward starts, freed when it ends (TE keeps only the local shards for the
  // backward); the backward holds it again plus full-length dK/dV (2 x 4B).
  auto mem_of = [&](const Task& t) {
    return test::task_mem_events(gathered.exec, static_cast<size_t>(&t - gathered.exec.tasks.data()));
  };
  auto holds = [](const std::vector<MemEvent>& ev, double bytes) {
    bool alloc = false, freed = false;
    for (const MemEvent& e : ev) {
      alloc =
          alloc || (!e.at_end && e.category == MemCategory::Activations && e.bytes == doctest::Approx(bytes));
      freed =
          freed || (e.at_end && e.category == MemCategory::Activations && e.bytes == doctest::Approx(-bytes));
    }
    return alloc && freed;
  };
  int fwd_held = 0, bwd_held = 0;
  for (const Task& t : gathered.exec.tasks) {
    if (t.rank != 0 || t.micro_batch != 0 || t.kind != TaskKind::Compute ||
        gathered.exec.labels[static_cast<size_t>(t.label)] != "layers.0.attention.attn")
      continue;
    if (t.phase == Phase::Forward && holds(mem_of(t), 4 * B)) ++fwd_held;
    if (t.phase == Phase::BackwardInput && holds(mem_of(t), 2 * 4 * B)) ++bwd_held;
  }
  CHECK(fwd_held == 1);
  CHECK(bwd_held == 1);
}

TEST_CASE("frameworks: a selectively recomputed attention runs its context-parallel exchanges again") {
  // Megatron-Core checkpoints the core attention (TEDotProductAttention) under selective
  // recompute; TE's context-parallel functions gather K/V (all_gather) or exchange Q, K, V and the
  // output (a2a) inside it and keep only local shards, so the replay repeats what the forward
  // did over cp, and nothing else. 2 layers, dp 2 x cp 4 on one A100 node (as above).
  auto compiled = [](const char* type, const char* recompute) {
    return test::compile_text(
        test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 2,
                          std::string(R"({"dp":2,"cp":4,"micro_batch":1,"cp_comm_type":")") + type +
                              R"(","recompute":")" + recompute + "\"}"));
  };
  const AxisMask cp = axis_bit(kAxisCp);
  for (const char* recompute : {"selective", "full"}) {
    CAPTURE(recompute);
    // all_gather: per layer one K/V gather in the forward and one in the replay.
    const CompiledModel ag = compiled("all_gather", recompute);
    const auto fwd = test::count_collectives(ag, CollectiveKind::AllGather, cp, Phase::Forward, "layers.");
    const auto replay =
        test::count_collectives(ag, CollectiveKind::AllGather, cp, Phase::Recompute, "layers.");
    CHECK(fwd.count == 2);
    CHECK(replay.count == fwd.count);
    CHECK(replay.bytes == fwd.bytes);
    // a2a: Q, K/V and the output, each exchanged again.
    const CompiledModel a2a = compiled("a2a", recompute);
    const auto fwd_a2a =
        test::count_collectives(a2a, CollectiveKind::AllToAll, cp, Phase::Forward, "layers.");
    CHECK(fwd_a2a.count == 2 * 3);
    CHECK(test::count_collectives(a2a, CollectiveKind::AllToAll, cp, Phase::Recompute, "layers.").count ==
          fwd_a2a.count);
  }
  // The selective replay repeats only the attention's exchanges: no tensor-parallel or other
  // collective (tp 1 here), so its recompute phase holds exactly those.
  const CompiledModel sel = compiled("all_gather", "selective");
  int replay_collectives = 0;
  for (const Task& t : sel.exec.tasks)
    replay_collectives +=
        t.rank == 0 && t.micro_batch == 0 && t.kind == TaskKind::Collective && t.phase == Phase::Recompute;
  CHECK(replay_collectives == 2);
}

TEST_CASE("frameworks: on a long sequence the ring hides K/V traffic the all-gather exposes") {
  // Llama-2-7B-like layers (hidden 4096, 32 heads), 2 layers, seq 32768, tp 8 x cp 8 on 8 DGX
  // H100 (the cp ring crosses nodes). Per block: attention 4 x 4096^2 x 4 heads x 128 = 34 GFLOP
  // (~60 us at 550 TFLOPS); K/V step 4096 x 1024 x 2 bytes = 8.4 MB (~190 us over a 50 GB/s
  // NIC). The ring overlaps each step with a block; the all-gather of the same bytes overlaps
  // nothing (TE's cp_comm_type documentation), so p2p is faster.
  auto t = [](const char* type) {
    const std::string model = R"({"kind":"transformer","name":"l2","layers":2,"hidden":4096,"heads":32,
      "ffn_hidden":11008,"seq_len":32768,"vocab":32000,"mlp":"swiglu","norm":"rmsnorm","tied_embeddings":false,
      "learned_positions":false})";
    const json r = simulate(test::config_json(
        model, R"({"preset":"dgx-h100","nodes":8})", 1,
        std::string(R"({"tp":8,"cp":8,"sequence_parallel":true,"cp_comm_type":")") + type + "\"}"));
    return r["summary"]["iteration_time_s"].get<double>();
  };
  const double p2p = t("p2p"), all_gather = t("all_gather");
  CHECK(p2p < all_gather);
}

TEST_CASE("frameworks: a2a+p2p runs all-to-alls inside the node and the K/V ring across nodes") {
  // 2 layers, hidden 512 (MHA: K/V one tensor 2 x 512 wide), 8 heads, seq 256, micro-batch 1;
  // tp 2 x cp 8 on 2 DGX A100 nodes. The a2a group: the largest power of two of cp with
  // tp x a <= 8 GPUs per node, a = 4; the ring: r = cp / a = 2 ranks, one per node.
  // Per rank (32 of the 256 tokens, half the width): Q 32 x 256 x 2 = 16384 bytes, K/V
  // 32 x 512 x 2 = 32768 = B, output 16384.
  const std::string cfg =
      test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":2})", 1,
                        R"({"tp":2,"cp":8,"sequence_parallel":true,"cp_comm_type":"a2a+p2p"})");
  CHECK(parse_config(cfg).strategy.cp_a2a_size == 0);  // resolved to 4 by the strategy tree
  const CompiledModel c = test::compile_text(cfg);
  // Layer 0's attention, forward, in program order:
  //   tp_comm: |a2a Q,K,V (4 GPUs)|ring step: K/V from the other node|      |a2a O|
  //   compute:                    |block 0 (own K/V)|     |block 1     |
  std::vector<const Task*> fwd;
  for (const Task& t : c.exec.tasks)
    if (t.rank == 0 && t.phase == Phase::Forward &&
        c.exec.labels[static_cast<size_t>(t.label)] == "layers.0.attention.attn")
      fwd.push_back(&t);
  REQUIRE(fwd.size() == 5);
  auto coll = [&](const Task* t) -> const Collective& {
    return c.exec.collectives[static_cast<size_t>(t->collective)];
  };
  REQUIRE(fwd[0]->kind == TaskKind::Collective);
  CHECK(coll(fwd[0]).kind == CollectiveKind::AllToAll);
  CHECK(coll(fwd[0]).bytes ==
        doctest::Approx(16384 + 32768));                      // what each rank sends, its own share included
  CHECK(coll(fwd[0]).group == std::vector<int>{0, 2, 4, 6});  // cp ranks 0-3 of node 0 (tp stride 2)
  CHECK(fwd[1]->kind == TaskKind::Compute);
  REQUIRE(fwd[2]->kind == TaskKind::Collective);
  CHECK(coll(fwd[2]).kind == CollectiveKind::RingExchange);
  CHECK(coll(fwd[2]).group == std::vector<int>{0, 8});  // cp ranks 0 and 4: one per node
  CHECK(coll(fwd[2]).bytes == doctest::Approx(32768));  // B passed on per rank
  CHECK(fwd[3]->kind == TaskKind::Compute);
  REQUIRE(fwd[4]->kind == TaskKind::Collective);
  CHECK(coll(fwd[4]).kind == CollectiveKind::AllToAll);
  CHECK(coll(fwd[4]).bytes == doctest::Approx(16384));
  // Backward: a2a of dO (16384), one ring step with K/V and dK/dV (2B), a2a of dQ, dK, dV (49152).
  std::vector<double> back;
  for (const Task& t : c.exec.tasks)
    if (t.rank == 0 && t.kind == TaskKind::Collective && t.phase == Phase::BackwardInput &&
        c.exec.labels[static_cast<size_t>(t.label)] == "layers.0.attention.attn")
      back.push_back(c.exec.collectives[static_cast<size_t>(t.collective)].bytes);
  REQUIRE(back.size() == 3);
  CHECK(back[0] == doctest::Approx(16384));
  CHECK(back[1] == doctest::Approx(2 * 32768));
  CHECK(back[2] == doctest::Approx(49152));
  // The links the representative's groups share with the others: 2 tp shifts x 4 ring groups
  // (cp ranks {0,4}, {1,5}, {2,6}, {3,7}) contend for the NICs; 2 x 2 all-to-all groups (one
  // per node and tp rank) for NVLink.
  const auto ring_siblings = exec::sibling_groups(c.exec.mesh, coll(fwd[2]));
  CHECK(ring_siblings.size() == 8);
  CHECK(std::find(ring_siblings.begin(), ring_siblings.end(), std::vector<int>{2, 10}) !=
        ring_siblings.end());
  const auto a2a_siblings = exec::sibling_groups(c.exec.mesh, coll(fwd[0]));
  CHECK(a2a_siblings.size() == 4);
  CHECK(std::find(a2a_siblings.begin(), a2a_siblings.end(), std::vector<int>{8, 10, 12, 14}) !=
        a2a_siblings.end());
  // An explicit inner size must divide cp; it only goes with a2a+p2p.
  auto path = [](const std::string& strategy) {
    return test::error_path([&] {
      parse_config(test::config_json(test::gpt_model(2, 512, 8, 256, 8000),
                                     R"({"preset":"dgx-a100-80g","nodes":2})", 1, strategy));
    });
  };
  CHECK(path(R"({"tp":2,"cp":8,"cp_comm_type":"a2a+p2p","cp_a2a_size":3})") == "strategy.cp_a2a_size");
  CHECK(path(R"({"tp":2,"cp":8,"cp_a2a_size":2})") == "strategy.cp_a2a_size");
  CHECK(path(R"({"tp":2,"cp":8,"cp_comm_type":"a2a+p2p","cp_a2a_size":2})") == test::kNoError);
}

TEST_CASE(
    "frameworks: the four cp_comm_types rank as Transformer Engine describes on a cp group across nodes") {
  // Llama-2-7B-like layers with flash attention, 2 layers, seq 65536, tp 4 x cp 8 on 4 DGX H100:
  // the cp group spans the 4 nodes (2 cp ranks per node). TE's DotProductAttention docstring: all_gather "is
  // not async, and cannot be overlapped"; p2p "is async and can be overlapped with attention compute"; a2a
  // scatters heads (no overlap, but all-to-all volume); a2a+p2p keeps the all-to-all on NVLink and the ring,
  // now over 4 ranks instead of 8, across nodes. So: a2a+p2p < p2p < all_gather and a2a < all_gather.
  auto t = [](const char* type) {
    const std::string model = R"({"kind":"transformer","name":"l2","layers":2,"hidden":4096,"heads":32,
      "ffn_hidden":11008,"seq_len":65536,"vocab":32000,"mlp":"swiglu","norm":"rmsnorm","tied_embeddings":false,
      "learned_positions":false,"flash_attention":true})";
    const json r = simulate(test::config_json(
        model, R"({"preset":"dgx-h100","nodes":4})", 1,
        std::string(R"({"tp":4,"cp":8,"sequence_parallel":true,"cp_comm_type":")") + type + "\"}"));
    return r["summary"]["iteration_time_s"].get<double>();
  };
  const double hier = t("a2a+p2p"), p2p = t("p2p"), a2a = t("a2a"), all_gather = t("all_gather");
  CHECK(hier < p2p);
  CHECK(p2p < all_gather);
  CHECK(a2a < all_gather);
}
