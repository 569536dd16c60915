#include "emitter.h"
#include <cstring>

#include "pass_keys.h"
#include "proteus/error.h"

namespace proteus {

Emitter::Emitter(const StrategyTree& tree, bool symmetric, ExecGraph* exec, CompileStats* stats)
    : tree_(tree), mesh_(tree.mesh), symmetric_(symmetric), exec_(*exec), stats_(*stats), counter_(stats) {}

void Emitter::make_ranks() {
  exec_.mesh = mesh_;
  exec_.symmetric = symmetric_;
  const int per_stage = mesh_.ranks() / mesh_.size[kAxisPp];
  if (symmetric_) {
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
  stats_.p2p_bytes_per_boundary.assign(static_cast<size_t>(std::max(0, tree_.model_chunks() - 1)), 0);
}

void Emitter::begin_rank(int r) {
  rank_ = r;
  stage_ = exec_.ranks[r].stage;
  ordinals_.assign(0x300, 0);
  for (auto& g : group_cache_) g.clear();
  for (IdMap& m : signatures_) m.clear();
  counter_.begin_rank();
}

void Emitter::reserve_for_ranks() {
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

void Emitter::resolve_pending() {
  receives_.reserve(pending_slots_.size());
  for (const PendingSlot& p : pending_slots_) {
    const int* send = sends_.find(p.key);
    if (!send) throw Error("internal", "", "a pipeline receive has no matching send");
    exec_.deps[p.slot] = *send;
    receives_.emplace_back(*send, p.task);
  }
}

bool Emitter::is_stats_rank() const {
  std::array<int, kNumMeshAxes> c{};
  c[kAxisPp] = stage_;
  return gpu() == mesh_.gpu_of(c);
}

bool Emitter::holds_chunk(int chunk) const {
  for (int copy = 0; copy < tree_.copies; ++copy)
    if (tree_.stage_of_chunk(chunk, copy) == stage_) return true;
  return false;
}

int Emitter::gpu_of_chunk(int chunk, int mb) const {
  auto c = mesh_.coords_of(gpu());
  c[kAxisPp] = tree_.stage_of_chunk(chunk, tree_.copy_of_micro_batch(mb));
  return mesh_.gpu_of(c);
}

int Emitter::compute(const Task& t, const int* deps, size_t n_deps, const MemEvent* mem, size_t n_mem) {
  if (observer_) observer_->on_compute(t, deps, n_deps, mem, n_mem);
  return with_list(t, deps, n_deps, exec_.add_mem_list(mem, n_mem));
}

int Emitter::with_list(const Task& t, const int* deps, size_t n_deps, int mem_list) {
  const int id = static_cast<int>(exec_.tasks.size());
  exec_.tasks.push_back(t);
  for (size_t i = 0; i < n_deps; ++i) {
    const int d = deps[i];
    if (d < 0) pending_slots_.push_back({exec_.deps.size(), pending_key(d), id});
    exec_.deps.push_back(d);
  }
  exec_.dep_offsets.push_back(static_cast<int>(exec_.deps.size()));
  exec_.task_mem.push_back(mem_list);
  exec_.queues[static_cast<size_t>(t.rank) * kNumStreams + static_cast<size_t>(t.stream)].push_back(id);
  return id;
}

int Emitter::pending_ref(uint64_t key) {
  pending_keys_.push_back(key);
  return -static_cast<int>(pending_keys_.size());
}

void Emitter::count(CollectiveKind kind, AxisMask axes, const char* purpose, int group_size, double bytes) {
  if (is_stats_rank()) counter_.count(stage_, kind, axes, purpose, group_size, bytes);
}

int Emitter::collective(CollectiveKind kind, AxisMask axes, double bytes, Stream stream, Phase phase, int mb,
                        int label, const std::vector<int>& deps, const char* purpose,
                        const std::vector<int>& explicit_group) {
  const std::vector<int>& group = explicit_group.empty() ? my_group(axes) : explicit_group;
  Task t;
  t.kind = TaskKind::Collective;
  t.phase = phase;
  t.stream = stream;
  t.rank = rank_;
  t.micro_batch = mb;
  t.label = label;
  t.stage = stage_;
  // Gradient reductions and parameter gathers count their own ordinals (their own streams).
  const size_t space = stream == Stream::DpComm ? 0x100u : stream == Stream::ParamComm ? 0x200u : 0u;
  const uint64_t ordinal = ordinals_[static_cast<size_t>(axes) | space]++;
  const uint64_t key = (static_cast<uint64_t>(group.front()) << 40) ^ (static_cast<uint64_t>(axes) << 32) ^
                       (stream == Stream::DpComm ? (1ull << 39) : 0) ^
                       (stream == Stream::ParamComm ? (1ull << 38) : 0) ^ ordinal;
  // With the symmetry reduction, a group within one pipeline stage has one simulated member
  // (the stage's representative): there is no other member's instance to match.
  const bool shared = !symmetric_ || (axes & axis_bit(kAxisPp)) || !explicit_group.empty();
  const int* known = shared ? instance_.find(key) : nullptr;
  int cid;
  if (!known || exec_.collectives[*known].group != group) {
    cid = static_cast<int>(exec_.collectives.size());
    exec_.collectives.push_back({kind,
                                 bytes,
                                 axes,
                                 group,
                                 {},
                                 explicit_group.empty() ? signature(kind, axes, bytes) : -1,
                                 std::strcmp(purpose, kUserbuffersPurpose) == 0});
    if (shared) instance_.set(key, cid);
  } else {
    cid = *known;
  }
  t.collective = cid;
  if (observer_) observer_->on_collective(t, kind, axes, bytes, deps, purpose, !explicit_group.empty());
  const int id = with_list(t, deps.data(), deps.size(), comm_buffer_list(bytes));
  exec_.collectives[cid].member_tasks.push_back(id);
  count(kind, axes, purpose, static_cast<int>(group.size()), bytes);
  return id;
}

// Signature of a collective of this rank's group along `axes` (Collective::signature): the
// group is fixed by the rank and the axes, so (axes, kind, bytes) names it within the rank.
int Emitter::signature(CollectiveKind kind, AxisMask axes, double bytes) {
  const uint64_t bits = id_key(bytes);
  IdMap& by_bytes = signatures_[static_cast<size_t>(axes) * kNumCollectiveKinds + static_cast<size_t>(kind)];
  if (const int* known = by_bytes.find(bits)) return *known;
  by_bytes.set(bits, next_signature_);
  return next_signature_++;
}

// A collective's buffer, held while it runs: one memory list per size.
int Emitter::comm_buffer_list(double bytes) {
  const uint64_t bits = id_key(bytes);
  if (const int* known = comm_lists_.find(bits)) return *known;
  const MemEvent events[2] = {{MemCategory::CommBuffers, false, bytes},
                              {MemCategory::CommBuffers, true, -bytes}};
  const int list = exec_.add_mem_list(events, 2);
  comm_lists_.set(bits, list);
  return list;
}

// This rank's group along `axes` (Mesh::group), computed once per rank and axes.
const std::vector<int>& Emitter::my_group(AxisMask axes) {
  std::vector<int>& g = group_cache_[static_cast<size_t>(axes)];
  if (g.empty()) g = mesh_.group(gpu(), axes);
  return g;
}

int Emitter::send(int dst_gpu, int tensor, int mb, bool backward, double bytes, int label, int dep,
                  int chunk) {
  Task t;
  t.kind = TaskKind::Collective;
  t.phase = backward ? Phase::BackwardInput : Phase::Forward;
  t.stream = Stream::PpComm;
  t.rank = rank_;
  t.micro_batch = mb;
  t.label = label;
  t.stage = stage_;
  const int cid = static_cast<int>(exec_.collectives.size());
  exec_.collectives.push_back({CollectiveKind::SendRecv, bytes, axis_bit(kAxisPp), {gpu(), dst_gpu}, {}});
  t.collective = cid;
  if (observer_) observer_->on_send(t, dst_gpu, tensor, backward, bytes, dep, chunk);
  const int id = with_list(t, &dep, 1, -1);
  exec_.collectives[cid].member_tasks.push_back(id);
  sends_.set(send_key(dst_gpu, tensor, mb, backward), id);
  send_tasks_.push_back(id);
  count(CollectiveKind::SendRecv, axis_bit(kAxisPp), "pipeline", 2, bytes);
  if (is_stats_rank() && mb == 0 && !backward && chunk + 1 < tree_.model_chunks() &&
      stats_.p2p_bytes_per_boundary[chunk] == 0)
    stats_.p2p_bytes_per_boundary[chunk] = bytes;
  return id;
}

Task Emitter::compute_task(int label, Phase phase, int mb, int work) const {
  Task t;
  t.kind = TaskKind::Compute;
  t.phase = phase;
  t.stream = Stream::Compute;
  t.rank = rank_;
  t.micro_batch = mb;
  t.label = label;
  t.stage = stage_;
  t.work = work;
  return t;
}

}  // namespace proteus
