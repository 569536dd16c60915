// strategy.grad_reduce_in_fp32 (docs/frameworks/data-parallelism.md "Gradient dtype"): Megatron-LM keeps fp32
// main gradients under bf16 unless --grad-reduce-in-bf16, and fp16 ones under fp16 unless
// --accumulate-allreduce-grads-in-fp32 (arguments.py); NeMo's performance recipes reduce in bf16
// (optim.grad_sync_dtype=bf16). 16-bit gradients halve the gradient buffer and every gradient
// collective, and nothing else.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/error.h"
#include "proteus/import.h"

using namespace proteus;

namespace {

// GPT-style, 2 layers, hidden 512, 8 heads, seq 256, vocab 8000 (tied), one DGX H100 node,
// data parallel 8, one micro-batch per rank.
std::string config(const std::string& precision, const std::string& strategy) {
  return test::config_json_in(precision, test::gpt_model(2, 512, 8, 256, 8000),
                              R"({"preset":"dgx-h100","nodes":1})", 8, strategy);
}

double gradient_bytes_moved(const CompiledModel& c) {
  double bytes = 0;
  for (const CollectiveStat& s : c.stats.collectives)
    if (s.purpose == "gradient") bytes += s.bytes_per_rank;
  return bytes;
}

double static_bytes(const CompiledModel& c, MemCategory m) {
  return c.stats.static_bytes_per_stage[0][static_cast<int>(m)];
}

}  // namespace

TEST_CASE("grad_reduce_in_fp32 false: the gradient buffer and its reduce-scatter are 2 bytes per parameter") {
  for (const char* zero : {"0", "1"}) {
    CAPTURE(zero);
    const std::string base = std::string(R"({"dp":8,"micro_batch":1,"zero":)") + zero;
    const CompiledModel fp32 = test::compile_text(config("bf16", base + "}"));
    const CompiledModel bf16 = test::compile_text(config("bf16", base + R"(,"grad_reduce_in_fp32":false})"));
    const double P = static_cast<double>(fp32.stats.parameters);
    // The whole model's gradients live on every rank until the boundary: 4P, then 2P bytes.
    CHECK(static_bytes(fp32, MemCategory::Gradients) == doctest::Approx(4 * P));
    CHECK(static_bytes(bf16, MemCategory::Gradients) == doctest::Approx(2 * P));
    // Weights and optimizer states do not change (the master copy and Adam's moments stay fp32).
    CHECK(static_bytes(bf16, MemCategory::Weights) == static_bytes(fp32, MemCategory::Weights));
    CHECK(static_bytes(bf16, MemCategory::OptimizerStates) ==
          static_bytes(fp32, MemCategory::OptimizerStates));
    // The collectives reduce S = 4P, then 2P bytes: every gradient byte moved halves.
    REQUIRE(gradient_bytes_moved(fp32) > 0);
    CHECK(gradient_bytes_moved(bf16) == doctest::Approx(gradient_bytes_moved(fp32) / 2));
  }
}

TEST_CASE("grad_reduce_in_fp32 false is faster only by the gradient traffic and the optimizer's reads") {
  // With the reduction overlapped and hidden, what is left of the change is the optimizer
  // step reading 2 bytes less per parameter it updates: never slower.
  const std::string s = R"({"dp":8,"micro_batch":1,"zero":1)";
  const double t32 =
      nlohmann::json::parse(simulate_json(config("bf16", s + "}"), {}))["summary"]["iteration_time_s"];
  const double t16 = nlohmann::json::parse(simulate_json(
      config("bf16", s + R"(,"grad_reduce_in_fp32":false})"), {}))["summary"]["iteration_time_s"];
  CHECK(t16 <= t32);
}

TEST_CASE("grad_reduce_in_fp32 false needs mixed precision; the error names the field") {
  const std::string bad = config("fp32", R"({"dp":8,"micro_batch":1,"grad_reduce_in_fp32":false})");
  CHECK(test::error_path([&] { test::compile_text(bad); }) == "strategy.grad_reduce_in_fp32");
  CHECK_NOTHROW(
      test::compile_text(config("fp16", R"({"dp":8,"micro_batch":1,"grad_reduce_in_fp32":false})")));
}

TEST_CASE("Megatron import and export: --grad-reduce-in-bf16 and --accumulate-allreduce-grads-in-fp32") {
  const std::string common =
      "--num-layers 2 --hidden-size 512 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256 "
      "--micro-batch-size 1 --global-batch-size 8 --tensor-model-parallel-size 1 --overlap-grad-reduce ";
  MegatronImportOptions on_h100;
  on_h100.cluster_json = "dgx-h100";
  on_h100.nodes = 1;
  auto strategy_of = [&](const std::string& args) {
    const ImportResult r = import_megatron(args, on_h100);
    return nlohmann::json::parse(config_to_json(parse_config(r.config_json)))["strategy"];
  };
  // bf16: fp32 unless --grad-reduce-in-bf16, whose buckets of Megatron's default 40M parameters
  // then hold 80 MB instead of 160 MB.
  const auto bf16 = strategy_of(common + "--bf16");
  CHECK_FALSE(bf16.contains("grad_reduce_in_fp32"));
  CHECK(bf16["grad_bucket_MB"] == doctest::Approx(160));
  const auto bf16_grads = strategy_of(common + "--bf16 --grad-reduce-in-bf16");
  CHECK(bf16_grads["grad_reduce_in_fp32"] == false);
  CHECK(bf16_grads["grad_bucket_MB"] == doctest::Approx(80));
  // fp16: Megatron's default is fp16 gradients; Proteus keeps fp32 (the published fp16 runs'
  // memory counts them) and lists that among the assumptions.
  const ImportResult fp16 = import_megatron(common + "--fp16", on_h100);
  CHECK_FALSE(nlohmann::json::parse(fp16.config_json)["strategy"].contains("grad_reduce_in_fp32"));
  bool said = false;
  for (const std::string& a : fp16.assumed)
    said = said || a.find("--accumulate-allreduce-grads-in-fp32") != std::string::npos;
  CHECK(said);
  CHECK(import_megatron(common + "--fp16 --accumulate-allreduce-grads-in-fp32", on_h100).assumed.size() ==
        fp16.assumed.size() - 1);
  CHECK(test::error_path([&] { import_megatron(common + "--grad-reduce-in-bf16", on_h100); }) ==
        "--grad-reduce-in-bf16");
  // Export writes the flag that reproduces the config's dtype under Megatron's defaults.
  const std::string bf16_cfg = config("bf16", R"({"dp":8,"micro_batch":1,"grad_reduce_in_fp32":false})");
  CHECK(export_megatron(bf16_cfg).find("--grad-reduce-in-bf16") != std::string::npos);
  const std::string fp16_cfg = config("fp16", R"({"dp":8,"micro_batch":1})");
  CHECK(export_megatron(fp16_cfg).find("--accumulate-allreduce-grads-in-fp32") != std::string::npos);
}
