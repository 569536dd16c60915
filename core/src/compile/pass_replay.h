// Per-stage micro-batch templates (DESIGN.md §3: "a micro-batch is an instance of a per-stage
// template"). A pass (F, B or W of one model chunk) emits the same tasks for every
// micro-batch of a rank; only the micro-batch number, the task ids and the keys that carry
// the micro-batch differ. The program builder records what a pass emits as a PassRecording
// whose references are relative (RelRef): to the pass itself, to another pass of the same
// micro-batch, to a task outside every pass, to a pipeline receive of the same micro-batch.
// Two recordings of one (kind, chunk) that are equal prove the pass independent of the
// micro-batch; later micro-batches are then instantiated from it without re-deriving
// layouts, providers and redistributions (a 1,024-GPU GPT-3 has 192 micro-batches).
#pragma once
#include <cstdint>
#include <vector>

#include "proteus/exec_graph.h"

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
    kProvider,    // builder map writes: key with the micro-batch cleared, value = refs[0]
    kGradProvider,
    kRegathered,
    kWGradDeps,  // w_grad_deps_[key] = refs
    kWeightUse,  // ++w_done_[op]
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
  RelRef last_compute, last_weight_compute;  // the builder's cursors after the pass
  int tasks = 0;                             // tasks the pass emitted
  std::vector<int> mem_lists;                // per item: the ExecGraph memory list instances share
  bool valid = true;                         // false: a reference could not be made relative

  bool operator==(const PassRecording& o) const;
};

bool same_task_shape(const Task& a, const Task& b);  // every field but the micro-batch

}  // namespace proteus
