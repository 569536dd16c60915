// How Transformer Engine runs a linear in FP8 (docs/frameworks/fp8.md "FP8", "FP8 casts,
// gathers and saved inputs"): which GEMMs run at the FP8 peak, the memory-bound cast and
// transpose kernels around them, the FP8 tensors its sequence-parallel all-gathers move and
// the FP8 copy of the input it saves for the weight gradient.
#pragma once
#include <vector>

#include "op_plan.h"

namespace proteus {

// Bytes per element of the FP8 data TE gathers and keeps: 1, plus one E8M0 scale per 32
// values under MXFP8.
double fp8_element_bytes(Fp8Recipe recipe);

// HBM bytes per element of making the FP8 operands of one 16-bit tensor (an input or an output
// gradient) for Hopper's TN-only FP8 GEMMs: `local` bytes per element of the tensor as held
// before a tensor-parallel all-gather (all of it without one), `gathered` per element of the
// gathered tensor, and what its producer (a norm fused with the cast) writes less.
struct Fp8CastBytes {
  double local = 0;
  double gathered = 0;
  double producer_saved = 0;
};
Fp8CastBytes fp8_cast_bytes(Fp8Recipe recipe, bool from_fused_norm, bool gathered);

// Plans op `i` as an FP8 linear when it is one (a weighted GEMM inside a transformer layer; the
// output layer and the MoE router stay 16-bit): FP8 peak, cast/transpose side kernels, FP8
// gathers and saved input, the amax reductions' inputs, FP8 weight copies. `plans` holds the
// plans of ops before `i` (a fused norm's write shrinks); `cast` marks the tensors already
// cast (TE's fused QKV LayerNormLinear casts its input once, where the op graph has separate
// q and kv projections reading it); `fp8_only` marks tensors only FP8 linears read.
void apply_fp8_recipe(const PlanContext& ctx, size_t i, const std::vector<char>& fp8_only,
                      std::vector<OpPlan>* plans, std::vector<char>* cast);

// Whether op is a TE linear that runs in FP8 under an FP8 recipe.
bool is_fp8_linear(const OpGraph& g, const Op& op);

// Per tensor: 1 when every op reading it is an FP8 linear (a norm feeding only those is TE's
// LayerNormLinear, whose norm writes FP8 directly).
std::vector<char> tensors_read_only_by_fp8_linears(const OpGraph& g);

// Bytes per rank an FP8 linear keeps of its saved input `bytes16` (the 16-bit size per rank):
// TE saves the FP8 copy the weight gradient reads; the 16-bit tensor stays too when its
// producer's backward reads it (flash attention's output) and the producer is not recomputed.
double fp8_saved_input_bytes(const OpGraph& g, const std::vector<OpPlan>& plans, const Op& op,
                             const OpPlan& p, double bytes16);

}  // namespace proteus
