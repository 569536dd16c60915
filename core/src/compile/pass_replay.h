// Per-stage micro-batch templates (DESIGN.md §3: "a micro-batch is an instance of a per-stage
// template"). A pass (F, B or W of one model chunk) emits the same tasks for every
// micro-batch of a rank; only the micro-batch number, the task ids and the keys that carry
// the micro-batch differ. The program builder records what a pass emits as a PassRecording
// whose references are relative (RelRef): to the pass itself, to another pass of the same
// micro-batch, to a task outside every pass, to a pipeline receive of the same micro-batch.
// Two recordings of one (kind, chunk) that are equal prove the pass independent of the
// micro-batch; later micro-batches are then instantiated from it without re-deriving
// layouts, providers and redistributions (a 1,024-GPU GPT-3 has 192 micro-batches).
//
// PassReplayer is that wrapper around the emitter: for each pass of the schedule it either
// instantiates a verified template, or runs the derivation (pass_derivation.h) while watching
// the emitter and the pass state as their observer, and compares the recordings.
#pragma once
#include <cstdint>
#include <vector>

#include "emitter.h"
#include "pass_state.h"
#include "proteus/exec_graph.h"
#include "proteus/schedule.h"

namespace proteus {

// A task id as seen from a pass of micro-batch mb.
struct RelRef {
  enum Kind : uint8_t {
    kInPass,     // offset from the pass's first task
    kOtherPass,  // offset in the pass (pass_kind, chunk) of the same micro-batch
    kAbsolute,   // a task emitted outside every pass (e.g. a parameter gather), or a sentinel
    kPending,    // the send a pipeline receive waits for: send key with the micro-batch cleared
  };
  Kind kind = kAbsolute;
  int slot = 0;       // kOtherPass: index into PassRecording::other_passes
  int64_t value = 0;  // offset, task id / sentinel, or pending send key
  bool operator==(const RelRef& o) const { return kind == o.kind && slot == o.slot && value == o.value; }
};

// A pass of the same micro-batch that a recording refers to, with the task count it had.
struct OtherPass {
  uint8_t kind = 0;  // PassKind
  int chunk = 0;
  int tasks = 0;
  bool operator==(const OtherPass& o) const { return kind == o.kind && chunk == o.chunk && tasks == o.tasks; }
};

// What a pass did, in order.
struct ReplayItem {
  enum Kind : uint8_t {
    kCompute,     // a compute task: `task` (micro_batch cleared), refs, memory events
    kCollective,  // emit_collective(ckind, axes, bytes, task.stream, task.phase, mb, task.label, refs,
                  // purpose)
    kSend,        // emit_send(dst_gpu, tensor, mb, backward, bytes, task.label, refs[0], chunk)
    kProvider,    // pass state writes (pass_state.h): key with the micro-batch cleared, value = refs[0]
    kGradProvider,
    kRegathered,
    kWGradDeps,  // PassState::set_w_grad_deps(key, refs)
    kWeightUse,  // PassState::count_weight_use(op)
  };
  Kind kind = kCompute;
  Task task;
  uint32_t ref_begin = 0, ref_end = 0;  // into PassRecording::refs
  uint32_t mem_begin = 0, mem_end = 0;  // into PassRecording::mem
  CollectiveKind ckind = CollectiveKind::AllReduce;
  AxisMask axes = 0;
  double bytes = 0;
  const char* purpose = "";
  int dst_gpu = 0, tensor = 0, chunk = 0, op = 0;
  bool backward = false;
  uint64_t key = 0;

  bool operator==(const ReplayItem& o) const;
};

struct PassRecording {
  std::vector<ReplayItem> items;
  std::vector<RelRef> refs;
  std::vector<MemEvent> mem;
  std::vector<OtherPass> other_passes;
  RelRef last_compute, last_weight_compute, prev_weight_compute;  // the builder's cursors after the pass
  int tasks = 0;                                                  // tasks the pass emitted
  std::vector<int> mem_lists;  // per item: the ExecGraph memory list instances share
  bool valid = true;           // false: a reference could not be made relative

