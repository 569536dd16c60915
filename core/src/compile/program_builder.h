// Emits the per-rank programs (tasks, streams, dependencies, memory events) of an iteration
// from the op plans and the pipeline schedule. Private to the compiler.
//
// The builder is split by concept, one file each:
//   emitter.h          tasks, streams, collectives and their matching across ranks, p2p pairing
//   pass_derivation.h  one F, B or W pass of a chunk derived op by op (layouts, redistribution,
//                      recompute, ZeRO-3 gathers)
//   iteration_tail.h   gradient buckets, the tied-embedding reduction, the optimizer step and
//                      the ZeRO-1/2 parameter gathers
//   grad_sync_points.h where Megatron-Core's pipeline schedules launch a chunk's reductions and
//                      call param_sync_func
//   apex_param_sync.h  Apex's DistributedFusedAdam: which parameter gathers its hooks launch and
//                      wait for (emitted by iteration_tail_apex.cpp)
//   pass_replay.h      micro-batch templates: records the emitter's output for a pass and
//                      instantiates it for later micro-batches, around the derivation
//   compile_stats.h    what `proteus compile` reports
#pragma once
#include <vector>

#include "op_plan.h"
#include "proteus/schedule.h"
#include "proteus/training_spec.h"

namespace proteus {

struct ProgramInputs {
  const OpGraph& graph;
  const StrategyTree& tree;
  const TrainingSpec& training;
  const std::vector<OpPlan>& plans;
  const PipelineSchedule& schedule;
  bool symmetric = true;
  bool micro_batch_templates = true;  // instantiate repeated passes from a template (pass_replay.h)
};

// Fills exec (ranks, tasks, deps, queues, collectives, memory) and the collective/p2p stats.
void build_programs(const ProgramInputs& in, ExecGraph* exec, CompileStats* stats);

}  // namespace proteus
