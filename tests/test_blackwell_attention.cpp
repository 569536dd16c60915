// The attention level of the Blackwell presets (dgx-b200, gb200-nvl72, gb300-nvl72) against the
// measurement it comes from (docs/fidelity/attention.md "Attention on Blackwell"): one cuDNN build (9.27.0)
// timed by NVIDIA's cudnn-frontend prefill sweep on H200 and on each Blackwell GPU, BF16, causal,
// 64 query / 8 KV heads, head dimension 128, batch 1 (benchmark/attention_inference/results/
// prefill_sweep/<gpu>/*.csv). The H100-class level stays the reference; a Blackwell GPU must run
// the same attention op faster by the measured ratio of the two GPUs' rates.
#include <doctest/doctest.h>

#include <string>
#include "attention_work.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

// The sweep's causal forward rates, TFLOP/s (FLOPs on half the square), at 8K and 16K tokens.
struct Measured {
  const char* preset;
  double at_8k_TFLOPS, at_16k_TFLOPS;
};
constexpr Measured kH200{"dgx-h200", 646.761, 672.055};
constexpr Measured kBlackwell[] = {
    {"dgx-b200", 1401.241, 1488.046},
    {"gb200-nvl72", 1467.734, 1604.732},
    {"gb300-nvl72", 1858.988, 1961.034},
};

CostModel cudnn_cost(const std::string& cluster) {
  const std::string text = R"({"model": {"preset": "llama3-8b", "seq_len": 16384}, "cluster": {"preset": ")" +
                           cluster + R"(", "nodes": 1, "gpus_per_node": 8},
      "training": {"global_batch": 8, "seq_len": 16384, "precision": "bf16"},
      "strategy": {"dp": 8, "framework": "megatron", "zero": 1}})";
  CostModel cost = cost_model_of(parse_config(text));
  cost.attention_kernel = AttentionKernel::Cudnn;  // TE's FusedAttention, the kernel measured
  return cost;
}

// One causal forward attention op, 64 heads of seq x seq x 128.
ComputeWork attention_work(int64_t seq, bool backward = false) {
  return test::attention_work(seq, 128, backward, 64);
}

double speedup_over_h200(const std::string& preset, int64_t seq) {
  const ComputeWork w = attention_work(seq);
  return cudnn_cost(kH200.preset).compute_time_s(w) / cudnn_cost(preset).compute_time_s(w);
}

}  // namespace

TEST_CASE("Blackwell attention: faster than H200 by cuDNN's measured ratio at 16K") {
  for (const Measured& gpu : kBlackwell) {
    CAPTURE(gpu.preset);
    // The preset's level is rounded to three digits: within 0.3% of the measured ratio.
    CHECK(speedup_over_h200(gpu.preset, 16384) ==
          proteus::test::approx(gpu.at_16k_TFLOPS / kH200.at_16k_TFLOPS).epsilon(0.003));
  }
}

TEST_CASE("Blackwell attention: by key length, within 3% of the measured ratio at 8K") {
  // Each GPU falls off below 16K by its own measured curve (level_seq): Blackwell by the sweep's,
  // H200 by the FlashAttention-3 paper's cuDNN 9.1.1 (529/539 at 8K, where the sweep's H200 has
  // 646.8/672.1): the modelled 8K ratio is 2% under the sweep's (it was 1.5-5% over with one
  // level at every length).
  for (const Measured& gpu : kBlackwell) {
    CAPTURE(gpu.preset);
    const double measured = gpu.at_8k_TFLOPS / kH200.at_8k_TFLOPS;
    CHECK(speedup_over_h200(gpu.preset, 8192) == proteus::test::approx(measured).epsilon(0.03));
  }
}

TEST_CASE("Blackwell attention: fewer keys reach the measured fraction of the 16K level") {
  // B200's sweep: 915.0, 1201.5, 1401.241 TFLOP/s at 2K, 4K, 8K against 1488.046 at 16K; the same
  // FLOPs take 16K's rate over each.
  const CostModel b200 = cudnn_cost("dgx-b200");
  const auto per_flop_s = [&](int64_t seq) {
    const ComputeWork w = attention_work(seq);
    return b200.compute_time_s(w) / w.flops;
  };
  const double level = per_flop_s(16384);
  CHECK(per_flop_s(2048) / level == proteus::test::approx(1488.046 / 915.0).epsilon(1e-9));
  CHECK(per_flop_s(4096) / level == proteus::test::approx(1488.046 / 1201.5).epsilon(1e-9));
  CHECK(per_flop_s(8192) / level == proteus::test::approx(1488.046 / 1401.241).epsilon(1e-9));
  // The backward, not in the sweep, follows the causal forward's curve.
  const ComputeWork backward = attention_work(2048, true);
  const ComputeWork backward_16k = attention_work(16384, true);
  CHECK((b200.compute_time_s(backward) / backward.flops) /
            (b200.compute_time_s(backward_16k) / backward_16k.flops) ==
        proteus::test::approx(1488.046 / 915.0).epsilon(1e-9));
}

TEST_CASE("Blackwell attention: GB300's faster exponential units show, B200 and GB200 stay close") {
  // Measured at 16K: GB300 1961 against GB200 1605 TFLOP/s on the same peak (2500 dense BF16).
  CHECK(speedup_over_h200("gb300-nvl72", 16384) / speedup_over_h200("gb200-nvl72", 16384) ==
        proteus::test::approx(1961.034 / 1604.732).epsilon(0.003));
}