  bool operator==(const PassRecording& o) const;
};

bool same_task_shape(const Task& a, const Task& b);  // every field but the micro-batch

class PassDeriver;

class PassReplayer : public EmitObserver, public StateObserver {
 public:
  PassReplayer(const StrategyTree& tree, bool enabled, Emitter* emitter, PassState* state,
               PassDeriver* deriver, CompileStats* stats);

  void begin_rank();
  // Emits one pass of the schedule: from its template when one is verified and applies, else
  // op by op (recording the first two instances of each (kind, chunk)).
  void run_pass(const Pass& pass, int chunk, bool split_w);

  // EmitObserver, StateObserver: what the pass being recorded does.
  void on_compute(const Task& t, const int* deps, size_t n_deps, const MemEvent* mem, size_t n_mem) override;
  void on_collective(const Task& t, CollectiveKind kind, AxisMask axes, double bytes,
                     const std::vector<int>& deps, const char* purpose, bool explicit_group) override;
  void on_send(const Task& t, int dst_gpu, int tensor, bool backward, double bytes, int dep,
               int chunk) override;
  void on_write(StateMap map, uint64_t key, const int* values, size_t n) override;
  void on_weight_use(int op) override;

 private:
  // The last micro-batch through its copy of the model (DualPipe: two runs of m/2): its
  // backward completes the weight gradients on this rank.
  bool last_of_copy(int mb) const {
    return mb % tree_.micro_batches_per_copy() == tree_.micro_batches_per_copy() - 1;
  }
  // A micro-batch template of this rank and where each pass's tasks are.
  struct PassTemplate {
    PassRecording recording;  // of the first instance
    int seen = 0;             // instances recorded
    bool verified = false;    // the second instance equalled the first
    bool failed = false;
  };
  struct PassRange {
    int begin, end;
    PassKind kind;
    int chunk, mb;
  };
  // An instance's writes to the pass state are only read by op-by-op passes of the same
  // micro-batch (the last one, or those of a failed template): they are applied when such a
  // pass begins (apply_deferred_writes), not at every instance.
  struct DeferredWrites {
    const PassRecording* recording;
    int begin;
    std::vector<int> other_begin;
  };

  void build_recorded(const Pass& pass, int chunk, bool split_w, PassTemplate* tp);
  RelRef relative(int id, bool may_be_pending);
  ReplayItem& record_item(ReplayItem::Kind kind, const int* refs, size_t n_refs, bool may_be_pending);
  ReplayItem& record_task(ReplayItem::Kind kind, const Task& t, const int* deps, size_t n_deps);
  bool replay_if_possible(PassRecording& r, int mb);
  int absolute(const RelRef& ref, int begin, const std::vector<int>& other_begin, int mb);
  void apply_deferred_writes(int mb);
  void replay(PassRecording& r, int mb);

  const StrategyTree& tree_;
  const bool enabled_;
  Emitter& emit_;
  PassState& state_;
  PassDeriver& deriver_;
  CompileStats& stats_;

  std::vector<PassTemplate> templates_;  // by 3 * chunk + kind
  std::vector<PassRange> pass_ranges_;   // this rank's passes, in emission order
  IdMap pass_index_;                     // pass_key -> index into pass_ranges_
  PassRecording* rec_ = nullptr;         // recording the pass being built, if any
  int rec_begin_ = 0, rec_mb_ = 0;
  std::vector<int> other_begin_, replay_refs_;
  std::vector<std::vector<DeferredWrites>> deferred_;  // by micro-batch, this rank
  // Micro-batches whose forward cast FP8 weights or ran Apex's parameter-sync hooks
  // (PassDeriver::forward_differs_from_later): their passes are never recorded.
  std::vector<int> cast_mbs_;
};

}  // namespace proteus
