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

// HBM bytes per logit of the language-model cross-entropy as Megatron computes it
// (megatron/core/tensor_parallel/cross_entropy.py, _VocabParallelCrossEntropy, unfused: the
// default, cross_entropy_loss_fusion off): in fp32, one kernel per step, each reading and
// writing the whole [tokens, vocab / tp] tensor. Forward: .float() (read `logit_bytes`, write
// 4; no copy when the logits are fp32 already), max over the vocab (read 4), -= max (read 4,
// write 4), exp in place (read 4, write 4), sum (read 4), div_ by the sum for the saved
// softmax (read 4, write 4). Backward: mul_ by the loss gradient (read 4, write 4), then
// autograd casts the fp32 gradient to the logits' dtype (read 4, write `logit_bytes`).
// 16-bit logits: 38 forward + 14 backward = 52 bytes per logit. PyTorch's eager
// F.cross_entropy(logits.float(), ...) (TorchTitan) moves the same total: cast 6, log_softmax
// 16 forward; nll backward 8, log_softmax backward 16, cast 6.
// HBM traffic of TorchTitan's eager modules (torchtitan/models/norms.py RMSNorm,
// torchtitan/models/llama/model.py apply_rotary_emb and FeedForward, at the commit of its
// docs/performance.md runs) over the fused kernel's, per element of 16-bit activations; each
// eager op is one kernel reading and writing whole tensors, and so is each autograd node of its
// backward (tools/autograd/derivatives.yaml, torch/csrc/autograd/FunctionsManual.cpp):
// - RMSNorm forward: x.float() (read 2, write 4), pow(2) (4 + 4), mean(-1) (4), x * rsqrt(..)
//   (4 + 4), .type_as(x) (4 + 2), * weight (2 + 2) = 36 bytes; the fused kernel reads 2,
//   writes 2: 9x. Its input gradient, node by node: grad * weight (2 + 2); type_as's
//   _to_copy back to fp32 (2 + 4); the multiply by rsqrt: grad * r (4 + 4), and r's gradient
//   grad * x summed over the row (4 + 4 + 4, then 4); mean_backward's expand / n, a full fp32
//   tensor (4); pow_backward, grad * (2 * x.pow(1)), where pow with exponent 1 is a copy
//   (4 + 4, 4 + 4, then 4 + 4 + 4); the two gradients of x.float() summed by the engine
//   (4 + 4 + 4); x.float()'s _to_copy back to 16 bits (4 + 2) = 84 bytes against the fused
//   kernel's 6 (read the gradient and x, write the input gradient): 14x. The weight gradient:
//   grad * output (2 + 2 + 2) then sum over the tokens (2) = 8 against 4: 2x.
// - rotary: x.float() (2 + 4), complex multiply by freqs_cis (4 + 4; view_as_complex and
//   view_as_real are views), .type_as(x) (4 + 2) = 20 bytes against 2 + 2: 5x; the backward the
//   same three in reverse (freqs_cis needs no gradient): 20 against 4, 5x.
// - SwiGLU: F.silu(gate) (2 + 2) then * up (2 + 2 + 2) = 10 bytes per output element against
//   the fused kernel's 2 + 2 + 2 = 6: 5/3. Backward: the product's two gradients, grad * up
//   and grad * silu(gate) (2 + 2 + 2 each), then silu_backward (2 + 2 + 2) = 18 against the
//   fused kernel's 10 (read the gradient and both inputs, write both gradients): 9/5.
// Residual adds, F.gelu and nn.LayerNorm are one kernel either way (1).
constexpr double kEagerRmsNormBytesFactor = 36.0 / 4;
constexpr double kEagerRmsNormBwdInputBytesFactor = 84.0 / 6;
constexpr double kEagerRmsNormBwdWeightBytesFactor = 8.0 / 4;
constexpr double kEagerRotaryBytesFactor = 20.0 / 4;
constexpr double kEagerSwigluBytesFactor = 10.0 / 6;
constexpr double kEagerSwigluBwdBytesFactor = 18.0 / 10;
// Megatron's unfused GLU (megatron/core/transformer/mlp.py, glu: torch.chunk(x, 2, dim=-1)):
// chunk's gradient is a cat of the two halves' gradients, each the output's size, read and
// written joined: 4x the output's bytes (8 per element of 16-bit activations).
constexpr double kGluChunkBwdBytesPerOutputByte = 4;

double cross_entropy_fwd_bytes_per_logit(double logit_bytes);
double cross_entropy_bwd_bytes_per_logit(double logit_bytes);

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
// residual + dropout(y + bias), as the fused kernel of Megatron's bias-dropout-add (and
// Inductor's fusion) runs it: two ops (`dropout_name`, `add_name`) whose forward bytes are the
// fused kernel's, which never writes dropout(y) to memory; unfused (eager PyTorch,
// --no-bias-dropout-fusion) that tensor is written and read back (Op::unfused_fwd_extra_bytes),
// and Megatron adds the bias of its skip_bias_add linear in a kernel of its own when `bias`.
// Returns the sum.
int dropout_residual(OpGraphBuilder& g, int module, const std::string& dropout_name,
                     const std::string& add_name, int residual, int y, DimNames dims, bool bias = false);

