// Emits every simulated rank's program for one training iteration.
//
// For each pass of the stage's pipeline schedule (F, B or W of one micro-batch of one model
// chunk) the builder walks the chunk's ops (forward order for F, reverse for B/W) and emits:
//   - the redistribution collectives a consumer needs (layout.h), on the tensor-parallel stream;
//   - point-to-point sends where a tensor (or its gradient) crosses a pipeline boundary;
//   - the compute task, with the activation memory it keeps or frees;
//   - recompute tasks before a backward (full: the layer's whole forward; selective: attention);
//   - ZeRO-3 weight all-gathers before each use.
// After the last micro-batch's weight gradients: bucketed gradient reductions (DDP-like), the
// tied-embedding all-reduce, the optimizer step, and ZeRO-1/2 parameter all-gathers.
#include "program_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <unordered_map>

#include "id_map.h"
#include "pass_replay.h"
#include "proteus/error.h"
#include "proteus/schedule.h"
#include "proteus/units.h"

namespace proteus {
namespace {

// Mixed-precision training keeps fp32 main gradients (Megatron-LM's default) and reduces them
// in fp32; fp32 training has fp32 gradients too.
constexpr double kGradBytes = 4;
// PyTorch DDP's first bucket is 1 MB (dist._DEFAULT_FIRST_BUCKET_BYTES); later ones grad_bucket_MB.
constexpr double kFirstBucketMB = 1;

// Optimizer step traffic in bytes per parameter (reads + writes of the tensors it updates).
// Adam, mixed precision: read fp32 master 4, grad 4, m 4, v 4; write master 4, m 4, v 4, 16-bit copy 2.
// Adam, fp32: read w 4, g 4, m 4, v 4; write w 4, m 4, v 4.  SGD with momentum: read w, g, mom; write w, mom
// (+ the 16-bit copy under mixed precision).
double optimizer_bytes_per_param(Optimizer opt, bool mixed) {
  if (opt == Optimizer::Adam) return mixed ? 30 : 28;
  return mixed ? 22 : 20;
}

// Static memory per parameter held by one rank (Megatron, REFERENCE.md §2): 16-bit weight 2,
// fp32 main grad 4, fp32 master 4 + Adam m 4 + v 4 (= 18 bytes); fp32 training: weight 4, grad 4,
// m 4 + v 4. SGD keeps one momentum (+ the master copy under mixed precision).
double optimizer_state_bytes_per_param(Optimizer opt, bool mixed) {
  if (opt == Optimizer::Adam) return mixed ? 12 : 8;
  return mixed ? 8 : 4;
}

uint64_t layout_code(const Layout& l) {
  uint64_t c = 0;
  for (int a = 0; a < kNumMeshAxes; ++a) c = (c << 4) | static_cast<uint64_t>(l.placement[a] + 2);
  return c;  // 20 bits
}

enum Namespace : uint64_t { kFwd = 0, kRecompute = 1 };

uint64_t provider_key(int mb, Namespace ns, int tensor, const Layout& l) {
  return (static_cast<uint64_t>(mb) << 42) | (static_cast<uint64_t>(ns) << 41) |
         (static_cast<uint64_t>(tensor) << 20) | layout_code(l);
}

uint64_t send_key(int dst_gpu, int tensor, int mb, bool backward) {
  return (static_cast<uint64_t>(dst_gpu) << 43) | (static_cast<uint64_t>(tensor) << 23) |
         (static_cast<uint64_t>(mb) << 1) | (backward ? 1u : 0u);
}

// Where the micro-batch sits in each key (pass_replay.h clears and sets it).
struct MbField {
  int shift;
  uint64_t mask;  // of the field, after the shift
  uint64_t get(uint64_t key) const { return (key >> shift) & mask; }
  uint64_t cleared(uint64_t key) const { return key & ~(mask << shift); }
  uint64_t with(uint64_t key, int mb) const { return key | (static_cast<uint64_t>(mb) << shift); }
};
constexpr MbField kProviderMb{42, (1ull << 22) - 1};  // provider_key, grad_key
constexpr MbField kSendMb{1, (1ull << 22) - 1};       // send_key
constexpr MbField kWKeyMb{32, (1ull << 32) - 1};      // wkey

struct Bucket {
  std::vector<int> tensors;
  double param_bytes_16 = 0;  // for the ZeRO parameter all-gather
  int pending = 0;            // weights not yet final
  std::vector<int> ready_tasks;
};

struct Segment {  // a run of ops recomputed together under full recompute
  std::vector<int> ops;
  double checkpoint_bytes = 0;
};

class Builder {
 public:
  Builder(const ProgramInputs& in, ExecGraph* exec, CompileStats* stats)
      : in_(in),
        g_(in.graph),
        tree_(in.tree),
        plans_(in.plans),
        mesh_(in.tree.mesh),
        exec_(*exec),
        stats_(*stats) {}

  void run() {
    index_graph();
    make_ranks();
    for (size_t r = 0; r < exec_.ranks.size(); ++r) {
      emit_rank(static_cast<int>(r));
      if (r == 0) reserve_for_ranks();
    }
    resolve_pending();
  }

  // Ranks run programs of similar size: after the first, reserve room for all of them (with a
  // margin) so that the big arrays and maps grow once instead of by repeated doubling.
  void reserve_for_ranks() {
    const size_t ranks = exec_.ranks.size();
    if (ranks <= 1) return;
    auto room = [ranks](size_t first) { return first + first * (ranks - 1) * 5 / 4; };
    exec_.tasks.reserve(room(exec_.tasks.size()));
    exec_.dep_offsets.reserve(room(exec_.dep_offsets.size()));
    exec_.deps.reserve(room(exec_.deps.size()));
    exec_.task_mem.reserve(room(exec_.task_mem.size()));
    exec_.collectives.reserve(room(exec_.collectives.size()));
    instance_.reserve(room(instance_.size()));
    sends_.reserve(room(sends_.size()));
    for (size_t q = kNumStreams; q < exec_.queues.size(); ++q)  // each rank's queues like the first's
      exec_.queues[q].reserve(exec_.queues[q % kNumStreams].size() * 5 / 4);
  }

 private:
  // A micro-batch template of this rank (pass_replay.h) and where each pass's tasks are.
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

  // ---------- static indexes ----------
  void index_graph() {
    const int chunks = tree_.chunks();
    chunk_ops_.assign(static_cast<size_t>(chunks), {});
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const int c = plans_[i].chunk;
      if (c < 0 || c >= chunks)
        throw Error("internal", "", "op " + g_.ops[i].name + " has no pipeline chunk");
      chunk_ops_[c].push_back(static_cast<int>(i));
    }
    consumers_.assign(g_.tensors.size(), {});
    for (size_t i = 0; i < g_.ops.size(); ++i)
      for (size_t k = 0; k < g_.ops[i].inputs.size(); ++k)
        consumers_[g_.ops[i].inputs[k].tensor].push_back({static_cast<int>(i), static_cast<int>(k)});
    work_ids_.assign(3 * g_.ops.size(), -1);
    labels_.resize(g_.ops.size());
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const std::string& path = g_.modules[g_.ops[i].module].path;
      labels_[i] = exec_.label_id(path.empty() ? g_.ops[i].name : path + "." + g_.ops[i].name);
    }
    build_segments();
    weight_stages_.assign(g_.tensors.size(), {});
    for (size_t i = 0; i < g_.ops.size(); ++i)
      for (const TensorUse& w : g_.ops[i].weights) {
        auto& st = weight_stages_[w.tensor];
        const int s = tree_.stage_of_chunk(plans_[i].chunk);
        if (std::find(st.begin(), st.end(), s) == st.end()) st.push_back(s);
      }
    for (auto& st : weight_stages_) std::sort(st.begin(), st.end());
    const bool mixed = is_mixed_precision(in_.config.training.precision);
    weight_bytes_ = mixed ? 2 : 4;
    opt_state_bytes_ = optimizer_state_bytes_per_param(in_.config.training.optimizer, mixed);
    opt_traffic_bytes_ = optimizer_bytes_per_param(in_.config.training.optimizer, mixed);
  }

