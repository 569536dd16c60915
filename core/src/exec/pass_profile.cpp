// The zero-bubble runtime's timers on a played graph (simulation.h, profile_passes).
#include <map>
#include <tuple>

#include "proteus/schedule.h"
#include "proteus/simulation.h"

namespace proteus {

namespace {

enum PassSlot { kF = 0, kB = 1, kW = 2, kNone = 3 };

// The pass a compute task belongs to: the recompute before a backward is timed with it.
PassSlot slot_of(Phase phase) {
  switch (phase) {
    case Phase::Forward:
      return kF;
    case Phase::BackwardInput:
    case Phase::Recompute:
      return kB;
    case Phase::BackwardWeight:
      return kW;
    default:
      return kNone;
  }
}

struct PassSpan {
  double start = 0, end = 0;
  bool seen = false;
};

}  // namespace

PassProfile profile_passes(const ExecGraph& g, const Trace& trace) {
  const auto p = static_cast<size_t>(std::max(1, g.pipeline_stages));
  // (rank, chunk, micro-batch, pass) -> first start and last end of its compute tasks. An
  // ordered map: the sums below add in one order natively and in WebAssembly.
  std::map<std::tuple<int, int, int, int>, PassSpan> spans;
  std::map<std::tuple<int, int, int>, double> first_bytes;  // (rank, chunk, pass): micro-batch 0
  double send_sum = 0;
  int sends = 0;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const Task& task = g.tasks[t];
    const double start = trace.task_start_s[t], end = trace.task_end_s[t];
    if (task.kind == TaskKind::Collective && task.stream == Stream::PpComm &&
        g.collectives[static_cast<size_t>(task.collective)].kind == CollectiveKind::SendRecv) {
      send_sum += end - start;
      ++sends;
      continue;
    }
    const PassSlot slot = slot_of(task.phase);
    if (task.kind != TaskKind::Compute || task.stream != Stream::Compute || task.micro_batch < 0 ||
        slot == kNone)
      continue;
    PassSpan& s = spans[{task.rank, task.stage, task.micro_batch, slot}];
    s.start = s.seen ? std::min(s.start, start) : start;
    s.end = s.seen ? std::max(s.end, end) : end;
    s.seen = true;
    if (task.micro_batch == 0)
      first_bytes[{task.rank, task.stage, slot}] +=
          g.memory_change(static_cast<int>(t), MemCategory::Activations);
  }
  std::vector<std::array<double, 3>> time_sum(p, {0, 0, 0}), byte_sum(p, {0, 0, 0});
  std::vector<std::array<int, 3>> time_n(p, {0, 0, 0}), byte_n(p, {0, 0, 0});
  for (const auto& [key, span] : spans) {
    const size_t stage = static_cast<size_t>(g.ranks[static_cast<size_t>(std::get<0>(key))].stage);
    const int slot = std::get<3>(key);
    time_sum[stage][slot] += span.end - span.start;
    ++time_n[stage][slot];
  }
  for (const auto& [key, bytes] : first_bytes) {
    const size_t stage = static_cast<size_t>(g.ranks[static_cast<size_t>(std::get<0>(key))].stage);
    byte_sum[stage][std::get<2>(key)] += bytes;
    ++byte_n[stage][std::get<2>(key)];
  }
  auto mean = [](double sum, int n) { return n > 0 ? sum / n : 0.0; };
  PassProfile out;
  for (size_t s = 0; s < p; ++s) {
    out.f_s.push_back(mean(time_sum[s][kF], time_n[s][kF]));
    out.b_s.push_back(mean(time_sum[s][kB], time_n[s][kB]));
    out.w_s.push_back(mean(time_sum[s][kW], time_n[s][kW]));
    out.f_bytes.push_back(mean(byte_sum[s][kF], byte_n[s][kF]));
    out.w_bytes.push_back(mean(byte_sum[s][kW], byte_n[s][kW]));
  }
  out.send_s = mean(send_sum, sends);
  return out;
}

}  // namespace proteus