// Op::fusion and what the unfused kernels move, per kind (constants above; Megatron's own
// unfused paths in docs/frameworks/attention-and-kernels.md, "Megatron's fused kernels"):
// - norms: eager PyTorch's RMSNorm (Megatron has no unfused norm: --no-persist-layer-norm picks
//   another fused kernel);
void set_unfused_norm(Op& op);
// - rotary: eager PyTorch's and Megatron's apply_rotary_pos_emb without apply_rope_fusion
//   (cat of rotate_half and two multiplies and an add on fp32 freqs: like traffic);
void set_unfused_rope(Op& op);
// - GeLU / SwiGLU: SwiGLU as F.silu then a multiply; `bias_bytes` (the input's bytes when the
//   linear before has a bias, else 0) read and written again by Megatron's separate bias add,
//   and Megatron's chunk of the SwiGLU input joined again in the backward (`output_bytes`);
void set_unfused_activation(Op& op, bool swiglu, double bias_bytes, double output_bytes);
// - unfused attention's mask and softmax (`scores` elements of `score_bytes` each over `keys`
//   keys): a masked_fill (read the scores and the 1-byte mask, write) before the softmax, in the
//   forward and again in the backward (its gradient is a masked_fill of the softmax's).
//   Megatron's fused kernel takes at most 4096 keys (FusedScaleMaskSoftmax.is_kernel_available:
//   16 < sk <= 4096); beyond, it runs the PyTorch path whatever the flag, so the op pays it always.
void set_unfused_masked_softmax(Op& op, double scores, double score_bytes, int64_t keys);
constexpr int64_t kFusedSoftmaxMaxKeys = 4096;

// HBM bytes per attention score of attention without flash attention, kernel by kernel as
// Megatron's CoreAttention runs it (baddbmm, FusedScaleMaskSoftmax, attention dropout, bmm) and
// autograd runs its backward; `score_bytes` the 16-bit score, `dropout` whether the probabilities
// are dropped out (a 1-byte mask). The forward saves the probabilities (and the mask and the
// dropped-out probabilities) for the backward.
struct UnfusedAttentionScoreBytes {
  double saved = 0;     // written by the forward and kept: part of `forward`
  double forward = 0;   // QK^T writes; softmax reads, writes; dropout reads, writes + mask; AV reads
  double backward = 0;  // AV's gradient writes dP and reads P for dV; dropout's gradient reads dP
                        // and the mask, writes; softmax's reads its gradient and output, writes
                        // dS; QK^T's gradient reads dS for dQ and again for dK
};
UnfusedAttentionScoreBytes unfused_attention_score_bytes(double score_bytes, bool dropout);

// The copies around Megatron-Core's attention with TE's fused kernel (sbhd):
// SelfAttention.get_query_key_value_tensors views linear_qkv's output as [s, b, ng, (np/ng + 2) hn]
// and splits Q, K and V off the last dim as views (TE's SplitAlongDim); under GQA (np > ng)
// `query.reshape(s, b, np, hn)` cannot be a view and copies Q. TE's get_qkv_layout then takes
// Q, K, V as they are when they still lie interleaved in that one buffer (sbh3d: no rotary and
// no QK norm, multi-head), else `.contiguous()` copies each that is still a strided view: V
// behind a rotary embedding or QK norm (which write new Q and K), K and V under GQA without
// them. The backward joins dQ, dK and dV with torch.cat (SplitAlongDim.backward: a no-op only
// when they already share one buffer, i.e. sbh3d). Bytes read and written over the attention's
// Q (`q_bytes`) and K + V (`kv_bytes`):
struct SplitQkvCopyBytes {
  double forward = 0;
  double backward = 0;
};
SplitQkvCopyBytes split_qkv_copy_bytes(double q_bytes, double kv_bytes, bool gqa, bool new_q_and_k);

// TorchTitan's repeat_kv (torchtitan/models/llama/model.py at 9dec370): under grouped-query
// attention keys and values are expanded to every query head, `unsqueeze(x, 3).expand(...)
// .reshape(bs, slen, n_kv_heads * n_rep, head_dim)`, before F.scaled_dot_product_attention,
// which takes no grouped K/V there. The reshape of an expanded tensor cannot be a view: one copy
// kernel per tensor reads it and writes it n_rep times; expand's gradient is a sum over the
// repeats (sum_to_size), reading the n_rep-fold gradient and writing one. SDPA saves its inputs,
// so the forward keeps the repeated K and V instead of the grouped ones. Bytes over the grouped
// K + V (`kv_bytes`), n_rep = heads / kv_heads:
struct RepeatKvBytes {
  double forward = 0;   // (1 + n_rep) kv_bytes
  double backward = 0;  // (n_rep + 1) kv_bytes
  double saved = 0;     // (n_rep - 1) kv_bytes beyond the grouped K/V
};
RepeatKvBytes repeat_kv_bytes(double kv_bytes, int64_t n_rep);

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
