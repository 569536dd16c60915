// Lower bounds on a candidate's peak memory and iteration time (docs/search.md derives each
// term). Two tiers: `analytic_bounds` from a per-layer profile of the model, microseconds per
// candidate; `compiled_bounds` from the compiler's own statistics and per-op costs of a
// one-micro-batch compile, milliseconds. Both must never exceed what the simulator reports
// (tests/test_search.cpp checks them on random candidates).
#pragma once
#include <array>
#include <string>
#include <vector>
#include "proteus/config.h"
#include "proteus/exec_graph.h"
#include "proteus/topology.h"

namespace proteus::search_detail {

// Per pipeline unit (transformer layer, graph op), per sample: parameters and the FLOPs of
// compute-bound ops (GEMMs, attention, convolutions), the only ones whose time FLOPs bound.
struct ModelProfile {
  int units = 0;  // 0: the model has no layer sequence (CNN, DLRM): no per-stage terms
  std::vector<double> params;
  std::vector<double> fwd_flops, bwd_input_flops, bwd_weight_flops, selective_flops;
  double total_compute_flops = 0;  // per sample, fwd + bwd, every op (models without units)
};

ModelProfile profile_model(const Config& base);

struct Bounds {
  double memory_bytes = 0;  // peak memory of the most loaded GPU
  double time_s = 0;        // iteration time
};

// The fastest FLOP/s any compute-bound kernel reaches in the cost model (peak times the best
// efficiency, or the fastest point of a measured GEMM table): compute time is never below
// FLOPs / this. With measured op times (measured_us) nothing bounds it: 0 (no time bound).
double best_compute_rate(const GpuSpec& gpu, Precision precision);

Bounds analytic_bounds(const ModelProfile& profile, const Config& candidate);
// What a one-micro-batch compile of a candidate tells about every candidate that differs from
// it only in ZeRO stage or (non-interleaved) schedule: per stage, the static memory at ZeRO 0,
// the activations one micro-batch keeps, and cost-model seconds of compute per micro-batch
// (with and without weight-gradient tasks; each task with the idle time its collectives
// force before it, at their shortest), once per iteration, and of the first chunk's
// forward (head) and backward (tail). Memory: the static bytes plus the activations the
// candidate's schedule holds at the start of a backward pass (stage_schedule's order).
struct StageProfile {
  std::array<double, kNumMemCategories> static_bytes{};
  double activation_bytes = 0;
  std::vector<double> chunk_activation_bytes;  // per local chunk, micro-batch 0
  double per_mb_s = 0, per_mb_no_w_s = 0, once_s = 0, head_s = 0, tail_s = 0, tail_no_w_s = 0;
};
struct CompiledProfile {
  std::vector<StageProfile> stages;
};
std::string compiled_profile_key(const StrategySpec& s);  // candidates that share a profile
CompiledProfile compile_profile(const Config& candidate, const Topology& topology);
Bounds bounds_from_profile(const CompiledProfile& profile, const Config& candidate);
Bounds compiled_bounds(const Config& candidate);  // both of the above

}  // namespace proteus::search_detail
