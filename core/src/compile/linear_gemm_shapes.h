// The three GEMMs of a linear layer Y = X Wᵀ (X: tokens x in, W: out x in, as nn.Linear and
// Transformer Engine store it) and their shapes, written M x N x K for an M x N output reduced
// over K. The op graph records the forward's (tokens x out x in); the backward runs two other
// GEMMs of the same 2·M·N·K FLOPs but another shape, which a measured table and the roofline's
// tile, wave and K factors time differently:
//   input gradient  dX = dY W   : tokens x in x out    (M, K, N of the forward)
//   weight gradient dW = dYᵀ X  : out x in x tokens    (N, K, M of the forward)
// The weight gradient reduces over the tokens: its K is the micro-batch's token count and its
// output the weight (PyTorch's linear backward, torch/csrc/autograd/FunctionsManual.cpp
// mm_mat1_backward / mm_mat2_backward; Transformer Engine's _Linear.backward, its "dgrad" and
// "wgrad" GEMMs in transformer_engine/pytorch/module/linear.py).
#pragma once
#include <cstdint>

#include "proteus/op_graph.h"

namespace proteus {

enum class GemmPass { Forward, InputGrad, WeightGrad };

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
};

// The per-rank GEMM shape of `pass` for op, given its forward shape: transposed as above for a
// linear layer (a Matmul with weights); any other op (attention, router, convolution, a GEMM
// without weights) keeps the forward's shape.
GemmShape linear_pass_shape(const Op& op, GemmPass pass, GemmShape forward);

}  // namespace proteus
