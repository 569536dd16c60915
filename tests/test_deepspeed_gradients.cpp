// What DeepSpeed does with gradients (docs/frameworks/data-parallelism.md, "What DeepSpeed
// overlaps", "Gradient dtype"): without ZeRO the engine all-reduces after the backward, the
// pipeline engine reduces after its schedule, ZeRO-1/2 with overlap_comm reduce during the
// backward outside a pipeline, ZeRO-1/2 all-gather the updated weights inside step(); the
// gradients stay in the module's 16-bit dtype and autograd adds later micro-batches' into them.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "proteus/error.h"
#include "proteus/search.h"
#include "tail_timing.h"

using namespace proteus;

namespace {

// GPT-style, 4 layers, hidden 512, on one DGX H100: dp x pp GPUs, 4 micro-batches of 1.
Config deepspeed(const std::string& precision, int zero, int pp, const std::string& extra = "") {
  const int dp = 8 / pp;
  return parse_config(test::config_json_in(
      precision, test::gpt_model(4, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 4 * dp,
      R"({"framework":"deepspeed","dp":)" + std::to_string(dp) + R"(,"pp":)" + std::to_string(pp) +
          R"(,"micro_batch":1,"zero":)" + std::to_string(zero) + extra + "}"));
}

test::TailTimes tail_of(const Config& c) { return test::tail_times(c, compile(c)); }

}  // namespace

TEST_CASE("DeepSpeed: ZeRO-1's overlap_comm reduces during the backward, but not under a pipeline") {
  // Outside a pipeline the hooks reduce buckets as their gradients are final, before the
  // backward ends; the pipeline engine's ReduceGrads runs after the schedule.
  const test::TailTimes flat = tail_of(deepspeed("fp16", 1, 1, R"(,"overlap_grad_reduce":true)"));
  REQUIRE(flat.grad_reduces > 0);
  CHECK(flat.first_grad_reduce_s < flat.backward_end_s);
  const test::TailTimes piped = tail_of(deepspeed("fp16", 1, 2));
  REQUIRE(piped.grad_reduces > 0);
  CHECK(piped.first_grad_reduce_s >= piped.backward_end_s);
  // overlap_grad_reduce false outside a pipeline: after the backward too.
  const test::TailTimes off = tail_of(deepspeed("fp16", 1, 1, R"(,"overlap_grad_reduce":false)"));
  CHECK(off.first_grad_reduce_s >= off.backward_end_s);
}

TEST_CASE("DeepSpeed: its defaults are its own: overlap_comm at ZeRO-3 only, weights gathered in the step") {
  // DeepSpeedZeroConfig.overlap_comm None -> stage == 3 (deepspeed/runtime/zero/config.py).
  for (const int zero : {0, 1, 2, 3}) {
    CAPTURE(zero);
    const Config c = deepspeed("fp16", zero, 1);
    CHECK(c.strategy.overlap_grad_reduce == (zero == 3));
    CHECK(c.strategy.overlap_param_gather == (zero == 3));
  }
  // ZeRO-1 at its default: every bucket after the backward.
  const test::TailTimes t = tail_of(deepspeed("fp16", 1, 1));
  REQUIRE(t.grad_reduces > 0);
  CHECK(t.first_grad_reduce_s >= t.backward_end_s);
  // Megatron keeps its own: both overlaps on.
  const Config megatron = parse_config(test::config_json_in(
      "fp16", test::gpt_model(4, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 32,
      R"({"framework":"megatron","dp":8,"micro_batch":1,"zero":1})"));
  CHECK(megatron.strategy.overlap_grad_reduce);
  CHECK(megatron.strategy.overlap_param_gather);
}

TEST_CASE("DeepSpeed: an overlap its engine does not have is an error naming the field") {
  const auto error_path = [](const std::string& precision, int zero, int pp, const std::string& extra) {
    try {
      deepspeed(precision, zero, pp, extra);
    } catch (const Error& e) {
      CHECK(e.code == "invalid_config");
      return e.path;
    }
    return std::string("(parsed)");
  };
  // Without ZeRO, and under the pipeline engine, the gradients are reduced after the backward.
  CHECK(error_path("fp16", 0, 1, R"(,"overlap_grad_reduce":true)") == "strategy.overlap_grad_reduce");
  CHECK(error_path("fp16", 1, 2, R"(,"overlap_grad_reduce":true)") == "strategy.overlap_grad_reduce");
  CHECK(error_path("fp16", 2, 1, R"(,"overlap_grad_reduce":true)") == "(parsed)");
  // ZeRO-1/2 and BF16_Optimizer gather the updated weights inside step().
  CHECK(error_path("fp16", 1, 1, R"(,"overlap_param_gather":true)") == "strategy.overlap_param_gather");
  CHECK(error_path("fp16", 2, 1, R"(,"overlap_param_gather":true)") == "strategy.overlap_param_gather");
  CHECK(error_path("bf16", 0, 1, R"(,"overlap_param_gather":true)") == "strategy.overlap_param_gather");
  CHECK(error_path("fp16", 3, 1, R"(,"overlap_param_gather":true)") == "(parsed)");
  CHECK(error_path("fp16", 1, 1, R"(,"overlap_param_gather":false,"overlap_grad_reduce":false)") ==
        "(parsed)");
}

TEST_CASE("DeepSpeed: a search or fit change from a config's overlap keeps it only where DeepSpeed has it") {
  // The base overlaps ZeRO-2's reduction explicitly; a candidate at zero 0 or under a pipeline
  // takes DeepSpeed's default (reduce after the backward) instead of being refused.
  StrategySpec s = deepspeed("fp16", 2, 1, R"(,"overlap_grad_reduce":true)").strategy;
  REQUIRE(s.overlap_grad_reduce_given);
  s.zero = 0;
  forget_overlaps_deepspeed_lacks(&s, Precision::Fp16);
  refresh_framework_defaults(&s, Precision::Fp16);
  CHECK_FALSE(s.overlap_grad_reduce);
  StrategySpec kept = deepspeed("fp16", 2, 1, R"(,"overlap_grad_reduce":true)").strategy;
  kept.zero = 3;
  forget_overlaps_deepspeed_lacks(&kept, Precision::Fp16);
  refresh_framework_defaults(&kept, Precision::Fp16);
  CHECK(kept.overlap_grad_reduce);
  CHECK(kept.overlap_grad_reduce_given);
}

TEST_CASE("DeepSpeed: without ZeRO the gradients are all-reduced after the backward") {
  // fp16 at zero 0 (FP16_Optimizer): DeepSpeedEngine.backward -> allreduce_gradients.
  for (const int pp : {1, 2}) {
    CAPTURE(pp);
    const test::TailTimes t = tail_of(deepspeed("fp16", 0, pp));
    REQUIRE(t.grad_reduces > 0);
    CHECK(t.per_micro_batch_grad_reduces == 0);
    CHECK(t.first_grad_reduce_s >= t.backward_end_s);
  }
}

TEST_CASE(
    "DeepSpeed: ZeRO-1 and ZeRO-2 gather the updated weights inside the step, not in the next forward") {
  for (const int zero : {1, 2}) {
    CAPTURE(zero);
    const test::TailTimes t = tail_of(deepspeed("fp16", zero, 1));
    REQUIRE(t.param_gather_bytes > 0);
    CHECK(t.first_param_gather_s >= t.step_end_s);
  }
  // Megatron's distributed optimizer gathers them in the next forward (overlap_param_gather):
  // they are issued before the step, at the start of the iteration.
  const Config megatron = parse_config(test::config_json_in(
      "fp16", test::gpt_model(4, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 32,
      R"({"framework":"megatron","dp":8,"micro_batch":1,"zero":1})"));
  const test::TailTimes m = tail_of(megatron);
  REQUIRE(m.param_gather_bytes > 0);
  CHECK(m.first_param_gather_s < m.step_end_s);
}

TEST_CASE(
    "DeepSpeed: gradients in the module's 16-bit dtype, fp32 under BF16_Optimizer, unless the config says") {
  const auto fp32_grads = [](const std::string& precision, int zero, const std::string& framework,
                             const std::string& extra = "") {
    return parse_config(test::config_json_in(precision, test::gpt_model(2, 512, 8, 256, 8000),
                                             R"({"preset":"dgx-h100","nodes":1})", 32,
                                             R"({"framework":")" + framework +
                                                 R"(","dp":8,"micro_batch":1,"zero":)" +
                                                 std::to_string(zero) + extra + "}"))
        .strategy.grad_reduce_in_fp32;
  };
  CHECK_FALSE(fp32_grads("bf16", 1, "deepspeed"));  // DeepSpeed's ZeRO optimizer: bf16
  CHECK_FALSE(fp32_grads("fp16", 0, "deepspeed"));  // FP16_Optimizer: fp16
  CHECK(fp32_grads("bf16", 0, "deepspeed"));        // BF16_Optimizer: fp32
  CHECK(fp32_grads("fp32", 1, "deepspeed"));        // only fp32 exists
  CHECK(fp32_grads("bf16", 1, "megatron"));         // Megatron's main_grad
  CHECK(fp32_grads("bf16", 1, "deepspeed", R"(,"grad_reduce_in_fp32":true)"));  // as set
  // The search's candidates take the default of their own stage.
  Config base = deepspeed("bf16", 1, 1);
  base.search.zero = {0, 1, 2};
  int checked = 0;
  for (const StrategySpec& s : enumerate_space(base)) {
    CHECK(s.grad_reduce_in_fp32 == (s.zero == 0));
    ++checked;
  }
  CHECK(checked > 0);
}

TEST_CASE("DeepSpeed: autograd adds each later micro-batch's gradient into param.grad, 6 bytes an element") {
  // A model without tied weights, so each weight has one gradient a micro-batch.
  const auto config = [](const std::string& precision, int zero, int64_t global_batch) {
    return parse_config(test::config_json_in(
        precision, test::tiny_llama_model(), R"({"preset":"dgx-h100","nodes":1})", global_batch,
        R"({"framework":"deepspeed","dp":8,"micro_batch":1,"zero":)" + std::to_string(zero) + "}"));
  };
  const auto accumulated = [](const CompiledModel& c) {
    double bytes = 0;
    for (const Task& t : c.exec.tasks)
      if (t.rank == 0 && c.exec.labels[t.label] == "autograd_grad_accumulate")
        bytes += c.exec.works[t.work].bytes;
    return bytes;
  };
  for (const int zero : {0, 1}) {
    CAPTURE(zero);
    const CompiledModel c = compile(config("fp16", zero, 32));  // 4 micro-batches
    const double params = c.stats.static_bytes_per_stage[0][static_cast<int>(MemCategory::Weights)] / 2;
    // Read 2 + 2, write 2, on micro-batches 2 to 4.
    CHECK(accumulated(c) == doctest::Approx(6 * params * 3));
  }
  CHECK(accumulated(compile(config("fp16", 1, 8))) == 0);   // one micro-batch: nothing to add
  CHECK(accumulated(compile(config("fp16", 2, 32))) == 0);  // ZeRO-2 reduces every micro-batch
  CHECK(accumulated(compile(config("bf16", 0, 32))) == 0);  // BF16_Optimizer adds them itself
}

TEST_CASE("DeepSpeed ZeRO-3: parameters under stage3_param_persistence_threshold stay whole") {
  // DeepSpeed keeps a parameter of fewer than 1e5 elements (the norms' 512-wide weights and
  // biases here) unpartitioned: never gathered, whole at rest; its gradient and optimizer states
  // are partitioned like the rest. Weights at rest: 2 bytes a parameter, over dp = 8 for the
  // partitioned ones.
  const Config c = deepspeed("bf16", 3, 1);
  const CompiledModel m = compile(c);
  double partitioned = 0, persistent = 0;
  for (const Tensor& t : m.graph.tensors)
    if (t.is_weight) (t.elements() >= 100000 ? partitioned : persistent) += static_cast<double>(t.elements());
  REQUIRE(persistent > 0);
  const auto weights = static_cast<size_t>(MemCategory::Weights);
  CHECK(m.stats.static_bytes_per_stage.at(0)[weights] == doctest::Approx(2 * (partitioned / 8 + persistent)));
  // No gather is labelled by a norm; every other weighted op gathers.
  for (const Task& t : m.exec.tasks)
    if (t.kind == TaskKind::Collective && t.phase == Phase::Forward &&
        m.exec.collectives[static_cast<size_t>(t.collective)].kind == CollectiveKind::AllGather)
      CHECK(m.exec.labels[static_cast<size_t>(t.label)].find(".ln") == std::string::npos);
}
