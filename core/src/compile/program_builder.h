// Emits the per-rank programs (tasks, streams, dependencies, memory events) of an iteration
// from the op plans and the pipeline schedule. Private to the compiler.
#pragma once
#include <vector>

#include "op_plan.h"

namespace proteus {

struct ProgramInputs {
  const Config& config;
  const OpGraph& graph;
  const StrategyTree& tree;
  const std::vector<OpPlan>& plans;
  bool symmetric = true;
  bool micro_batch_templates = true;  // instantiate repeated passes from a template (pass_replay.h)
};

// Fills exec (ranks, tasks, deps, queues, collectives, memory) and the collective/p2p stats.
void build_programs(const ProgramInputs& in, ExecGraph* exec, CompileStats* stats);

}  // namespace proteus
