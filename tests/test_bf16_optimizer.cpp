// DeepSpeed's BF16_Optimizer (docs/frameworks/data-parallelism.md, "DeepSpeed's BF16_Optimizer"):
// framework deepspeed trains bf16 at zero 0 with the optimizer states sharded like ZeRO-1, an fp32
// gradient buffer beside autograd's bf16 gradients, an 18-byte cast-and-add per parameter after
// every micro-batch, one all-reduce of the fp32 buffer after the backward and an all-gather of
// the updated bf16 weights after the step.
#include <doctest/doctest.h>

#include <string>

#include "../core/src/search/bounds.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "search_test_helpers.h"
#include "tail_timing.h"

using namespace proteus;

namespace {

constexpr int kMicroBatches = 4;

// GPT-style, 2 layers, hidden 512, DP 8 on one DGX H100, 4 micro-batches of 1.
std::string deepspeed(const std::string& precision, int zero, const std::string& extra = "") {
  return test::config_json_in(
      precision, test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})",
      8 * kMicroBatches,
      R"({"framework":"deepspeed","dp":8,"micro_batch":1,"zero":)" + std::to_string(zero) + extra + "}");
}

double static_bytes(const CompiledModel& c, MemCategory category) {
  return c.stats.static_bytes_per_stage[0][static_cast<int>(category)];
}

// Sum of the bytes of rank 0's compute tasks with this label, and how many there are.
test::CollCount compute_total(const CompiledModel& c, const std::string& label) {
  test::CollCount out;
  for (const Task& t : c.exec.tasks) {
    if (t.kind != TaskKind::Compute || t.rank != 0 || c.exec.labels[t.label] != label) continue;
    ++out.count;
    out.bytes += c.exec.works[t.work].bytes;
  }
  return out;
}

// Sum of the bytes of rank 0's gradient collectives (label grad_bucket_*) of one kind.
test::CollCount gradient_collectives(const CompiledModel& c, CollectiveKind kind) {
  test::CollCount out;
  for (const Task& t : c.exec.tasks) {
    if (t.kind != TaskKind::Collective || t.rank != 0) continue;
    if (c.exec.labels[t.label].rfind("grad_bucket_", 0) != 0) continue;
    const Collective& col = c.exec.collectives[t.collective];
    if (col.kind != kind) continue;
    ++out.count;
    out.bytes += col.bytes;
  }
  return out;
}

}  // namespace

TEST_CASE("BF16_Optimizer: optimizer states sharded as ZeRO-1, fp32 gradients beside bf16 ones") {
  const CompiledModel bf16_z0 = test::compile_text(deepspeed("bf16", 0));
  const CompiledModel bf16_z1 = test::compile_text(deepspeed("bf16", 1));
  const CompiledModel fp16_z0 = test::compile_text(deepspeed("fp16", 0));
  // bf16 weights: 2 bytes per parameter of the rank.
  const double params = static_bytes(bf16_z1, MemCategory::Weights) / 2;
  REQUIRE(params > 0);
  CHECK(static_bytes(bf16_z0, MemCategory::Weights) == doctest::Approx(2 * params));
  // DeepSpeed's ZeRO-1 keeps autograd's bf16 gradients (docs/frameworks/data-parallelism.md,
  // "Gradient dtype").
  CHECK(static_bytes(bf16_z1, MemCategory::Gradients) == doctest::Approx(2 * params));
  // fp32 buffer 4 + autograd's bf16 gradients 2.
  CHECK(static_bytes(bf16_z0, MemCategory::Gradients) == doctest::Approx(6 * params));
  // fp32 master + Adam m, v: 12 bytes over the 8 data-parallel ranks, as ZeRO-1.
  CHECK(static_bytes(bf16_z0, MemCategory::OptimizerStates) == doctest::Approx(12 * params / 8));
  CHECK(static_bytes(bf16_z0, MemCategory::OptimizerStates) ==
        doctest::Approx(static_bytes(bf16_z1, MemCategory::OptimizerStates)));
  // fp16 at zero 0 is DeepSpeed's FP16_Optimizer: nothing sharded.
  CHECK(static_bytes(fp16_z0, MemCategory::OptimizerStates) == doctest::Approx(12 * params));
}

