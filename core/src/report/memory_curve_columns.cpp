// The per-rank memory curves as columns (timeline_columns.h); result_json's "memory_curves"
// is written from the same values, so the page's columns and the JSON agree to the bit.
#include "proteus/report.h"
#include "proteus/timeline_columns.h"
#include "proteus/units.h"

namespace proteus {

std::vector<MemoryCurveColumns> memory_curve_columns(const ReportInputs& in) {
  std::vector<MemoryCurveColumns> out;
  for (size_t r = 0; r < in.trace.ranks.size() && r < in.graph.ranks.size(); ++r) {
    MemoryCurveColumns c;
    c.rank = in.graph.ranks[r].gpu;
    const std::vector<MemorySample>& samples = in.trace.ranks[r].memory_curve;
    c.t_s.reserve(samples.size());
    c.GiB.reserve(samples.size());
    for (const MemorySample& s : samples) {
      c.t_s.push_back(s.time_s);
      c.GiB.push_back(s.bytes / kBytesPerGiB);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace proteus
