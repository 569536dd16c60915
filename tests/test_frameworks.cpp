// Framework semantics (docs/frameworks.md): the knobs that choose them, the combinations no
// framework runs (errors naming the field), and the FP8 recipe's precision per op.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/error.h"

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
  // TE's userbuffer overlap needs sequence parallelism (Megatron-LM arguments.py).
  CHECK(error_path(config_with({{"tp_comm_overlap", true}})) == "strategy.tp_comm_overlap");
  CHECK(error_path(config_with({{"tp_comm_overlap", true}, {"sequence_parallel", true}})) == "(parsed)");
  // Ulysses (a2a) scatters heads over tp x cp: Llama 3 8B has 8 KV heads, tp 4 x cp 4 = 16.
  const json a2a = config_with({{"cp", 4}, {"dp", 1}, {"cp_comm_type", "a2a"}});
  CHECK(error_path(a2a) == "strategy.cp_comm_type");
  CHECK(error_path(config_with({{"cp", 2}, {"dp", 2}, {"cp_comm_type", "a2a"}})) == "(parsed)");
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
  CHECK(m.compute_time_s(gemm) == doctest::Approx(1e12 / (1978.9e12 * 0.8)).epsilon(1e-12));
  CHECK(m.compute_time_s(attention) == doctest::Approx(1e12 / (989.4e12 * 0.5)).epsilon(1e-12));
  CHECK(m.precision_of(attention) == Precision::Bf16);
  m.fp8_attention = true;  // TE recipe fp8_dpa
  CHECK(m.compute_time_s(attention) == doctest::Approx(1e12 / (1978.9e12 * 0.5)).epsilon(1e-12));
  // Side kernels (casts) add their memory time and one launch: 1 GB at 3350 GB/s * 0.8 = 373.13 us.
  m.gpu.memory_bound_efficiency = 0.8;
  m.gpu.kernel_launch_us = 4;
  ComputeWork cast = gemm;
  cast.kernels = 0;
  cast.side_bytes = 1e9;
  CHECK(m.compute_time_s(cast) - (m.compute_time_s(gemm) - 4e-6) ==
        doctest::Approx(1e9 / (3350e9 * 0.8) + 4e-6).epsilon(1e-9));
}