TEST_CASE("BF16_Optimizer: every micro-batch casts and adds each gradient into fp32, 18 bytes each") {
  const CompiledModel c = test::compile_text(deepspeed("bf16", 0));
  const double params = static_bytes(c, MemCategory::Gradients) / 6;
  const test::CollCount accumulate = compute_total(c, "bf16_optimizer_grad_accumulate");
  // The cast reads 2 and writes 4, the add reads 4 + 4 and writes 4; on every micro-batch.
  CHECK(accumulate.bytes == doctest::Approx(18 * params * kMicroBatches));
  CHECK(accumulate.count % kMicroBatches == 0);
  // Not under the other optimizers: DeepSpeed's ZeRO-1, FP16_Optimizer, Megatron's bf16.
  CHECK(compute_total(test::compile_text(deepspeed("bf16", 1)), "bf16_optimizer_grad_accumulate").count == 0);
  CHECK(compute_total(test::compile_text(deepspeed("fp16", 0)), "bf16_optimizer_grad_accumulate").count == 0);
  const std::string megatron =
      test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 32,
                        R"({"framework":"megatron","dp":8,"micro_batch":1})");
  CHECK(compute_total(test::compile_text(megatron), "bf16_optimizer_grad_accumulate").count == 0);
}

TEST_CASE(
    "BF16_Optimizer: one all-reduce of the fp32 gradients after the backward, bf16 gathers after the step") {
  const CompiledModel c = test::compile_text(deepspeed("bf16", 0));
  const double params = static_bytes(c, MemCategory::Gradients) / 6;
  const test::CollCount all_reduce = gradient_collectives(c, CollectiveKind::AllReduce);
  CHECK(all_reduce.bytes == doctest::Approx(4 * params));
  CHECK(gradient_collectives(c, CollectiveKind::ReduceScatter).count == 0);
  // DeepSpeed's ZeRO-1 reduce-scatters instead.
  const CompiledModel zero1 = test::compile_text(deepspeed("bf16", 1));
  CHECK(gradient_collectives(zero1, CollectiveKind::ReduceScatter).count > 0);
  CHECK(gradient_collectives(zero1, CollectiveKind::AllReduce).count == 0);
  // Issued once every backward is done (none per micro-batch), the gathers after the step.
  const test::TailTimes tail = test::tail_times(parse_config(deepspeed("bf16", 0)), c);
  REQUIRE(tail.grad_reduces > 0);
  CHECK(tail.per_micro_batch_grad_reduces == 0);
  CHECK(tail.first_grad_reduce_s >= tail.backward_end_s);
  CHECK(tail.first_param_gather_s >= tail.step_end_s);
  const double gathered = tail.param_gather_bytes;
  CHECK(gathered == doctest::Approx(2 * params));
}

TEST_CASE(
    "BF16_Optimizer: a slower step than DeepSpeed's ZeRO-1, and the search's bounds stay below every stage") {
  for (const int zero : {0, 1, 2, 3}) {
    CAPTURE(zero);
    const Config config = parse_config(deepspeed("bf16", zero));
    const test::Simulated s = test::simulate(config);
    const search_detail::Bounds b = search_detail::compiled_bounds(config);
    CHECK(b.time_s <= s.time_s);
    CHECK(b.memory_bytes <= s.peak_bytes);
  }
  CHECK(test::simulate(parse_config(deepspeed("bf16", 0))).time_s >
        test::simulate(parse_config(deepspeed("bf16", 1))).time_s);
}

TEST_CASE("BF16_Optimizer: 16-bit or per-micro-batch gradient reduction is an error naming the field") {
  CHECK(test::error_path([] { parse_config(deepspeed("bf16", 0, R"(,"grad_reduce_in_fp32":false)")); }) ==
        "strategy.grad_reduce_in_fp32");
  CHECK(test::error_path([] { parse_config(deepspeed("bf16", 0, R"(,"grad_sync":"per_micro_batch")")); }) ==
        "strategy.grad_sync");
  // DeepSpeed's ZeRO-1 takes both.
  CHECK(test::error_path([] { parse_config(deepspeed("bf16", 1, R"(,"grad_reduce_in_fp32":false)")); }) ==
        test::kNoError);
}

