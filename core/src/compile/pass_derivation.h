// Derives one pass of the pipeline schedule (F, B or W of one micro-batch of one model chunk)
// op by op: for each op (forward order for F, reverse for B/W) the redistribution
// collectives its inputs need (layout.h), point-to-point sends where a tensor or its gradient
// crosses a pipeline boundary, the compute task with the activation memory it keeps or frees,
// recompute before a backward (full: the layer's whole forward; selective: attention), and
// ZeRO-3 weight all-gathers before each use.
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "collective_steps.h"
#include "emitter.h"
#include "fp8_amax.h"
#include "fp8_weight_casts.h"
#include "op_index.h"
#include "pass_state.h"
#include "proteus/schedule.h"

namespace proteus {

class IterationTail;

// The redistribution is exactly one collective of `kind` over `axes`.
inline bool is_single(const std::vector<CollectiveStep>& steps, CollectiveKind kind, AxisMask axes) {
  return steps.size() == 1 && steps[0].kind == kind && steps[0].axes == axes;
}

class PassDeriver {
 public:
  PassDeriver(const ProgramInputs& in, const OpIndex& index, Emitter* emitter, PassState* state,
              IterationTail* tail, CompileStats* stats);

  void begin_rank();  // forgets the previous rank's kept gathers and FP8 weight casts
  // Whether a forward pass of model chunk `chunk` would still cast FP8 weights Transformer
  // Engine casts once per iteration (fp8_weight_casts.h), or run Apex's parameter-sync hooks
  // that still have work (apex_param_sync.h): such a pass differs from the chunk's later
  // forwards, so it is not a template (pass_replay.h).
  bool forward_differs_from_later(int chunk) const;
  // `split_w`: the schedule runs weight gradients as passes of their own (W); else B does them.
  void build_pass(const Pass& pass, int chunk, bool split_w);

 private:
  struct GradSend {
    int tensor, producer;
    double bytes;
    int label;
  };

  // `move_bytes`: what the redistribution moves, when not the tensor's own bytes (an FP8 copy).
  int tensor_in_layout(int mb, Namespace ns, int t, const Layout& want, double move_bytes = -1);
  // The layout a pipeline send moves a tensor in (legacy Megatron's scatter/gather, .cpp).
  Layout p2p_layout(const Layout& l, const Tensor& t) const;
  // Returns the gather task (-1: the op's weights are not sharded). With keep_gathered the
  // gathered copy is not freed when the task ends (a recompute whose backward follows).
  int zero3_gathers(int op, int mb, Phase phase, std::vector<int>* deps, std::vector<MemEvent>* frees,
                    bool keep_gathered = false);
  int gather_weights(int op, int mb, Phase phase, int after, double* gathered_bytes, double* moved_bytes);
  void add_weight_gather_steps(int op, std::vector<CollectiveStep>* merged, double* gathered_bytes,
                               double* moved_bytes) const;
  int emit_weight_gathers(const std::vector<CollectiveStep>& steps, int mb, Phase phase, int after,
                          int label);
  void fsdp_unit_gathers(int op, int mb, bool forward);
  void prefetch_unit_gathers(int unit, int mb, Phase phase);
  int use_kept_gather(int op, int mb, Phase phase);
  void root_post_backward_frees(int op, int mb, std::vector<MemEvent>* mem);
  int fsdp_copy_out(int op, int mb, Phase phase, int gather, double moved_bytes);
  // A memory-bound task of an op's own beside its kernels or collectives (copies, merges,
  // accumulations), on the compute stream after task `after`, labelled `label`; its work, of
  // bytes() traffic, is made on first use into *work_slot and shared by all micro-batches and
  // ranks. Returns the task.
  int side_task(int* work_slot, const std::function<double()>& bytes, const char* label, Phase phase, int mb,
                int after);
  int* cp_side_work_slot(std::vector<int>* ids, int op, int which);
  int torch_cp_merge(int op, int mb, Phase phase, int which, int attention, double local_kv_bytes);
  int te_cp_ring_work(int op, int mb, Phase phase, int which, int ring, double kv_bytes, int attention);
  int te_cp_copy_work(int op, int mb, Phase phase, int which, int attention);
  int te_cp_a2a_saved_output_exchange(int op, int mb);
  void note_weight_compute(int task);
  // The op's compute task (which: 0 forward, 1 input gradient); an attention core under the
  // context-parallel ring as cp blocks with the K/V passes between them. Returns the last task.
  // Under tp_comm_overlap, tp_ring_shard_bytes > 0 makes it TE's ring exchange (*last_step: the
  // last transfer, after which the gathered input is whole).
  int compute_op(int op, int mb, Phase phase, int which, const std::vector<int>& deps,
                 const std::vector<MemEvent>& mem, double tp_ring_shard_bytes = 0, int* last_step = nullptr);
  struct Ring {
    MeshAxis axis;
    double shard_bytes;  // per rank and step
    int block_work;
    const char* purpose;
    std::vector<int> group = {};  // the ring's GPUs when not the whole axis group (a2a+p2p)
  };
  int ring_compute(int op, int mb, Phase phase, const std::vector<int>& deps,
                   const std::vector<MemEvent>& mem, const Ring& ring, int* last_step);
  bool is_ring_attention(int op) const;
  // PyTorch's context parallelism (pass_torch_cp.cpp).
  bool is_torch_gather_attention(int op) const;
  double attention_kv_bytes(int op) const;
  int torch_gather_attention(int op, int mb, Phase phase, int which, const std::vector<int>& deps,
                             const std::vector<MemEvent>& mem, double kv_bytes);
  int torch_dkv_transfer(int op, int mb, Phase phase, double kv_bytes, const std::vector<int>& after);
  void replay_cp_output_exchange(int op, int mb);
  double gathered_kv_bytes(int op) const;
  int ring_block_work(int op, int which, int cp);
  int hierarchical_cp_attention(int op, int mb, Phase phase, int which, const std::vector<int>& deps,
                                const std::vector<MemEvent>& mem, double kv_bytes);
  // Transformer Engine userbuffers (strategy.tp_comm_overlap, userbuffers.h).
  bool uses_userbuffers(int op) const;
  int ub_chunk_work(int op, int which, int kind);
  double ring_exchange_input(int op, int mb, Namespace ns, size_t k, std::vector<int>* deps);
  double pipelined_rs_target(int op, Layout* want) const;
  int pipelined_reduce_scatter(int op, int mb, Phase phase, const std::vector<int>& deps,
                               const std::vector<MemEvent>& mem, double rs_bytes, int* last_rs);
  int symm_mem_matmul_reduce_scatter(int op, int mb, Phase phase, const std::vector<int>& deps,
                                     const std::vector<MemEvent>& mem, double rs_bytes, int* reduced);
  // Work kinds beside 0 forward, 1 input gradient, 2 weight gradient: op-level checkpointing's
  // replay of an op's unsaved share, and its cache-served replay (torch_op_sac.h).
  static constexpr int kPartialReplay = 3, kCachedReplay = 4, kWorkKinds = 5;
  int work_id(int op, int which);
  static ComputeWork partial_replay_work(const OpPlan& p);
  void replay_from_cache(int op, int mb);
  static void hold_while_running(std::vector<MemEvent>* mem, double bytes);
  void forward_op(int op, int mb, Namespace ns);
  // The cast of op's FP8 weights before this forward (fp8_weight_casts.h), after `deps`, on the
  // compute stream ahead of the op's own kernels; -1 when none.
  int fp8_weight_cast(int op, int mb, Namespace ns, const std::vector<int>& deps);
  void output_grad_deps(int op, int mb, std::vector<int>* deps, double* ring_shard_bytes = nullptr);
  void backward_op(int op, int mb, bool split_w);
  void end_backward_pass(int mb);
  void regather_inputs(int op, int mb, Phase phase, std::vector<int>* deps);
  void weight_grad(int op, int mb, const std::vector<int>& grad_deps);
  // FP8 amax all-reduces (fp8_amax.h): delayed scaling's per-pass reduction on the compute
  // stream; current scaling's per-GEMM reduction over tp before a cast, which `deps` then waits for.
  void delayed_amax_reduction(int chunk, int mb, bool forward);
  void current_amax_reduction(int op, int mb, Phase phase, std::vector<int>* deps);

