#include "fp8_amax.h"

namespace proteus {
namespace {

constexpr double kAmaxBytes = 4;               // one fp32 amax per FP8 tensor
constexpr double kForwardTensorsPerGemm = 3;   // TE _num_fp8_tensors_per_gemm["fwd"]
constexpr double kBackwardTensorsPerGemm = 2;  // ... ["bwd"]

// Megatron's get_amax_reduction_group(with_context_parallel=True, tp_only_amax_red): every
// rank of the stage (tp, cp and the data-parallel ranks, whose expert split ep is part of
// them), or with --tp-only-amax-red the tensor- and context-parallel ranks
// (_TENSOR_AND_CONTEXT_PARALLEL_GROUP, parallel_state.py).
AxisMask amax_group_axes(const Mesh& mesh, bool tp_only) {
  AxisMask axes = 0;
  const std::vector<MeshAxis> all = {kAxisDp, kAxisEp, kAxisCp, kAxisTp}, tp_cp = {kAxisCp, kAxisTp};
  for (MeshAxis a : tp_only ? tp_cp : all)
    if (mesh.size[a] > 1) axes |= axis_bit(a);
  return axes;
}

}  // namespace

Fp8AmaxPlan plan_fp8_amax(const OpGraph& g, const std::vector<OpPlan>& plans, const StrategyTree& tree,
                          const OpIndex& index) {
  Fp8AmaxPlan out;
  const size_t chunks = index.chunk_ops.size();
  out.forward_exit_op.assign(chunks, -1);
  out.backward_op.assign(chunks, -1);
  out.forward_bytes.assign(chunks, 0);
  out.backward_bytes.assign(chunks, 0);
  std::vector<double> gemms_of_chunk(chunks, 0);
  for (size_t c = 0; c < chunks; ++c) {
    for (int op : index.chunk_ops[c]) {
      const int gemms = plans[static_cast<size_t>(op)].fp8_amax_gemms;
      gemms_of_chunk[c] += gemms;
      if (gemms > 0 && out.backward_op[c] < 0) out.backward_op[c] = op;
      if (g.modules[g.ops[static_cast<size_t>(op)].module].layer >= 0) out.forward_exit_op[c] = op;
    }
    if (gemms_of_chunk[c] == 0) out.forward_exit_op[c] = -1;
  }
  // The buffer holds every module of the rank: sum over the chunks of the same stage.
  bool any = false;
  for (size_t c = 0; c < chunks; ++c) {
    double stage_gemms = 0;
    for (size_t o = 0; o < chunks; ++o)
      if (tree.stage_of_chunk(static_cast<int>(o)) == tree.stage_of_chunk(static_cast<int>(c)))
        stage_gemms += gemms_of_chunk[o];
    out.forward_bytes[c] = stage_gemms * kForwardTensorsPerGemm * kAmaxBytes;
    out.backward_bytes[c] = stage_gemms * kBackwardTensorsPerGemm * kAmaxBytes;
    any = any || gemms_of_chunk[c] > 0;
  }
  if (any) out.axes = amax_group_axes(tree.mesh, tree.root().tp_only_amax_red);
  return out;
}

}  // namespace proteus
