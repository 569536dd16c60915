// When and at what cost the frameworks make the FP8 copies of the weights their FP8 linears
// read (docs/frameworks/fp8.md "FP8 weight casts"). Private to the compiler.
//
// - Transformer Engine (frameworks megatron, deepspeed) casts a weight in the forward of the
//   iteration's first micro-batch and keeps the FP8 copy and its transpose for every later one
//   (`is_first_microbatch`: TE's `Linear` / `LayerNormLinear` / `LayerNormMLP` cache their FP8
//   weight workspaces; Megatron-Core's forward_step calls `set_is_first_microbatch` on the first
//   micro-batch of each iteration).
// - torchao's Float8Linear (framework fsdp) keeps no copy: each forward casts the weight again
//   (`hp_tensor_to_float8_dynamic` of the weight in `Float8Linear.forward`), recompute
//   included.
// - Under ZeRO-3 every forward gathers a new 16-bit copy, cast again, whatever the framework
//   (assumed: no FP8 copy is kept across micro-batches there, which would hold every layer's
//   FP8 weights on every rank).
// - With strategy.fp8_param_gather the weights are held and gathered as FP8: each rank casts its
//   shard after the optimizer step (IterationTail), nothing here.
// The cast reads the 16-bit weight and writes the FP8 copy and its transpose (Hopper's FP8
// GEMMs are TN-only); current scaling reads it once more for its amax; MXFP8 writes row- and
// column-wise copies with their block scales: fp8_cast_bytes(recipe, false, false).local.
#pragma once
#include <cstdint>
#include <vector>

#include "op_plan.h"
#include "proteus/strategy_tree.h"

namespace proteus {

enum class Fp8WeightCast : uint8_t {
  Never,
  FirstForward,  // in the forward of the first micro-batch the rank runs through the op
  EveryForward,  // in every forward of the op, its recompute included
};

struct Fp8WeightCastPlan {
  std::vector<Fp8WeightCast> when;  // per op
  std::vector<double> bytes;        // per op: HBM traffic of one cast of its FP8 weights, per rank
  int kernels = 1;                  // per cast: the fused cast-transpose, after an amax kernel
};

Fp8WeightCastPlan plan_fp8_weight_casts(const std::vector<OpPlan>& plans, const StrategyTree& tree,
                                        Fp8Recipe recipe);

}  // namespace proteus
