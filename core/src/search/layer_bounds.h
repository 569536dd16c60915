// Bounds of a candidate from the 1F1B compile of the same mesh, micro-batch, sequence
// parallelism and recompute (docs/search.md, "Layer bounds"). Every generated schedule runs
// the same per-layer tasks as 1F1B; only which layers share a stage and the order of the
// passes change. So one 1F1B compile, taken apart layer by layer, bounds every virtual-stage
// count, the V of zb-v and every ZeRO stage without compiling each: a tier between the
// analytic bound and the candidate's own compiled bound, which still decides before it is
// simulated.
#pragma once
#include <vector>

#include "proteus/config.h"
#include "proteus/exec_graph.h"

namespace proteus::search_detail {

struct ModelProfile;
struct Bounds;

// Micro-batch 0 on one GPU of a stage, in cost-model seconds (each task with the idle time
// collectives force between two of its own tasks) and activation bytes: forward (F), backward
// without the weight gradient (B: recompute and input gradient) and weight gradient (W).
struct PassCosts {
  double forward_s = 0, backward_s = 0, weight_s = 0;
  double activation_bytes = 0;      // what the forward keeps (net)
  double weight_release_bytes = 0;  // what the W tasks free: held from the B pass until them
  double chain_s = 0;               // forward and input-gradient tasks alone: no recompute, W or gaps
};

// One transformer layer. A gap whose previous task is the neighbouring layer (the one before
// in a forward pass, the one after in a backward pass) is kept apart: it counts only when
// both layers share a chunk.
struct LayerCosts : PassCosts {
  double forward_join_s = 0, backward_join_s = 0, weight_join_s = 0;
};

struct LayerProfile {
  std::vector<LayerCosts> layers;  // by layer; empty: the model has none (the tier is skipped)
  // Per stage, tasks outside every layer (embedding on the first stage; final norm, output
  // layer and loss on the last), without the gaps that join them to a layer.
  std::vector<PassCosts> other;
};

// Collects a LayerProfile from one compile, task by task in each stage's compute order.
class LayerProfileBuilder {
 public:
  LayerProfileBuilder(const ExecGraph& g, const OpGraph& graph, int stages);
  // A compute task of the stage's queue with its cost-model time, the idle time its
  // collectives force after `prev` (the previous compute task, -1 for none) and its net
  // activation bytes.
  void add(int stage, int task, int prev, double time_s, double gap_s, double activation_bytes);
  LayerProfile take() { return std::move(profile_); }

 private:
  const ExecGraph& g_;
  std::vector<int> layer_of_label_;  // -1: not a layer's op
  LayerProfile profile_;
  int layer_of(int task) const;
};

// Lower bounds of a candidate with a generated schedule from the LayerProfile of its 1F1B
// compile and the model's per-layer parameters: per stage, its chunks' tasks for every
// micro-batch, the head and tail terms, and the static memory of its parameters plus the
// activations its schedule holds. Zero bounds where the tier does not apply.
Bounds layer_bounds(const LayerProfile& layers, const ModelProfile& model, const Config& candidate);

}  // namespace proteus::search_detail
