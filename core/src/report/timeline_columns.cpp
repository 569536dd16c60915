// Trace -> the timeline as columns (proteus/timeline_columns.h). One pass over the shown
// tasks in queue order; strings are interned once per (label, phase), not once per span.
#include "proteus/timeline_columns.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "proteus/report.h"
#include "report_names.h"

namespace proteus {
namespace {

constexpr Phase kPhases[] = {Phase::Forward,   Phase::BackwardInput, Phase::BackwardWeight,
                             Phase::Recompute, Phase::Optimizer,     Phase::Sync};
constexpr CollectiveKind kCollectiveKinds[] = {CollectiveKind::AllReduce,     CollectiveKind::AllGather,
                                               CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
                                               CollectiveKind::SendRecv,      CollectiveKind::RingExchange};
constexpr size_t kNumPhases = sizeof(kPhases) / sizeof(kPhases[0]);

// Nodes a collective's group spans (GPU ids are node-major: gpu / gpus_per_node).
int32_t nodes_spanned(const Collective& c, int gpus_per_node) {
  std::vector<int> node;
  node.reserve(c.group.size());
  for (int gpu : c.group) node.push_back(gpus_per_node > 0 ? gpu / gpus_per_node : 0);
  std::sort(node.begin(), node.end());
  return static_cast<int32_t>(std::unique(node.begin(), node.end()) - node.begin());
}

}  // namespace

std::vector<int> timeline_selection(const ReportInputs& in, std::string* warning) {
  const ExecGraph& g = in.graph;
  const Trace& trace = in.trace;
  const int64_t cap = std::max<int64_t>(0, in.config.simulation.max_timeline_spans);
  const int64_t total = static_cast<int64_t>(g.tasks.size());
  double horizon_s = std::numeric_limits<double>::infinity();
  if (total > cap) {
    std::vector<double> starts(trace.task_start_s.begin(), trace.task_start_s.end());
    std::nth_element(starts.begin(), starts.begin() + cap, starts.end());
    horizon_s = starts[static_cast<size_t>(cap)];  // spans starting strictly before it: at most cap
  }
  // Spans starting exactly at the horizon fill what the cap leaves, in queue order.
  int64_t at_horizon_room = cap;
  if (total > cap)
    for (double start : trace.task_start_s) at_horizon_room -= start < horizon_s ? 1 : 0;
  std::vector<int> shown;
  shown.reserve(static_cast<size_t>(std::min(total, cap)));
  for (size_t q = 0; q < g.queues.size(); ++q)
    for (int t : g.queues[q]) {
      const double start = trace.task_start_s[static_cast<size_t>(t)];
      if (start > horizon_s) continue;
      if (start == horizon_s && at_horizon_room-- <= 0) continue;
      shown.push_back(t);
    }
  if (total > cap && warning) {
    std::ostringstream horizon;
    horizon << horizon_s;
    *warning = "The timeline shows " + std::to_string(shown.size()) + " of the " + std::to_string(total) +
               " spans: every rank up to t = " + horizon.str() +
               " s (raise simulation.max_timeline_spans to see more).";
  }
  return shown;
}

TimelineColumns timeline_columns(const ReportInputs& in) {
  const ExecGraph& g = in.graph;
  const Trace& trace = in.trace;
  const std::vector<int> shown = timeline_selection(in, nullptr);
  const size_t n = shown.size();
  TimelineColumns c;
  c.total_tasks = static_cast<int64_t>(g.tasks.size());
  for (int s = 0; s < kNumStreams; ++s) c.streams.emplace_back(to_string(static_cast<Stream>(s)));
  for (Phase p : kPhases) c.phases.emplace_back(to_string(p));
  // kinds: the phases, then the collective kinds (report::task_kind's two vocabularies).
  c.kinds = c.phases;
  for (CollectiveKind k : kCollectiveKinds) c.kinds.emplace_back(to_string(k));

  c.start_s.resize(n);
  c.end_s.resize(n);
  c.rank.resize(n);
  c.micro_batch.resize(n);
  c.stream.resize(n);
  c.kind.resize(n);
  c.phase.resize(n);
  c.name.resize(n);
  c.bytes.resize(n);
  c.flops.resize(n);
  c.group.resize(n);
  c.nodes.resize(n);
  c.peer.assign(n, -1);

  std::vector<int> span_of(g.tasks.size(), -1);
  for (size_t i = 0; i < n; ++i) span_of[static_cast<size_t>(shown[i])] = static_cast<int>(i);
  // Name index per (label, phase); the last label slot is "no label".
  std::vector<int64_t> name_of((g.labels.size() + 1) * kNumPhases, -1);
  std::vector<int32_t> nodes_of(g.collectives.size(), -1);
  const int gpus_per_node = in.config.cluster.gpus_per_node;

  c.dep_offsets.reserve(n + 1);
  c.dep_offsets.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    const int t = shown[i];
    const Task& task = g.tasks[static_cast<size_t>(t)];
    c.start_s[i] = trace.task_start_s[static_cast<size_t>(t)];
    c.end_s[i] = trace.task_end_s[static_cast<size_t>(t)];
    c.rank[i] = g.ranks[static_cast<size_t>(task.rank)].gpu;
    c.micro_batch[i] = task.micro_batch;
    c.stream[i] = static_cast<uint8_t>(task.stream);
    c.phase[i] = static_cast<uint8_t>(task.phase);
    const bool labelled = task.label >= 0 && static_cast<size_t>(task.label) < g.labels.size();
    int64_t& name = name_of[(labelled ? static_cast<size_t>(task.label) : g.labels.size()) * kNumPhases +
                            static_cast<size_t>(task.phase)];
    if (name < 0) {
      name = static_cast<int64_t>(c.names.size());
      c.names.push_back(report::task_name(g, t));
    }
    c.name[i] = static_cast<uint32_t>(name);
    if (task.kind == TaskKind::Collective && task.collective >= 0) {
      const Collective& col = g.collectives[static_cast<size_t>(task.collective)];
      c.kind[i] = static_cast<uint8_t>(kNumPhases + static_cast<size_t>(col.kind));
      c.bytes[i] = col.bytes;
      c.flops[i] = 0;
      c.group[i] = static_cast<int32_t>(col.group.size());
      int32_t& nodes = nodes_of[static_cast<size_t>(task.collective)];
      if (nodes < 0) nodes = nodes_spanned(col, gpus_per_node);
      c.nodes[i] = nodes;
      if (col.kind == CollectiveKind::SendRecv)
        for (int m : col.member_tasks)
          if (m != t && span_of[static_cast<size_t>(m)] >= 0) c.peer[i] = span_of[static_cast<size_t>(m)];
    } else {
      c.kind[i] = c.phase[i];
      c.bytes[i] = g.work_of(task).bytes;
      c.flops[i] = g.work_of(task).flops;
      c.group[i] = 0;
      c.nodes[i] = 0;
    }
    const size_t d0 = static_cast<size_t>(g.dep_offsets[static_cast<size_t>(t)]);
    const size_t d1 = static_cast<size_t>(g.dep_offsets[static_cast<size_t>(t) + 1]);
    for (size_t d = d0; d < d1; ++d) {
      const int dep_span = span_of[static_cast<size_t>(g.deps[d])];
      if (dep_span >= 0) c.deps.push_back(dep_span);
    }
    c.dep_offsets.push_back(static_cast<int32_t>(c.deps.size()));
  }
  return c;
}

}  // namespace proteus
