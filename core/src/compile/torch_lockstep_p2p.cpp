// torch_lockstep_p2p.h: PyTorch's PipelineScheduleMulti, one exchange per time step.
#include "torch_lockstep_p2p.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace proteus {
namespace {

// The pass of a rank's spans that emitted task t; -1 outside every pass.
int pass_of(const std::vector<PassSpan>& spans, int t) {
  const auto after =
      std::upper_bound(spans.begin(), spans.end(), t, [](int id, const PassSpan& s) { return id < s.first; });
  if (after == spans.begin()) return -1;
  const auto i = static_cast<size_t>(after - spans.begin()) - 1;
  return t < spans[i].end ? static_cast<int>(i) : -1;
}

// The rank's last compute task in its passes 0..i (kNoTask: none).
int last_compute_up_to(const ExecGraph& g, const std::vector<PassSpan>& spans, int i) {
  for (int k = i; k >= 0; --k) {
    const int t = last_compute(g, spans[static_cast<size_t>(k)]);
    if (t != kNoTask) return t;
  }
  return kNoTask;
}

}  // namespace

std::vector<TorchStep> torch_interleaved_order(int pp, int chunks_per_stage, int micro_batches, int rank) {
  const int p = pp, v = chunks_per_stage, m = micro_batches;
  const int rounds = std::max(1, m / p);
  const int per_round = m / rounds;  // microbatches_per_round
  const int warmup = std::min((v - 1) * per_round + 2 * (p - 1 - rank), m * v);
  const int ops = v * m;  // forwards, and as many backwards
  const int post_warmup = std::max(0, v * p + 2 * (p - 1 - rank) - (warmup + rank));
  std::vector<int> next_f(static_cast<size_t>(v), 0), next_b(static_cast<size_t>(v), 0);
  auto forward = [&](int op) {
    const int chunk = (op / per_round) % v;
    return TorchStep{PassKind::F, chunk, next_f[static_cast<size_t>(chunk)]++};
  };
  auto backward = [&](int op) {
    const int chunk = v - 1 - ((op - warmup) / per_round) % v;
    return TorchStep{PassKind::B, chunk, next_b[static_cast<size_t>(chunk)]++};
  };
  std::vector<TorchStep> order(static_cast<size_t>(rank));  // pre-padding
  for (int op = 0; op < ops + warmup; ++op) {  // warm-up, one forward and backward each, cool-down
    if (op < warmup) {
      order.push_back(forward(op));
      if (op == warmup - 1) order.resize(order.size() + static_cast<size_t>(post_warmup));
    } else if (op < ops) {
      order.push_back(forward(op));
      order.push_back(backward(op));
    } else {
      order.emplace_back();  // the cool-down's empty step
      order.push_back(backward(op));
    }
  }
  return order;
}

std::vector<int> torch_interleaved_steps(const PipelineSchedule& schedule, int stage) {
  const std::vector<TorchStep> torch =
      torch_interleaved_order(schedule.stages, schedule.chunks_per_stage, schedule.micro_batches, stage);
  const std::vector<Pass>& passes = schedule.order[static_cast<size_t>(stage)];
  std::vector<int> steps;
  for (size_t t = 0; t < torch.size(); ++t) {
    if (torch[t].chunk < 0) continue;
    const size_t i = steps.size();
    if (i >= passes.size() || passes[i].kind != torch[t].kind || passes[i].chunk != torch[t].chunk ||
        passes[i].micro_batch != torch[t].micro_batch)
      throw std::logic_error("stage " + std::to_string(stage) + "'s pass " + std::to_string(i) +
                             " differs from PyTorch's ScheduleInterleaved1F1B order");
    steps.push_back(static_cast<int>(t));
  }
  if (steps.size() != passes.size())
    throw std::logic_error("stage " + std::to_string(stage) + " has passes PyTorch's order lacks");
  return steps;
}

void add_lockstep_p2p(const std::vector<std::vector<PassSpan>>& spans_by_rank,
                      const std::vector<std::vector<int>>& steps_by_rank, const std::vector<int>& sends,
                      const std::vector<std::pair<int, int>>& receives, ExecGraph* exec) {
  const ExecGraph& g = *exec;
  const std::vector<int> consumer = first_consumers(g, receives);
  std::vector<std::pair<int, int>> added;  // (task, the task it now waits for)
  auto wait = [&added](int task, int on) {
    if (task != kNoTask && on != kNoTask && task != on) added.emplace_back(task, on);
  };
  // Each rank's exchanges: the sends it takes part in, by time step.
  std::vector<std::map<int, std::vector<int>>> exchanges(spans_by_rank.size());
  // A rank reaches time step t once its passes up to t are queued; it leaves it with its compute
  // of the first pass after t, which waits for the exchange.
  auto join = [&](int rank, int step, int send) {
    const auto& spans = spans_by_rank[static_cast<size_t>(rank)];
    const auto& steps = steps_by_rank[static_cast<size_t>(rank)];
    const int last = static_cast<int>(std::upper_bound(steps.begin(), steps.end(), step) - steps.begin()) - 1;
    wait(send, last_compute_up_to(g, spans, last));
    const int after = last + 1 < static_cast<int>(spans.size()) ? spans[static_cast<size_t>(last + 1)].first
                                                                : spans.back().end;
    wait(first_compute_from(g, rank, after), send);
    exchanges[static_cast<size_t>(rank)][step].push_back(send);
  };
  for (const int send : sends) {
    const int sender = g.tasks[static_cast<size_t>(send)].rank;
    const int pass = pass_of(spans_by_rank[static_cast<size_t>(sender)], send);
    const int c = consumer[static_cast<size_t>(send)];
    if (pass < 0 || c == kNoTask) continue;
    const int step = steps_by_rank[static_cast<size_t>(sender)][static_cast<size_t>(pass)];
    join(sender, step, send);
    join(g.tasks[static_cast<size_t>(c)].rank, step, send);
  }
  // The exchange of a step waits for the rank's previous one: its NCCL kernels start after the
  // work queued on the current stream, which waits for that exchange (Work.wait()).
  for (const auto& by_step : exchanges) {
    const std::vector<int>* previous = nullptr;
    for (const auto& [step, now] : by_step) {
      if (previous)
        for (const int s : now)
          for (const int p : *previous) wait(s, p);
      previous = &now;
    }
  }
  merge_added_deps(std::move(added), exec);
}

}  // namespace proteus
