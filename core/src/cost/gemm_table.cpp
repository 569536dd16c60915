// gemm_table.h: trilinear interpolation in log space. Along each dimension the size x falls
// between measured a_i <= x <= a_(i+1); its weight is t = (log2 x - log2 a_i) /
// (log2 a_(i+1) - log2 a_i), so a size halfway between 1024 and 4096 in log terms (2048)
// weighs both ends equally. log2 of the eight corner throughputs is blended with those weights
// and raised back with det_exp2: throughput grows roughly as a power of size between grid
// points, which a straight line in log-log space follows.
#include "proteus/gemm_table.h"
#include <algorithm>
#include "proteus/det_math.h"

namespace proteus {
namespace {

struct Bracket {
  size_t lo = 0;
  double t = 0;  // weight of axis[lo + 1]
};

// Where size x falls on a measured axis; nothing below the axis, the last point above it.
std::optional<Bracket> bracket(const std::vector<int64_t>& axis, int64_t x) {
  if (axis.size() < 2 || x < axis.front()) return std::nullopt;
  if (x >= axis.back()) return Bracket{axis.size() - 2, 1.0};
  const size_t hi = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), x) - axis.begin());
  const size_t lo = hi - 1;
  const double l0 = det_log2(static_cast<double>(axis[lo]));
  const double l1 = det_log2(static_cast<double>(axis[hi]));
  return Bracket{lo, (det_log2(static_cast<double>(x)) - l0) / (l1 - l0)};
}

}  // namespace

std::optional<double> gemm_table_TFLOPS(const GemmTable& table, Precision precision, int64_t m, int64_t n,
                                        int64_t k, int64_t batch) {
  const auto values = table.TFLOPS.find(precision);
  if (values == table.TFLOPS.end() || batch < 1) return std::nullopt;
  const auto bm = bracket(table.m, m * batch), bn = bracket(table.n, n), bk = bracket(table.k, k);
  if (!bm || !bn || !bk) return std::nullopt;
  const size_t nn = table.n.size(), nk = table.k.size();
  double log_tflops = 0;
  for (int di = 0; di < 2; ++di) {
    const double wi = di ? bm->t : 1 - bm->t;
    for (int dj = 0; dj < 2; ++dj) {
      const double wj = dj ? bn->t : 1 - bn->t;
      for (int dl = 0; dl < 2; ++dl) {
        const double wl = dl ? bk->t : 1 - bk->t;
        const double w = wi * wj * wl;
        if (w == 0) continue;  // an exact grid point reads one value, and log2 stays finite
        const size_t index = ((bm->lo + di) * nn + (bn->lo + dj)) * nk + (bk->lo + dl);
        log_tflops += w * det_log2(values->second[index]);
      }
    }
  }
  return det_exp2(log_tflops);
}

}  // namespace proteus
