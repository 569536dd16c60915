// Emits every simulated rank's program for one training iteration: for each rank, the
// iteration tail's opening (parameter gathers the forward waits for), every pass of the
// stage's schedule (pass_replay.h instantiates a template or derives it, pass_derivation.h;
// overlapped F&B groups are interleaved afterwards, overlap_groups.h),
// then the tail (gradient reductions, optimizer, parameter gathers; iteration_tail.h). Megatron's
// blocking p2p (blocking_p2p.h) and PyTorch's lock-step exchange (torch_lockstep_p2p.h) add
// their waits once every rank is emitted.
#include "program_builder.h"

#include <utility>

#include "blocking_p2p.h"
#include "emitter.h"
#include "iteration_tail.h"
#include "op_index.h"
#include "overlap_groups.h"
#include "pass_derivation.h"
#include "pass_replay.h"
#include "pass_state.h"
#include "torch_lockstep_p2p.h"

namespace proteus {

void build_programs(const ProgramInputs& in, ExecGraph* exec, CompileStats* stats) {
  const StrategyTree& tree = in.tree;
  const OpIndex index(in, exec);
  Emitter emitter(tree, in.symmetric, exec, stats);
  PassState state;
  IterationTail tail(in, index, &emitter, &state, stats);
  PassDeriver deriver(in, index, &emitter, &state, &tail, stats);
  PassReplayer replayer(tree, in.micro_batch_templates, &emitter, &state, &deriver, stats);
  const PipelineSchedule& schedule = in.schedule;

  emitter.make_ranks();
  // Each rank's passes, where Megatron's blocking p2p needs to know its calls (blocking_p2p.h).
  const bool p2p_waits = tree.blocking_p2p || tree.torch_lockstep_p2p;
  std::vector<std::vector<PassSpan>> spans(p2p_waits ? exec->ranks.size() : 0);
  // PyTorch's lock-step exchange: each pass's time step in the rank's pipeline_order.
  std::vector<std::vector<int>> steps(tree.torch_lockstep_p2p ? exec->ranks.size() : 0);
  for (size_t r = 0; r < exec->ranks.size(); ++r) {
    emitter.begin_rank(static_cast<int>(r));
    state.begin_rank(in.graph.ops.size());
    replayer.begin_rank();
    tail.begin_rank();
    deriver.begin_rank();
    const int stage = emitter.stage();
    const std::vector<Pass>& passes = schedule.order[static_cast<size_t>(stage)];
    if (!steps.empty()) steps[r] = torch_interleaved_steps(schedule, stage);
    if (emitter.is_stats_rank()) {
      if (stats->stage_orders.size() <= static_cast<size_t>(stage)) stats->stage_orders.resize(stage + 1);
      stats->stage_orders[stage] = to_string(passes);
    }
    // This stage's chunks in pipeline order, as model chunks (DualPipe: copy B's chunk kL + j
    // runs model chunk j; a stage never holds both copies of one chunk, pp being even).
    std::vector<int> chunk_of_local;
    for (int c = 0; c < tree.chunks(); ++c)
      if (tree.chunk_stage[static_cast<size_t>(c)] == stage)
        chunk_of_local.push_back(c % tree.model_chunks());
    tail.plan_grad_sync(passes, chunk_of_local, stage);
    tail.plan_param_sync(passes, chunk_of_local, stage);
    for (size_t i = 0; i < passes.size();) {
      // A pass and those overlapped with it (DualPipe's F&B): emitted in turn, then interleaved.
      size_t end = i + 1;
      while (end < passes.size() && passes[end].with_previous) ++end;
      const int first = static_cast<int>(exec->tasks.size());
      int split = first;
      for (size_t k = i; k < end; ++k) {
        tail.begin_pass(static_cast<int>(k));
        replayer.run_pass(passes[k], chunk_of_local[static_cast<size_t>(passes[k].chunk)],
                          schedule.split_backward);
        if (k == i) split = static_cast<int>(exec->tasks.size());
      }
      if (end - i > 1)
        overlap_group(exec, static_cast<int>(r), first, split, static_cast<int>(exec->tasks.size()));
      // After the group: the reductions Megatron-Core's schedule launches there, and what the
      // passes made final (FSDP2 under pipelining).
      tail.end_pass(static_cast<int>(end) - 1);
      if (!spans.empty()) spans[r].push_back({first, static_cast<int>(exec->tasks.size()), passes[i].kind});
      i = end;
    }
    tail.finish_rank();
    if (r == 0) emitter.reserve_for_ranks();
  }
  emitter.resolve_pending();
  if (tree.blocking_p2p)
    add_blocking_p2p(std::move(spans), tree.p2p_paired_steady_state, emitter.sends(), emitter.receives(),
                     exec);
  else if (tree.torch_lockstep_p2p)
    add_lockstep_p2p(spans, steps, emitter.sends(), emitter.receives(), exec);
}

}  // namespace proteus
