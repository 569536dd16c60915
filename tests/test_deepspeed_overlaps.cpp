// What DeepSpeed's engines overlap (docs/frameworks/data-parallelism.md, "What DeepSpeed
// overlaps"): without ZeRO the engine all-reduces after the backward, the pipeline engine
// reduces after its schedule, ZeRO-1/2 with overlap_comm reduce during the backward outside a
// pipeline, and ZeRO-1/2 all-gather the updated weights inside step().
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
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
  const test::TailTimes flat = tail_of(deepspeed("fp16", 1, 1));
  REQUIRE(flat.grad_reduces > 0);
  CHECK(flat.first_grad_reduce_s < flat.backward_end_s);
  const test::TailTimes piped = tail_of(deepspeed("fp16", 1, 2));
  REQUIRE(piped.grad_reduces > 0);
  CHECK(piped.first_grad_reduce_s >= piped.backward_end_s);
  // overlap_grad_reduce false outside a pipeline: after the backward too.
  const test::TailTimes off = tail_of(deepspeed("fp16", 1, 1, R"(,"overlap_grad_reduce":false)"));
  CHECK(off.first_grad_reduce_s >= off.backward_end_s);
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
