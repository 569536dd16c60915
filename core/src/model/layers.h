// Layers that several model families share, written on top of OpGraphBuilder: elementwise
// ops (activations, dropout, residual adds), 2-D linear layers over [batch, features]
// tensors, and classification losses. Private to core/src/model.
#pragma once
#include <string>
#include <vector>

#include "op_graph_builder.h"

namespace proteus::model {

// FLOPs per element of memory-bound ops. They are small next to the GEMMs and only keep
// hardware FLOPs honest; their time comes from their bytes. Counted from the arithmetic of
// the usual kernels (forward / backward):
constexpr double kLayerNormFlops = 5;       // mean, centre, variance, normalize, scale+shift
constexpr double kRmsNormFlops = 4;         // square-sum, rsqrt-scale, gamma
constexpr double kBatchNormFlops = 5;       // as LayerNorm, statistics over batch and space
constexpr double kNormWeightGradFlops = 2;  // d(gamma) = sum dy*xhat, d(beta) = sum dy
constexpr double kGeluFlops = 8;            // tanh form: x^3 term, fma, tanh, add, 2 mul
constexpr double kSwigluFlops = 6;          // silu(gate) = gate*sigmoid(gate) (~4), * up
constexpr double kDropoutFlops = 2;         // compare with random, scale
constexpr double kReluFlops = 1;
constexpr double kTanhFlops = 4;  // exp-based tanh; backward 1 - y^2 times dy
constexpr double kAddFlops = 1;
constexpr double kRotaryFlops = 3;          // x*cos + rotate(x)*sin
constexpr double kSoftmaxLossFlops = 5;     // max, subtract, exp, sum, log per logit
constexpr double kSoftmaxLossBwdFlops = 2;  // softmax - onehot, scale

enum class Saves {
  Nothing,  // residual adds, rotary, concatenation, views: the backward needs no tensor
  Input,    // GELU, SwiGLU, sigmoid-free activations that differentiate their input
  Output,   // ReLU, tanh, sigmoid: the backward reads the result
  Mask,     // dropout: a one-byte mask, not the input
};

// An op applying f elementwise to x; its dims are named `dims` with x's sizes, the output
// has x's shape. bwd_flops_per_element is the input-gradient cost.
int unary(OpGraphBuilder& g, int module, const std::string& name, int x, DimNames dims,
          double fwd_flops_per_element, double bwd_flops_per_element, Saves saves);
int dropout(OpGraphBuilder& g, int module, const std::string& name, int x, DimNames dims);
// Sum of same-shape tensors (residual connections); saves nothing.
int add(OpGraphBuilder& g, int module, const std::string& name, const std::vector<int>& xs, DimNames dims);

// y[batch, out] = x[batch, in] W[out, in]^T (+ b[out]), with the feature dims named as given
// ("in"/"out" in classifiers and MLPs, so that mapping a mesh axis to "out" in a module makes
// it tensor (model) parallel there).
int linear(OpGraphBuilder& g, int module, const std::string& name, int x, int64_t in, int64_t out, bool bias,
           const char* in_dim = "in", const char* out_dim = "out");

// Cross-entropy (or BCE) over the classes of logits[batch, classes] -> loss[batch] (fp32).
int classification_loss(OpGraphBuilder& g, int module, const std::string& name, int logits,
                        const char* class_dim = "out");

// GEMM costs for an op whose dims are exactly its GEMM's M, N, K (and batch) dims:
// forward 2*M*N*K, input gradient 2*M*N*K, weight gradient 2*M*N*K; a bias adds M*N to the
// forward and to the weight gradient. bias_elements = M*N (0 without bias).
void set_gemm_costs(OpGraphBuilder& g, int op, double bias_elements);

}  // namespace proteus::model
