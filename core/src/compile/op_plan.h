// Per-op view of the strategy: which op dim each mesh axis splits, the layouts of every
// tensor the op touches, and the work one GPU does. Identical on every rank of a stage, so
// computed once per op and shared by all simulated ranks and micro-batches.
#pragma once
#include <array>
#include <vector>

#include "proteus/compile.h"
#include "proteus/layout.h"

namespace proteus {

struct WeightPlan {
  int tensor = -1;
  Layout storage;                     // how the optimizer keeps it (ZeRO-3 shards data axes)
  Layout use;                         // what the op needs (all-gather storage -> use under ZeRO-3)
  Layout grad;                        // what the weight-gradient kernel produces (Partial over data axes)
  Layout grad_target;                 // where the gradient must end (storage, or sharded under ZeRO >= 2)
  double local_params = 0;            // elements held per rank in `use`
  bool fp8_copy = false;              // FP8 training: TE keeps an FP8 copy (+ transpose) for its FP8 GEMMs
  AxisMask data_axes_replicated = 0;  // data axes (dp, ep, cp) it is replicated over
  int zero = 0;                       // ZeRO stage of the module that uses it (strategy tree)
};

// Bytes per element a weight's all-gather moves (ZeRO-1/2 after the step, ZeRO-3 before each
// use): the 16-bit weight, or its FP8 copy when strategy.fp8_param_gather gathers FP8 weights
// (docs/frameworks/fp8.md "FP8 parameter all-gather").
inline double gather_bytes_per_element(const WeightPlan& w, double weight_bytes, bool fp8_param_gather) {
  return fp8_param_gather && w.fp8_copy ? 1.0 : weight_bytes;
}

struct OpPlan {
  int op = -1;
  int chunk = 0;
  Recompute recompute = Recompute::None;
  // The op's selective recompute modules this run recomputes: Op::recompute_modules within
  // strategy.recompute_modules under selective recompute, else none.
  RecomputeModules recompute_modules = 0;
  // TorchTitan's op-level checkpointing (torch_op_sac.h): the op is in its block's
  // full-recompute segment, and this share of its output is saved in the forward instead of
  // made again (1: the replay serves it from the cache).
  double sac_saved_share = 0;
  bool op_sac = false;  // under that policy (its reduce-scatters' results are saved too)
  std::array<int, kNumMeshAxes> axis_dim{-1, -1, -1, -1, -1};
  std::vector<Layout> input_required;  // forward: layout each input must have
  // How each input is kept for the backward: what arrived before an all-gather (Megatron keeps
  // the sequence-parallel shard of a linear's input and gathers it again in the backward).
  std::vector<Layout> input_saved;
  std::vector<Layout> input_grad;  // backward: layout of d(input) this op produces
  Layout output;                   // forward: layout of the output
  Layout output_grad_required;     // backward: layout of d(output) this op needs
  std::vector<WeightPlan> weights;
  ComputeWork fwd, bwd_input, bwd_weight;
  double saved_input_bytes = 0;  // per rank, inputs first saved by this op (deduplicated)
  double saved_extra_bytes = 0;  // per rank, saved_extra (what selective recompute drops)
  // Per rank, the repeated K/V SDPA saves beyond the grouped ones (TorchTitan's repeat_kv): made
  // by a copy op-level checkpointing does not save, so a checkpointed block makes it again.
  double repeat_kv_saved_bytes = 0;
  // Per rank, the HBM bytes of that copy (part of fwd.side_bytes): an op-level SAC replay that
  // serves SDPA from its cache runs the copy again, since the backward needs SDPA's inputs.
  double repeat_kv_copy_bytes = 0;
  // Per rank, memory held only while the op's forward (backward) runs, besides what it keeps
  // after it (the forward's includes the saved tensors, allocated as it starts): the language
  // model's cross-entropy (cross_entropy_memory.h).
  double fwd_transient_bytes = 0;
  double bwd_transient_bytes = 0;
  // The K/V input as the attention kernel reads it: repeated this many times (TorchTitan's
  // repeat_kv; 1 otherwise). PyTorch's context parallelism gathers and rotates the repeated K/V.
  double kv_repeats = 1;
  std::vector<char> first_saves_input;  // per input: counted in saved_input_bytes here
  // FP8 amax reductions (docs/frameworks/fp8.md "FP8 amax reduction"). Delayed scaling: the GEMMs
  // whose amaxes this op's Transformer Engine module registers in TE's global amax buffer (set
  // on the module's first op, the one that casts its input; experts per rank for a grouped
  // linear). Current scaling with sequence parallelism: the amax of the input (column-parallel)
  // or of the output gradient (row-parallel) is all-reduced over tp before the cast.
  int fp8_amax_gemms = 0;
  // The GEMMs (weights, one amax each) of the TE module whose first op this is: set on the op
  // that casts the module's input; a grouped linear counts its local experts.
  int fp8_module_gemms = 0;
  bool fp8_amax_tp_fwd = false, fp8_amax_tp_bwd = false;
  // An FP8 linear (fp8_plan.h): bytes per element of the FP8 copy of input 0 that TE gathers
  // over tp (forward, and again for the weight gradient) and saves, and of its output
  // gradient's all-gather (row-parallel under sequence parallelism); 0 for other ops.
  double fp8_input_bytes_per_element = 0;
  double fp8_grad_bytes_per_element = 0;
  bool has_weights() const { return !weights.empty(); }
};

// Bytes of tensor t that moving input k of an op moves: the tensor's own, or its FP8 copy's
// for an FP8 linear's input (fp8_plan.h).
inline double input_move_bytes(const Tensor& t, const OpPlan& p, size_t k) {
  return k == 0 && p.fp8_input_bytes_per_element > 0
             ? static_cast<double>(t.elements()) * p.fp8_input_bytes_per_element
             : t.bytes();
}

// ... and of its output gradient's all-gather over tp (the FP8 copy for an FP8 linear).
inline double output_grad_gather_bytes(const Tensor& t, const OpPlan& p) {
  return p.fp8_grad_bytes_per_element > 0 ? static_cast<double>(t.elements()) * p.fp8_grad_bytes_per_element
                                          : t.bytes();
}

struct PlanContext {
  const OpGraph& graph;
  const StrategyTree& tree;
  const TrainingSpec& training;  // the precision recipe (FP8 casts, FP8 weight copies)
};

std::vector<OpPlan> plan_ops(const PlanContext& ctx);
double tensor_bytes_per_rank(const Tensor& t, const Layout& l, const Mesh& mesh);
// Indices of an attention's inputs indexed by its keys (the K/V, dim "seq_kv"); none elsewhere.
std::vector<size_t> kv_inputs(const Op& op);
// The layout an input of `required` layout is kept in for the backward (op_plan.cpp): with
// dtensor_tp false, the layout its producer hands over, from which the forward gathers it.
Layout saved_layout(const OpGraph& g, const std::vector<OpPlan>& plans, int tensor, const Layout& required,
                    const Mesh& mesh, bool dtensor_tp);
// Layout of a tensor as an op sees it: Shard where a mapped dim indexes it, Partial (outputs)
// or Replicate (inputs) where the mapped dim does not.
Layout layout_of_use(const TensorUse& use, const std::array<int, kNumMeshAxes>& axis_dim, const Mesh& mesh,
                     bool produced_here);
constexpr AxisMask kDataAxes = (1u << kAxisDp) | (1u << kAxisEp) | (1u << kAxisCp);

}  // namespace proteus
