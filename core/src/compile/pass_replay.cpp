#include "pass_replay.h"

#include <algorithm>
#include <cstring>

#include "pass_derivation.h"

namespace proteus {

namespace {

bool same_mem(const MemEvent& a, const MemEvent& b) {
  return a.category == b.category && a.at_end == b.at_end && a.bytes == b.bytes;
}

}  // namespace

bool same_task_shape(const Task& a, const Task& b) {
  return a.kind == b.kind && a.phase == b.phase && a.stream == b.stream && a.rank == b.rank &&
         a.label == b.label && a.stage == b.stage && a.work == b.work;
}

bool ReplayItem::operator==(const ReplayItem& o) const {
  return kind == o.kind && same_task_shape(task, o.task) && ref_begin == o.ref_begin &&
         ref_end == o.ref_end && mem_begin == o.mem_begin && mem_end == o.mem_end && ckind == o.ckind &&
         axes == o.axes && bytes == o.bytes && std::strcmp(purpose, o.purpose) == 0 && dst_gpu == o.dst_gpu &&
         tensor == o.tensor && chunk == o.chunk && op == o.op && backward == o.backward && key == o.key;
}

bool PassRecording::operator==(const PassRecording& o) const {
  if (!valid || !o.valid || tasks != o.tasks || !(last_compute == o.last_compute) ||
      !(last_weight_compute == o.last_weight_compute) || !(prev_weight_compute == o.prev_weight_compute) ||
      items != o.items || refs != o.refs || other_passes != o.other_passes || mem.size() != o.mem.size())
    return false;
  for (size_t i = 0; i < mem.size(); ++i)
    if (!same_mem(mem[i], o.mem[i])) return false;
  return true;
}

namespace {

constexpr int kNoListYet = -2;

bool is_map_write(ReplayItem::Kind k) {
  return k == ReplayItem::kProvider || k == ReplayItem::kGradProvider || k == ReplayItem::kRegathered ||
         k == ReplayItem::kWGradDeps;
}

StateMap state_map(ReplayItem::Kind k) {
  switch (k) {
    case ReplayItem::kGradProvider:
      return StateMap::GradProvider;
    case ReplayItem::kRegathered:
      return StateMap::Regathered;
    case ReplayItem::kWGradDeps:
      return StateMap::WGradDeps;
    default:
      return StateMap::Provider;
  }
}

}  // namespace

PassReplayer::PassReplayer(const StrategyTree& tree, bool enabled, Emitter* emitter, PassState* state,
                           PassDeriver* deriver, CompileStats* stats)
    : tree_(tree), enabled_(enabled), emit_(*emitter), state_(*state), deriver_(*deriver), stats_(*stats) {}

void PassReplayer::begin_rank() {
  for (auto& d : deferred_) d.clear();
  templates_.assign(static_cast<size_t>(3 * tree_.chunks()), {});
  pass_ranges_.clear();
  pass_index_.clear();
  cast_mbs_.clear();
}

void PassReplayer::run_pass(const Pass& pass, int chunk, bool split_w) {
  const int begin = static_cast<int>(emit_.exec().tasks.size());
  PassTemplate& tp = templates_[static_cast<size_t>(3 * chunk + static_cast<int>(pass.kind))];
  ++stats_.passes;
  if (tp.verified && replay_if_possible(tp.recording, pass.micro_batch))
    ++stats_.passes_from_templates;
  else
    build_recorded(pass, chunk, split_w, &tp);
  pass_index_.set(pass_key(pass.kind, chunk, pass.micro_batch), static_cast<int>(pass_ranges_.size()));
  pass_ranges_.push_back(
      {begin, static_cast<int>(emit_.exec().tasks.size()), pass.kind, chunk, pass.micro_batch});
}

// Builds a pass op by op; the first two instances of a (kind, chunk) are recorded and, when
// equal, make the template. The last micro-batch is never recorded or replayed: its
// backward completes the weight gradients and starts their reduction. Nor is a forward that
// casts Transformer Engine's FP8 weights (the first micro-batch's, fp8_weight_casts.h) or runs
// Apex's parameter-sync hooks while they still gather (apex_param_sync.h).
void PassReplayer::build_recorded(const Pass& pass, int chunk, bool split_w, PassTemplate* tp) {
  apply_deferred_writes(pass.micro_batch);
  // A forward that casts FP8 weights once per iteration, or gathers parameters, is unlike the
  // chunk's later forwards, and so is every pass of its micro-batch (they refer to its tasks).
  bool casts = std::find(cast_mbs_.begin(), cast_mbs_.end(), pass.micro_batch) != cast_mbs_.end();
  if (!casts && pass.kind == PassKind::F && deriver_.forward_differs_from_later(chunk)) {
    cast_mbs_.push_back(pass.micro_batch);
    casts = true;
  }
  const bool record = enabled_ && !tp->failed && !tp->verified && !last_of_copy(pass.micro_batch) && !casts;
  if (!record) {
    deriver_.build_pass(pass, chunk, split_w);
    return;
  }
  PassRecording recording;
  rec_ = &recording;
  rec_begin_ = static_cast<int>(emit_.exec().tasks.size());
  rec_mb_ = pass.micro_batch;
  emit_.set_observer(this);
  state_.set_observer(this);
  deriver_.build_pass(pass, chunk, split_w);
  emit_.set_observer(nullptr);
  state_.set_observer(nullptr);
  recording.tasks = static_cast<int>(emit_.exec().tasks.size()) - rec_begin_;
  recording.last_compute = relative(state_.last_compute, false);
  recording.last_weight_compute = relative(state_.last_weight_compute, false);
  recording.prev_weight_compute = relative(state_.prev_weight_compute, false);
  rec_ = nullptr;
  if (tp->seen++ == 0) {
    tp->recording = std::move(recording);
    tp->failed = !tp->recording.valid;
  } else {
    tp->verified = tp->recording == recording;
    tp->failed = !tp->verified;
  }
}

// A task id (or pending receive) as seen from the pass being recorded.
RelRef PassReplayer::relative(int id, bool may_be_pending) {
  RelRef r;
  r.value = id;
  if (id < 0) {
    if (!may_be_pending || id == INT32_MIN) return r;  // a sentinel (-1: none)
    const uint64_t key = emit_.pending_key(id);
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

ReplayItem& PassReplayer::record_item(ReplayItem::Kind kind, const int* refs, size_t n_refs,
                                      bool may_be_pending) {
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
ReplayItem& PassReplayer::record_task(ReplayItem::Kind kind, const Task& t, const int* deps, size_t n_deps) {
  ReplayItem& item = record_item(kind, deps, n_deps, true);
  item.task = t;
  item.task.micro_batch = -1;
  item.task.collective = -1;
  if (t.micro_batch != rec_mb_) rec_->valid = false;
  return item;
}

void PassReplayer::on_compute(const Task& t, const int* deps, size_t n_deps, const MemEvent* mem,
                              size_t n_mem) {
  ReplayItem& item = record_task(ReplayItem::kCompute, t, deps, n_deps);
  rec_->mem.insert(rec_->mem.end(), mem, mem + n_mem);
  item.mem_end = static_cast<uint32_t>(rec_->mem.size());
}

void PassReplayer::on_collective(const Task& t, CollectiveKind kind, AxisMask axes, double bytes,
                                 const std::vector<int>& deps, const char* purpose, bool explicit_group) {
  ReplayItem& item = record_task(ReplayItem::kCollective, t, deps.data(), deps.size());
  item.ckind = kind;
  item.axes = axes;
  item.bytes = bytes;
  item.purpose = purpose;
  if (explicit_group) rec_->valid = false;
}

void PassReplayer::on_send(const Task& t, int dst_gpu, int tensor, bool backward, double bytes, int dep,
                           int chunk) {
  ReplayItem& item = record_task(ReplayItem::kSend, t, &dep, 1);
  item.dst_gpu = dst_gpu;
  item.tensor = tensor;
  item.backward = backward;
  item.bytes = bytes;
  item.chunk = chunk;
}

// A write to the pass state: the key without its micro-batch, the values relative.
void PassReplayer::on_write(StateMap map, uint64_t key, const int* values, size_t n) {
  static constexpr ReplayItem::Kind kKinds[] = {ReplayItem::kProvider, ReplayItem::kGradProvider,
                                                ReplayItem::kRegathered, ReplayItem::kWGradDeps};
  const MbField& field = map == StateMap::WGradDeps ? kWKeyMb : kProviderMb;
  // A regathered entry is a task id or -1 (nothing gathered), never a pending receive.
  ReplayItem& item = record_item(kKinds[static_cast<int>(map)], values, n, map != StateMap::Regathered);
  item.key = field.cleared(key);
  if (field.get(key) != static_cast<uint64_t>(rec_mb_)) rec_->valid = false;
}

void PassReplayer::on_weight_use(int op) { record_item(ReplayItem::kWeightUse, nullptr, 0, false).op = op; }

// Instantiates a verified template for micro-batch mb; false (nothing emitted) when it
// cannot be: the passes it refers to are missing or differ, or a weight would get its last
// gradient (which the op-by-op path must see).
bool PassReplayer::replay_if_possible(PassRecording& r, int mb) {
  if (last_of_copy(mb)) return false;
  other_begin_.clear();
  for (const OtherPass& o : r.other_passes) {
    const int* index = pass_index_.find(pass_key(static_cast<PassKind>(o.kind), o.chunk, mb));
    if (!index) return false;
    const PassRange& p = pass_ranges_[static_cast<size_t>(*index)];
    if (p.end - p.begin != o.tasks) return false;
    other_begin_.push_back(p.begin);
  }
  for (const ReplayItem& item : r.items)
    if (item.kind == ReplayItem::kWeightUse &&
        state_.weight_uses(item.op) + 1 >= tree_.micro_batches_per_copy())
      return false;
  replay(r, mb);
  return true;
}

// Instances share their memory lists: made at the first replay, in PassRecording::mem_lists.
// The task (or new pending receive) a reference means in the instance of micro-batch mb
// whose first task is `begin`.
int PassReplayer::absolute(const RelRef& ref, int begin, const std::vector<int>& other_begin, int mb) {
  switch (ref.kind) {
    case RelRef::kInPass:
      return begin + static_cast<int>(ref.value);
    case RelRef::kOtherPass:
      return other_begin[static_cast<size_t>(ref.slot)] + static_cast<int>(ref.value);
    case RelRef::kPending:
      return emit_.pending_ref(kSendMb.with(static_cast<uint64_t>(ref.value), mb));
    case RelRef::kAbsolute:
      break;
  }
  return static_cast<int>(ref.value);
}

void PassReplayer::apply_deferred_writes(int mb) {
  if (static_cast<size_t>(mb) >= deferred_.size()) return;
  for (const DeferredWrites& d : deferred_[static_cast<size_t>(mb)])
    for (const ReplayItem& item : d.recording->items) {
      if (!is_map_write(item.kind)) continue;
      std::vector<int>& refs = replay_refs_;
      refs.clear();
      for (uint32_t i = item.ref_begin; i < item.ref_end; ++i)
        refs.push_back(absolute(d.recording->refs[i], d.begin, d.other_begin, mb));
      const uint64_t key = (item.kind == ReplayItem::kWGradDeps ? kWKeyMb : kProviderMb).with(item.key, mb);
      state_.put(state_map(item.kind), key, refs.data(), refs.size());
    }
  deferred_[static_cast<size_t>(mb)].clear();
}

void PassReplayer::replay(PassRecording& r, int mb) {
  if (r.mem_lists.size() != r.items.size()) r.mem_lists.assign(r.items.size(), kNoListYet);
  const int begin = static_cast<int>(emit_.exec().tasks.size());
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
          list = emit_.exec().add_mem_list(r.mem.data() + item.mem_begin, item.mem_end - item.mem_begin);
        emit_.with_list(t, refs.data(), refs.size(), list);
        break;
      }
      case ReplayItem::kCollective:
        emit_.collective(item.ckind, item.axes, item.bytes, item.task.stream, item.task.phase, mb,
                         item.task.label, refs, item.purpose);
        break;
      case ReplayItem::kSend:
        emit_.send(item.dst_gpu, item.tensor, mb, item.backward, item.bytes, item.task.label, refs[0],
                   item.chunk);
        break;
      case ReplayItem::kWeightUse:
        state_.add_weight_use(item.op);
        break;
      default:
        break;
    }
  }
  state_.last_compute = absolute(r.last_compute, begin, other_begin_, mb);
  state_.last_weight_compute = absolute(r.last_weight_compute, begin, other_begin_, mb);
  state_.prev_weight_compute = absolute(r.prev_weight_compute, begin, other_begin_, mb);
  if (writes) {
    if (static_cast<size_t>(mb) >= deferred_.size()) deferred_.resize(static_cast<size_t>(mb) + 1);
    deferred_[static_cast<size_t>(mb)].push_back({&r, begin, other_begin_});
  }
}

}  // namespace proteus
