// blocking_p2p.h: the dependencies of Megatron-Core's blocking pipeline point-to-point.
#include "blocking_p2p.h"

#include <algorithm>
#include <utility>

namespace proteus {
namespace {

constexpr int kNone = -1;

// One rank's passes and the calls between them.
struct RankPasses {
  std::vector<PassSpan> spans;
  std::vector<bool> calls;

  // The pass that emitted task t; kNone outside every pass (the iteration's opening and tail).
  int pass_of(int t) const {
    const auto after = std::upper_bound(spans.begin(), spans.end(), t,
                                        [](int id, const PassSpan& s) { return id < s.first; });
    if (after == spans.begin()) return kNone;
    const auto i = static_cast<size_t>(after - spans.begin()) - 1;
    return t < spans[i].end ? static_cast<int>(i) : kNone;
  }
  // The call that sends what pass i produced: the first at or after it (the last pass has one).
  int call_at_or_after(int i) const {
    for (size_t j = static_cast<size_t>(i); j < calls.size(); ++j)
      if (calls[j]) return static_cast<int>(j);
    return static_cast<int>(calls.size()) - 1;
  }
  // The call that receives what pass m reads: the last before it; kNone: posted before the first.
  int call_before(int m) const {
    for (int k = m - 1; k >= 0; --k)
      if (calls[static_cast<size_t>(k)]) return k;
    return kNone;
  }
};

}  // namespace

// Where the host reaches the call after a pass: the pass's last compute task has been queued, and
// the call's NCCL kernels start after it (kNone: the pass ran no compute).
int last_compute(const ExecGraph& g, const PassSpan& s) {
  for (int t = s.end - 1; t >= s.first; --t)
    if (g.tasks[static_cast<size_t>(t)].stream == Stream::Compute) return t;
  return kNone;
}

// The rank's first compute task from task id `from` on (kNone: none). A rank's compute queue is
// in program order, which is id order for the schedules this applies to (no overlapped groups).
int first_compute_from(const ExecGraph& g, int rank, int from) {
  const std::vector<int>& q =
      g.queues[static_cast<size_t>(rank) * kNumStreams + static_cast<size_t>(Stream::Compute)];
  const auto it = std::lower_bound(q.begin(), q.end(), from);
  return it == q.end() ? kNone : *it;
}

// The earliest task of another rank that waits on each send (its consumer on the receiving
// stage), by send task id; kNone where nothing waits.
std::vector<int> first_consumers(const ExecGraph& g, const std::vector<std::pair<int, int>>& receives) {
  std::vector<int> consumer(g.tasks.size(), kNone);
  for (const auto& [send, task] : receives) {
    if (g.tasks[static_cast<size_t>(send)].rank == g.tasks[static_cast<size_t>(task)].rank) continue;
    int& c = consumer[static_cast<size_t>(send)];
    if (c == kNone || task < c) c = task;
  }
  return consumer;
}

// Appends the (task, dependency) pairs to the CSR, each task's new dependencies after its own,
// dropping repeats. The untouched ranges move as whole blocks: the graph has millions of
// dependencies and a few per send are added.
void merge_added_deps(std::vector<std::pair<int, int>> added, ExecGraph* exec) {
  ExecGraph& g = *exec;
  std::sort(added.begin(), added.end());
  added.erase(std::unique(added.begin(), added.end()), added.end());
  const size_t n = g.tasks.size();
  std::vector<int> deps;
  deps.reserve(g.deps.size() + added.size());
  std::vector<int> extra(n + 1, 0);  // dependencies added before task t, then its offset shift
  size_t copied = 0;                 // tasks whose dependencies are in `deps`
  for (size_t a = 0; a < added.size();) {
    const auto t = static_cast<size_t>(added[a].first);
    deps.insert(deps.end(), g.deps.begin() + g.dep_offsets[copied], g.deps.begin() + g.dep_offsets[t + 1]);
    const auto own_begin = g.deps.begin() + g.dep_offsets[t], own_end = g.deps.begin() + g.dep_offsets[t + 1];
    int count = 0;
    for (; a < added.size() && static_cast<size_t>(added[a].first) == t; ++a)
      if (std::find(own_begin, own_end, added[a].second) == own_end) {
        deps.push_back(added[a].second);
        ++count;
      }
    extra[t + 1] = count;
    copied = t + 1;
  }
  deps.insert(deps.end(), g.deps.begin() + g.dep_offsets[copied], g.deps.end());
  for (size_t t = 0; t < n; ++t) {
    extra[t + 1] += extra[t];
    g.dep_offsets[t + 1] += extra[t + 1];
  }
  g.deps = std::move(deps);
}

std::vector<bool> megatron_p2p_calls(const std::vector<PassKind>& order, bool paired_steady_state) {
  std::vector<bool> calls(order.size(), true);
  if (!paired_steady_state) return calls;
  const auto last_f = std::find(order.rbegin(), order.rend(), PassKind::F);
  const bool steady_state =
      last_f != order.rend() && std::find(last_f, order.rend(), PassKind::B) != order.rend();
  if (!steady_state) return calls;
  for (size_t i = 0; i + 1 < order.size(); ++i)
    if (order[i] == PassKind::F && order[i + 1] == PassKind::B) calls[i] = false;
  return calls;
}

void add_blocking_p2p(std::vector<std::vector<PassSpan>> spans_by_rank, bool paired_steady_state,
                      const std::vector<int>& sends, const std::vector<std::pair<int, int>>& receives,
                      ExecGraph* exec) {
  const ExecGraph& g = *exec;
  std::vector<RankPasses> ranks(spans_by_rank.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].spans = std::move(spans_by_rank[r]);
    std::vector<PassKind> kinds;
    for (const PassSpan& s : ranks[r].spans) kinds.push_back(s.kind);
    ranks[r].calls = megatron_p2p_calls(kinds, paired_steady_state);
  }
  const std::vector<int> consumer = first_consumers(g, receives);
  std::vector<std::pair<int, int>> added;  // (task, the task it now waits for)
  auto wait = [&added](int task, int on) {
    if (task != kNone && on != kNone && task != on) added.emplace_back(task, on);
  };
  for (const int send : sends) {
    const auto s = static_cast<size_t>(send);
    const int sender = g.tasks[s].rank;
    const RankPasses& out = ranks[static_cast<size_t>(sender)];
    const int produced_in = out.pass_of(send);
    if (produced_in == kNone) continue;
    // The sender's call: the send starts there, and the sender goes on once it has ended.
    const PassSpan& before_send = out.spans[static_cast<size_t>(out.call_at_or_after(produced_in))];
    wait(send, last_compute(g, before_send));
    wait(first_compute_from(g, sender, before_send.end), send);
    // The receiver's call: posted after the pass before it, left once the transfer has ended.
    const int c = consumer[s];
    if (c == kNone) continue;
    const int receiver = g.tasks[static_cast<size_t>(c)].rank;
    const RankPasses& in = ranks[static_cast<size_t>(receiver)];
    const int read_in = in.pass_of(c);
    if (read_in == kNone) continue;
    const int call = in.call_before(read_in);
    if (call == kNone) continue;
    const PassSpan& before_receive = in.spans[static_cast<size_t>(call)];
    wait(send, last_compute(g, before_receive));
    wait(first_compute_from(g, receiver, before_receive.end), send);
  }
  merge_added_deps(std::move(added), exec);
}

}  // namespace proteus
