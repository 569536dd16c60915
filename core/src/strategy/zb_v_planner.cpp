// ZB-V planned from pass times: the zero-bubble runtime's V-schedule heuristic
// (megatron/core/pipeline_parallel/v_schedule.py, PipelineGraph.try_v_schedule and
// get_v_schedule). Each stage holds two chunks: chunk 0 runs forward down the stages, chunk 1
// back up. The planner fills the start with forwards (as many as memory and the first chunk-1
// forward's arrival allow), then alternates rounds of one backward and one forward per stage,
// deferring W passes into the waits and running them when memory runs out. A play is refined
// by playing again with its stage bubbles as the "approved" ones, while the largest bubble
// shrinks.
//
// Inside the planner a backward's chunk index follows the direction of travel (0: the backward
// of the chunk-1 forward, which starts on stage 0); the order it returns uses the model chunk.
#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "proteus/error.h"
#include "zb_planner.h"

namespace proteus {

namespace {

struct Play {
  std::vector<std::vector<Pass>> order;
  int64_t max_bubble = 0;
  bool ok = false;
};

class VPlay {
 public:
  VPlay(const ZbVPlanInputs& in, bool fill_f, bool fill_b, std::vector<int64_t> approved)
      : in_(in),
        p_(in.stages),
        m_(in.micro_batches),
        fill_f_(fill_f),
        fill_b_(fill_b),
        approved_(std::move(approved)),
        count_(P(), std::vector<int>(6, 0)),
        end_(static_cast<size_t>(6 * p_ * m_), -1),
        cur_(P(), 0),
        mem_(P(), 0),
        bubble_(P(), 0),
        pending_w_(P()),
        order_(P()) {
    if (approved_.empty()) approved_.assign(P(), -1);
    max_approved_ = *std::max_element(approved_.begin(), approved_.end());
  }

  Play run() {
    Play out;
    out.ok = warm_up() && steady() && drain();
    if (!out.ok) return out;
    out.max_bubble = max_stage_bubble(-1);
    out.order = std::move(order_);
    return out;
  }
  const std::vector<int64_t>& stage_bubbles() const { return bubble_; }
  int64_t max_approved() const { return max_approved_; }

 private:
  size_t P() const { return static_cast<size_t>(p_); }
  int& n(int cat, int chunk, int s) {
    return count_[static_cast<size_t>(s)][static_cast<size_t>(cat * 2 + chunk)];
  }
  int64_t cost(int cat) const { return cat == 0 ? in_.cost_f : cat == 1 ? in_.cost_b : in_.cost_w; }
  int64_t mem(int cat) const { return cat == 0 ? in_.mem_f : cat == 1 ? in_.mem_b : in_.mem_w; }
  size_t id(int cat, int chunk, int s, int mb) const {
    return static_cast<size_t>(((cat * 2 + chunk) * p_ + s) * m_ + mb);
  }
  // v_schedule.py indexes end_time[-1] (its last node) where a pass has no input to wait for.
  int64_t end_at(long long i) const { return i < 0 ? end_.back() : end_[static_cast<size_t>(i)]; }
  long long id_or_none(bool has, int cat, int chunk, int s, int mb) const {
    return has ? static_cast<long long>(id(cat, chunk, s, mb)) : -1;
  }

  int64_t max_stage_bubble(int s) const {
    int64_t b = *std::max_element(bubble_.begin(), bubble_.end());
    if (s >= 0) b = std::max(b, max_approved_ - approved_[static_cast<size_t>(s)]);
    return b;
  }

