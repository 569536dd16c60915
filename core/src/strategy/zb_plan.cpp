// The zero-bubble runtime's plan from measured pass times (schedule.h, plan_zero_bubble): what
// zerobubble/runtime.py's get_zero_bubble_forward_backward_func gives its planners once the
// timers have concluded.
#include <algorithm>
#include <cmath>

#include "proteus/schedule.h"
#include "zb_planner.h"

namespace proteus {

namespace {

// Times in integer nanoseconds (the planners take integers); at least 1, as the runtime passes
// max(c, 1) for the communication.
int64_t ns(double seconds) { return std::max<int64_t>(1, std::llround(seconds * 1e9)); }

// sorted(a)[len(a) // 2]: the runtime's "mid value" (the upper median for an even count).
int64_t mid(std::vector<int64_t> a) {
  std::sort(a.begin(), a.end());
  return a[a.size() / 2];
}

std::vector<int64_t> ns_per_stage(const std::vector<double>& seconds) {
  std::vector<int64_t> out;
  for (double s : seconds) out.push_back(ns(s));
  return out;
}

// ZB-H1 / ZB-2P: "Using uniform f/b/w timing for now" (the median of the stages for every
// stage); the memory limit is --zero-bubble-max-pending-backward x max(f_mem[:2]); f + b + w = 0.
std::vector<std::vector<Pass>> planned_h(const PipelineSchedule& unit, int pending_per_stage,
                                         const PassProfile& profile) {
  const int p = unit.stages;
  ZbPlanInputs in;
  in.stages = p;
  in.micro_batches = unit.micro_batches;
  in.cost_f.assign(static_cast<size_t>(p), mid(ns_per_stage(profile.f_s)));
  in.cost_b.assign(static_cast<size_t>(p), mid(ns_per_stage(profile.b_s)));
  in.cost_w.assign(static_cast<size_t>(p), mid(ns_per_stage(profile.w_s)));
  in.cost_comm = ns(profile.send_s);
  int64_t largest_f = 0;
  for (int s = 0; s < p; ++s) {
    const int64_t f = std::max<int64_t>(1, std::llround(profile.f_bytes[static_cast<size_t>(s)]));
    const int64_t w = std::clamp<int64_t>(std::llround(profile.w_bytes[static_cast<size_t>(s)]), -f, 0);
    in.mem_f.push_back(f);
    in.mem_w.push_back(w);
    in.mem_b.push_back(-f - w);
    if (s < 2) largest_f = std::max(largest_f, f);
  }
  in.max_mem.assign(static_cast<size_t>(p), int64_t{pending_per_stage} * p * largest_f);
  return zb_planned_order(in);
}

// ZB-V: the medians of the stages' averages (avg_then_mid, at least 1) and the runtime's
// memory approximations, whose ratio is all that matters (max_mem = 2 p f_mem).
std::vector<std::vector<Pass>> planned_v(const PipelineSchedule& unit, const PassProfile& profile,
                                         double w_memory_fraction) {
  ZbVPlanInputs in;
  in.stages = unit.stages;
  in.micro_batches = unit.micro_batches;
  in.cost_f = mid(ns_per_stage(profile.f_s));
  in.cost_b = mid(ns_per_stage(profile.b_s));
  in.cost_w = mid(ns_per_stage(profile.w_s));
  in.cost_comm = ns(profile.send_s);
  constexpr int64_t kForward = 1'000'000;  // f_mem_approx, in millionths
  in.mem_f = kForward;
  in.mem_w = -std::llround(std::clamp(w_memory_fraction, 0.0, 1.0) * kForward);
  in.mem_b = -in.mem_f - in.mem_w;
  in.max_mem = 2 * int64_t{unit.stages} * kForward;
  return zb_v_planned_order(in);
}

bool profiled_per_stage(const PassProfile& profile, int p) {
  const auto n = static_cast<size_t>(p);
  return profile.f_s.size() == n && profile.b_s.size() == n && profile.w_s.size() == n &&
         profile.f_bytes.size() == n && profile.w_bytes.size() == n;
}

}  // namespace

PipelineSchedule plan_zero_bubble(const PipelineSchedule& unit, Schedule kind, const PassProfile& profile,
                                  double v_w_memory_fraction) {
  if (!zero_bubble_schedule(kind) || !profiled_per_stage(profile, unit.stages)) return unit;
  PipelineSchedule out = unit;
  out.order = kind == Schedule::ZbV ? planned_v(unit, profile, v_w_memory_fraction)
                                    : planned_h(unit, kind == Schedule::ZbH1 ? 1 : 2, profile);
  // The planners keep their own memory account, not the unit-time order's in-flight limits.
  out.max_in_flight.clear();
  validate_schedule(out, "strategy.schedule");
  return out;
}

}  // namespace proteus
