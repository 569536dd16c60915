// Decimation of a rank's memory curve (time, bytes) to a bounded number of points, once the
// iteration's length is known. Time [0, end] is cut into `buckets` equal buckets; each keeps
// its lowest and its highest sample (the first one on ties), in time order, so peaks and
// troughs survive (uPlot's min/max per pixel column). The first and the last sample are
// always kept, so the curve starts at the static memory and ends at the final value.
// Output: at most 2 * buckets + 2 points; a curve already that short is returned unchanged.
#pragma once
#include <vector>
#include "proteus/simulation.h"

namespace proteus::exec {

// ~2000 points per rank: enough for a chart several screens wide.
constexpr int kMemoryCurveBuckets = 1000;

inline std::vector<MemorySample> decimate_memory_curve(const std::vector<MemorySample>& raw, double end_s,
                                                       int buckets) {
  if (raw.size() <= static_cast<size_t>(2 * buckets + 2) || end_s <= 0) return raw;
  std::vector<MemorySample> out;
  out.reserve(static_cast<size_t>(2 * buckets + 2));
  auto push_unique = [&out](const MemorySample& s) {
    if (!out.empty() && out.back().time_s == s.time_s && out.back().bytes == s.bytes) return;
    out.push_back(s);
  };
  push_unique(raw.front());
  const double width_s = end_s / buckets;
  size_t i = 1;
  const size_t last = raw.size() - 1;
  while (i < last) {
    // Bucket of sample i; gather every following sample of the same bucket.
    long b = static_cast<long>(raw[i].time_s / width_s);
    if (b >= buckets) b = buckets - 1;
    MemorySample lo = raw[i], hi = raw[i];
    size_t lo_at = i, hi_at = i;
    size_t j = i + 1;
    for (; j < last; ++j) {
      long bj = static_cast<long>(raw[j].time_s / width_s);
      if (bj >= buckets) bj = buckets - 1;
      if (bj != b) break;
      if (raw[j].bytes < lo.bytes) lo = raw[j], lo_at = j;
      if (raw[j].bytes > hi.bytes) hi = raw[j], hi_at = j;
    }
    if (lo_at <= hi_at) {
      push_unique(lo);
      push_unique(hi);
    } else {
      push_unique(hi);
      push_unique(lo);
    }
    i = j;
  }
  push_unique(raw.back());
  return out;
}

}  // namespace proteus::exec