  bool put(int cat, int chunk, int s) {
    const int mb = n(cat, chunk, s);
    if (mb >= m_ || mem_[static_cast<size_t>(s)] + mem(cat) > in_.max_mem) return false;
    const int64_t no_bubble = cur_[static_cast<size_t>(s)] + cost(cat);
    int64_t end = no_bubble;
    if (cat < 2) {
      const bool up = chunk == 1;  // its input comes from stage s + 1
      if (up ? s < p_ - 1 : s > 0) {
        const int64_t input = end_[id(cat, chunk, up ? s + 1 : s - 1, mb)];
        if (input < 0) return false;  // the runtime's planner asserts it has run
        end = std::max(end, input + in_.cost_comm + cost(cat));
      }
    }
    if (n(0, 0, s) > 0) bubble_[static_cast<size_t>(s)] += end - no_bubble;
    end_[id(cat, chunk, s, mb)] = end;
    cur_[static_cast<size_t>(s)] = end;
    mem_[static_cast<size_t>(s)] += mem(cat);
    const int model_chunk = cat == 0 ? chunk : 1 - chunk;
    order_[static_cast<size_t>(s)].push_back({cat == 0   ? PassKind::F
                                              : cat == 1 ? PassKind::B
                                                         : PassKind::W,
                                              mb, model_chunk});
    if (cat == 1) pending_w_[static_cast<size_t>(s)].push_back(chunk);
    ++n(cat, chunk, s);
    return true;
  }

  bool put_w(int s) {
    auto& q = pending_w_[static_cast<size_t>(s)];
    if (q.empty()) return false;
    const int chunk = q.front();
    q.pop_front();
    return put(2, chunk, s);
  }
  bool has_w(int s) const { return !pending_w_[static_cast<size_t>(s)].empty(); }

  bool warm_up() {
    for (int s = 0; s < p_; ++s)
      if (!put(0, 0, s)) return false;
    for (int s = p_ - 1; s >= 0; --s) {
      if (s == p_ - 1) {
        if (!put(0, 1, s)) return false;
        continue;
      }
      const int64_t arrives = end_[id(0, 1, s + 1, 0)] + in_.cost_comm;
      while (mem_[static_cast<size_t>(s)] + in_.mem_f * (2 + s * 2) <= in_.max_mem &&
             cur_[static_cast<size_t>(s)] + in_.cost_f <= arrives && n(0, 0, s) < m_ - s)
        for (int j = 0; j <= s; ++j)
          if (!put(0, 0, j)) return false;
      if (!put(0, 1, s)) return false;
    }
    int chunk = 0;
    for (int s = 1; s < p_; ++s) {
      // Bounded: every pass of the loop places at least one forward or the play fails.
      for (int guard = 0; n(0, 0, s) + n(0, 1, s) < n(0, 0, s - 1) + n(0, 1, s - 1) ||
                          (n(0, 1, s) <= n(0, 1, s - 1) && n(0, 1, s - 1) < m_);
           ++guard) {
        if (guard > 4 * m_ + 4) return false;
        for (int j = p_ - 1; j >= s; --j)
          if (n(0, chunk, j) < m_ && !put(0, chunk, j)) return false;
        chunk = 1 - chunk;
      }
    }
    return true;
  }

  // W passes into the wait for an input ending at end_at(input), then one more if the wait is
  // longer than the stage's slack and `fill` says so.
  bool fill_wait(int s, long long input, bool fill) {
    while (has_w(s) && input >= 0 &&
           end_at(input) + in_.cost_comm >= cur_[static_cast<size_t>(s)] + in_.cost_w)
      if (!put_w(s)) return false;
    if (has_w(s) &&
        end_at(input) + in_.cost_comm - cur_[static_cast<size_t>(s)] >
            max_stage_bubble(s) - bubble_[static_cast<size_t>(s)] &&
        fill)
      return put_w(s);
    return true;
  }

  bool room_for(int s, int64_t bytes) {
    while (mem_[static_cast<size_t>(s)] + bytes > in_.max_mem)
      if (!put_w(s)) return false;
    return true;
  }