  // Full recompute: consecutive ops of one layer (or one non-layer module) in a chunk.
  void build_segments() {
    seg_of_op_.assign(g_.ops.size(), -1);
    for (const auto& ops : chunk_ops_) {
      int prev_key = -2;
      for (int op : ops) {
        if (plans_[op].recompute != Recompute::Full) {
          prev_key = -2;
          continue;
        }
        const Module& m = g_.modules[g_.ops[op].module];
        const int key = m.layer >= 0 ? m.layer : -100 - g_.ops[op].module;
        if (key != prev_key) segments_.push_back({});
        segments_.back().ops.push_back(op);
        seg_of_op_[op] = static_cast<int>(segments_.size()) - 1;
        prev_key = key;
      }
    }
    // Checkpoint = the inputs a segment reads from outside itself, stored once.
    for (Segment& s : segments_) {
      std::vector<int> seen;
      for (int op : s.ops) {
        const Op& o = g_.ops[op];
        for (size_t k = 0; k < o.inputs.size(); ++k) {
          const int t = o.inputs[k].tensor;
          const int prod = g_.tensors[t].producer;
          if (prod >= 0 && seg_of_op_[prod] == seg_of_op_[op]) continue;
          if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
          seen.push_back(t);
          s.checkpoint_bytes += tensor_bytes_per_rank(g_.tensors[t], plans_[op].input_required[k], mesh_);
        }
      }
    }
  }

  bool drops_extra(int op) const {
    return plans_[op].recompute == Recompute::Selective && g_.ops[op].selective_recompute;
  }
  double fwd_alloc(int op) const {
    const OpPlan& p = plans_[op];
    const int s = seg_of_op_[op];
    if (s >= 0) return segments_[s].ops.front() == op ? segments_[s].checkpoint_bytes : 0;
    return p.saved_input_bytes + (drops_extra(op) ? 0 : p.saved_extra_bytes);
  }
  double recompute_alloc(int op) const {
    const OpPlan& p = plans_[op];
    if (seg_of_op_[op] >= 0) return p.saved_input_bytes + p.saved_extra_bytes;
    return drops_extra(op) ? p.saved_extra_bytes : 0;
  }
  // Ops with weights get a separate weight-gradient task when it does any work.
  bool has_w(int op) const {
    return plans_[op].has_weights() && (g_.ops[op].bwd_weight_flops > 0 || g_.ops[op].bwd_weight_bytes > 0);
  }

  void make_ranks() {
    exec_.mesh = mesh_;
    exec_.symmetric = in_.symmetric;
    const int per_stage = mesh_.ranks() / mesh_.size[kAxisPp];
    if (in_.symmetric) {
      for (int s = 0; s < tree_.stages; ++s) {
        std::array<int, kNumMeshAxes> c{};
        c[kAxisPp] = s;
        exec_.ranks.push_back({mesh_.gpu_of(c), s, per_stage, {}});
      }
    } else {
      for (int gpu = 0; gpu < mesh_.ranks(); ++gpu)
        exec_.ranks.push_back({gpu, mesh_.coords_of(gpu)[kAxisPp], 1, {}});
    }
    exec_.queues.assign(exec_.ranks.size() * kNumStreams, {});
    stats_.static_bytes_per_stage.assign(static_cast<size_t>(tree_.stages), {});
    stats_.activation_bytes_per_microbatch_per_stage.assign(static_cast<size_t>(tree_.stages), 0);
    stats_.p2p_bytes_per_boundary.assign(static_cast<size_t>(std::max(0, tree_.chunks() - 1)), 0);
  }

  // ---------- task emission ----------
  // Deps >= 0 are task ids; < 0 are -(pending send index + 1), resolved once all ranks exist.
  // The list forms take their arguments without building vectors (no allocation per task).
  int emit(const Task& t, const std::vector<int>& deps, const std::vector<MemEvent>& mem) {
    return emit(t, deps.data(), deps.size(), mem.data(), mem.size());
  }
  int emit(const Task& t, const std::vector<int>& deps, std::initializer_list<MemEvent> mem) {
    return emit(t, deps.data(), deps.size(), mem.begin(), mem.size());
  }
  int emit(const Task& t, std::initializer_list<int> deps, std::initializer_list<MemEvent> mem) {
    return emit(t, deps.begin(), deps.size(), mem.begin(), mem.size());
  }
  int emit(const Task& t, const int* deps, size_t n_deps, const MemEvent* mem, size_t n_mem) {
    if (rec_) record_compute(t, deps, n_deps, mem, n_mem);
    return emit_with_list(t, deps, n_deps, exec_.add_mem_list(mem, n_mem));
  }
  // The task with an existing memory list (ExecGraph::task_mem); not recorded.
  int emit_with_list(const Task& t, const int* deps, size_t n_deps, int mem_list) {
    const int id = static_cast<int>(exec_.tasks.size());
    exec_.tasks.push_back(t);
    for (size_t i = 0; i < n_deps; ++i) {
      const int d = deps[i];
      if (d < 0) pending_slots_.push_back({exec_.deps.size(), pending_keys_[static_cast<size_t>(-d - 1)]});
      exec_.deps.push_back(d);
    }
    exec_.dep_offsets.push_back(static_cast<int>(exec_.deps.size()));
    exec_.task_mem.push_back(mem_list);
    exec_.queues[static_cast<size_t>(t.rank) * kNumStreams + static_cast<size_t>(t.stream)].push_back(id);
    return id;
  }

  int pending_ref(uint64_t key) {
    pending_keys_.push_back(key);
    return -static_cast<int>(pending_keys_.size());
  }

  void resolve_pending() {
    for (const auto& [slot, key] : pending_slots_) {
      const int* send = sends_.find(key);
      if (!send) throw Error("internal", "", "a pipeline receive has no matching send");
      exec_.deps[slot] = *send;
    }
  }

  bool is_stats_rank() const { return exec_.ranks[rank_].gpu == stage_rep_gpu(stage_); }
  int stage_rep_gpu(int stage) const {
    std::array<int, kNumMeshAxes> c{};
    c[kAxisPp] = stage;
    return mesh_.gpu_of(c);
  }

  // Counted per (stage, kind, axes, purpose, group size); matched on the values, not on the
  // strings the report prints (a string comparison per collective was a hot spot).
  struct StatKey {
    int stage;
    CollectiveKind kind;
    AxisMask axes;
    const char* purpose;
    int group_size;
    bool operator==(const StatKey& o) const {
      return stage == o.stage && kind == o.kind && axes == o.axes && group_size == o.group_size &&
             std::strcmp(purpose, o.purpose) == 0;
    }
  };

  void record_stat(CollectiveKind kind, AxisMask axes, const char* purpose, int group_size, double bytes) {
    if (!is_stats_rank()) return;
    const StatKey key{stage_, kind, axes, purpose, group_size};
    for (size_t i = rank_stats_begin_; i < stat_keys_.size(); ++i) {  // this rank's entries
      if (!(stat_keys_[i] == key)) continue;
      CollectiveStat& s = stats_.collectives[i];
      ++s.count;
      s.bytes_per_rank += bytes;
      return;
    }
    stat_keys_.push_back(key);
    stats_.collectives.push_back({to_string(kind), axes_name(axes), purpose, group_size, 1, bytes, stage_});
  }

