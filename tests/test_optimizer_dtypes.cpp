// Megatron-Core's precision-aware optimizer state dtypes (strategy.exp_avg_dtype,
// exp_avg_sq_dtype, main_params_dtype; docs/frameworks/data-parallelism.md "Optimizer state dtypes").
// Transformer Engine's FusedAdam (fused_adam.py) keeps each state in its dtype: fp32 4 bytes, bf16 and fp16
// 2, FP8 an E4M3 Float8Tensor whose quantizer allocates the data and its transpose (1 + 1); the
// master weight 4, 2 as fp16, 2 as the remainder of a bf16 weight. Its step unscales every state
// that is not fp32 into an fp32 copy, runs the fp32 kernel on it and scales it back, holding the
// copies of the whole parameter group until the end of the step.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../core/src/search/bounds.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/import.h"

using namespace proteus;
using nlohmann::json;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// GPT-style, 2 layers, hidden 512, seq 256, one DGX H100 node, data parallel 8.
std::string config(const std::string& precision, const std::string& strategy_fields,
                   const std::string& optimizer = "adam") {
  std::string text = test::config_json_in(precision, test::gpt_model(2, 512, 8, 256, 8000),
                                          R"({"preset":"dgx-h100","nodes":1})", 8,
                                          R"({"dp":8,"micro_batch":1)" + strategy_fields + "}");
  if (optimizer != "adam") {
    const std::string adam = "\"optimizer\":\"adam\"";
    text.replace(text.find(adam), adam.size(), "\"optimizer\":\"" + optimizer + "\"");
  }
  return text;
}

double static_bytes(const CompiledModel& c, MemCategory m) {
  return c.stats.static_bytes_per_stage[0][static_cast<int>(m)];
}

double static_total(const CompiledModel& c) {
  double total = 0;
  for (double b : c.stats.static_bytes_per_stage[0]) total += b;
  return total;
}

double step_bytes(const CompiledModel& c) {
  double bytes = 0;
  for (const Task& t : c.exec.tasks)
    if (t.rank == 0 && t.phase == Phase::Optimizer && t.kind == TaskKind::Compute)
      bytes += c.exec.works[static_cast<size_t>(t.work)].bytes;
  return bytes;
}

// The bytes rank 0's optimizer step allocates when it starts (and frees when it ends).
double step_alloc_bytes(const CompiledModel& c) {
  double bytes = 0;
  for (size_t t = 0; t < c.exec.tasks.size(); ++t) {
    const Task& task = c.exec.tasks[t];
    if (task.rank != 0 || task.phase != Phase::Optimizer || task.kind != TaskKind::Compute) continue;
    for (const MemEvent& m : test::task_mem_events(c.exec, t)) {
      if (!m.at_end) bytes += m.bytes;
      if (m.at_end) CHECK(m.bytes < 0);
    }
  }
  return bytes;
}

json simulate(const std::string& cfg) {
  json r = json::parse(simulate_json(cfg, {}));
  REQUIRE_MESSAGE(r["ok"] == true, r.dump());
  return r;
}

struct Case {
  const char* name;
  const char* precision;
  const char* fields;
  double state_bytes;      // per parameter, by hand
  double step_bytes;       // per updated parameter, by hand (fp32 gradients)
  double transient_bytes;  // fp32 copies the step holds, per updated parameter
};

