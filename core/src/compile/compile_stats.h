// What `proteus compile` reports about the execution graph (CompileStats): collectives counted
// as they are emitted, tasks counted once the graph is built.
#pragma once
#include <cstddef>
#include <vector>

#include "proteus/compile.h"

namespace proteus {

// Counts the collectives of each stage's representative rank per (kind, axes, purpose,
// group size), matched on the values, not on the strings the report prints (a string
// comparison per collective was a hot spot).
class CollectiveCounter {
 public:
  explicit CollectiveCounter(CompileStats* stats) : stats_(*stats) {}
  void begin_rank() { rank_begin_ = keys_.size(); }  // entries before belong to other stages
  void count(int stage, CollectiveKind kind, AxisMask axes, const char* purpose, int group_size,
             double bytes);

 private:
  struct Key {
    int stage;
    CollectiveKind kind;
    AxisMask axes;
    const char* purpose;
    int group_size;
    bool operator==(const Key& o) const;
  };
  CompileStats& stats_;
  std::vector<Key> keys_;  // aligned with stats_.collectives
  size_t rank_begin_ = 0;
};

// Tasks by kind and by phase.
void count_tasks(const ExecGraph& exec, CompileStats* stats);

}  // namespace proteus
