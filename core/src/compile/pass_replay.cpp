#include "pass_replay.h"

#include <cstring>

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
      !(last_weight_compute == o.last_weight_compute) || items != o.items || refs != o.refs ||
      other_passes != o.other_passes || mem.size() != o.mem.size())
    return false;
  for (size_t i = 0; i < mem.size(); ++i)
    if (!same_mem(mem[i], o.mem[i])) return false;
  return true;
}

}  // namespace proteus
