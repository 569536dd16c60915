// When rank 0's iteration tail runs in a played iteration: its last backward task, its optimizer
// step, its gradient reductions (labels grad_bucket_*) and its parameter gathers after ZeRO-1/2
// (param_gather_*), for tests of what a framework overlaps.
#pragma once
#include <algorithm>
#include <limits>
#include <string>

#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/simulation.h"

namespace proteus::test {

struct TailTimes {
  double backward_end_s = 0;  // the last backward (input or weight gradient) or accumulation
  double step_end_s = 0;
  double first_grad_reduce_s = std::numeric_limits<double>::infinity();
  double first_param_gather_s = std::numeric_limits<double>::infinity();
  double param_gather_bytes = 0;
  int grad_reduces = 0, per_micro_batch_grad_reduces = 0;
};

inline TailTimes tail_times(const Config& config, const CompiledModel& c) {
  const Trace trace =
      execute(c.exec, cost_model_of(config), build_topology(config.cluster), exec_options_of(config, false));
  TailTimes out;
  for (size_t i = 0; i < c.exec.tasks.size(); ++i) {
    const Task& t = c.exec.tasks[i];
    if (t.rank != 0) continue;
    if (t.kind == TaskKind::Compute) {
      if (t.phase == Phase::BackwardWeight || t.phase == Phase::BackwardInput)
        out.backward_end_s = std::max(out.backward_end_s, trace.task_end_s[i]);
      if (t.phase == Phase::Optimizer) out.step_end_s = std::max(out.step_end_s, trace.task_end_s[i]);
      continue;
    }
    if (t.kind != TaskKind::Collective) continue;
    const std::string& label = c.exec.labels[t.label];
    if (label.rfind("grad_bucket_", 0) == 0) {
      ++out.grad_reduces;
      if (t.micro_batch >= 0) ++out.per_micro_batch_grad_reduces;
      out.first_grad_reduce_s = std::min(out.first_grad_reduce_s, trace.task_start_s[i]);
    }
    if (label.rfind("param_gather_", 0) == 0) {
      out.first_param_gather_s = std::min(out.first_param_gather_s, trace.task_start_s[i]);
      out.param_gather_bytes += c.exec.collectives[t.collective].bytes;
    }
  }
  return out;
}

}  // namespace proteus::test
