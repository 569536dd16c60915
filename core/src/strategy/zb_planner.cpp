// ZB-H1 / ZB-2P planned from pass times: the zero-bubble runtime's heuristic
// (megatron/core/pipeline_parallel/auto_schedule.py, Graph.manual_order and initial_solution).
// It walks the micro-batches in rounds: round 0 places the first forward on every stage, then
// as many further forwards per stage as fit before the first backward reaches it (fewer on
// later stages), then the first backward from the last stage up; each later round places one
// forward per stage (unless the stage is far enough ahead that a forward would delay the next
// stage's backward) and one backward per stage, filling the wait before each with deferred W
// passes, and places a W whenever the next pass would exceed the memory limit.
#include <algorithm>
#include <string>

#include "proteus/error.h"
#include "zb_planner.h"

namespace proteus {

namespace {

enum Kind { kF = 0, kB = 1, kW = 2 };

struct Variant {
  bool allow_bubble_before_first_b, prioritize_b, no_bubble_greedy;
};

class ManualOrder {
 public:
  ManualOrder(const ZbPlanInputs& in, Variant v)
      : in_(in),
        v_(v),
        p_(in.stages),
        m_(in.micro_batches),
        count_(3, std::vector<int>(P(), 0)),
        mem_(P(), 0),
        end_(P(), 0),
        bubble_(P(), 0),
        t_(static_cast<size_t>(3 * p_ * m_), 0),
        order_(P()) {}

  // Plays the variant; false when a pass would not fit the memory limit with no W to run.
  bool run() {
    for (int i = 0; i < m_; ++i)
      if (!(i == 0 ? first_round() : round(i))) return false;
    for (int s = 0; s < p_; ++s)
      while (n(kW, s) < m_) put(s, kW);
    return true;
  }

  // The longest stage span: its last W's end minus its first F's start.
  int64_t longest_stage() const {
    int64_t best = 0;
    for (int s = 0; s < p_; ++s) best = std::max(best, t(kW, s, m_ - 1) - t(kF, s, 0) + cost(kF, s));
    return best;
  }

  std::vector<std::vector<Pass>> take_order() { return std::move(order_); }

 private:
  size_t P() const { return static_cast<size_t>(p_); }
  int& n(int kind, int s) { return count_[static_cast<size_t>(kind)][static_cast<size_t>(s)]; }
  int64_t cost(int kind, int s) const {
    const auto& c = kind == kF ? in_.cost_f : kind == kB ? in_.cost_b : in_.cost_w;
    return c[static_cast<size_t>(s)];
  }
  int64_t mem(int kind, int s) const {
    const auto& c = kind == kF ? in_.mem_f : kind == kB ? in_.mem_b : in_.mem_w;
    return c[static_cast<size_t>(s)];
  }
  int64_t max_mem(int s) const { return in_.max_mem[static_cast<size_t>(s)]; }
  size_t id(int kind, int s, int mb) const { return static_cast<size_t>((kind * p_ + s) * m_ + mb); }
  int64_t t(int kind, int s, int mb) const { return t_[id(kind, s, mb)]; }
  int64_t& e(int s) { return end_[static_cast<size_t>(s)]; }
  int64_t max_bubble() const { return *std::max_element(bubble_.begin(), bubble_.end()); }
  int64_t slack(int s) const { return max_bubble() - bubble_[static_cast<size_t>(s)]; }

  // Runs the stage's next pass of `kind` as early as the stage and its input allow.
  void put(int s, int kind) {
    const int mb = n(kind, s);
    const int64_t c = cost(kind, s);
    const int64_t no_bubble = e(s) + c;
    int64_t end = no_bubble;
    if (s > 0 && kind == kF) end = std::max(end, t(kF, s - 1, mb) + in_.cost_comm + c);
    if (s < p_ - 1 && kind == kB) end = std::max(end, t(kB, s + 1, mb) + in_.cost_comm + c);
    if (n(kF, s) > 0) bubble_[static_cast<size_t>(s)] += end - no_bubble;
    e(s) = end;
    t_[id(kind, s, mb)] = end;
    mem_[static_cast<size_t>(s)] += mem(kind, s);
    order_[static_cast<size_t>(s)].push_back({kind == kF   ? PassKind::F
                                              : kind == kB ? PassKind::B
                                                           : PassKind::W,
                                              mb, 0});
    ++n(kind, s);
  }

  // W passes until a pass allocating `bytes` fits; false if none is left to run.
  bool make_room(int s, int64_t bytes) {
    while (mem_[static_cast<size_t>(s)] + bytes > max_mem(s)) {
      if (n(kW, s) >= n(kB, s)) return false;
      put(s, kW);
    }
    return true;
  }

  // Fills the wait for an input that arrives at `ready` with W passes: those that end by then,
  // and one more when the gap is larger than the stage's slack against the largest bubble (or
  // within it, with no_bubble_greedy).
  void fill_wait(int s, int64_t ready) {
    while (n(kW, s) < n(kB, s) && e(s) + cost(kW, s) <= ready) put(s, kW);
    if (n(kW, s) < n(kB, s) && e(s) < ready) {
      if (ready - e(s) <= slack(s)) {
        if (v_.no_bubble_greedy) put(s, kW);
      } else {
        put(s, kW);
      }
    }
  }

