// Memory-bound kernels against the measurements their presets' memory_bound_efficiency comes from
// (docs/fidelity/memory-bound.md, "Memory-bound kernels: measured bandwidth"): the modelled time of
// the same op, bytes counted from what the kernels read and write, must match the published timing.
//   - H100 SXM: Megatron-Core's unfused vocab-parallel cross entropy, bf16 logits [2048, 4, V],
//     Liger-Kernel benchmark/data/all_benchmark_data_megatron.csv (provider megatron-unfused).
//   - A100 SXM4 80GB: Liger's fused Triton RMSNorm forward, M = 2048 rows, bf16,
//     Liger-Kernel benchmark/data/all_benchmark_data.csv (kernel rms_norm, liger 0.2.1).
// Two checks each: the whole op at the largest size (within 5%: the benchmark's fixed time per
// call, its launch path, is a few microseconds more than kernel_launch_us), and the marginal cost
// of doubling the size (within 3%: the sustained bandwidth alone, no fixed time).
#include <doctest/doctest.h>

#include <string>
#include "compile_fixtures.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "relative_approx.h"

using namespace proteus;
using namespace proteus::test;

namespace {

constexpr double kMsPerS = 1e3;

// Megatron's cross entropy, measured on an H100 SXM, milliseconds (y_value_50). "backward" mode
// times a fresh forward and backward together (the benchmark script subtracts nothing).
struct CrossEntropyTiming {
  int vocab;
  double forward_ms, forward_backward_ms;
};
constexpr CrossEntropyTiming kCe64k{65536, 7.939584016799927, 10.675616264343262};
constexpr CrossEntropyTiming kCe128k{131072, 15.816815853118896, 21.251296043395996};

// One layer of a small GPT whose loss sees 2048 x 4 tokens over `vocab` logits on one H100.
std::string ce_config(int vocab) {
  return config_json(gpt_model(1, 256, 4, 2048, vocab),
                     "{\"preset\":\"dgx-h100\",\"nodes\":1,\"gpus_per_node\":1}", 4,
                     "{\"dp\":1,\"micro_batch\":4}");
}

// The work of rank 0's first loss task in this phase.
const ComputeWork& loss_work(const CompiledModel& c, Phase phase) {
  const ComputeWork* work = compute_work_ending(c, phase, "loss");
  REQUIRE_MESSAGE(work != nullptr, "no loss task");
  return *work;
}

struct CeModelled {
  double forward_ms, forward_backward_ms;
};

CeModelled modelled_cross_entropy(int vocab) {
  const std::string json = ce_config(vocab);
  const CompiledModel c = compile_text(json);
  const CostModel cost = cost_model_of(parse_config(json));
  const ComputeWork& fwd = loss_work(c, Phase::Forward);
  const ComputeWork& bwd = loss_work(c, Phase::BackwardInput);
  // The op is the one measured: 38 B per logit forward, 14 backward (bf16 logits, fp32 math).
  const double logits = 2048.0 * 4 * vocab;
  CHECK(fwd.bytes == doctest::Approx(38 * logits));
  CHECK(bwd.bytes == doctest::Approx(14 * logits));
  const double fwd_ms = cost.compute_time_s(fwd) * kMsPerS;
  return {fwd_ms, fwd_ms + cost.compute_time_s(bwd) * kMsPerS};
}

// Liger's RMSNorm forward on an A100-SXM4-80GB, 2048 rows of `hidden` bf16, milliseconds.
struct NormTiming {
  int hidden;
  double forward_ms;
};
constexpr NormTiming kNorm16k{16384, 0.0952640026807785};
constexpr NormTiming kNorm32k{32768, 0.18223999440670013};

double modelled_rms_norm_ms(const CostModel& cost, int hidden) {
  ComputeWork w;
  w.op_kind = OpKind::Norm;
  w.kernels = 1;
  w.bytes = 4.0 * 2048 * hidden;  // read x, write y (bf16); the weight's 2 x hidden bytes are noise
  w.flops = 4.0 * 2048 * hidden;
  return cost.compute_time_s(w) * kMsPerS;
}

}  // namespace

TEST_CASE("memory-bound: Megatron's cross entropy on an H100 SXM takes its measured time") {
  const CeModelled at_128k = modelled_cross_entropy(kCe128k.vocab);
  CHECK(at_128k.forward_ms == proteus::test::approx(kCe128k.forward_ms).epsilon(0.05));
  CHECK(at_128k.forward_backward_ms == proteus::test::approx(kCe128k.forward_backward_ms).epsilon(0.05));
  // Doubling the vocabulary adds 27.9 GB of traffic: the sustained bandwidth alone.
  const CeModelled at_64k = modelled_cross_entropy(kCe64k.vocab);
  const double measured_ms = kCe128k.forward_backward_ms - kCe64k.forward_backward_ms;
  CHECK(at_128k.forward_backward_ms - at_64k.forward_backward_ms ==
        proteus::test::approx(measured_ms).epsilon(0.03));
}

TEST_CASE("memory-bound: a fused RMSNorm forward on an A100 SXM takes its measured time") {
  const std::string json = config_json(gpt_model(1, 256, 4, 2048, 1024),
                                       "{\"preset\":\"dgx-a100-80g\",\"nodes\":1,\"gpus_per_node\":1}", 1,
                                       "{\"dp\":1,\"micro_batch\":1}");
  const CostModel cost = cost_model_of(parse_config(json));
  CHECK(modelled_rms_norm_ms(cost, kNorm32k.hidden) ==
        proteus::test::approx(kNorm32k.forward_ms).epsilon(0.05));
  const double measured_ms = kNorm32k.forward_ms - kNorm16k.forward_ms;  // 134 MB more traffic
  CHECK(modelled_rms_norm_ms(cost, kNorm32k.hidden) - modelled_rms_norm_ms(cost, kNorm16k.hidden) ==
        proteus::test::approx(measured_ms).epsilon(0.03));
}
