// The attention level of the Blackwell presets (dgx-b200, gb200-nvl72, gb300-nvl72) against the
// measurement it comes from (docs/fidelity.md "Attention on Blackwell"): one cuDNN build (9.27.0)
// timed by NVIDIA's cudnn-frontend prefill sweep on H200 and on each Blackwell GPU, BF16, causal,
// 64 query / 8 KV heads, head dimension 128, batch 1 (benchmark/attention_inference/results/
// prefill_sweep/<gpu>/*.csv). The H100-class level stays the reference; a Blackwell GPU must run
// the same attention op faster by the measured ratio of the two GPUs' rates.
#include <doctest/doctest.h>

#include <string>
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/simulation.h"

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

// One causal forward attention op, 64 heads of seq x seq x 128, compute-bound (no bytes, no launch).
ComputeWork attention_work(int64_t seq) {
  ComputeWork w;
  w.op_kind = OpKind::Attention;
  w.gemm_m = w.gemm_n = seq;
  w.gemm_k = 128;
  w.gemm_batch = 64;
  w.kernels = 0;
  w.flops = 4.0 * static_cast<double>(seq * seq * 128 * 64);
  return w;
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
          doctest::Approx(gpu.at_16k_TFLOPS / kH200.at_16k_TFLOPS).epsilon(0.003));
  }
}

TEST_CASE("Blackwell attention: the one level is within 6% of the measured ratio at 8K") {
  // One scalar level, set by the 16K ratio: 1.5% (GB300) to 5% (GB200) above the 8K ratio measured.
  for (const Measured& gpu : kBlackwell) {
    CAPTURE(gpu.preset);
    const double measured = gpu.at_8k_TFLOPS / kH200.at_8k_TFLOPS;
    CHECK(speedup_over_h200(gpu.preset, 8192) >= measured);
    CHECK(speedup_over_h200(gpu.preset, 8192) == doctest::Approx(measured).epsilon(0.06));
  }
}

TEST_CASE("Blackwell attention: GB300's faster exponential units show, B200 and GB200 stay close") {
  // Measured at 16K: GB300 1961 against GB200 1605 TFLOP/s on the same peak (2500 dense BF16).
  CHECK(speedup_over_h200("gb300-nvl72", 16384) / speedup_over_h200("gb200-nvl72", 16384) ==
        doctest::Approx(1961.034 / 1604.732).epsilon(0.003));
}
