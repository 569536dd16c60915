// Appends tasks to the ExecGraph in program order per (rank, stream): compute tasks with their
// memory events, collectives (matched across the simulated members of a group, interned by
// signature), and pipeline sends paired with the receives that wait for them. Knows nothing of
// ops or passes; an observer (the micro-batch template recorder, pass_replay.h) may watch
// what it emits.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "compile_stats.h"
#include "id_map.h"
#include "proteus/exec_graph.h"
#include "proteus/strategy_tree.h"

namespace proteus {

// Sees every task the emitter appends through compute(), collective() and send().
class EmitObserver {
 public:
  virtual ~EmitObserver() = default;
  virtual void on_compute(const Task& t, const int* deps, size_t n_deps, const MemEvent* mem,
                          size_t n_mem) = 0;
  virtual void on_collective(const Task& t, CollectiveKind kind, AxisMask axes, double bytes,
                             const std::vector<int>& deps, const char* purpose, bool explicit_group) = 0;
  virtual void on_send(const Task& t, int dst_gpu, int tensor, bool backward, double bytes, int dep,
                       int chunk) = 0;
};

// Purpose of the collectives Transformer Engine's userbuffers run inside a GEMM
// (strategy.tp_comm_overlap): they get Collective::sm_free.
inline constexpr const char* kUserbuffersPurpose = "tp_overlap";

class Emitter {
 public:
  Emitter(const StrategyTree& tree, bool symmetric, ExecGraph* exec, CompileStats* stats);

  // One simulated rank per stage (symmetric) or per GPU; the stats arrays sized for the stages.
  void make_ranks();
  // Starts emitting rank r's program (resets the per-rank collective ordinals and caches).
  void begin_rank(int r);
  // After the first rank: room for all ranks in the big arrays (they run programs of similar size).
  void reserve_for_ranks();
  // Points every receive at its send, once all ranks are emitted.
  void resolve_pending();
  // Every pipeline send task, and after resolve_pending each (send, task that waits for it).
  const std::vector<int>& sends() const { return send_tasks_; }
  const std::vector<std::pair<int, int>>& receives() const { return receives_; }

  int rank() const { return rank_; }
  int stage() const { return stage_; }
  int gpu() const { return exec_.ranks[rank_].gpu; }
  bool is_stats_rank() const;  // the stage's representative: its program is what `compile` reports
  // Whether this rank runs model chunk `chunk` for micro-batch mb (DualPipe: each copy of the
  // chunk runs its own micro-batches, StrategyTree::copy_of_micro_batch), and for any of them.
  bool chunk_is_local(int chunk, int mb) const {
    return tree_.stage_of_chunk(chunk, tree_.copy_of_micro_batch(mb)) == stage_;
  }
  bool holds_chunk(int chunk) const;
  int gpu_of_chunk(int chunk, int mb) const;  // this rank's peer on the stage that runs `chunk` for mb
  ExecGraph& exec() { return exec_; }
  void set_observer(EmitObserver* o) { observer_ = o; }

  // Deps >= 0 are task ids; < 0 are pending receives (pending_ref), resolved at the end.
  // The list forms take their arguments without building vectors (no allocation per task).
  int compute(const Task& t, const std::vector<int>& deps, const std::vector<MemEvent>& mem) {
    return compute(t, deps.data(), deps.size(), mem.data(), mem.size());
  }
  int compute(const Task& t, const std::vector<int>& deps, std::initializer_list<MemEvent> mem) {
    return compute(t, deps.data(), deps.size(), mem.begin(), mem.size());
  }
  int compute(const Task& t, std::initializer_list<int> deps, std::initializer_list<MemEvent> mem) {
    return compute(t, deps.begin(), deps.size(), mem.begin(), mem.size());
  }
  int compute(const Task& t, const int* deps, size_t n_deps, const MemEvent* mem, size_t n_mem);
  // The task with an existing memory list (ExecGraph::task_mem); not observed.
  int with_list(const Task& t, const int* deps, size_t n_deps, int mem_list);
  // A collective task of this rank; members of the same group emit them in the same order,
  // which is how the instances are matched across simulated ranks.
  int collective(CollectiveKind kind, AxisMask axes, double bytes, Stream stream, Phase phase, int mb,
                 int label, const std::vector<int>& deps, const char* purpose,
                 const std::vector<int>& explicit_group = {});
  // A pipeline send to dst_gpu of `tensor` (or its gradient) of micro-batch mb.
  int send(int dst_gpu, int tensor, int mb, bool backward, double bytes, int label, int dep, int chunk);
  // A reference to the send that `key` (send_key) names, wherever it is emitted.
  int pending_ref(uint64_t key);
  uint64_t pending_key(int ref) const { return pending_keys_[static_cast<size_t>(-ref - 1)]; }
  Task compute_task(int label, Phase phase, int mb, int work) const;

 private:
  int signature(CollectiveKind kind, AxisMask axes, double bytes);
  int comm_buffer_list(double bytes);
  const std::vector<int>& my_group(AxisMask axes);
  void count(CollectiveKind kind, AxisMask axes, const char* purpose, int group_size, double bytes);

  const StrategyTree& tree_;
  const Mesh& mesh_;
  const bool symmetric_;
  ExecGraph& exec_;
  CompileStats& stats_;
  CollectiveCounter counter_;
  EmitObserver* observer_ = nullptr;

  // per rank
  int rank_ = 0, stage_ = 0;
  std::vector<uint64_t> ordinals_;
  std::array<std::vector<int>, 1u << kNumMeshAxes> group_cache_;  // by AxisMask
  static constexpr size_t kNumCollectiveKinds = static_cast<size_t>(CollectiveKind::RingExchange) + 1;
  std::vector<IdMap> signatures_ = std::vector<IdMap>((1u << kNumMeshAxes) * kNumCollectiveKinds);

  // across ranks
  int next_signature_ = 0;
  IdMap comm_lists_;  // collective buffer size (bits of the double) -> memory list
  IdMap instance_;
  IdMap sends_;
  std::vector<uint64_t> pending_keys_;
  struct PendingSlot {
    size_t slot;  // index into ExecGraph::deps
    uint64_t key;
    int task;  // the task whose dependency it is
  };
  std::vector<PendingSlot> pending_slots_;
  std::vector<int> send_tasks_;
  std::vector<std::pair<int, int>> receives_;
};

}  // namespace proteus
