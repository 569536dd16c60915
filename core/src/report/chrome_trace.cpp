// Trace -> Chrome trace event format (the JSON object form), which Perfetto and
// chrome://tracing open: a process per simulated rank (pid = its GPU id), a thread per stream
// (tid = stream index), one complete ("X") event per task with times in microseconds, and the
// rank's memory as a counter ("C") track when the trace recorded memory curves.
//
// Written straight into one string rather than built as a JSON document and dumped: a trace
// has millions of events, and the document cost more than the simulation (405B scenario:
// +1.8 s on a 1.5 s run). The text is what nlohmann's compact dump() of the same document
// gives: numbers through nlohmann's own shortest round-trip formatter, strings escaped alike.
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "proteus/report.h"
#include "proteus/units.h"
#include "report_names.h"

namespace proteus {
namespace {

class Writer {
 public:
  std::string out;

  Writer& raw(const char* s) {
    out += s;
    return *this;
  }
  Writer& integer(int64_t v) {
    out += std::to_string(v);
    return *this;
  }
  // As nlohmann's serializer writes a double: non-finite as null, otherwise the shortest
  // text that reads back as the same double, with ".0" on integral values.
  Writer& number(double v) {
    if (!std::isfinite(v)) return raw("null");
    char buf[64];
    char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf - 1, v);
    out.append(buf, static_cast<size_t>(end - buf));
    return *this;
  }
  // A JSON string: quotes, backslashes and control characters escaped as nlohmann does.
  Writer& str(const std::string& s) {
    out += '"';
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += ch;
          }
      }
    }
    out += '"';
    return *this;
  }
};

void metadata(Writer& w, bool& first, const char* name, int pid, int tid, const char* key,
              const std::string* text, int64_t value) {
  w.raw(first ? "{\"name\":" : ",{\"name\":").str(name).raw(",\"ph\":\"M\",\"pid\":").integer(pid);
  w.raw(",\"tid\":").integer(tid).raw(",\"args\":{").str(key).raw(":");
  if (text)
    w.str(*text);
  else
    w.integer(value);
  w.raw("}}");
  first = false;
}

}  // namespace

std::string chrome_trace(const ReportInputs& in) {
  const ExecGraph& g = in.graph;
  const Trace& trace = in.trace;
  constexpr double kUsPerS = 1.0 / kSecondsPerUs;
  Writer w;
  w.out.reserve(g.tasks.size() * 200 + 4096);
  w.raw("{\"traceEvents\":[");
  bool first = true;

  for (size_t r = 0; r < g.ranks.size(); ++r) {
    const SimRank& rank = g.ranks[r];
    std::string name = "GPU " + std::to_string(rank.gpu) + " (stage " + std::to_string(rank.stage);
    if (rank.multiplicity > 1) name += ", stands for " + std::to_string(rank.multiplicity) + " GPUs";
    name += ")";
    metadata(w, first, "process_name", rank.gpu, 0, "name", &name, 0);
    metadata(w, first, "process_sort_index", rank.gpu, 0, "sort_index", nullptr, static_cast<int64_t>(r));
    for (int s = 0; s < kNumStreams; ++s) {
      const std::string stream = to_string(static_cast<Stream>(s));
      metadata(w, first, "thread_name", rank.gpu, s, "name", &stream, 0);
    }
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
      w.raw(first ? "{\"name\":" : ",{\"name\":").str(report::task_name(g, t));
      first = false;
      w.raw(",\"cat\":").str(report::task_kind(g, t)).raw(",\"ph\":\"X\",\"ts\":").number(start_s * kUsPerS);
      w.raw(",\"dur\":").number((end_s - start_s) * kUsPerS);
      w.raw(",\"pid\":").integer(g.ranks[static_cast<size_t>(task.rank)].gpu);
      w.raw(",\"tid\":").integer(static_cast<int>(task.stream));
      w.raw(",\"args\":{\"mb\":").integer(task.micro_batch).raw(",\"phase\":").str(to_string(task.phase));
      if (task.kind == TaskKind::Collective) {
        const Collective& c = g.collectives[static_cast<size_t>(task.collective)];
        w.raw(",\"collective\":").str(to_string(c.kind)).raw(",\"bytes\":").number(c.bytes);
        w.raw(",\"group_size\":").integer(static_cast<int64_t>(c.group.size()));
      } else {
        w.raw(",\"flops\":").number(g.work_of(task).flops).raw(",\"bytes\":").number(g.work_of(task).bytes);
      }
      w.raw("}}");
    }

  for (size_t r = 0; r < trace.ranks.size() && r < g.ranks.size(); ++r)
    for (const MemorySample& s : trace.ranks[r].memory_curve) {
      w.raw(first ? "{\"name\":\"memory\",\"ph\":\"C\",\"pid\":"
                  : ",{\"name\":\"memory\",\"ph\":\"C\",\"pid\":");
      first = false;
      w.integer(g.ranks[r].gpu).raw(",\"ts\":").number(s.time_s * kUsPerS);
      w.raw(",\"args\":{\"GiB\":").number(s.bytes / kBytesPerGiB).raw("}}");
    }

  w.raw("],\"displayTimeUnit\":\"ms\",\"otherData\":{\"iteration_time_s\":").number(trace.iteration_time_s);
  w.raw("}}");
  return std::move(w.out);
}

}  // namespace proteus
