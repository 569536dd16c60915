// strategy.fp8_param_gather (docs/frameworks/fp8.md "FP8 parameter all-gather"): Megatron-Core's
// --fp8-param-gather and torchao's enable_fsdp_float8_all_gather gather the weights of FP8
// GEMMs in FP8, 1 byte per parameter instead of 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/error.h"

using namespace proteus;

namespace {

// GPT-style without biases: 2 layers, hidden 512, 8 heads, seq 256, vocab 8000 (tied), on one
// DGX H100 node, data parallel 8, micro-batch 1, global batch 8 (one micro-batch).
std::string config(const std::string& precision, const std::string& strategy) {
  std::string model = test::gpt_model(2, 512, 8, 256, 8000);
  model.insert(model.size() - 1, ",\"bias\":false");
  return test::config_json_in(precision, model, R"({"preset":"dgx-h100","nodes":1})", 8, strategy);
}

double gathered_weight_bytes(const CompiledModel& c) {
  double bytes = 0;
  for (const CollectiveStat& s : c.stats.collectives)
    if (s.kind == "all_gather" && s.purpose == "weight") bytes += s.bytes_per_rank;
  return bytes;
}

std::string error_path(const std::string& text) {
  return test::error_path([&] { parse_config(text); });
}

// FP8 GEMM weights per layer (TE linears; the tied output layer stays 16-bit): q 512 x 512,
// kv 1024 x 512, o 512 x 512, fc1 2048 x 512, fc2 512 x 2048 = 3,145,728; 2 layers.
constexpr double kFp8Params = 2 * 3145728.0;

}  // namespace

TEST_CASE("fp8_param_gather: ZeRO-1 gathers FP8 weights in 1 byte and keeps no 16-bit copy of them") {
  const CompiledModel bf = test::compile_text(config("fp8", R"({"dp":8,"micro_batch":1,"zero":1})"));
  const CompiledModel f8 =
      test::compile_text(config("fp8", R"({"dp":8,"micro_batch":1,"zero":1,"fp8_param_gather":true})"));
  const double P = static_cast<double>(bf.stats.parameters);
  // The distributed optimizer's all-gather: S = 2P bytes of 16-bit weights; with FP8 weights
  // the FP8 GEMMs' parameters move 1 byte each: 2P - P8.
  CHECK(gathered_weight_bytes(bf) == doctest::Approx(2 * P));
  CHECK(gathered_weight_bytes(f8) == doctest::Approx(2 * P - kFp8Params));
  // Weights in memory: 16-bit copy 2P plus TE's FP8 copy and transpose 2 P8; with FP8
  // parameters (fp8_model_init) those weights are only FP8 + transpose: 2(P - P8) + 2 P8 = 2P.
  const int w = static_cast<int>(MemCategory::Weights);
  CHECK(bf.stats.static_bytes_per_stage[0][w] == doctest::Approx(2 * P + 2 * kFp8Params));
  CHECK(f8.stats.static_bytes_per_stage[0][w] == doctest::Approx(2 * P));
  // Fewer bytes on the same links, but one more collective: the weights' amax all-reduce after
  // the step (32 bytes, test below), latency-bound on the compute stream. On this toy model the
  // gather saves less than that latency, so the iteration may be slower by at most one ring
  // all-reduce's latency over 8 GPUs: NCCL base 8.4 us + 2 x 7 hops x 3.73 us (dgx-h100 preset's
  // collectives.base_latency_us, intra_node.latency_us) = 60.62 us.
  const double t_bf = nlohmann::json::parse(simulate_json(
      config("fp8", R"({"dp":8,"micro_batch":1,"zero":1})"), {}))["summary"]["iteration_time_s"];
  const double t_f8 = nlohmann::json::parse(
      simulate_json(config("fp8", R"({"dp":8,"micro_batch":1,"zero":1,"fp8_param_gather":true})"),
                    {}))["summary"]["iteration_time_s"];
  CHECK(t_f8 <= t_bf + 60.62e-6);
}

