// Memory-bound kernels on a B200 against the measurement dgx-b200's memory_bound_efficiency comes
// from (docs/fidelity/memory-bound.md, "Memory-bound kernels on Blackwell"): Liger-Kernel's fused
// Triton SwiGLU c = silu(a) * b, bf16, [T, 14336] (Llama 3 8B's FFN width), forward and backward
// timed together (linkedin/Liger-Kernel benchmark/data/all_benchmark_data_swiglu_tokens.csv,
// provider triton, mode full, NVIDIA B200, liger 0.8.2;
// benchmark/scripts/benchmark_swiglu_backends.py). The modelled time of Proteus's own SwiGLU op at
// the same size, bytes counted by the op graph, must match it: the whole op at the largest size
// (within 5%: the benchmark's fixed time per call is a few microseconds more than kernel_launch_us)
// and the marginal cost of doubling the tokens (within 3%: the sustained bandwidth alone).
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
constexpr int kFfn = 14336;
constexpr int kSeq = 2048;

// Liger's Triton SwiGLU forward + backward on a B200, milliseconds (y_value_50, do_bench).
struct SwigluTiming {
  int tokens;
  double full_ms;
};
constexpr SwigluTiming kSwiglu4k{4096, 0.14950400590896606};
constexpr SwigluTiming kSwiglu8k{8192, 0.28675198554992676};

// One Llama-style layer (SwiGLU, RMSNorm) with FFN width 14336 on one B200; micro_batch x 2048
// tokens reach the MLP's activation.
std::string swiglu_config(int tokens) {
  const std::string model =
      "{\"kind\":\"transformer\",\"name\":\"test-swiglu\",\"layers\":1,\"hidden\":256,\"heads\":4,"
      "\"ffn_hidden\":" +
      std::to_string(kFfn) + ",\"seq_len\":" + std::to_string(kSeq) +
      ",\"vocab\":1024,\"mlp\":\"swiglu\",\"norm\":\"rmsnorm\",\"tied_embeddings\":true}";
  const int micro_batch = tokens / kSeq;
  return config_json(model, "{\"preset\":\"dgx-b200\",\"nodes\":1,\"gpus_per_node\":1}", micro_batch,
                     "{\"dp\":1,\"micro_batch\":" + std::to_string(micro_batch) + "}");
}

// The work of rank 0's first MLP activation task in this phase.
const ComputeWork& act_work(const CompiledModel& c, Phase phase) {
  const ComputeWork* work = compute_work_ending(c, phase, ".act");
  REQUIRE_MESSAGE(work != nullptr, "no SwiGLU activation task");
  return *work;
}

// Modelled forward + input-gradient time of the SwiGLU op over `tokens` rows, milliseconds.
double modelled_swiglu_full_ms(int tokens) {
  const std::string json = swiglu_config(tokens);
  const CompiledModel c = compile_text(json);
  const CostModel cost = cost_model_of(parse_config(json));
  const ComputeWork& fwd = act_work(c, Phase::Forward);
  const ComputeWork& bwd = act_work(c, Phase::BackwardInput);
  // The bytes Liger's kernels move (bf16): forward reads gate and up, writes c (6 B per output
  // element); backward reads dc, gate and up, writes their gradients (10 B).
  const double elements = static_cast<double>(tokens) * kFfn;
  CHECK(fwd.bytes == doctest::Approx(6 * elements));
  CHECK(bwd.bytes == doctest::Approx(10 * elements));
  return (cost.compute_time_s(fwd) + cost.compute_time_s(bwd)) * kMsPerS;
}

}  // namespace

TEST_CASE("memory-bound: a fused SwiGLU forward and backward on a B200 takes its measured time") {
  const double at_8k = modelled_swiglu_full_ms(kSwiglu8k.tokens);
  CHECK(at_8k == proteus::test::approx(kSwiglu8k.full_ms).epsilon(0.05));
  // Doubling the tokens adds 0.94 GB of traffic: the sustained bandwidth alone.
  const double at_4k = modelled_swiglu_full_ms(kSwiglu4k.tokens);
  const double measured_ms = kSwiglu8k.full_ms - kSwiglu4k.full_ms;
  CHECK(at_8k - at_4k == proteus::test::approx(measured_ms).epsilon(0.03));
}
