// Derives one pass of the pipeline schedule (F, B or W of one micro-batch of one model chunk)
// op by op: for each op (forward order for F, reverse for B/W) the redistribution
// collectives its inputs need (layout.h), point-to-point sends where a tensor or its gradient
// crosses a pipeline boundary, the compute task with the activation memory it keeps or frees,
// recompute before a backward (full: the layer's whole forward; selective: attention), and
// ZeRO-3 weight all-gathers before each use.
#pragma once
#include <vector>

#include "emitter.h"
#include "op_index.h"
#include "pass_state.h"
#include "proteus/schedule.h"

namespace proteus {

class IterationTail;

class PassDeriver {
 public:
  PassDeriver(const ProgramInputs& in, const OpIndex& index, Emitter* emitter, PassState* state,
              IterationTail* tail, CompileStats* stats);

  // `split_w`: the schedule runs weight gradients as passes of their own (W); else B does them.
  void build_pass(const Pass& pass, int chunk, bool split_w);

 private:
  struct GradSend {
    int tensor, producer;
    double bytes;
    int label;
  };

  int tensor_in_layout(int mb, Namespace ns, int t, const Layout& want);
  void zero3_gathers(int op, int mb, Phase phase, std::vector<int>* deps, std::vector<MemEvent>* frees);
  int work_id(int op, int which);
  void forward_op(int op, int mb, Namespace ns);
  void output_grad_deps(int op, int mb, std::vector<int>* deps);
  void backward_op(int op, int mb, bool split_w);
  void end_backward_pass(int mb);
  void regather_inputs(int op, int mb, Phase phase, std::vector<int>* deps);
  void weight_grad(int op, int mb, const std::vector<int>& grad_deps);

  const OpGraph& g_;
  const StrategyTree& tree_;
  const std::vector<OpPlan>& plans_;
  const Mesh& mesh_;
  const OpIndex& index_;
  Emitter& emit_;
  PassState& state_;
  IterationTail& tail_;
  CompileStats& stats_;
  std::vector<int> work_ids_;  // by 3 * op + (0 forward, 1 input gradient, 2 weight gradient)
  std::vector<MemEvent> pending_weight_alloc_;
  std::vector<GradSend> pending_grad_sends_;
};

}  // namespace proteus
