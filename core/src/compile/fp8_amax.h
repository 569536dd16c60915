// Where Transformer Engine's delayed-scaling amax reduction runs in a pipeline pass, and how
// big it is (docs/frameworks/fp8.md "FP8 amax reduction").
//
// Megatron-Core wraps a model chunk's transformer layers in one fp8_autocast when the recipe is
// delayed (TransformerBlock.forward: use_outer_fp8_context), with
// fp8_group = parallel_state.get_amax_reduction_group(with_context_parallel=True): the tp x cp x
// dp ranks of one pipeline stage. At the autocast's exit TE calls
// FP8GlobalStateManager.reduce_and_update_fp8_tensors(forward=True): one all-reduce (MAX,
// async_op=False, so the compute stream waits) of the concatenated amax_history[0] of every FP8
// module registered under that recipe and group — every module of the rank, all its model
// chunks — 3 fp32 per GEMM (input, weight, output). The backward reduction (forward=False: 2
// fp32 per GEMM, grad_output and grad_input) runs at the end of the backward of the region's
// first FP8 module (ctx.reduce_and_update_bwd_fp8_tensors = is_first_fp8_module()).
#pragma once
#include <vector>

#include "op_index.h"

namespace proteus {

struct Fp8AmaxPlan {
  AxisMask axes = 0;  // the amax reduction group's mesh axes of size > 1 (0: no reduction)
  // Per chunk (-1: none): the op after whose forward the autocast exits (the chunk's last op
  // inside a transformer layer), and the first FP8 op, after whose backward the backward
  // reduction runs.
  std::vector<int> forward_exit_op, backward_op;
  // Per chunk: bytes of the all-reduce (the whole rank's buffer: every chunk of its stage).
  std::vector<double> forward_bytes, backward_bytes;
};

// Empty (axes 0) unless some op registers amaxes (OpPlan::fp8_amax_gemms: delayed scaling).
Fp8AmaxPlan plan_fp8_amax(const OpGraph& g, const std::vector<OpPlan>& plans, const StrategyTree& tree,
                          const OpIndex& index);

}  // namespace proteus
