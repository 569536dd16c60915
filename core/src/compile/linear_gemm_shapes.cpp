#include "linear_gemm_shapes.h"

namespace proteus {

GemmShape linear_pass_shape(const Op& op, GemmPass pass, GemmShape forward) {
  const bool linear = op.kind == OpKind::Matmul && !op.weights.empty();
  if (!linear) return forward;
  switch (pass) {
    case GemmPass::InputGrad:
      return {forward.m, forward.k, forward.n};
    case GemmPass::WeightGrad:
      return {forward.n, forward.k, forward.m};
    case GemmPass::Forward:
      break;
  }
  return forward;
}

}  // namespace proteus
