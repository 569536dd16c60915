#include "layers.h"

namespace proteus::model {

namespace {
std::vector<Dim> dims_of(const OpGraphBuilder& g, int x, DimNames names) {
  std::vector<Dim> dims;
  dims.reserve(names.size());
  const Shape shape = g.tensor(x).shape;
  size_t i = 0;
  for (const char* n : names) dims.push_back({n, shape[i++]});
  return dims;
}
}  // namespace

int unary(OpGraphBuilder& g, int module, const std::string& name, int x, DimNames dims,
          double fwd_flops_per_element, double bwd_flops_per_element, Saves saves) {
  const int op = g.op(module, name, OpKind::Elementwise, dims_of(g, x, dims));
  g.read(op, x, dims);
  const int y = g.write(op, g.tensor(x).shape, dims);
  g.at(op).saves_inputs = saves == Saves::Input;
  if (saves == Saves::Output) g.save(op, y, dims);
  if (saves == Saves::Mask) g.save_new(op, "mask", g.tensor(x).shape, dims, kMaskBytes);
  const double n = static_cast<double>(g.tensor(x).elements());
  g.set_costs(op, fwd_flops_per_element * n, bwd_flops_per_element * n, 0);
  return y;
}

double cross_entropy_fwd_bytes_per_logit(double logit_bytes) {
  const double cast = logit_bytes < kFp32Bytes ? logit_bytes + kFp32Bytes : 0;
  const double max = 4, subtract = 8, exp = 8, sum = 4, divide = 8;
  return cast + max + subtract + exp + sum + divide;
}

double cross_entropy_bwd_bytes_per_logit(double logit_bytes) {
  const double scale = 8;
  const double cast = logit_bytes < kFp32Bytes ? kFp32Bytes + logit_bytes : 0;
  return scale + cast;
}

int dropout(OpGraphBuilder& g, int module, const std::string& name, int x, DimNames dims) {
  return unary(g, module, name, x, dims, kDropoutFlops, kDropoutFlops / 2, Saves::Mask);
}

int add(OpGraphBuilder& g, int module, const std::string& name, const std::vector<int>& xs, DimNames dims) {
  const int op = g.op(module, name, OpKind::Elementwise, dims_of(g, xs.front(), dims));
  for (int x : xs) g.read(op, x, dims);
  const int y = g.write(op, g.tensor(xs.front()).shape, dims);
  g.at(op).saves_inputs = false;
  const double n = static_cast<double>(g.tensor(y).elements());
  // The gradient of a sum passes through unchanged: no arithmetic, only its bytes.
  g.set_costs(op, kAddFlops * n * static_cast<double>(xs.size() - 1), 0, 0);
  return y;
}

// Megatron-Core's get_bias_dropout_add (bias_dropout_fusion, on by default;
// megatron/core/fusions/fused_bias_dropout.py, a jit-fused bias_dropout_add_fused_train) and
// TE's TransformerLayer read y and the residual and write the sum and the mask: 7 bytes per
// 16-bit element against the 11 of a dropout kernel (read 2, write 2, mask 1) then an add
// (read 4, write 2). The backward is unchanged (the mask applied to the gradient; the residual
// branch's gradient summed where it forks). Unfused, Megatron's _bias_dropout_add_func runs
// `x + bias` first when the linear has one (read 2, write 2).
int dropout_residual(OpGraphBuilder& g, int module, const std::string& dropout_name,
                     const std::string& add_name, int residual, int y, DimNames dims, bool bias) {
  const int dropped = dropout(g, module, dropout_name, y, dims);
  const int sum = add(g, module, add_name, {residual, dropped}, dims);
  const double kept_in_registers = g.tensor(dropped).bytes();
  for (const int op : {g.tensor(dropped).producer, g.tensor(sum).producer}) {
    Op& o = g.at(op);
    o.fwd_bytes -= kept_in_registers;
    o.fusion = KernelFusion::BiasDropoutAdd;
    o.unfused_fwd_extra_bytes = kept_in_registers;
  }
  if (bias) g.at(g.tensor(dropped).producer).separate_bias_add_bytes = 2 * g.tensor(y).bytes();
  return sum;
}

void set_unfused_norm(Op& op) {
  op.fusion = KernelFusion::Norm;
  op.eager_fwd_bytes_factor = kEagerRmsNormBytesFactor;
  op.eager_bwd_input_bytes_factor = kEagerRmsNormBwdInputBytesFactor;
  op.eager_bwd_weight_bytes_factor = kEagerRmsNormBwdWeightBytesFactor;
}

void set_unfused_rope(Op& op) {
  op.fusion = KernelFusion::Rope;
  op.eager_fwd_bytes_factor = kEagerRotaryBytesFactor;
  op.eager_bwd_input_bytes_factor = kEagerRotaryBytesFactor;
}

void set_unfused_activation(Op& op, bool swiglu, double bias_bytes, double output_bytes) {
  op.fusion = KernelFusion::BiasActivation;
  op.separate_bias_add_bytes = 2 * bias_bytes;
  if (!swiglu) return;  // F.gelu: one kernel, and gelu_backward one
  op.eager_fwd_bytes_factor = kEagerSwigluBytesFactor;
  op.eager_bwd_input_bytes_factor = kEagerSwigluBwdBytesFactor;
  op.glu_chunk_bwd_bytes = kGluChunkBwdBytesPerOutputByte * output_bytes;
}

void set_unfused_masked_softmax(Op& op, double scores, double score_bytes, int64_t keys) {
  const double masked_fill = scores * (2 * score_bytes + kMaskBytes);
  if (keys > kFusedSoftmaxMaxKeys) {
    op.fwd_bytes += masked_fill;
    op.bwd_input_bytes += masked_fill;
    return;
  }
  op.fusion = KernelFusion::MaskedSoftmax;
  op.unfused_fwd_extra_bytes = masked_fill;
  op.unfused_bwd_extra_bytes = masked_fill;
}

UnfusedAttentionScoreBytes unfused_attention_score_bytes(double score_bytes, bool dropout) {
  const double b = score_bytes;
  UnfusedAttentionScoreBytes per;
  per.saved = dropout ? b + kMaskBytes + b : b;
  per.forward = b + 2 * b + (dropout ? 2 * b + kMaskBytes : 0) + b;
  per.backward = 2 * b + (dropout ? 2 * b + kMaskBytes : 0) + 3 * b + 2 * b;
  return per;
}

SplitQkvCopyBytes split_qkv_copy_bytes(double q_bytes, double kv_bytes, bool gqa, bool new_q_and_k) {
  SplitQkvCopyBytes b;
  if (!gqa && !new_q_and_k) return b;  // sbh3d: the kernel reads the buffer, dQKV lands in one
  const double q_reshape = gqa ? 2 * q_bytes : 0;
  const double strided_views = new_q_and_k ? kv_bytes / 2 : kv_bytes;  // V, or K and V
  b.forward = q_reshape + 2 * strided_views;
  b.backward = 2 * (q_bytes + kv_bytes);  // torch.cat of dQ, dK, dV
  return b;
}

RepeatKvBytes repeat_kv_bytes(double kv_bytes, int64_t n_rep) {
  RepeatKvBytes b;
  if (n_rep <= 1) return b;  // repeat_kv returns x itself
  const double r = static_cast<double>(n_rep);
  b.forward = (1 + r) * kv_bytes;
  b.backward = (r + 1) * kv_bytes;
  b.saved = (r - 1) * kv_bytes;
  return b;
}

void set_gemm_costs(OpGraphBuilder& g, int op, double bias_elements) {
  const double gemm = 2 * g.dims_product(op);
  g.set_costs(op, gemm + bias_elements, gemm, gemm + bias_elements);
}

int linear(OpGraphBuilder& g, int module, const std::string& name, int x, int64_t in, int64_t out, bool bias,
           const char* in_dim, const char* out_dim) {
  const int64_t b = g.tensor(x).shape[0];
  const int op = g.op(module, name, OpKind::Matmul, {{"batch", b}, {out_dim, out}, {in_dim, in}});
  g.read(op, x, {"batch", in_dim});
  g.read_weight(op, g.weight(module, name + ".weight", {out, in}), {out_dim, in_dim});
  if (bias) g.read_weight(op, g.weight(module, name + ".bias", {out}), {out_dim});
  const int y = g.write(op, {b, out}, {"batch", out_dim});
  g.gemm(op, {"batch"}, {out_dim}, {in_dim});
  set_gemm_costs(g, op, bias ? static_cast<double>(b * out) : 0);
  return y;
}

int classification_loss(OpGraphBuilder& g, int module, const std::string& name, int logits,
                        const char* class_dim) {
  const Shape shape = g.tensor(logits).shape;
  const int op = g.op(module, name, OpKind::Loss, {{"batch", shape[0]}, {class_dim, shape[1]}});
  g.read(op, logits, {"batch", class_dim});
  const int loss = g.write(op, {shape[0]}, {"batch"}, kFp32Bytes);
  const double n = static_cast<double>(g.tensor(logits).elements());
  g.set_costs(op, kSoftmaxLossFlops * n, kSoftmaxLossBwdFlops * n, 0);
  return loss;
}

}  // namespace proteus::model