  // A collective task of this rank; members of the same group emit them in the same order,
  // which is how the instances are matched across simulated ranks.
  int emit_collective(CollectiveKind kind, AxisMask axes, double bytes, Stream stream, Phase phase, int mb,
                      int label, const std::vector<int>& deps, const char* purpose,
                      const std::vector<int>& explicit_group = {}) {
    const std::vector<int>& group = explicit_group.empty() ? my_group(axes) : explicit_group;
    Task t;
    t.kind = TaskKind::Collective;
    t.phase = phase;
    t.stream = stream;
    t.rank = rank_;
    t.micro_batch = mb;
    t.label = label;
    t.stage = stage_;
    const uint64_t ordinal =
        ordinals_[static_cast<size_t>(axes) | (stream == Stream::DpComm ? 0x100u : 0u)]++;
    const uint64_t key = (static_cast<uint64_t>(group.front()) << 40) ^ (static_cast<uint64_t>(axes) << 32) ^
                         (stream == Stream::DpComm ? (1ull << 39) : 0) ^ ordinal;
    // With the symmetry reduction, a group within one pipeline stage has one simulated member
    // (the stage's representative): there is no other member's instance to match.
    const bool shared = !in_.symmetric || (axes & axis_bit(kAxisPp)) || !explicit_group.empty();
    const int* known = shared ? instance_.find(key) : nullptr;
    int cid;
    if (!known || exec_.collectives[*known].group != group) {
      cid = static_cast<int>(exec_.collectives.size());
      exec_.collectives.push_back(
          {kind, bytes, axes, group, {}, explicit_group.empty() ? signature(kind, axes, bytes) : -1});
      if (shared) instance_.set(key, cid);
    } else {
      cid = *known;
    }
    t.collective = cid;
    if (rec_) record_collective(t, kind, axes, bytes, deps, purpose, !explicit_group.empty());
    const int id = emit_with_list(t, deps.data(), deps.size(), comm_buffer_list(bytes));
    exec_.collectives[cid].member_tasks.push_back(id);
    record_stat(kind, axes, purpose, static_cast<int>(group.size()), bytes);
    return id;
  }

  // Signature of a collective of this rank's group along `axes` (Collective::signature): the
  // group is fixed by the rank and the axes, so (axes, kind, bytes) names it within the rank.
  int signature(CollectiveKind kind, AxisMask axes, double bytes) {
    const uint64_t bits = id_key(bytes);
    IdMap& by_bytes =
        signatures_[static_cast<size_t>(axes) * kNumCollectiveKinds + static_cast<size_t>(kind)];
    if (const int* known = by_bytes.find(bits)) return *known;
    by_bytes.set(bits, next_signature_);
    return next_signature_++;
  }

  // A collective's buffer, held while it runs: one memory list per size.
  int comm_buffer_list(double bytes) {
    const uint64_t bits = id_key(bytes);
    if (const int* known = comm_lists_.find(bits)) return *known;
    const MemEvent events[2] = {{MemCategory::CommBuffers, false, bytes},
                                {MemCategory::CommBuffers, true, -bytes}};
    const int list = exec_.add_mem_list(events, 2);
    comm_lists_.set(bits, list);
    return list;
  }

  // This rank's group along `axes` (Mesh::group), computed once per rank and axes.
  const std::vector<int>& my_group(AxisMask axes) {
    std::vector<int>& g = group_cache_[static_cast<size_t>(axes)];
    if (g.empty()) g = mesh_.group(exec_.ranks[rank_].gpu, axes);
    return g;
  }

  int emit_send(int dst_gpu, int tensor, int mb, bool backward, double bytes, int label, int dep, int chunk) {
    Task t;
    t.kind = TaskKind::Collective;
    t.phase = backward ? Phase::BackwardInput : Phase::Forward;
    t.stream = Stream::PpComm;
    t.rank = rank_;
    t.micro_batch = mb;
    t.label = label;
    t.stage = stage_;
    const int cid = static_cast<int>(exec_.collectives.size());
    exec_.collectives.push_back(
        {CollectiveKind::SendRecv, bytes, axis_bit(kAxisPp), {exec_.ranks[rank_].gpu, dst_gpu}, {}});
    t.collective = cid;
    if (rec_) record_send(t, dst_gpu, tensor, backward, bytes, dep, chunk);
    const int id = emit_with_list(t, &dep, 1, -1);
    exec_.collectives[cid].member_tasks.push_back(id);
    sends_.set(send_key(dst_gpu, tensor, mb, backward), id);
    record_stat(CollectiveKind::SendRecv, axis_bit(kAxisPp), "pipeline", 2, bytes);
    if (is_stats_rank() && mb == 0 && !backward && chunk + 1 < tree_.chunks() &&
        stats_.p2p_bytes_per_boundary[chunk] == 0)
      stats_.p2p_bytes_per_boundary[chunk] = bytes;
    return id;
  }

  int gpu_of_chunk(int chunk) const {
    auto c = mesh_.coords_of(exec_.ranks[rank_].gpu);
    c[kAxisPp] = tree_.stage_of_chunk(chunk);
    return mesh_.gpu_of(c);
  }
  bool chunk_is_local(int chunk) const { return tree_.stage_of_chunk(chunk) == stage_; }

  // Task (or pending send) after which tensor t is on this rank in layout `want`.
  // Returns INT32_MIN when no task is needed (a model input).
  int tensor_in_layout(int mb, Namespace ns, int t, const Layout& want) {
    const int prod = g_.tensors[t].producer;
    if (prod < 0) return INT32_MIN;
    const int* found = providers_.find(mb, provider_key(mb, ns, t, want));
    if (!found && ns == kRecompute) found = providers_.find(mb, provider_key(mb, kFwd, t, want));
    if (found) return *found;
    const Layout& src = plans_[prod].output;
    int src_task;
    const int* at_src = providers_.find(mb, provider_key(mb, ns, t, src));
    if (!at_src && ns == kRecompute) at_src = providers_.find(mb, provider_key(mb, kFwd, t, src));
    if (at_src) {
      src_task = *at_src;
    } else if (!chunk_is_local(plans_[prod].chunk)) {
      src_task = pending_ref(send_key(exec_.ranks[rank_].gpu, t, mb, false));
      set_provider(provider_key(mb, kFwd, t, src), src_task);
    } else {
      throw Error("internal", "", "tensor " + g_.tensors[t].name + " is used before it is produced");
    }
    if (src == want) return src_task;
    int last = src_task;
    for (const CollectiveStep& step : redistribute(src, want, g_.tensors[t].bytes(), mesh_))
      last = emit_collective(step.kind, step.axes, step.bytes, Stream::TpComm,
                             ns == kFwd ? Phase::Forward : Phase::Recompute, mb, labels_[prod], {last},
                             "activation");
    set_provider(provider_key(mb, ns, t, want), last);
    return last;
  }

  static void add_dep(std::vector<int>* deps, int d) {
    if (d != INT32_MIN) deps->push_back(d);
  }

  // ZeRO-3: gather an op's weights before each use (one all-gather per op, as FSDP gathers a
  // module's flat parameter); the gathered copy is freed when its user ends.
  void zero3_gathers(int op, int mb, Phase phase, std::vector<int>* deps, std::vector<MemEvent>* frees) {
    std::vector<CollectiveStep> merged;
    double gathered_bytes = 0;
    for (const WeightPlan& w : plans_[op].weights) {
      if (w.storage == w.use) continue;
      gathered_bytes += w.local_params * weight_bytes_;
      for (const CollectiveStep& s :
           redistribute(w.storage, w.use, g_.tensors[w.tensor].elements() * weight_bytes_, mesh_)) {
        auto it = std::find_if(merged.begin(), merged.end(),
                               [&](const CollectiveStep& m) { return m.kind == s.kind && m.axes == s.axes; });
        if (it == merged.end())
          merged.push_back(s);
        else
          it->bytes += s.bytes;
      }
    }
    if (merged.empty()) return;
    std::vector<int> gdeps;
    if (last_weight_compute_ >= 0) gdeps.push_back(last_weight_compute_);  // prefetch one op ahead
    for (const CollectiveStep& step : merged)
      gdeps = {emit_collective(step.kind, step.axes, step.bytes, Stream::DpComm, phase, mb, labels_[op],
                               gdeps, "weight")};
    deps->push_back(gdeps.back());
    frees->push_back({MemCategory::Weights, true, -gathered_bytes});
    pending_weight_alloc_.push_back({MemCategory::Weights, false, gathered_bytes});
  }