// master + m + v; the step's fused kernel (30 with whole masters, 28 with remainders or under
// fp32) plus per non-fp32 state bf16 16, fp16 32, fp8 15 bytes of conversions (optimizer_state.cpp).
const Case kCases[] = {
    {"fp32 states (Megatron's default)", "bf16", "", 4 + 4 + 4, 30, 0},
    {"remainders", "bf16", R"(,"store_param_remainders":true)", 2 + 4 + 4, 28, 0},
    {"bf16 moments + remainders", "bf16",
     R"(,"store_param_remainders":true,"exp_avg_dtype":"bf16","exp_avg_sq_dtype":"bf16")", 2 + 2 + 2,
     28 + 16 + 16, 4 + 4},
    {"bf16 moments, whole masters", "bf16", R"(,"exp_avg_dtype":"bf16","exp_avg_sq_dtype":"bf16")", 4 + 2 + 2,
     30 + 16 + 16, 4 + 4},
    {"fp8 moments + remainders", "bf16",
     R"(,"store_param_remainders":true,"exp_avg_dtype":"fp8","exp_avg_sq_dtype":"fp8")", 2 + 2 + 2,
     28 + 15 + 15, 4 + 4},
    {"fp16 first moment, fp32 second", "bf16", R"(,"exp_avg_dtype":"fp16")", 4 + 2 + 4, 30 + 32, 4},
    {"fp16 masters", "fp16", R"(,"main_params_dtype":"fp16")", 2 + 4 + 4, 30 + 32, 4},
    {"fp16 masters and moments", "fp16",
     R"(,"main_params_dtype":"fp16","exp_avg_dtype":"fp16","exp_avg_sq_dtype":"fp16")", 2 + 2 + 2,
     30 + 3 * 32, 3 * 4},
    {"fp32 training, bf16 moments (no master copy)", "fp32",
     R"(,"exp_avg_dtype":"bf16","exp_avg_sq_dtype":"bf16")", 0 + 2 + 2, 28 + 16 + 16, 4 + 4},
};

}  // namespace

TEST_CASE("optimizer dtypes: Adam's states by hand, sharded over the distributed optimizer's ranks") {
  for (const Case& k : kCases) {
    CAPTURE(k.name);
    for (const char* zero : {"1", "2"}) {
      CAPTURE(zero);
      const CompiledModel c =
          test::compile_text(config(k.precision, std::string(R"(,"zero":)") + zero + k.fields));
      const double P = static_cast<double>(c.stats.parameters);
      CHECK(static_bytes(c, MemCategory::OptimizerStates) == doctest::Approx(k.state_bytes * P / 8));
    }
  }
}

TEST_CASE("optimizer dtypes: the states in simulate's memory breakdown, and the step's fp32 copies on top") {
  for (const Case& k : kCases) {
    CAPTURE(k.name);
    const std::string cfg = config(k.precision, std::string(R"(,"zero":1)") + k.fields);
    const CompiledModel c = test::compile_text(cfg);
    const double P = static_cast<double>(c.stats.parameters);
    const json dev = simulate(cfg)["devices"][0];
    const double states_GiB = dev["memory_breakdown_GiB"]["optimizer_states"].get<double>();
    const double transient = k.transient_bytes * P / 8;
    // At the peak the states are held, and the step's copies too if the peak is the step.
    const bool peak_in_step = transient > 0 && states_GiB * kGiB > k.state_bytes * P / 8 * 1.0001;
    CHECK(states_GiB * kGiB == doctest::Approx(k.state_bytes * P / 8 + (peak_in_step ? transient : 0)));
    // While the step runs the rank holds every static byte plus the copies.
    CHECK(dev["peak_memory_GiB"].get<double>() * kGiB >= (static_total(c) + transient) * 0.9999);
  }
}