  const OpGraph& g_;
  const StrategyTree& tree_;
  const std::vector<OpPlan>& plans_;
  const Mesh& mesh_;
  const OpIndex& index_;
  Emitter& emit_;
  PassState& state_;
  IterationTail& tail_;
  CompileStats& stats_;
  std::vector<int> work_ids_;                  // by kWorkKinds * op + which (work_id)
  std::vector<int> ring_work_ids_;             // by 2 * op + which: one cp ring block's work
  std::vector<int> ub_work_ids_;               // by 3 * op + which + kind: a userbuffers split GEMM's chunk
  std::vector<int> async_tp_reduce_work_ids_;  // per op: async TP's reduction of the partials
  std::vector<MemEvent> pending_weight_alloc_;
  std::vector<GradSend> pending_grad_sends_;
  // ZeRO-3 under full recompute: per op the recompute's gather its backward reuses (task,
  // micro-batch, bytes).
  static constexpr int kEveryMicroBatch = -2;  // KeptGather::mb of a gather kept all iteration
  struct KeptGather {
    int task = -1, mb = -1;  // mb: the micro-batch it serves, or kEveryMicroBatch
    double bytes = 0;
    double copy_out_bytes = 0;  // > 0: prefetched, its FSDP2 copy-out not emitted yet
  };
  static bool kept_for(const KeptGather& k, int mb) {
    return k.task >= 0 && (k.mb == mb || k.mb == kEveryMicroBatch);
  }
  std::vector<KeptGather> kept_gather_;
  std::vector<MemEvent> prefetched_alloc_;  // gathered copies the next compute task allocates
  std::vector<int> copy_out_work_ids_;      // per op: its FSDP2 copy-out work (fsdp_copy_out)
  // Per op and direction: the context-parallel bookkeeping beside the attention kernels,
  // PyTorch's merge (torch_cp_merge), Transformer Engine's ring (te_cp_ring_work) or its
  // all_gather and a2a copies (te_cp_copy_work); the copies around a2a+p2p's all-to-alls.
  std::vector<int> cp_merge_work_ids_;
  std::vector<int> cp_a2a_copy_work_ids_;
  Fp8AmaxPlan amax_;
  int amax_label_ = -1;
  Fp8WeightCastPlan weight_casts_;
  std::vector<char> weights_cast_;  // per op: cast this iteration (Fp8WeightCast::FirstForward)
  std::vector<std::pair<int, int>> weight_cast_ids_;  // per op: its cast's work and label
};

}  // namespace proteus