  // Index of an op's forward (0), input-gradient (1) or weight-gradient (2) work in
  // ExecGraph::works, added on first use: all micro-batches and ranks share it.
  int work_id(int op, int which) {
    int& id = work_ids_[static_cast<size_t>(3 * op + which)];
    if (id < 0) {
      const OpPlan& p = plans_[op];
      id = exec_.add_work(which == 0 ? p.fwd : which == 1 ? p.bwd_input : p.bwd_weight);
    }
    return id;
  }

  Task compute_task(int op, Phase phase, int mb, int work) const {
    Task t;
    t.kind = TaskKind::Compute;
    t.phase = phase;
    t.stream = Stream::Compute;
    t.rank = rank_;
    t.micro_batch = mb;
    t.label = labels_[op];
    t.stage = stage_;
    t.work = work;
    return t;
  }

  void forward_op(int op, int mb, Namespace ns) {
    const Op& o = g_.ops[op];
    const OpPlan& p = plans_[op];
    std::vector<int> deps;
    for (size_t k = 0; k < o.inputs.size(); ++k)
      add_dep(&deps, tensor_in_layout(mb, ns, o.inputs[k].tensor, p.input_required[k]));
    if (ns == kFwd && param_gather_ready_[op] >= 0) deps.push_back(param_gather_ready_[op]);
    std::vector<MemEvent> mem;
    pending_weight_alloc_.clear();
    zero3_gathers(op, mb, ns == kFwd ? Phase::Forward : Phase::Recompute, &deps, &mem);
    const double keep = (ns == kFwd) ? fwd_alloc(op) : recompute_alloc(op);
    if (keep > 0) mem.push_back({MemCategory::Activations, true, keep});
    mem.insert(mem.begin(), pending_weight_alloc_.begin(), pending_weight_alloc_.end());
    const int id =
        emit(compute_task(op, ns == kFwd ? Phase::Forward : Phase::Recompute, mb, work_id(op, 0)), deps, mem);
    if (p.has_weights()) last_weight_compute_ = id;
    last_compute_ = id;
    if (ns == kFwd && is_stats_rank() && mb == 0)
      stats_.activation_bytes_per_microbatch_per_stage[stage_] += keep;
    if (o.output.tensor < 0) return;
    const int out = o.output.tensor;
    set_provider(provider_key(mb, ns, out, p.output), id);
    if (consumers_[out].empty()) {
      // A model output with partial sums (the vocab-parallel loss) is reduced where it is made.
      Layout whole = p.output;
      for (int& pl : whole.placement)
        if (pl == kPartial) pl = kReplicate;
      if (!(whole == p.output)) tensor_in_layout(mb, ns, out, whole);
      return;
    }
    if (ns != kFwd) return;
    // Send to every other rank's chunk that consumes it (once per chunk).
    std::vector<int> sent;
    for (const auto& [c_op, k] : consumers_[out]) {
      const int c = plans_[c_op].chunk;
      if (chunk_is_local(c) || std::find(sent.begin(), sent.end(), c) != sent.end()) continue;
      sent.push_back(c);
      emit_send(gpu_of_chunk(c), out, mb, false, tensor_bytes_per_rank(g_.tensors[out], p.output, mesh_),
                labels_[op], id, plans_[op].chunk);
    }
  }

  // Gradient of op's output in the layout its backward needs: contributions of all consumers,
  // summed locally per layout, each redistributed.
  void output_grad_deps(int op, int mb, std::vector<int>* deps) {
    const Op& o = g_.ops[op];
    const int out = o.output.tensor;
    if (out < 0) return;
    const Layout& want = plans_[op].output_grad_required;
    std::vector<std::pair<Layout, std::vector<int>>> groups;
    auto add = [&](const Layout& l, int task) {
      for (auto& gr : groups)
        if (gr.first == l) {
          gr.second.push_back(task);
          return;
        }
      groups.push_back({l, {task}});
    };
    std::vector<int> remote_chunks;
    for (const auto& [c_op, k] : consumers_[out]) {
      const int c = plans_[c_op].chunk;
      if (chunk_is_local(c)) {
        const int* grad = grad_providers_.find(mb, grad_key(mb, out, c_op));
        if (!grad) throw Error("internal", "", "gradient of " + g_.tensors[out].name + " missing");
        add(plans_[c_op].input_grad[k], *grad);
      } else if (std::find(remote_chunks.begin(), remote_chunks.end(), c) == remote_chunks.end()) {
        remote_chunks.push_back(c);
        add(plans_[c_op].input_grad[k], pending_ref(send_key(exec_.ranks[rank_].gpu, out, mb, true)));
      }
    }
    for (auto& [layout, tasks] : groups) {
      if (layout == want) {
        deps->insert(deps->end(), tasks.begin(), tasks.end());
        continue;
      }
      std::vector<int> d = tasks;
      for (const CollectiveStep& step : redistribute(layout, want, g_.tensors[out].bytes(), mesh_))
        d = {emit_collective(step.kind, step.axes, step.bytes, Stream::TpComm, Phase::BackwardInput, mb,
                             labels_[op], d, "activation")};
      deps->insert(deps->end(), d.begin(), d.end());
    }
  }

  static uint64_t grad_key(int mb, int tensor, int consumer_op) {
    return (static_cast<uint64_t>(mb) << 42) | (static_cast<uint64_t>(tensor) << 21) |
           static_cast<uint64_t>(consumer_op);
  }

  void backward_op(int op, int mb, bool split_w) {
    const Op& o = g_.ops[op];
    const OpPlan& p = plans_[op];
    // Recompute what the backward needs.
    const int seg = seg_of_op_[op];
    if (seg >= 0 && segments_[seg].ops.back() == op)
      for (int r : segments_[seg].ops) forward_op(r, mb, kRecompute);
    else if (seg < 0 && drops_extra(op))
      forward_op(op, mb, kRecompute);

    std::vector<int> grad_deps;
    output_grad_deps(op, mb, &grad_deps);
    std::vector<int> deps = grad_deps;
    std::vector<MemEvent> mem;
    pending_weight_alloc_.clear();
    zero3_gathers(op, mb, Phase::BackwardInput, &deps, &mem);
    if (!input_needed_by_w(op)) regather_inputs(op, mb, Phase::BackwardInput, &deps);
    mem.insert(mem.begin(), pending_weight_alloc_.begin(), pending_weight_alloc_.end());
    const double held = fwd_alloc(op) + recompute_alloc(op);
    const bool w_here = has_w(op);
    if (!w_here && held > 0) mem.push_back({MemCategory::Activations, true, -held});
    const int b = emit(compute_task(op, Phase::BackwardInput, mb, work_id(op, 1)), deps, mem);
    last_compute_ = b;
    if (p.has_weights()) last_weight_compute_ = b;
    for (size_t k = 0; k < o.inputs.size(); ++k) set_grad_provider(grad_key(mb, o.inputs[k].tensor, op), b);
    // Gradients of inputs produced on another rank go back to it once per tensor. As in
    // Megatron's schedules, the send is issued when the backward step of the chunk returns
    // (after its weight gradients too, unless the schedule splits them off): see end_backward_pass.
    for (size_t k = 0; k < o.inputs.size(); ++k) {
      const int t = o.inputs[k].tensor;
      const int prod = g_.tensors[t].producer;
      if (prod < 0 || chunk_is_local(plans_[prod].chunk)) continue;
      int first_consumer = -1;
      for (const auto& [c_op, kk] : consumers_[t])
        if (plans_[c_op].chunk == p.chunk) {
          first_consumer = c_op;
          break;
        }
      if (first_consumer != op) continue;
      pending_grad_sends_.push_back(
          {t, prod, tensor_bytes_per_rank(g_.tensors[t], p.input_grad[k], mesh_), labels_[op]});
    }
    if (w_here) {
      if (split_w)
        set_w_grad_deps(wkey(mb, op), grad_deps);
      else
        weight_grad(op, mb, grad_deps);
    } else if (p.has_weights() && count_weight_use(op) == tree_.micro_batches) {
      weights_final(op, b);
    }
  }

