// Measured attention kernel throughput by sequence length (docs/fidelity/attention.md, "Attention by
// kernel"): TFLOP/s of each kernel family (cuDNN, FlashAttention-2, FlashAttention-3) forward
// with and without a causal mask and backward, at one head dimension, from one publication's
// figures. The cost model uses it relative to `reference`, the kernel the GPU's
// attention_efficiency stands for: a run on another kernel takes attention_efficiency times the
// ratio of the two kernels' measured rates at its shape (end-to-end runs calibrate the level,
// the paper the ratio). With `level_seq` set, attention_efficiency is the reference kernel's
// level at that length only, and every kernel at any length takes the ratio of its measured rate
// to the reference's at level_seq: a kernel whose keys are fewer reaches less of the level, as
// measured, since its inner loop over the keys is shorter against a fixed per-tile prologue.
#pragma once
#include <cstdint>
#include <map>
#include <vector>
#include "proteus/strategy_spec.h"

namespace proteus {

// One kernel's curves, one value per AttentionTable::seq entry; forward and backward may be
// empty (not measured), and then the causal forward stands for them.
struct AttentionCurves {
  std::vector<double> forward_causal, forward, backward;
};

struct AttentionTable {
  int64_t head_dim = 0;                               // the measured head dimension
  AttentionKernel reference = AttentionKernel::Auto;  // the kernel attention_efficiency represents
  std::vector<int64_t> seq;                           // sequence lengths, strictly increasing, >= 2
  // The length at which attention_efficiency holds for the reference kernel (within seq's
  // range); 0: it holds at every length and the table only gives kernel-to-kernel ratios.
  int64_t level_seq = 0;
  std::map<AttentionKernel, AttentionCurves> TFLOPS;
  bool empty() const { return TFLOPS.empty(); }
};

// What the cost model asks of the table for one attention op.
struct AttentionShape {
  int64_t seq_kv = 0;    // keys each query block runs over (the kernel's inner loop)
  int64_t head_dim = 0;  // per head
  bool causal = true;
  bool backward = false;
};

// measured(kernel, shape.seq_kv) / measured(reference, level_seq or shape.seq_kv), each
// interpolated linearly in log2(TFLOP/s) over log2(seq), clamped to the first and last measured
// lengths. 1 (the roofline unchanged) where the table cannot say: no table, another head
// dimension, a kernel or the reference missing from it, or (without level_seq) the kernel being
// the reference. A causal backward, which the source does not measure, takes the backward (no
// mask) curve.
double attention_kernel_factor(const AttentionTable& table, AttentionKernel kernel,
                               const AttentionShape& shape);

// The largest factor the table can give (the strategy search's lower bound must not be beaten).
double max_attention_kernel_factor(const AttentionTable& table);

}  // namespace proteus
