// Trace -> Chrome trace event format (the JSON object form), which Perfetto and
// chrome://tracing open: a process per simulated rank (pid = its GPU id), a thread per stream
// (tid = stream index), one complete ("X") event per task with times in microseconds, and the
// rank's memory as a counter ("C") track when the trace recorded memory curves.
#include <string>

#include <nlohmann/json.hpp>

#include "proteus/report.h"
#include "proteus/units.h"
#include "report_names.h"

namespace proteus {

std::string chrome_trace(const ReportInputs& in) {
  using nlohmann::ordered_json;
  const ExecGraph& g = in.graph;
  const Trace& trace = in.trace;
  constexpr double kUsPerS = 1.0 / kSecondsPerUs;
  ordered_json events = ordered_json::array();

  for (size_t r = 0; r < g.ranks.size(); ++r) {
    const SimRank& rank = g.ranks[r];
    std::string name = "GPU " + std::to_string(rank.gpu) + " (stage " + std::to_string(rank.stage);
    if (rank.multiplicity > 1) name += ", stands for " + std::to_string(rank.multiplicity) + " GPUs";
    name += ")";
    events.push_back(ordered_json{{"name", "process_name"},
                                  {"ph", "M"},
                                  {"pid", rank.gpu},
                                  {"tid", 0},
                                  {"args", ordered_json{{"name", name}}}});
    events.push_back(ordered_json{{"name", "process_sort_index"},
                                  {"ph", "M"},
                                  {"pid", rank.gpu},
                                  {"tid", 0},
                                  {"args", ordered_json{{"sort_index", static_cast<int64_t>(r)}}}});
    for (int s = 0; s < kNumStreams; ++s)
      events.push_back(ordered_json{{"name", "thread_name"},
                                    {"ph", "M"},
                                    {"pid", rank.gpu},
                                    {"tid", s},
                                    {"args", ordered_json{{"name", to_string(static_cast<Stream>(s))}}}});
  }

  const int64_t cap = in.config.simulation.max_timeline_spans;
  int64_t spans = 0;
  for (size_t q = 0; q < g.queues.size() && spans < cap; ++q)
    for (int t : g.queues[q]) {
      if (spans >= cap) break;
      ++spans;
      const Task& task = g.tasks[static_cast<size_t>(t)];
      const double start_s = trace.task_start_s[static_cast<size_t>(t)];
      const double end_s = trace.task_end_s[static_cast<size_t>(t)];
      ordered_json args;
      args["mb"] = task.micro_batch;
      args["phase"] = to_string(task.phase);
      if (task.kind == TaskKind::Collective) {
        const Collective& c = g.collectives[static_cast<size_t>(task.collective)];
        args["collective"] = to_string(c.kind);
        args["bytes"] = c.bytes;
        args["group_size"] = static_cast<int64_t>(c.group.size());
      } else {
        args["flops"] = g.work_of(task).flops;
        args["bytes"] = g.work_of(task).bytes;
      }
      events.push_back(ordered_json{{"name", report::task_name(g, t)},
                                    {"cat", report::task_kind(g, t)},
                                    {"ph", "X"},
                                    {"ts", start_s * kUsPerS},
                                    {"dur", (end_s - start_s) * kUsPerS},
                                    {"pid", g.ranks[static_cast<size_t>(task.rank)].gpu},
                                    {"tid", static_cast<int>(task.stream)},
                                    {"args", std::move(args)}});
    }

  for (size_t r = 0; r < trace.ranks.size() && r < g.ranks.size(); ++r)
    for (const MemorySample& s : trace.ranks[r].memory_curve)
      events.push_back(ordered_json{{"name", "memory"},
                                    {"ph", "C"},
                                    {"pid", g.ranks[r].gpu},
                                    {"ts", s.time_s * kUsPerS},
                                    {"args", ordered_json{{"GiB", s.bytes / kBytesPerGiB}}}});

  ordered_json out;
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ms";
  out["otherData"] = ordered_json{{"iteration_time_s", trace.iteration_time_s}};
  return out.dump();
}

}  // namespace proteus