  struct GradSend {
    int tensor, producer;
    double bytes;
    int label;
  };

  void end_backward_pass(int mb) {
    for (const GradSend& gs : pending_grad_sends_)
      emit_send(gpu_of_chunk(plans_[gs.producer].chunk), gs.tensor, mb, true, gs.bytes, gs.label,
                last_compute_, plans_[gs.producer].chunk);
    pending_grad_sends_.clear();
  }

  // Inputs the backward reads that were kept as a shard (op_plan.h, input_saved) are gathered
  // again, once per tensor and micro-batch, on the tensor-parallel stream; the task that needs
  // them waits, the input-gradient GEMM does not (Megatron overlaps this all-gather with it).
  void regather_inputs(int op, int mb, Phase phase, std::vector<int>* deps) {
    const Op& o = g_.ops[op];
    const OpPlan& p = plans_[op];
    if (!o.saves_inputs) return;
    for (size_t k = 0; k < o.inputs.size(); ++k) {
      if (p.input_saved[k] == p.input_required[k]) continue;
      const int t = o.inputs[k].tensor;
      // A full-recompute replay gathered it already.
      if (const int* replayed = providers_.find(mb, provider_key(mb, kRecompute, t, p.input_required[k]))) {
        deps->push_back(*replayed);
        continue;
      }
      const uint64_t key = provider_key(mb, kFwd, t, p.input_required[k]);
      const int* known = regathered_.find(mb, key);
      int gathered = known ? *known : -1;
      if (!known) {
        std::vector<int> d;
        for (const CollectiveStep& step :
             redistribute(p.input_saved[k], p.input_required[k], g_.tensors[t].bytes(), mesh_))
          d = {emit_collective(step.kind, step.axes, step.bytes, Stream::TpComm, phase, mb, labels_[op], d,
                               "activation")};
        gathered = d.empty() ? -1 : d.front();
        set_regathered(key, gathered);
      }
      if (gathered >= 0) deps->push_back(gathered);
    }
  }

  // Matmul and convolution backward needs the input for the weight gradient only.
  bool input_needed_by_w(int op) const {
    const OpKind k = g_.ops[op].kind;
    return has_w(op) && (k == OpKind::Matmul || k == OpKind::Conv2d);
  }

  static uint64_t wkey(int mb, int op) {
    return (static_cast<uint64_t>(mb) << 32) | static_cast<uint64_t>(op);
  }

  void weight_grad(int op, int mb, const std::vector<int>& grad_deps) {
    const double held = fwd_alloc(op) + recompute_alloc(op);
    std::vector<MemEvent> mem;
    if (held > 0) mem.push_back({MemCategory::Activations, true, -held});
    std::vector<int> deps = grad_deps;
    if (input_needed_by_w(op)) regather_inputs(op, mb, Phase::BackwardWeight, &deps);
    const int w = emit(compute_task(op, Phase::BackwardWeight, mb, work_id(op, 2)), deps, mem);
    last_compute_ = w;
    if (count_weight_use(op) == tree_.micro_batches) weights_final(op, w);
  }

  // ---------- gradients, optimizer, parameters ----------
  // Weight tensors of this stage in the order their last gradient completes (backward order of
  // the stage's chunks, last chunk first), grouped into DDP-like buckets.
  void plan_buckets() {
    buckets_.clear();
    bucket_of_tensor_.assign(g_.tensors.size(), -1);
    uses_left_.assign(g_.tensors.size(), 0);
    const double first_cap = kFirstBucketMB * kBytesPerMB;
    const double cap = in_.config.strategy.grad_bucket_MB * kBytesPerMB;
    double filled = 0;
    for (int c = tree_.chunks() - 1; c >= 0; --c) {
      if (!chunk_is_local(c)) continue;
      for (auto it = chunk_ops_[c].rbegin(); it != chunk_ops_[c].rend(); ++it) {
        for (const WeightPlan& w : plans_[*it].weights) {
          ++uses_left_[w.tensor];
          if (bucket_of_tensor_[w.tensor] >= 0) continue;
          if (buckets_.empty() || filled >= (buckets_.size() == 1 ? first_cap : cap)) {
            buckets_.push_back({});
            filled = 0;
          }
          bucket_of_tensor_[w.tensor] = static_cast<int>(buckets_.size()) - 1;
          buckets_.back().tensors.push_back(w.tensor);
          buckets_.back().param_bytes_16 += w.local_params * weight_bytes_;
          ++buckets_.back().pending;
          filled += w.local_params * kGradBytes;
        }
      }
    }
    // Which weight plan describes each tensor (first use wins; tied uses share layouts per stage).
    weight_plan_of_tensor_.assign(g_.tensors.size(), nullptr);
    for (int c = 0; c < tree_.chunks(); ++c) {
      if (!chunk_is_local(c)) continue;
      for (int op : chunk_ops_[c])
        for (const WeightPlan& w : plans_[op].weights)
          if (!weight_plan_of_tensor_[w.tensor]) weight_plan_of_tensor_[w.tensor] = &w;
    }
  }

  void weights_final(int op, int w_task) {
    for (const WeightPlan& w : plans_[op].weights) {
      if (--uses_left_[w.tensor] > 0) continue;
      Bucket& b = buckets_[bucket_of_tensor_[w.tensor]];
      b.ready_tasks.push_back(w_task);
      if (--b.pending == 0 && in_.config.strategy.overlap_grad_reduce)
        reduce_bucket(bucket_of_tensor_[w.tensor], b.ready_tasks);
    }
  }

  void reduce_bucket(int bi, const std::vector<int>& deps) {
    Bucket& b = buckets_[bi];
    // Sum the steps of every weight per (kind, axes): one collective each.
    std::vector<CollectiveStep> merged;
    for (int t : b.tensors) {
      const WeightPlan& w = *weight_plan_of_tensor_[t];
      for (const CollectiveStep& s :
           redistribute(w.grad, w.grad_target, g_.tensors[t].elements() * kGradBytes, mesh_)) {
        auto it = std::find_if(merged.begin(), merged.end(),
                               [&](const CollectiveStep& m) { return m.kind == s.kind && m.axes == s.axes; });
        if (it == merged.end())
          merged.push_back(s);
        else
          it->bytes += s.bytes;
      }
    }
    const int label = exec_.label_id("grad_bucket_" + std::to_string(bi));
    for (const CollectiveStep& s : merged)
      grad_sync_tasks_.push_back(
          emit_collective(s.kind, s.axes, s.bytes, Stream::DpComm, Phase::Sync, -1, label, deps, "gradient"));
  }