TEST_CASE("BF16_Optimizer at ZeRO-1: DeepSpeed's grad_accum_dtype fp32 selects it, as without ZeRO") {
  // engine._do_optimizer_sanity_check: bf16, grad_accum_dtype fp32, stage 1 -> BFLOAT16; the
  // default grad_accum_dtype is fp32 for bf16 without ZeRO only (get_data_types).
  CHECK(parse_config(deepspeed("bf16", 0)).strategy.grad_accum_in_fp32);
  CHECK_FALSE(parse_config(deepspeed("bf16", 1)).strategy.grad_accum_in_fp32);
  const std::string fp32_accum = R"(,"grad_accum_in_fp32":true)";
  const CompiledModel z1 = test::compile_text(deepspeed("bf16", 1, fp32_accum));
  const CompiledModel z0 = test::compile_text(deepspeed("bf16", 0));
  const double params = static_bytes(z0, MemCategory::Gradients) / 6;
  // The same optimizer as zero 0's: fp32 buffer beside the bf16 gradients, states over 8 ranks.
  CHECK(static_bytes(z1, MemCategory::Gradients) == doctest::Approx(6 * params));
  CHECK(static_bytes(z1, MemCategory::OptimizerStates) == doctest::Approx(12 * params / 8));
  CHECK(compute_total(z1, "bf16_optimizer_grad_accumulate").bytes ==
        doctest::Approx(18 * params * kMicroBatches));
  CHECK(gradient_collectives(z1, CollectiveKind::AllReduce).bytes == doctest::Approx(4 * params));
  CHECK(gradient_collectives(z1, CollectiveKind::ReduceScatter).count == 0);
  // Reduced after the backward: DeepSpeed's overlap_comm does not apply, and asking is an error.
  const test::TailTimes tail = test::tail_times(parse_config(deepspeed("bf16", 1, fp32_accum)), z1);
  CHECK(tail.first_grad_reduce_s >= tail.backward_end_s);
  CHECK(test::error_path([&] {
          parse_config(deepspeed("bf16", 1, fp32_accum + R"(,"overlap_grad_reduce":true)"));
        }) == "strategy.overlap_grad_reduce");
  // The search's bounds stay below it.
  const Config config = parse_config(deepspeed("bf16", 1, fp32_accum));
  const search_detail::Bounds b = search_detail::compiled_bounds(config);
  const test::Simulated sim = test::simulate(config);
  CHECK(b.time_s <= sim.time_s);
  CHECK(b.memory_bytes <= sim.peak_bytes);
  // show prints it, and reading that back gives the same config.
  CHECK(parse_config(config_to_json(config)).strategy.grad_accum_in_fp32);
}

TEST_CASE("BF16_Optimizer: fp32 gradient accumulation anywhere else is an error naming the field") {
  const std::string fp32_accum = R"(,"grad_accum_in_fp32":true)";
  CHECK(test::error_path([&] { parse_config(deepspeed("fp16", 1, fp32_accum)); }) ==
        "strategy.grad_accum_in_fp32");
  CHECK(test::error_path([&] { parse_config(deepspeed("bf16", 2, fp32_accum)); }) ==
        "strategy.grad_accum_in_fp32");
  const std::string megatron =
      test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 32,
                        R"({"framework":"megatron","dp":8,"micro_batch":1,"grad_accum_in_fp32":true})");
  CHECK(test::error_path([&] { parse_config(megatron); }) == "strategy.grad_accum_in_fp32");
  // bf16 at zero 0 may turn it off: DeepSpeed's FP16_Optimizer path in bf16 (grad_accum_dtype bf16).
  const Config off = parse_config(deepspeed("bf16", 0, R"(,"grad_accum_in_fp32":false)"));
  CHECK_FALSE(deepspeed_bf16_optimizer(off.strategy, Precision::Bf16));
  CHECK(
      static_bytes(test::compile_text(deepspeed("bf16", 0, R"(,"grad_accum_in_fp32":false)")),
                   MemCategory::OptimizerStates) ==
      doctest::Approx(12 * static_bytes(test::compile_text(deepspeed("bf16", 1)), MemCategory::Weights) / 2));
}
