// Transformer Engine's FP8 linears (docs/frameworks/fp8.md "FP8 casts, gathers and saved inputs"),
// read from TE's code:
//  * A norm feeding only FP8 linears is inside TE's LayerNormLinear: under delayed scaling the
//    norm kernel writes the FP8 output itself (pytorch/csrc/extensions/normalization.cpp
//    layernorm_fwd / rmsnorm_fwd: "Always used fused kernel for FP8 delayed scaling"), 1 byte
//    per element instead of 2 and no cast kernel. Its transpose (the column-wise copy the
//    weight gradient reads) is a separate nvte_transpose when needed (common/normalization
//    *_api.cpp, "Compute FP8 transpose if required"). Current scaling runs the norm unfused,
//    the norm computing the amax (create_hp_tensor_with_amax), then quantize_with_amax.
//  * Under sequence parallelism the input is cast before the all-gather and gathered in FP8,
//    row-wise only ("All-gather is not supported with FP8 column-wise data":
//    layernorm_linear.py / linear.py forward, gather_along_first_dim(..., quantizer=...)); the
//    local FP8 shard is what is saved, gathered again in FP8 in the backward and transposed
//    there for the weight gradient (TE 1.x: ln_out is uint8, gathered, then
//    tex.fp8_transpose(ln_out_total) before the wgrad GEMM).
//  * A row-parallel linear's output gradient under sequence parallelism is cast on the local
//    shard, all-gathered in FP8 and transposed after the gather (base.py
//    grad_output_preprocess: "FP8 case with gather: unfused bgrad, cast, transpose for
//    efficient gather"); without the gather, one fused cast_transpose.
//  * MXFP8 quantizes row- and column-wise before the gather (block scales cannot be made
//    after it) and gathers row-wise data with its scales forward, column-wise backward.
#include "fp8_plan.h"

#include "proteus/op_graph.h"