  void tied_weight_reduce() {
    // A weight used by ops on several stages (tied input/output embedding) keeps a copy per
    // stage; their gradients are summed across those stages (Megatron's embedding group).
    for (size_t t = 0; t < g_.tensors.size(); ++t) {
      if (!weight_plan_of_tensor_[t]) continue;
      const std::vector<int>& stages = weight_stages_[t];
      if (stages.size() < 2) continue;
      std::vector<int> group;
      auto c = mesh_.coords_of(exec_.ranks[rank_].gpu);
      for (int s : stages) {
        c[kAxisPp] = s;
        group.push_back(mesh_.gpu_of(c));
      }
      const WeightPlan& w = *weight_plan_of_tensor_[t];
      const double bytes =
          static_cast<double>(g_.tensors[t].elements()) / w.grad_target.shard_factor(mesh_) * kGradBytes;
      std::vector<int> deps = grad_sync_tasks_;
      if (deps.empty() && last_compute_ >= 0) deps.push_back(last_compute_);
      grad_sync_tasks_.push_back(
          emit_collective(CollectiveKind::AllReduce, axis_bit(kAxisPp), bytes, Stream::DpComm, Phase::Sync,
                          -1, exec_.label_id("tied_embedding"), deps, "tied_embedding", group));
    }
  }

  double data_replication(const WeightPlan& w) const {
    double f = 1;
    for (int a = 0; a < kNumMeshAxes; ++a)
      if (w.data_axes_replicated & (1u << a)) f *= mesh_.size[a];
    return f;
  }

  void static_memory_and_optimizer() {
    const int zero = in_.config.strategy.zero;
    std::array<double, kNumMemCategories> bytes{};
    double opt_params = 0;
    for (size_t t = 0; t < g_.tensors.size(); ++t) {
      const WeightPlan* w = weight_plan_of_tensor_[t];
      if (!w) continue;
      const double d = data_replication(*w);
      const double p = w->local_params;
      bytes[static_cast<int>(MemCategory::Weights)] += p * weight_bytes_ / (zero >= 3 ? d : 1);
      bytes[static_cast<int>(MemCategory::Gradients)] += p * kGradBytes / (zero >= 2 ? d : 1);
      bytes[static_cast<int>(MemCategory::OptimizerStates)] += p * opt_state_bytes_ / (zero >= 1 ? d : 1);
      opt_params += p / (zero >= 1 ? d : 1);
    }
    exec_.ranks[rank_].static_bytes = bytes;
    if (is_stats_rank()) stats_.static_bytes_per_stage[stage_] = bytes;
    // The optimizer step: memory-bound over the parameters this rank updates.
    Task t;
    t.kind = TaskKind::Compute;
    t.phase = Phase::Optimizer;
    t.stream = Stream::Compute;
    t.rank = rank_;
    t.label = exec_.label_id("optimizer");
    t.stage = stage_;
    ComputeWork step;
    step.op_kind = OpKind::Elementwise;
    step.bytes = opt_params * opt_traffic_bytes_;
    step.flops = opt_params * 10;  // a handful of flops per parameter (Adam: ~10)
    t.work = exec_.add_work(step);
    std::vector<int> deps = grad_sync_tasks_;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    last_compute_ = emit(t, deps, {});
  }

  // ZeRO-1/2: after the step each rank holds 1/d of the updated weights; all-gather them.
  void param_gathers(bool at_start) {
    const int zero = in_.config.strategy.zero;
    if (zero < 1 || zero >= 3) return;
    std::vector<int> gather_of_bucket(buckets_.size(), -1);
    for (size_t bi = 0; bi < buckets_.size(); ++bi) {
      const Bucket& b = buckets_[bi];
      AxisMask axes = 0;
      for (int t : b.tensors) axes |= weight_plan_of_tensor_[t]->data_axes_replicated;
      if (!axes) continue;
      std::vector<int> deps;
      if (!at_start && last_compute_ >= 0) deps.push_back(last_compute_);
      const int id =
          emit_collective(CollectiveKind::AllGather, axes, b.param_bytes_16, Stream::DpComm, Phase::Sync, -1,
                          exec_.label_id("param_gather_" + std::to_string(bi)), deps, "weight");
      gather_of_bucket[bi] = id;
    }
    if (!at_start) return;
    // Overlapped with the forward (Megatron's overlap_param_gather): each op's forward waits
    // for the all-gather of its weights' bucket.
    for (int c = 0; c < tree_.chunks(); ++c) {
      if (!chunk_is_local(c)) continue;
      for (int op : chunk_ops_[c])
        for (const WeightPlan& w : plans_[op].weights) {
          const int task = gather_of_bucket[bucket_of_tensor_[w.tensor]];
          if (task >= 0) param_gather_ready_[op] = std::max(param_gather_ready_[op], task);
        }
    }
  }