  bool first_round() {
    for (int s = 0; s < p_; ++s) put(s, kF);
    std::vector<int> extra(P(), 0);
    int64_t last_t = 0;  // when the first backward reaches the stage below
    for (int s = p_ - 1; s >= 0; --s) {
      if (s == p_ - 1) {
        last_t = t(kF, s, 0) + cost(kB, s);
        continue;
      }
      int64_t held = mem_[static_cast<size_t>(s)], busy = e(s);
      auto& k = extra[static_cast<size_t>(s)];
      while (n(kF, s) + k < m_ && held + mem(kF, s) <= max_mem(s)) {
        if (v_.allow_bubble_before_first_b ? busy + cost(kF, s) > last_t + in_.cost_comm
                                           : busy >= last_t + in_.cost_comm)
          break;
        held += mem(kF, s);
        busy += cost(kF, s);
        ++k;
      }
      last_t = std::max(busy, last_t + in_.cost_comm) + cost(kB, s);
    }
    for (int s = 1; s < p_; ++s) {
      auto& k = extra[static_cast<size_t>(s)];
      while (k > 0 && k >= extra[static_cast<size_t>(s - 1)] && n(kF, s) + k < m_) --k;
    }
    for (int s = 0; s < p_; ++s)
      for (int k = 0; k < extra[static_cast<size_t>(s)]; ++k) put(s, kF);
    for (int s = p_ - 1; s >= 0; --s) put(s, kB);
    return true;
  }

  // Whether stage s, two or more forwards ahead of the next, should hold its forward back so
  // as not to delay the next stage's forward-and-backward (prioritize_b).
  bool hold_forward(int s) {
    const int64_t next_plus_fb = e(s + 1) + cost(kF, s + 1) + cost(kB, s + 1) + in_.cost_comm;
    if (e(s) >= next_plus_fb) return true;
    int64_t w_cost = 0, held = mem_[static_cast<size_t>(s)] + mem(kF, s);
    for (int w = 0; held > max_mem(s) && n(kW, s) + w < n(kB, s); ++w) {
      w_cost += cost(kW, s);
      held += mem(kW, s);
    }
    if (e(s) + cost(kF, s) + w_cost <= next_plus_fb) return false;
    return next_plus_fb - e(s) <= slack(s);
  }

  bool round(int i) {
    std::vector<int> want_f(P(), 0);
    for (int s = 0; s < p_; ++s) {
      if (n(kF, s) >= m_) continue;
      if (s + 1 < p_ && n(kF, s) >= n(kF, s + 1) + 2 && v_.prioritize_b && hold_forward(s)) continue;
      want_f[static_cast<size_t>(s)] = 1;
    }
    for (int s = p_ - 2; s >= 0; --s)
      want_f[static_cast<size_t>(s)] =
          std::min(want_f[static_cast<size_t>(s)], want_f[static_cast<size_t>(s + 1)]);
    for (int s = 0; s < p_; ++s) {
      if (want_f[static_cast<size_t>(s)] == 0) continue;
      if (!make_room(s, mem(kF, s))) return false;
      if (s > 0) fill_wait(s, t(kF, s - 1, n(kF, s)) + in_.cost_comm);
      put(s, kF);
    }
    for (int s = p_ - 1; s >= 0; --s) {
      if (n(kB, s) != i || n(kF, s) <= i) return false;  // auto_schedule.py asserts b[j] == i
      if (!make_room(s, mem(kB, s))) return false;
      if (s + 1 < p_) fill_wait(s, t(kB, s + 1, i) + in_.cost_comm);
      if (s == 0 && n(kF, s) == m_)
        while (n(kW, s) < n(kB, s)) put(s, kW);
      put(s, kB);
    }
    return true;
  }

  const ZbPlanInputs& in_;
  Variant v_;
  int p_, m_;
  std::vector<std::vector<int>> count_;  // [kind][stage]: passes placed
  std::vector<int64_t> mem_, end_, bubble_;
  std::vector<int64_t> t_;  // end time of each pass, 0 until placed
  std::vector<std::vector<Pass>> order_;
};

void check_inputs(const ZbPlanInputs& in) {
  const auto p = static_cast<size_t>(in.stages);
  const bool sized = in.cost_f.size() == p && in.cost_b.size() == p && in.cost_w.size() == p &&
                     in.mem_f.size() == p && in.mem_b.size() == p && in.mem_w.size() == p &&
                     in.max_mem.size() == p;
  if (in.stages < 1 || in.micro_batches < 1 || !sized)
    throw Error("internal", "strategy.schedule", "zero-bubble planner: inputs not sized per stage");
}

}  // namespace

std::vector<std::vector<Pass>> zb_planned_order(const ZbPlanInputs& in) {
  check_inputs(in);
  std::vector<std::vector<Pass>> best;
  int64_t best_time = 0;
  for (bool allow : {true, false})
    for (bool prioritize : {true, false})
      for (bool greedy : {true, false}) {
        ManualOrder play(in, {allow, prioritize, greedy});
        if (!play.run()) continue;
        const int64_t time = play.longest_stage();
        if (best.empty() || time < best_time) {
          best_time = time;
          best = play.take_order();
        }
      }
  if (best.empty())
    throw invalid_config("strategy.schedule",
                         "the zero-bubble planner finds no order within its memory limit of " +
                             std::to_string(in.max_mem[0]) +
                             " bytes on stage 0 (the runtime raises \"Cannot fit memory\"); raise the "
                             "limit or use the unit-time plan (strategy.zb_plan \"unit\")");
  return best;
}

}  // namespace proteus