namespace proteus {

double fp8_element_bytes(Fp8Recipe recipe) { return recipe == Fp8Recipe::Mxfp8 ? 1 + 1.0 / 32 : 1; }

// Per element: reading the 16-bit tensor costs 2, writing an FP8 copy 1, reading an FP8 copy 1.
Fp8CastBytes fp8_cast_bytes(Fp8Recipe recipe, bool from_fused_norm, bool gathered) {
  Fp8CastBytes c;
  if (recipe == Fp8Recipe::Mxfp8) {
    c.local = 2 + 1 + 1 + 2.0 / 32;  // row- and column-wise copies, one E8M0 scale per 32 each
    return c;
  }
  const bool fused = from_fused_norm && recipe == Fp8Recipe::Delayed;
  if (fused) c.producer_saved = 1;  // the norm writes 1 byte instead of 2
  // Current scaling reads the tensor once more for its amax, unless the norm computed it.
  if (recipe == Fp8Recipe::Current && !from_fused_norm) c.local += 2;
  if (!fused) c.local += 2 + 1;  // the row-wise cast: read 16-bit, write FP8
  if (gathered) {
    c.gathered = 1 + 1;  // transpose of the gathered FP8 tensor: read, write
  } else {
    c.local += fused ? 1 + 1 : 1;  // nvte_transpose after the norm, or cast_transpose's 2nd output
  }
  return c;
}

bool is_fp8_linear(const OpGraph& g, const Op& op) {
  return op.kind == OpKind::Matmul && !op.weights.empty() && !op.inputs.empty() &&
         g.modules[op.module].layer >= 0;
}

std::vector<char> tensors_read_only_by_fp8_linears(const OpGraph& g) {
  std::vector<char> only(g.tensors.size(), 1);
  for (const Op& op : g.ops) {
    const bool fp8 = is_fp8_linear(g, op);
    for (size_t k = 0; k < op.inputs.size(); ++k)
      if (!fp8 || k > 0) only[static_cast<size_t>(op.inputs[k].tensor)] = 0;
  }
  return only;
}

namespace {

// Elements of a tensor per rank in layout l.
double elements_per_rank(const Tensor& t, const Layout& l, const Mesh& mesh) {
  return static_cast<double>(t.elements()) / l.shard_factor(mesh);
}

// The FP8 cast of input 0 (once per tensor) and the FP8 gathers and saved copy.
void plan_input_cast(const PlanContext& ctx, size_t i, const std::vector<char>& fp8_only,
                     std::vector<OpPlan>* plans, std::vector<char>* cast) {
  const OpGraph& g = ctx.graph;
  const Op& op = g.ops[i];
  OpPlan& p = (*plans)[i];
  const Mesh& mesh = ctx.tree.mesh;
  const Fp8Recipe recipe = ctx.training.fp8_recipe;
  const int t = op.inputs.front().tensor;
  p.fp8_input_bytes_per_element = fp8_element_bytes(recipe);
  char& input_cast = (*cast)[static_cast<size_t>(t)];
  if (input_cast) return;
  input_cast = 1;
  const Tensor& x = g.tensors[static_cast<size_t>(t)];
  const int prod = x.producer;
  const bool from_norm =
      prod >= 0 && g.ops[static_cast<size_t>(prod)].kind == OpKind::Norm && fp8_only[static_cast<size_t>(t)];
  // The cast runs on the layout the producer hands over (the sequence shard a gather over tp
  // starts from), whether the backward keeps that shard (TE) or the gathered FP8 tensor
  // (torchao's Float8ColwiseParallel under DTensor, dtensor_tp).
  const Layout shard = saved_layout(g, *plans, t, p.input_required[0], mesh, false);
  const bool gathered = shard.placement[kAxisTp] != p.input_required[0].placement[kAxisTp];
  const Fp8CastBytes c = fp8_cast_bytes(recipe, from_norm, gathered);
  const double local = elements_per_rank(x, shard, mesh);
  const double used = elements_per_rank(x, p.input_required[0], mesh);
  p.fwd.side_bytes = c.local * local;
  // With the gather, the transpose waits for the backward's re-gather (the weight gradient).
  p.bwd_weight.side_bytes = c.gathered * used;
  if (c.producer_saved > 0) (*plans)[static_cast<size_t>(prod)].fwd.bytes -= c.producer_saved * local;
  p.fp8_module_gemms = static_cast<int>(p.fwd.gemm_batch);
  if (recipe == Fp8Recipe::Delayed) p.fp8_amax_gemms = p.fp8_module_gemms;
  // TE Linear._customize_quantizers_float8_current_scaling: sequence_parallel and column mode
  // (the input arrives as the sequence shard and is gathered) -> input amax reduced over tp.
  p.fp8_amax_tp_fwd = recipe == Fp8Recipe::Current && gathered;
}

// The output gradient's cast before the data-gradient GEMM: on the local shard and gathered in
// FP8 for a row-parallel linear under sequence parallelism, else one cast_transpose.
void plan_output_grad_cast(const PlanContext& ctx, OpPlan* p) {
  const Mesh& mesh = ctx.tree.mesh;
  const Fp8Recipe recipe = ctx.training.fp8_recipe;
  const bool gathered =
      mesh.size[kAxisTp] > 1 && ctx.tree.sequence_parallel && p->output.placement[kAxisTp] == kPartial;
  // ... sequence_parallel and row mode (the output is reduce-scattered, its gradient gathered).
  p->fp8_amax_tp_bwd = recipe == Fp8Recipe::Current && gathered;
  p->fp8_grad_bytes_per_element = fp8_element_bytes(recipe);
  const Fp8CastBytes c = fp8_cast_bytes(recipe, false, gathered);
  const double used = static_cast<double>(p->fwd.gemm_m) * static_cast<double>(p->fwd.gemm_n) *
                      static_cast<double>(p->fwd.gemm_batch);
  const double local = gathered ? used / mesh.size[kAxisTp] : used;
  p->bwd_input.side_bytes = c.local * local + c.gathered * used;
}

}  // namespace

void apply_fp8_recipe(const PlanContext& ctx, size_t i, const std::vector<char>& fp8_only,
                      std::vector<OpPlan>* plans, std::vector<char>* cast) {
  const Op& op = ctx.graph.ops[i];
  OpPlan& p = (*plans)[i];
  const bool gemm = op.kind == OpKind::Matmul || op.kind == OpKind::Router;
  if (!gemm || p.weights.empty() || op.inputs.empty()) return;
  if (!is_fp8_linear(ctx.graph, op)) {
    p.fwd.high_precision = p.bwd_input.high_precision = p.bwd_weight.high_precision = true;
    return;
  }
  plan_input_cast(ctx, i, fp8_only, plans, cast);
  plan_output_grad_cast(ctx, &p);
  // TE casts the weight matrices; a bias is added in 16-bit (by the GEMM's epilogue).
  for (WeightPlan& w : p.weights)
    w.fp8_copy = ctx.graph.tensors[static_cast<size_t>(w.tensor)].shape.size() >= 2;
}

double fp8_saved_input_bytes(const OpGraph& g, const std::vector<OpPlan>& plans, const Op& op,
                             const OpPlan& p, double bytes16) {
  const Tensor& x = g.tensors[static_cast<size_t>(op.inputs.front().tensor)];
  const double fp8 = bytes16 / x.bytes_per_element * p.fp8_input_bytes_per_element;
  const int prod = x.producer;
  if (prod < 0) return fp8;
  const Op& made_by = g.ops[static_cast<size_t>(prod)];
  const OpPlan& pp = plans[static_cast<size_t>(prod)];
  const bool recomputed = (pp.recompute_modules & recompute_bit(RecomputeModule::CoreAttn)) != 0;
  return made_by.backward_reads_output && !recomputed ? bytes16 + fp8 : fp8;
}

}  // namespace proteus