  bool backward_round() {
    for (int s = 0; s < p_; ++s)
      if (!room_for(s, in_.mem_b)) return false;
    std::vector<int> b0, b1;
    for (int s = 0; s < p_; ++s) {
      if (n(1, 1, s) >= n(1, 0, s))
        b0.push_back(s);
      else if (s == p_ - 1)
        b1.push_back(s);
      else if (end_[id(1, 1, s + 1, n(1, 1, s))] >= 0 || n(1, 0, s) >= m_)
        b1.push_back(s);
      else
        b0.push_back(s);
    }
    std::vector<std::pair<int, int>> ranks;
    for (auto it = b1.rbegin(); it != b1.rend(); ++it) ranks.push_back({*it, 1});
    for (int s : b0) ranks.push_back({s, 0});
    for (const auto& [s, chunk] : ranks) {
      const long long input = chunk == 1 ? id_or_none(s < p_ - 1, 1, 1, s + 1, n(1, 1, s))
                                         : id_or_none(s > 0, 1, 0, s - 1, n(1, 0, s));
      if (!fill_wait(s, input, chunk == 1 || fill_b_) || !put(1, chunk, s)) return false;
    }
    return true;
  }

  bool forward_round() {
    for (int s = 0; s < p_; ++s) {
      if (n(0, 1, s) >= m_) continue;
      int chunk = -1;
      if (n(0, 1, s) >= n(0, 0, s))
        chunk = 0;
      else if (s == p_ - 1)
        chunk = 1;
      else if (end_[id(0, 1, s + 1, n(0, 1, s))] >= 0)
        chunk = 1;
      else if (n(0, 0, s) < m_ && (s == 0 || end_[id(0, 0, s - 1, n(0, 0, s))] >= 0))
        chunk = 0;
      if (chunk < 0) continue;
      if (!room_for(s, in_.mem_f)) return false;
      const long long input = chunk == 0 ? id_or_none(s > 0, 0, 0, s - 1, n(0, 0, s))
                                         : id_or_none(s < p_ - 1, 0, 1, s + 1, n(0, 1, s));
      if (!fill_wait(s, input, fill_f_) || !put(0, chunk, s)) return false;
    }
    return true;
  }

  bool steady() {
    for (int r = 0; r < 2 * m_; ++r)
      if (!backward_round() || !forward_round()) return false;
    return true;
  }

  bool drain() {
    for (int s = 0; s < p_; ++s)
      while (has_w(s))
        if (!put_w(s)) return false;
    return true;
  }

  const ZbVPlanInputs& in_;
  int p_, m_;
  bool fill_f_, fill_b_;
  std::vector<int64_t> approved_;
  int64_t max_approved_ = -1;
  std::vector<std::vector<int>> count_;  // [stage][cat * 2 + chunk]
  std::vector<int64_t> end_;             // end time of each pass, -1 until placed
  std::vector<int64_t> cur_, mem_, bubble_;
  std::vector<std::deque<int>> pending_w_;  // chunks of the backwards whose W waits
  std::vector<std::vector<Pass>> order_;
};

// try_v_schedule: a play, then plays with its stage bubbles approved while the largest shrinks.
Play refined_play(const ZbVPlanInputs& in, bool fill_f, bool fill_b) {
  std::vector<int64_t> approved;
  Play best;
  for (int depth = 0; depth < 64; ++depth) {
    VPlay play(in, fill_f, fill_b, approved);
    Play p = play.run();
    if (!p.ok || (best.ok && p.max_bubble >= best.max_bubble)) break;
    const bool again = play.max_approved() < 0 || p.max_bubble < play.max_approved();
    approved = play.stage_bubbles();
    best = std::move(p);
    if (!again) break;
  }
  return best;
}

}  // namespace

std::vector<std::vector<Pass>> zb_v_planned_order(const ZbVPlanInputs& in) {
  if (in.stages < 1 || in.micro_batches < 1)
    throw Error("internal", "strategy.schedule", "zero-bubble V planner: no stages or micro-batches");
  Play best;
  for (bool fill_b : {true, false})
    for (bool fill_f : {true, false}) {
      Play p = refined_play(in, fill_f, fill_b);
      if (p.ok && (!best.ok || p.max_bubble < best.max_bubble)) best = std::move(p);
    }
  if (!best.ok)
    throw invalid_config("strategy.schedule",
                         "the zero-bubble V planner finds no order within its memory limit of " +
                             std::to_string(in.max_mem) +
                             " (2 p forwards; the runtime's planner asserts); use the unit-time plan "
                             "(strategy.zb_plan \"unit\")");
  return std::move(best.order);
}

}  // namespace proteus