TEST_CASE("fp8_param_gather: FSDP gathers FP8 weights in 1 byte before each use; errors name the field") {
  // ZeRO-3 (FSDP2 + torchao float8 all-gather): each weighted op gathered before its forward
  // and its backward (no recompute, one micro-batch), except the last block's backward, which
  // finds them still gathered (TorchTitan's apply_fsdp: no reshard after the last block's
  // forward): the FP8 weights' gathers save 1 byte per parameter each, 2 P8 less the last of
  // the two layers' P8 / 2.
  const std::string fsdp = R"("dp":8,"micro_batch":1,"zero":3,"framework":"fsdp","grad_sync":"at_boundary")";
  const CompiledModel bf = test::compile_text(config("fp8", "{" + fsdp + "}"));
  const CompiledModel f8 = test::compile_text(config("fp8", "{" + fsdp + ",\"fp8_param_gather\":true}"));
  CHECK(gathered_weight_bytes(bf) - gathered_weight_bytes(f8) == doctest::Approx(1.5 * kFp8Params));
  // Megatron asserts the distributed optimizer or FSDP; FP8 training is the point.
  CHECK(error_path(config("bf16", R"({"dp":8,"micro_batch":1,"zero":1,"fp8_param_gather":true})")) ==
        "strategy.fp8_param_gather");
  CHECK(error_path(config("fp8", R"({"dp":8,"micro_batch":1,"fp8_param_gather":true})")) ==
        "strategy.fp8_param_gather");
}

TEST_CASE(
    "fp8_param_gather: the FP8 weights' amaxes are all-reduced over dp once per step, after the optimizer") {
  // TE cast_master_weights_to_fp8 (Megatron quantize_param_shard; torchao
  // precompute_float8_dynamic_scale_for_fsdp): one all-reduce (MAX) of one fp32 amax per FP8
  // weight over the data-parallel group, after the optimizer step. Per layer 4 TE weights
  // (linear_qkv: the op graph's q and kv projections are one TE weight; linear_proj, fc1, fc2),
  // 2 layers: 8 amaxes x 4 bytes = 32 bytes over dp 8, on the compute stream.
  for (const char* zero : {R"("zero":1)", R"("zero":3,"framework":"fsdp","grad_sync":"at_boundary")"}) {
    const std::string base = std::string(R"({"dp":8,"micro_batch":1,)") + zero;
    const CompiledModel f8 = test::compile_text(config("fp8", base + ",\"fp8_param_gather\":true}"));
    const CompiledModel plain = test::compile_text(config("fp8", base + "}"));
    int count = 0, count_plain = 0;
    for (const CompiledModel* c : {&f8, &plain})
      for (size_t i = 0; i < c->exec.tasks.size(); ++i) {
        const Task& t = c->exec.tasks[i];
        if (t.kind != TaskKind::Collective || t.rank != 0 ||
            c->exec.labels[static_cast<size_t>(t.label)] != "fp8_weight_amax")
          continue;
        if (c == &plain) {
          ++count_plain;
          continue;
        }
        ++count;
        const Collective& col = c->exec.collectives[static_cast<size_t>(t.collective)];
        CHECK(col.kind == CollectiveKind::AllReduce);
        CHECK(col.bytes == 32);
        CHECK(col.axes == axis_bit(kAxisDp));
        CHECK(t.stream == Stream::Compute);
        CHECK(t.phase == Phase::Optimizer);
        // Right after the optimizer step on the compute queue.
        const auto& q = c->exec.queues[static_cast<size_t>(Stream::Compute)];
        const auto at = std::find(q.begin(), q.end(), static_cast<int>(i));
        REQUIRE(at != q.begin());
        REQUIRE(at != q.end());
        CHECK(c->exec.labels[static_cast<size_t>(c->exec.tasks[static_cast<size_t>(*(at - 1))].label)] ==
              "optimizer");
      }
    CHECK(count == 1);
    CHECK(count_plain == 0);
  }
}
