#include "overlap_groups.h"

#include <algorithm>
#include <vector>

namespace proteus {
namespace {

class GroupMerge {
 public:
  GroupMerge(const ExecGraph& exec, int first, int split, int end)
      : exec_(exec), first_(first), position_(static_cast<size_t>(end - first), -1) {
    next_[0] = first;
    next_[1] = split;
    stop_[0] = split;
    stop_[1] = end;
  }

  // Merged position of every task (index task - first); empty when no merge keeps every
  // dependency in order (then the emission order stays).
  std::vector<int> run() {
    const int n = static_cast<int>(position_.size());
    int side = 0, placed = 0, run_start = 0;
    while (placed < n) {
      const int other = 1 - side;
      if (next_[side] == stop_[side]) {
        side = other;
        run_start = placed;
        continue;
      }
      const int t = next_[side];
      const bool ready = deps_placed(t);
      const bool other_ready = next_[other] < stop_[other] && deps_placed(next_[other]);
      if ((!ready || waits_own_collective(t, run_start)) && other_ready) {
        side = other;
        run_start = placed;
        continue;
      }
      if (!ready) return {};
      position_[static_cast<size_t>(t - first_)] = placed++;
      ++next_[side];
    }
    return position_;
  }

 private:
  bool inside(int task) const { return task >= first_ && task < first_ + static_cast<int>(position_.size()); }
  int position(int task) const { return position_[static_cast<size_t>(task - first_)]; }

  bool deps_placed(int t) const {
    for (int k = exec_.dep_offsets[static_cast<size_t>(t)]; k < exec_.dep_offsets[static_cast<size_t>(t) + 1];
         ++k) {
      const int d = exec_.deps[static_cast<size_t>(k)];
      if (inside(d) && position(d) < 0) return false;
    }
    return true;
  }

  // A compute task that waits for a collective placed in the current run (since the last
  // switch): the other side's compute can fill that wait.
  bool waits_own_collective(int t, int run_start) const {
    if (exec_.tasks[static_cast<size_t>(t)].kind != TaskKind::Compute) return false;
    for (int k = exec_.dep_offsets[static_cast<size_t>(t)]; k < exec_.dep_offsets[static_cast<size_t>(t) + 1];
         ++k) {
      const int d = exec_.deps[static_cast<size_t>(k)];
      if (inside(d) && exec_.tasks[static_cast<size_t>(d)].kind == TaskKind::Collective &&
          position(d) >= run_start)
        return true;
    }
    return false;
  }

  const ExecGraph& exec_;
  const int first_;
  int next_[2], stop_[2];
  std::vector<int> position_;
};

}  // namespace

void overlap_group(ExecGraph* exec, int rank, int first, int split, int end) {
  if (split <= first || end <= split) return;
  const std::vector<int> position = GroupMerge(*exec, first, split, end).run();
  if (position.empty()) return;
  for (int s = 0; s < kNumStreams; ++s) {
    std::vector<int>& queue = exec->queues[static_cast<size_t>(rank) * kNumStreams + static_cast<size_t>(s)];
    auto tail = queue.end();
    while (tail != queue.begin() && *(tail - 1) >= first) --tail;
    std::stable_sort(tail, queue.end(), [&](int a, int b) {
      return position[static_cast<size_t>(a - first)] < position[static_cast<size_t>(b - first)];
    });
  }
}

}  // namespace proteus