TEST_CASE("optimizer dtypes: with fp16 masters and moments the step's fp32 copies make the peak") {
  // 4 layers at hidden 1024: the copies (12 bytes per updated parameter) outgrow what the
  // backward holds beside the static memory (activations and the gradient buckets).
  const std::string cfg = test::config_json_in(
      "fp16", test::gpt_model(4, 1024, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 8,
      R"({"dp":8,"micro_batch":1,"zero":1,"main_params_dtype":"fp16",)"
      R"("exp_avg_dtype":"fp16","exp_avg_sq_dtype":"fp16","grad_bucket_MB":25})");
  const CompiledModel c = test::compile_text(cfg);
  const double P = static_cast<double>(c.stats.parameters);
  const json dev = simulate(cfg)["devices"][0];
  CHECK(dev["peak_memory_GiB"].get<double>() * kGiB == doctest::Approx(static_total(c) + 12 * P / 8));
  CHECK(dev["memory_breakdown_GiB"]["optimizer_states"].get<double>() * kGiB ==
        doctest::Approx((6 + 12) * P / 8));
  CHECK(dev["memory_breakdown_GiB"]["activations"].get<double>() == 0);
}

TEST_CASE("optimizer dtypes: the step's HBM traffic, unscale and rescale included") {
  const double whole = step_bytes(test::compile_text(config("bf16", R"(,"zero":1)")));
  REQUIRE(whole > 0);
  for (const Case& k : kCases) {
    CAPTURE(k.name);
    const double bytes =
        step_bytes(test::compile_text(config(k.precision, std::string(R"(,"zero":1)") + k.fields)));
    const CompiledModel c = test::compile_text(config(k.precision, std::string(R"(,"zero":1)") + k.fields));
    CHECK(bytes / whole == doctest::Approx(k.step_bytes / 30));
    CHECK(step_alloc_bytes(c) ==
          doctest::Approx(k.transient_bytes * static_cast<double>(c.stats.parameters) / 8));
  }
  // bf16 moments move twice what fp32 moments do (60 against 30 bytes): smaller at rest, slower to step.
  CHECK(kCases[2].step_bytes == 2 * kCases[0].step_bytes);
}

TEST_CASE("optimizer dtypes: the search's memory bound counts the same optimizer states") {
  for (const Case& k : kCases) {
    CAPTURE(k.name);
    const std::string cfg = config(k.precision, std::string(R"(,"zero":1)") + k.fields);
    const CompiledModel c = test::compile_text(cfg);
    const double P = static_cast<double>(c.stats.parameters);
    CHECK(search_detail::bytes_per_param(parse_config(cfg), 8) * P == doctest::Approx(static_total(c)));
  }
}

TEST_CASE("optimizer dtypes: the compiled search bounds stay under the simulated time and memory") {
  for (const Case& k : kCases) {
    CAPTURE(k.name);
    const std::string cfg = config(k.precision, std::string(R"(,"zero":1)") + k.fields);
    const search_detail::Bounds b = search_detail::compiled_bounds(parse_config(cfg));
    const json summary = simulate(cfg)["summary"];
    CHECK(b.memory_bytes <= summary["peak_memory_GiB"].get<double>() * kGiB * 1.0001);
    CHECK(b.time_s <= summary["iteration_time_s"].get<double>() * 1.0001);
  }
}

TEST_CASE(
    "optimizer dtypes: combinations Megatron and Transformer Engine refuse; the error names the field") {
  auto path = [](const std::string& cfg) { return test::error_path([&] { test::compile_text(cfg); }); };
  const std::string bf16_m = R"(,"zero":1,"exp_avg_dtype":"bf16")";
  CHECK(path(config("bf16", bf16_m)) == test::kNoError);
  // Megatron-Core only: DeepSpeed and FSDP2 keep fp32 states.
  CHECK(path(config("bf16", R"(,"zero":3,"framework":"fsdp","exp_avg_dtype":"bf16")")) ==
        "strategy.exp_avg_dtype");
  CHECK(path(config("bf16", R"(,"zero":1,"framework":"deepspeed","exp_avg_sq_dtype":"fp8")")) ==
        "strategy.exp_avg_sq_dtype");
  // OptimizerConfig asserts Adam and the distributed optimizer.
  CHECK(path(config("bf16", bf16_m, "sgd")) == "strategy.exp_avg_dtype");
  CHECK(path(config("bf16", R"(,"zero":0,"main_params_dtype":"fp16")")) == "strategy.main_params_dtype");
  // fp32 weights have no master copy to keep in fp16; remainders complete fp32 masters only.
  CHECK(path(config("fp32", R"(,"zero":1,"main_params_dtype":"fp16")")) == "strategy.main_params_dtype");
  CHECK(path(config("tf32", R"(,"zero":1,"main_params_dtype":"fp16")")) == "strategy.main_params_dtype");
  CHECK(path(config("bf16", R"(,"zero":1,"main_params_dtype":"fp16","store_param_remainders":true)")) ==
        "strategy.main_params_dtype");
  // The dtypes Megatron's arguments accept.
  CHECK(path(config("bf16", R"(,"zero":1,"exp_avg_dtype":"fp64")")) == "strategy.exp_avg_dtype");
  CHECK(path(config("bf16", R"(,"zero":1,"main_params_dtype":"bf16")")) == "strategy.main_params_dtype");
}

TEST_CASE("optimizer dtypes: Megatron import maps the flags to the fields; export writes them back") {
  const std::string common =
      "--num-layers 2 --hidden-size 512 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256 "
      "--micro-batch-size 1 --global-batch-size 8 ";
  const std::string aware = "--use-distributed-optimizer --use-precision-aware-optimizer ";
  MegatronImportOptions on_h100;
  on_h100.cluster_json = "dgx-h100";
  on_h100.nodes = 1;
  auto strategy_of = [&](const std::string& args) {
    return json::parse(import_megatron(common + args, on_h100).config_json)["strategy"];
  };
  const json bf16 = strategy_of(aware + "--bf16 --exp-avg-dtype bf16 --exp-avg-sq-dtype fp8");
  CHECK(bf16["exp_avg_dtype"] == "bf16");
  CHECK(bf16["exp_avg_sq_dtype"] == "fp8");
  CHECK(bf16["store_param_remainders"] == true);  // OptimizerConfig's default under bf16 weights
  CHECK_FALSE(bf16.contains("main_params_dtype"));
  const json kept = strategy_of(aware + "--bf16 --exp-avg-dtype bf16 --no-store-param-remainders");
  CHECK_FALSE(kept.contains("store_param_remainders"));
  const json fp16 = strategy_of(aware + "--fp16 --main-params-dtype fp16 --exp-avg-dtype fp16");
  CHECK(fp16["main_params_dtype"] == "fp16");
  CHECK(fp16["exp_avg_dtype"] == "fp16");
  CHECK_FALSE(fp16.contains("store_param_remainders"));
  // Megatron's asserts: the dtypes need the flag, the flag needs the distributed optimizer.
  auto import_error = [&](const std::string& args) {
    return test::error_path([&] { import_megatron(common + args, on_h100); });
  };
  CHECK(import_error("--use-distributed-optimizer --bf16 --exp-avg-dtype bf16") == "--exp-avg-dtype");
  CHECK(import_error("--bf16 --use-precision-aware-optimizer") == "--use-precision-aware-optimizer");
  CHECK(import_error(aware + "--bf16 --exp-avg-dtype fp64") == "--exp-avg-dtype");
  // Export round trip: the same fields come back.
  for (const char* fields :
       {R"(,"zero":1,"store_param_remainders":true,"exp_avg_dtype":"bf16","exp_avg_sq_dtype":"fp8")",
        R"(,"zero":1,"exp_avg_dtype":"bf16","exp_avg_sq_dtype":"bf16")"}) {
    CAPTURE(fields);
    const std::string cfg = config("bf16", fields);
    const std::string script = export_megatron(cfg);
    CHECK(script.find("--use-precision-aware-optimizer") != std::string::npos);
    const json back = json::parse(import_megatron(script, on_h100).config_json)["strategy"];
    const json orig = json::parse(config_to_json(parse_config(cfg)))["strategy"];
    for (const char* key :
         {"store_param_remainders", "exp_avg_dtype", "exp_avg_sq_dtype", "main_params_dtype"}) {
      CAPTURE(key);
      CHECK(back.value(key, json()) == orig.value(key, json()));
    }
  }
  const std::string fp16_cfg =
      config("fp16", R"(,"zero":1,"main_params_dtype":"fp16","exp_avg_dtype":"fp16")");
  const json back = json::parse(import_megatron(export_megatron(fp16_cfg), on_h100).config_json)["strategy"];
  CHECK(back["main_params_dtype"] == "fp16");
  CHECK(back["exp_avg_dtype"] == "fp16");
}
