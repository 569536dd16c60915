// The timeline as columns (DESIGN.md §7 "The page receives columns"): span i is
// (start_s[i], end_s[i], rank[i], stream[i], kind[i], name[i], ...), strings interned in
// tables. The page receives these arrays without copying (Transferable buffers) instead of
// a JSON array of span objects, and makes its summaries and downloads from them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace proteus {

struct ReportInputs;

struct TimelineColumns {
  std::vector<double> start_s, end_s;
  std::vector<int32_t> rank;         // GPU id
  std::vector<int32_t> micro_batch;  // -1: once per iteration
  std::vector<uint8_t> stream;       // index into `streams`
  std::vector<uint8_t> kind;         // index into `kinds` (phase, or collective kind)
  std::vector<uint8_t> phase;        // index into `phases`
  std::vector<uint32_t> name;        // index into `names` ("layers.3.mlp.fc1 B")
  std::vector<double> bytes;         // collective: its size S; compute: bytes moved
  std::vector<double> flops;         // compute: FLOPs; collective: 0
  std::vector<int32_t> group;        // collective: group size; compute: 0
  std::vector<int32_t> nodes;        // collective: nodes its group spans; compute: 0
  // Send-recv: the span of the matching member on the other simulated rank, -1 if none.
  std::vector<int32_t> peer;
  // Dependencies between shown spans, CSR: span i waits for deps[dep_offsets[i] ..
  // dep_offsets[i+1]) (span indices; dependencies on spans not shown are left out).
  std::vector<int32_t> dep_offsets, deps;
  std::vector<std::string> names, streams, kinds, phases;
  int64_t total_tasks = 0;  // spans before the cap (simulation.max_timeline_spans)
  size_t size() const { return start_s.size(); }
};

// The tasks the timeline shows, in queue order (rank, stream, issue order), capped at
// simulation.max_timeline_spans: with more tasks it keeps every task that starts before a
// time horizon, the latest that fits the cap, so that each rank's window [0, horizon) is
// complete. `warning` is set when the cap cut the timeline.
std::vector<int> timeline_selection(const ReportInputs& in, std::string* warning);

TimelineColumns timeline_columns(const ReportInputs& in);

// One simulated rank's memory curve as columns: the result JSON's "memory_curves" entry
// {"rank", "t_s", "GiB"} (result_json writes it from these), handed to the page as typed
// arrays instead of ~190 kB of JSON numbers for the default scenario.
struct MemoryCurveColumns {
  int32_t rank = 0;  // GPU id
  std::vector<double> t_s, GiB;
};

std::vector<MemoryCurveColumns> memory_curve_columns(const ReportInputs& in);

}  // namespace proteus
