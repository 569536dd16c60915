// attention_table.h: a kernel's rate relative to the reference kernel's, by sequence length.
// Between two measured lengths a <= s <= b the weight of b is t = (log2 s - log2 a) /
// (log2 b - log2 a) and log2(TFLOP/s) is blended with it, as in gemm_table.cpp: throughput grows
// roughly as a power of the length before it saturates. Interpolating both kernels' logs with the
// same weights is interpolating the log of their ratio.
#include "proteus/attention_table.h"
#include <algorithm>
#include "proteus/det_math.h"

namespace proteus {
namespace {

// The curve measured for the shape's direction and mask; the causal forward where the source
// measured nothing else.
const std::vector<double>& curve_of(const AttentionCurves& c, const AttentionShape& shape) {
  const std::vector<double>& wanted = shape.backward ? c.backward
                                      : shape.causal ? c.forward_causal
                                                     : c.forward;
  return wanted.empty() ? c.forward_causal : wanted;
}

double log_rate(const std::vector<int64_t>& seq, const std::vector<double>& values, int64_t s) {
  if (s <= seq.front()) return det_log2(values.front());
  if (s >= seq.back()) return det_log2(values.back());
  const size_t hi = static_cast<size_t>(std::upper_bound(seq.begin(), seq.end(), s) - seq.begin());
  const size_t lo = hi - 1;
  const double l0 = det_log2(static_cast<double>(seq[lo])), l1 = det_log2(static_cast<double>(seq[hi]));
  const double t = (det_log2(static_cast<double>(s)) - l0) / (l1 - l0);
  return (1 - t) * det_log2(values[lo]) + t * det_log2(values[hi]);
}

}  // namespace

double attention_kernel_factor(const AttentionTable& table, AttentionKernel kernel,
                               const AttentionShape& shape) {
  const bool by_length = table.level_seq > 0;
  if (table.empty() || (kernel == table.reference && !by_length) || shape.head_dim != table.head_dim ||
      shape.seq_kv <= 0 || table.seq.size() < 2)
    return 1.0;
  const auto run = table.TFLOPS.find(kernel), ref = table.TFLOPS.find(table.reference);
  if (run == table.TFLOPS.end() || ref == table.TFLOPS.end()) return 1.0;
  const int64_t ref_seq = by_length ? table.level_seq : shape.seq_kv;
  const double log_ratio = log_rate(table.seq, curve_of(run->second, shape), shape.seq_kv) -
                           log_rate(table.seq, curve_of(ref->second, shape), ref_seq);
  return det_exp2(log_ratio);
}

double max_attention_kernel_factor(const AttentionTable& table) {
  double best = 1.0;
  const auto ref = table.TFLOPS.find(table.reference);
  if (ref == table.TFLOPS.end()) return best;
  // The three directions, each curve as curve_of picks it (the causal forward where missing).
  const AttentionShape directions[3] = {
      {1, table.head_dim, true, false}, {1, table.head_dim, false, false}, {1, table.head_dim, false, true}};
  for (const auto& [kernel, curves] : table.TFLOPS) {
    for (const AttentionShape& d : directions) {
      const std::vector<double>& run = curve_of(curves, d);
      const std::vector<double>& base = curve_of(ref->second, d);
      // Against the reference at the same length, or at level_seq when the level is by length.
      const double level_rate =
          table.level_seq > 0 ? det_exp2(log_rate(table.seq, base, table.level_seq)) : 0;
      for (size_t i = 0; i < run.size() && i < base.size(); ++i) {
        const double ref_rate = table.level_seq > 0 ? level_rate : base[i];
        if (ref_rate > 0) best = std::max(best, run[i] / ref_rate);
      }
    }
  }
  return best;
}

}  // namespace proteus
