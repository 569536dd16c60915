// Lower bounds on a candidate's peak memory and iteration time (docs/search.md derives each
// term). Two tiers: `analytic_bounds` from a per-layer profile of the model, microseconds per
// candidate; `compiled_bounds` from the compiler's own statistics and per-op costs of a
// one-micro-batch compile, milliseconds. Both must never exceed what the simulator reports
// (tests/test_search.cpp checks them on random candidates).
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>
#include "layer_bounds.h"
#include "proteus/config.h"
#include "proteus/exec_graph.h"
#include "proteus/schedule.h"
#include "proteus/topology.h"

namespace proteus::search_detail {

// Per pipeline unit (transformer layer, graph op), per sample: parameters and the FLOPs of
// compute-bound ops (GEMMs, attention, convolutions), the only ones whose time FLOPs bound.
struct ModelProfile {
  int units = 0;  // 0: the model has no layer sequence (CNN, DLRM): no per-stage terms
  std::vector<double> params;
  std::vector<double> fwd_flops, bwd_input_flops, bwd_weight_flops;
  // The forward FLOPs of the ops of each set of selective recompute modules (Op::
  // recompute_modules), run again when the strategy selects any of the set's modules.
  std::vector<std::vector<std::pair<RecomputeModules, double>>> selective_flops;
  // What TorchTitan's op-level checkpointing runs again (framework fsdp's selective recompute,
  // compile/torch_op_sac.h): each op's forward FLOPs less the share its policy saves.
  std::vector<double> torch_op_sac_flops;
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

// Pieces the bound tiers share (bounds.cpp, layer_bounds.cpp).
// How a schedule's passes run across stages, for the head and tail terms.
struct PipelineShape {
  bool head = false;             // stage s waits for micro-batch 0's forward on stages 0..s-1
  bool tail = false;             // the last backward of stage s passes stages s-1..0 after it
  bool tail_input_only = false;  // the tail is the input-gradient pass (W passes split off)
};
PipelineShape pipeline_shape(Schedule s);
// max over stages of head + work (+ tail), given per-chunk per-micro-batch times of the first
// pp chunks and the per-stage totals.
double pipeline_time(const PipelineShape& shape, int pp, const std::vector<double>& head_fwd,
                     const std::vector<double>& tail_bwd, const std::vector<double>& stage_total,
                     const std::vector<double>& stage_before_tail);
// At least one micro-batch's forward and input-gradient work over every chunk, in any schedule
// (bounds.cpp explains), given that work per chunk.
double critical_path_s(const std::vector<double>& chunk_forward_and_input_grad_s);
// Schedules that place chunk c on stage c % pp (Megatron's placement); others (the V of
// zb-v) place them differently, and their per-stage terms fall back to the stages' average.
bool megatron_placement(Schedule s);
// Static bytes per parameter under the candidate's precision, optimizer and ZeRO stage.
double bytes_per_param(const Config& c, double data_ranks);
// Parameters of the layers on each of pp stages, chunk c on stage chunk_stage[c].
std::vector<double> stage_params(const ModelProfile& profile, const std::vector<int>& chunk_stage, int pp);
// Each stage's order of passes under the candidate's (generated) schedule.
std::vector<std::vector<Pass>> stage_orders(const Config& c);
// The most activation memory a stage holds at the start of a backward pass, given its order of
// passes and what each of its local chunks keeps per micro-batch after its forward and
// (chunk_w_bytes, when given and the order has W passes) between its B and W passes.
double held_activation_bytes(const Config& c, const std::vector<Pass>& passes,
                             const std::vector<double>& chunk_bytes,
                             const std::vector<double>& chunk_w_bytes = {});
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
  // Micro-batch 0's compute alone, without the gaps its collectives force on the stream: what a
  // schedule that runs two micro-batches' passes together (DualPipe) surely pays.
  double per_mb_busy_s = 0, per_mb_no_w_busy_s = 0;
  // Micro-batch 0's forward and input-gradient compute alone (no recompute, no W, no gaps):
  // summed over the stages, the least time one micro-batch takes to pass the model forward and
  // back (critical_path_s).
  double chain_s = 0;
};
struct CompiledProfile {
  std::vector<StageProfile> stages;
  LayerProfile layers;  // the same tasks by layer (layer_bounds.h)
};
std::string compiled_profile_key(const StrategySpec& s);  // candidates that share a profile
CompiledProfile compile_profile(const Config& candidate, const Topology& topology);
Bounds bounds_from_profile(const CompiledProfile& profile, const Config& candidate);
Bounds compiled_bounds(const Config& candidate);  // both of the above

}  // namespace proteus::search_detail
