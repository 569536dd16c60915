// strategy.store_param_remainders (docs/frameworks/data-parallelism.md "Master weights as remainders"): the
// optimizer keeps the low 16 bits of each fp32 master weight, whose high 16 bits are the bf16 weight. NeMo's
// distributed_fused_adam does it under bf16 O2 (megatron_base_model.py: store_params False,
// store_param_remainders True), Megatron-Core under --use-precision-aware-optimizer (Transformer
// Engine >= 2.1). Per parameter: master 2 bytes instead of 4, so Adam's states are 10 bytes, not 12.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/compile.h"
#include "proteus/import.h"

using namespace proteus;

namespace {

// GPT-style, 2 layers, hidden 512, seq 256, one DGX H100 node, data parallel 8.
std::string config(const std::string& precision, const std::string& strategy,
                   const std::string& optimizer = "adam") {
  std::string text = test::config_json_in(precision, test::gpt_model(2, 512, 8, 256, 8000),
                                          R"({"preset":"dgx-h100","nodes":1})", 8, strategy);
  if (optimizer != "adam") {
    const std::string adam = "\"optimizer\":\"adam\"";
    text.replace(text.find(adam), adam.size(), "\"optimizer\":\"" + optimizer + "\"");
  }
  return text;
}

double static_bytes(const CompiledModel& c, MemCategory m) {
  return c.stats.static_bytes_per_stage[0][static_cast<int>(m)];
}

double step_bytes(const CompiledModel& c) {
  double bytes = 0;
  for (const Task& t : c.exec.tasks)
    if (t.rank == 0 && t.phase == Phase::Optimizer && t.kind == TaskKind::Compute)
      bytes += c.exec.works[static_cast<size_t>(t.work)].bytes;
  return bytes;
}

}  // namespace

TEST_CASE("store_param_remainders: Adam's states are 10 bytes per parameter, sharded as before") {
  for (const char* zero : {"0", "1"}) {
    CAPTURE(zero);
    const std::string base = std::string(R"({"dp":8,"micro_batch":1,"zero":)") + zero;
    const CompiledModel whole = test::compile_text(config("bf16", base + "}"));
    const CompiledModel rem = test::compile_text(config("bf16", base + R"(,"store_param_remainders":true})"));
    const double P = static_cast<double>(whole.stats.parameters);
    const double shards = std::string(zero) == "1" ? 8 : 1;
    // master 4 + m 4 + v 4, then remainder 2 + m 4 + v 4, over the ZeRO-1 shards.
    CHECK(static_bytes(whole, MemCategory::OptimizerStates) == doctest::Approx(12 * P / shards));
    CHECK(static_bytes(rem, MemCategory::OptimizerStates) == doctest::Approx(10 * P / shards));
    // The bf16 weights and the gradients are what they were.
    CHECK(static_bytes(rem, MemCategory::Weights) == static_bytes(whole, MemCategory::Weights));
    CHECK(static_bytes(rem, MemCategory::Gradients) == static_bytes(whole, MemCategory::Gradients));
  }
}

TEST_CASE("store_param_remainders: the step reads and writes weight and remainder, 28 bytes per parameter") {
  // Whole master: read master 4, grad 4, m 4, v 4; write master 4, m 4, v 4, bf16 weight 2 = 30.
  // Remainders: read weight 2, remainder 2, grad 4, m 4, v 4; write weight 2, remainder 2, m 4, v 4 = 28.
  const std::string s = R"({"dp":8,"micro_batch":1,"zero":1)";
  const double whole = step_bytes(test::compile_text(config("bf16", s + "}")));
  const double rem = step_bytes(test::compile_text(config("bf16", s + R"(,"store_param_remainders":true})")));
  REQUIRE(whole > 0);
  CHECK(rem / whole == doctest::Approx(28.0 / 30.0));
  // The same under FP8 training (bf16 weights, their FP8 copies made after the step as before).
  const double fp8_whole = step_bytes(test::compile_text(config("fp8", s + "}")));
  const double fp8_rem =
      step_bytes(test::compile_text(config("fp8", s + R"(,"store_param_remainders":true})")));
  CHECK(fp8_whole - fp8_rem == doctest::Approx(whole - rem));
}

TEST_CASE("store_param_remainders needs bf16 weights and Adam under Megatron; the error names the field") {
  const std::string on = R"({"dp":8,"micro_batch":1,"zero":1,"store_param_remainders":true)";
  const std::string field = "strategy.store_param_remainders";
  for (const char* precision : {"fp16", "fp32"}) {
    CAPTURE(precision);
    CHECK(test::error_path([&] { test::compile_text(config(precision, on + "}")); }) == field);
  }
  CHECK(test::error_path([&] { test::compile_text(config("bf16", on + "}", "sgd")); }) == field);
  CHECK(test::error_path([&] { test::compile_text(config("fp8", on + R"(,"fp8_param_gather":true})")); }) ==
        field);
  CHECK(test::error_path([&] {
          test::compile_text(config("bf16", R"({"dp":8,"micro_batch":1,"zero":3,"framework":"fsdp",)"
                                            R"("store_param_remainders":true})"));
        }) == field);
  CHECK_NOTHROW(test::compile_text(config("fp8", on + "}")));
}

TEST_CASE("Megatron import and export: --use-precision-aware-optimizer") {
  const std::string common =
      "--num-layers 2 --hidden-size 512 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256 "
      "--micro-batch-size 1 --global-batch-size 8 --use-distributed-optimizer ";
  MegatronImportOptions on_h100;
  on_h100.cluster_json = "dgx-h100";
  on_h100.nodes = 1;
  auto strategy_of = [&](const ImportResult& r) { return nlohmann::json::parse(r.config_json)["strategy"]; };
  auto said = [](const ImportResult& r, const std::string& what) {
    for (const std::string& i : r.ignored)
      if (i.find(what) != std::string::npos) return true;
    return false;
  };
  // bf16 with fp32 masters (Megatron's defaults): remainders.
  const ImportResult bf16 = import_megatron(common + "--bf16 --use-precision-aware-optimizer", on_h100);
  CHECK(strategy_of(bf16)["store_param_remainders"] == true);
  CHECK_FALSE(strategy_of(import_megatron(common + "--bf16", on_h100)).contains("store_param_remainders"));
  // fp16 weights have no bf16 high half; 16-bit moments are simulated (test_optimizer_dtypes.cpp).
  const ImportResult fp16 = import_megatron(common + "--fp16 --use-precision-aware-optimizer", on_h100);
  CHECK_FALSE(strategy_of(fp16).contains("store_param_remainders"));
  CHECK(said(fp16, "--use-precision-aware-optimizer"));
  const ImportResult moments =
      import_megatron(common + "--bf16 --use-precision-aware-optimizer --exp-avg-dtype bf16", on_h100);
  CHECK_FALSE(said(moments, "--exp-avg-dtype"));
  CHECK(strategy_of(moments)["exp_avg_dtype"] == "bf16");
  CHECK(test::error_path([&] {
          import_megatron(common + "--bf16 --use-precision-aware-optimizer --exp-avg-dtype fp64", on_h100);
        }) == "--exp-avg-dtype");
  // Export writes the flag back.
  const std::string cfg =
      config("bf16", R"({"dp":8,"micro_batch":1,"zero":1,"store_param_remainders":true})");
  CHECK(export_megatron(cfg).find("--use-precision-aware-optimizer") != std::string::npos);
  CHECK(export_megatron(config("bf16", R"({"dp":8,"micro_batch":1,"zero":1})")).find("precision-aware") ==
        std::string::npos);
}