  // ---------- micro-batch templates (pass_replay.h) ----------
  void build_pass(const Pass& pass, int chunk) {
    const auto& ops = chunk_ops_[chunk];
    const int mb = pass.micro_batch;
    apply_deferred_writes(mb);
    if (pass.kind == PassKind::F) {
      for (int op : ops) forward_op(op, mb, kFwd);
    } else if (pass.kind == PassKind::B) {
      const bool split = schedule_splits_backward(tree_.schedule);
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) backward_op(*it, mb, split);
      end_backward_pass(mb);
    } else {
      for (auto it = ops.rbegin(); it != ops.rend(); ++it)
        if (has_w(*it)) weight_grad(*it, mb, w_grad_deps_.at(wkey(mb, *it)));
    }
  }

  // Builds a pass op by op; the first two instances of a (kind, chunk) are recorded and, when
  // equal, make the template. The last micro-batch is never recorded or replayed: its
  // backward completes the weight gradients and starts their reduction.
  void build_pass_recorded(const Pass& pass, int chunk, PassTemplate* tp) {
    const bool record = in_.micro_batch_templates && !tp->failed && !tp->verified &&
                        pass.micro_batch != tree_.micro_batches - 1;
    if (!record) {
      build_pass(pass, chunk);
      return;
    }
    PassRecording recording;
    rec_ = &recording;
    rec_begin_ = static_cast<int>(exec_.tasks.size());
    rec_mb_ = pass.micro_batch;
    build_pass(pass, chunk);
    recording.tasks = static_cast<int>(exec_.tasks.size()) - rec_begin_;
    recording.last_compute = relative(last_compute_, false);
    recording.last_weight_compute = relative(last_weight_compute_, false);
    rec_ = nullptr;
    if (tp->seen++ == 0) {
      tp->recording = std::move(recording);
      tp->failed = !tp->recording.valid;
    } else {
      tp->verified = tp->recording == recording;
      tp->failed = !tp->verified;
    }
  }

  static uint64_t pass_key(PassKind kind, int chunk, int mb) {
    return (static_cast<uint64_t>(mb) << 24) | (static_cast<uint64_t>(chunk) << 2) |
           static_cast<uint64_t>(kind);
  }

  // A task id (or pending receive) as seen from the pass being recorded.
  RelRef relative(int id, bool may_be_pending) {
    RelRef r;
    r.value = id;
    if (id < 0) {
      if (!may_be_pending || id == INT32_MIN) return r;  // a sentinel (-1: none)
      const uint64_t key = pending_keys_[static_cast<size_t>(-id - 1)];
      if (kSendMb.get(key) != static_cast<uint64_t>(rec_mb_)) rec_->valid = false;
      r.kind = RelRef::kPending;
      r.value = static_cast<int64_t>(kSendMb.cleared(key));
      return r;
    }
    if (id >= rec_begin_) {
      r.kind = RelRef::kInPass;
      r.value = id - rec_begin_;
      return r;
    }
    auto after = std::upper_bound(pass_ranges_.begin(), pass_ranges_.end(), id,
                                  [](int t, const PassRange& p) { return t < p.begin; });
    if (after == pass_ranges_.begin() || id >= std::prev(after)->end) return r;  // outside every pass
    const PassRange& p = *std::prev(after);
    if (p.mb != rec_mb_) {
      rec_->valid = false;  // depends on another micro-batch's pass
      return r;
    }
    const OtherPass other{static_cast<uint8_t>(p.kind), p.chunk, p.end - p.begin};
    auto& others = rec_->other_passes;
    auto it = std::find(others.begin(), others.end(), other);
    r.kind = RelRef::kOtherPass;
    r.slot = static_cast<int>(it - others.begin());
    if (it == others.end()) others.push_back(other);
    r.value = id - p.begin;
    return r;
  }

  ReplayItem& record_item(ReplayItem::Kind kind, const int* refs, size_t n_refs, bool may_be_pending) {
    ReplayItem item;
    item.kind = kind;
    item.ref_begin = static_cast<uint32_t>(rec_->refs.size());
    for (size_t i = 0; i < n_refs; ++i) rec_->refs.push_back(relative(refs[i], may_be_pending));
    item.ref_end = static_cast<uint32_t>(rec_->refs.size());
    item.mem_begin = item.mem_end = static_cast<uint32_t>(rec_->mem.size());
    rec_->items.push_back(item);
    return rec_->items.back();
  }

  // A task's shape: without the instance's micro-batch and collective.
  ReplayItem& record_task(ReplayItem::Kind kind, const Task& t, const int* deps, size_t n_deps) {
    ReplayItem& item = record_item(kind, deps, n_deps, true);
    item.task = t;
    item.task.micro_batch = -1;
    item.task.collective = -1;
    if (t.micro_batch != rec_mb_) rec_->valid = false;
    return item;
  }

  void record_compute(const Task& t, const int* deps, size_t n_deps, const MemEvent* mem, size_t n_mem) {
    ReplayItem& item = record_task(ReplayItem::kCompute, t, deps, n_deps);
    rec_->mem.insert(rec_->mem.end(), mem, mem + n_mem);
    item.mem_end = static_cast<uint32_t>(rec_->mem.size());
  }

  void record_collective(const Task& t, CollectiveKind kind, AxisMask axes, double bytes,
                         const std::vector<int>& deps, const char* purpose, bool explicit_group) {
    ReplayItem& item = record_task(ReplayItem::kCollective, t, deps.data(), deps.size());
    item.ckind = kind;
    item.axes = axes;
    item.bytes = bytes;
    item.purpose = purpose;
    if (explicit_group) rec_->valid = false;
  }

  void record_send(const Task& t, int dst_gpu, int tensor, bool backward, double bytes, int dep, int chunk) {
    ReplayItem& item = record_task(ReplayItem::kSend, t, &dep, 1);
    item.dst_gpu = dst_gpu;
    item.tensor = tensor;
    item.backward = backward;
    item.bytes = bytes;
    item.chunk = chunk;
  }

  void record_key(ReplayItem::Kind kind, uint64_t key, const MbField& field, const int* values, size_t n,
                  bool may_be_pending) {
    ReplayItem& item = record_item(kind, values, n, may_be_pending);
    item.key = field.cleared(key);
    if (field.get(key) != static_cast<uint64_t>(rec_mb_)) rec_->valid = false;
  }

  void set_provider(uint64_t key, int task) {
    providers_.set(static_cast<int>(kProviderMb.get(key)), key, task);
    if (rec_) record_key(ReplayItem::kProvider, key, kProviderMb, &task, 1, true);
  }
  void set_grad_provider(uint64_t key, int task) {
    grad_providers_.set(static_cast<int>(kProviderMb.get(key)), key, task);
    if (rec_) record_key(ReplayItem::kGradProvider, key, kProviderMb, &task, 1, true);
  }
  void set_regathered(uint64_t key, int task) {  // -1: nothing to gather
    regathered_.set(static_cast<int>(kProviderMb.get(key)), key, task);
    if (rec_) record_key(ReplayItem::kRegathered, key, kProviderMb, &task, 1, false);
  }
  void set_w_grad_deps(uint64_t key, const std::vector<int>& deps) {
    w_grad_deps_[key] = deps;
    if (rec_) record_key(ReplayItem::kWGradDeps, key, kWKeyMb, deps.data(), deps.size(), true);
  }
  int count_weight_use(int op) {
    if (rec_) record_item(ReplayItem::kWeightUse, nullptr, 0, false).op = op;
    return ++w_done_[op];
  }

  // Instantiates a verified template for micro-batch mb; false (nothing emitted) when it
  // cannot be: the passes it refers to are missing or differ, or a weight would get its last
  // gradient (which the op-by-op path must see).
  bool replay_if_possible(PassRecording& r, int mb) {
    if (mb == tree_.micro_batches - 1) return false;
    other_begin_.clear();
    for (const OtherPass& o : r.other_passes) {
      const int* index = pass_index_.find(pass_key(static_cast<PassKind>(o.kind), o.chunk, mb));
      if (!index) return false;
      const PassRange& p = pass_ranges_[static_cast<size_t>(*index)];
      if (p.end - p.begin != o.tasks) return false;
      other_begin_.push_back(p.begin);
    }
    for (const ReplayItem& item : r.items)
      if (item.kind == ReplayItem::kWeightUse && w_done_[item.op] + 1 >= tree_.micro_batches) return false;
    replay(r, mb);
    return true;
  }

  static constexpr int kNoListYet = -2;

  // Instances share their memory lists: made at the first replay, in PassRecording::mem_lists.
  // The task (or new pending receive) a reference means in the instance of micro-batch mb
  // whose first task is `begin`.
  int absolute(const RelRef& ref, int begin, const std::vector<int>& other_begin, int mb) {
    switch (ref.kind) {
      case RelRef::kInPass:
        return begin + static_cast<int>(ref.value);
      case RelRef::kOtherPass:
        return other_begin[static_cast<size_t>(ref.slot)] + static_cast<int>(ref.value);
      case RelRef::kPending:
        return pending_ref(kSendMb.with(static_cast<uint64_t>(ref.value), mb));
      case RelRef::kAbsolute:
        break;
    }
    return static_cast<int>(ref.value);
  }

  static bool is_map_write(ReplayItem::Kind k) {
    return k == ReplayItem::kProvider || k == ReplayItem::kGradProvider || k == ReplayItem::kRegathered ||
           k == ReplayItem::kWGradDeps;
  }

  // An instance's writes to the builder's per-micro-batch maps are only read by op-by-op passes
  // of the same micro-batch (the last one, or those of a failed template): they are applied
  // when such a pass begins (apply_deferred_writes), not at every instance.
  struct DeferredWrites {
    const PassRecording* recording;
    int begin;
    std::vector<int> other_begin;
  };

  void apply_deferred_writes(int mb) {
    if (static_cast<size_t>(mb) >= deferred_.size()) return;
    for (const DeferredWrites& d : deferred_[static_cast<size_t>(mb)])
      for (const ReplayItem& item : d.recording->items) {
        if (!is_map_write(item.kind)) continue;
        std::vector<int>& refs = replay_refs_;
        refs.clear();
        for (uint32_t i = item.ref_begin; i < item.ref_end; ++i)
          refs.push_back(absolute(d.recording->refs[i], d.begin, d.other_begin, mb));
        switch (item.kind) {
          case ReplayItem::kProvider:
            providers_.set(mb, kProviderMb.with(item.key, mb), refs[0]);
            break;
          case ReplayItem::kGradProvider:
            grad_providers_.set(mb, kProviderMb.with(item.key, mb), refs[0]);
            break;
          case ReplayItem::kRegathered:
            regathered_.set(mb, kProviderMb.with(item.key, mb), refs[0]);
            break;
          case ReplayItem::kWGradDeps:
            w_grad_deps_[kWKeyMb.with(item.key, mb)] = refs;
            break;
          default:
            break;
        }
      }
    deferred_[static_cast<size_t>(mb)].clear();
  }

  void replay(PassRecording& r, int mb) {
    if (r.mem_lists.size() != r.items.size()) r.mem_lists.assign(r.items.size(), kNoListYet);
    const int begin = static_cast<int>(exec_.tasks.size());
    bool writes = false;
    std::vector<int>& refs = replay_refs_;
    for (const ReplayItem& item : r.items) {
      if (is_map_write(item.kind)) {
        writes = true;
        continue;
      }
      refs.clear();
      for (uint32_t i = item.ref_begin; i < item.ref_end; ++i)
        refs.push_back(absolute(r.refs[i], begin, other_begin_, mb));
      switch (item.kind) {
        case ReplayItem::kCompute: {
          Task t = item.task;
          t.micro_batch = mb;
          int& list = r.mem_lists[static_cast<size_t>(&item - r.items.data())];
          if (list == kNoListYet)
            list = exec_.add_mem_list(r.mem.data() + item.mem_begin, item.mem_end - item.mem_begin);
          emit_with_list(t, refs.data(), refs.size(), list);
          break;
        }
        case ReplayItem::kCollective:
          emit_collective(item.ckind, item.axes, item.bytes, item.task.stream, item.task.phase, mb,
                          item.task.label, refs, item.purpose);
          break;
        case ReplayItem::kSend:
          emit_send(item.dst_gpu, item.tensor, mb, item.backward, item.bytes, item.task.label, refs[0],
                    item.chunk);
          break;
        case ReplayItem::kWeightUse:
          ++w_done_[item.op];
          break;
        default:
          break;
      }
    }
    last_compute_ = absolute(r.last_compute, begin, other_begin_, mb);
    last_weight_compute_ = absolute(r.last_weight_compute, begin, other_begin_, mb);
    if (writes) {
      if (static_cast<size_t>(mb) >= deferred_.size()) deferred_.resize(static_cast<size_t>(mb) + 1);
      deferred_[static_cast<size_t>(mb)].push_back({&r, begin, other_begin_});
    }
  }

  // ---------- one rank ----------
  void emit_rank(int r) {
    rank_ = r;
    stage_ = exec_.ranks[r].stage;
    providers_.clear();
    grad_providers_.clear();
    regathered_.clear();
    w_grad_deps_.clear();
    for (auto& d : deferred_) d.clear();
    ordinals_.assign(0x200, 0);
    for (auto& g : group_cache_) g.clear();
    for (IdMap& m : signatures_) m.clear();
    rank_stats_begin_ = stat_keys_.size();
    w_done_.assign(g_.ops.size(), 0);
    param_gather_ready_.assign(g_.ops.size(), -1);
    grad_sync_tasks_.clear();
    last_compute_ = -1;
    last_weight_compute_ = -1;
    plan_buckets();
    const bool overlap_params = in_.config.strategy.overlap_param_gather;
    if (overlap_params) param_gathers(true);

    const auto passes =
        stage_schedule(tree_.schedule, tree_.stages, tree_.micro_batches, tree_.virtual_stages, stage_);
    if (is_stats_rank()) {
      if (stats_.stage_orders.size() <= static_cast<size_t>(stage_)) stats_.stage_orders.resize(stage_ + 1);
      stats_.stage_orders[stage_] = to_string(passes);
    }
    templates_.assign(static_cast<size_t>(3 * tree_.chunks()), {});
    pass_ranges_.clear();
    pass_index_.clear();
    for (const Pass& pass : passes) {
      const int chunk = pass.chunk * tree_.stages + stage_;
      const int begin = static_cast<int>(exec_.tasks.size());
      PassTemplate& tp = templates_[static_cast<size_t>(3 * chunk + static_cast<int>(pass.kind))];
      ++stats_.passes;
      if (tp.verified && replay_if_possible(tp.recording, pass.micro_batch))
        ++stats_.passes_from_templates;
      else
        build_pass_recorded(pass, chunk, &tp);
      pass_index_.set(pass_key(pass.kind, chunk, pass.micro_batch), static_cast<int>(pass_ranges_.size()));
      pass_ranges_.push_back(
          {begin, static_cast<int>(exec_.tasks.size()), pass.kind, chunk, pass.micro_batch});
    }
    if (!in_.config.strategy.overlap_grad_reduce)
      for (size_t bi = 0; bi < buckets_.size(); ++bi) reduce_bucket(static_cast<int>(bi), {last_compute_});
    tied_weight_reduce();
    static_memory_and_optimizer();
    if (!overlap_params) param_gathers(false);
  }

  const ProgramInputs& in_;
  const OpGraph& g_;
  const StrategyTree& tree_;
  const std::vector<OpPlan>& plans_;
  const Mesh& mesh_;
  ExecGraph& exec_;
  CompileStats& stats_;

  std::vector<std::vector<int>> chunk_ops_;
  std::vector<std::vector<std::pair<int, int>>> consumers_;
  std::vector<int> labels_;
  std::vector<int> work_ids_;  // by 3 * op + (0 forward, 1 input gradient, 2 weight gradient)
  std::vector<Segment> segments_;
  std::vector<int> seg_of_op_;
  std::vector<std::vector<int>> weight_stages_;  // stages that hold each weight tensor
  double weight_bytes_ = 2, opt_state_bytes_ = 12, opt_traffic_bytes_ = 30;

  // per-rank state
  int rank_ = 0, stage_ = 0;
  MicroBatchIdMap providers_;
  MicroBatchIdMap grad_providers_;
  MicroBatchIdMap regathered_;  // backward re-gathers of saved shards
  std::unordered_map<uint64_t, std::vector<int>> w_grad_deps_;
  std::vector<uint64_t> ordinals_;
  std::array<std::vector<int>, 1u << kNumMeshAxes> group_cache_;  // by AxisMask
  static constexpr size_t kNumCollectiveKinds = static_cast<size_t>(CollectiveKind::SendRecv) + 1;
  std::vector<IdMap> signatures_ =
      std::vector<IdMap>((1u << kNumMeshAxes) * kNumCollectiveKinds);  // this rank's
  int next_signature_ = 0;
  std::vector<int> w_done_;
  std::vector<int> param_gather_ready_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_tensor_;
  std::vector<int> uses_left_;
  std::vector<const WeightPlan*> weight_plan_of_tensor_;
  std::vector<int> grad_sync_tasks_;
  std::vector<MemEvent> pending_weight_alloc_;
  std::vector<GradSend> pending_grad_sends_;
  int last_compute_ = -1, last_weight_compute_ = -1;

  // micro-batch templates of this rank
  std::vector<PassTemplate> templates_;  // by 3 * chunk + kind
  std::vector<PassRange> pass_ranges_;   // this rank's passes, in emission order
  IdMap pass_index_;                     // pass_key -> index into pass_ranges_
  PassRecording* rec_ = nullptr;         // recording the pass being built, if any
  int rec_begin_ = 0, rec_mb_ = 0;
  std::vector<int> other_begin_, replay_refs_;
  IdMap comm_lists_;  // collective buffer size (bits of the double) -> memory list
  std::vector<std::vector<DeferredWrites>> deferred_;  // by micro-batch, this rank

  // across ranks
  IdMap instance_;
  IdMap sends_;
  std::vector<uint64_t> pending_keys_;
  std::vector<std::pair<size_t, uint64_t>> pending_slots_;
  std::vector<StatKey> stat_keys_;  // aligned with stats_.collectives
  size_t rank_stats_begin_ = 0;     // entries before it belong to earlier ranks (other stages)
};

}  // namespace

void build_programs(const ProgramInputs& in, ExecGraph* exec, CompileStats* stats) {
  Builder(in, exec, stats).run();
}

}  // namespace proteus
