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

const std::vector<double>& curve_of(const AttentionCurves& c, const AttentionShape& shape) {
  if (shape.backward) return c.backward;
  return shape.causal ? c.forward_causal : c.forward;
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
  for (const auto& [kernel, curves] : table.TFLOPS) {
    const std::vector<double>* pairs[3][2] = {{&curves.forward_causal, &ref->second.forward_causal},
                                              {&curves.forward, &ref->second.forward},
                                              {&curves.backward, &ref->second.backward}};
    for (const auto& pair : pairs)
      for (size_t i = 0; i < pair[0]->size() && i < pair[1]->size(); ++i) {
        // Against the reference at the same length, or at level_seq when the level is by length.
        const double ref_rate =
            table.level_seq > 0 ? det_exp2(log_rate(table.seq, *pair[1], table.level_seq)) : (*pair[1])[i];
        if (ref_rate > 0) best = std::max(best, (*pair[0])[i] / ref_rate);
      }
  }
  return best;
}

}  // namespace proteus
