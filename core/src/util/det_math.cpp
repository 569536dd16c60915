// det_math.h: log2 and exp2 as fixed sequences of IEEE operations.
//   log2: x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m - 1) / (m + 1),
//         |s| <= 0.1716, summed as the odd series s + s^3/3 + ... + s^27/27 (the next term is
//         below 1e-22 relative); log2 x = e + ln m / ln 2.
//   exp2: y = n + f with n = nearest integer, |f| <= 1/2; 2^f = exp(f ln 2), |f ln 2| <= 0.347,
//         summed as the Taylor series to the 20th power (next term below 1e-28); ldexp adds n.
// Fixed term counts and a fixed evaluation order (Horner) make every result reproducible.
#include "proteus/det_math.h"
#include <cmath>
#include <limits>

namespace proteus {
namespace {

constexpr double kLn2 = 0.693147180559945309417232121458176568;
constexpr double kSqrtHalf = 0.707106781186547524400844362104849039;

}  // namespace

double det_log2(double x) {
  if (!(x > 0)) return -std::numeric_limits<double>::infinity();
  if (x == std::numeric_limits<double>::infinity()) return x;
  int e = 0;
  double m = std::frexp(x, &e);  // exact: m in [0.5, 1)
  if (m < kSqrtHalf) {
    m *= 2;  // exact
    e -= 1;
  }
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  double series = 1.0 / 27;
  for (int k = 25; k >= 1; k -= 2) series = series * s2 + 1.0 / k;
  const double ln_m = 2 * s * series;
  return static_cast<double>(e) + ln_m / kLn2;
}

double det_exp2(double y) {
  if (y != y) return y;  // NaN
  if (y > 1024) return std::numeric_limits<double>::infinity();
  if (y < -1075) return 0;
  const double n = std::floor(y + 0.5);  // exact
  const double r = (y - n) * kLn2;       // |r| <= 0.347
  double series = 1;
  for (int k = 20; k >= 1; --k) series = 1 + series * r / k;
  return std::ldexp(series, static_cast<int>(n));
}

}  // namespace proteus
