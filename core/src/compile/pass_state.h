// What the passes of one rank leave for later passes of the same rank: which task provides a
// tensor (or a gradient) in a layout for a micro-batch, which input shards were gathered again
// for the backward, what a deferred weight-gradient pass waits for, how many micro-batches
// have used each weight, and the cursors (the last compute task, the last one with weights).
// An observer (the template recorder, pass_replay.h) may watch the writes.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "id_map.h"
#include "pass_keys.h"

namespace proteus {

enum class StateMap : uint8_t { Provider, GradProvider, Regathered, WGradDeps };

class StateObserver {
 public:
  virtual ~StateObserver() = default;
  virtual void on_write(StateMap map, uint64_t key, const int* values, size_t n) = 0;
  virtual void on_weight_use(int op) = 0;
};

class PassState {
 public:
  void begin_rank(size_t ops) {
    providers_.clear();
    grad_providers_.clear();
    regathered_.clear();
    w_grad_deps_.clear();
    w_done_.assign(ops, 0);
    last_compute = -1;
    last_weight_compute = -1;
    prev_weight_compute = -1;
  }
  void set_observer(StateObserver* o) { observer_ = o; }

  const int* provider(int mb, uint64_t key) const { return providers_.find(mb, key); }
  const int* grad_provider(int mb, uint64_t key) const { return grad_providers_.find(mb, key); }
  const int* regathered(int mb, uint64_t key) const { return regathered_.find(mb, key); }
  const std::vector<int>& w_grad_deps(uint64_t key) const { return w_grad_deps_.at(key); }
  int weight_uses(int op) const { return w_done_[op]; }

  void set_provider(uint64_t key, int task) { write(StateMap::Provider, key, &task, 1); }
  void set_grad_provider(uint64_t key, int task) { write(StateMap::GradProvider, key, &task, 1); }
  void set_regathered(uint64_t key, int task) { write(StateMap::Regathered, key, &task, 1); }  // -1: none
  void set_w_grad_deps(uint64_t key, const std::vector<int>& deps) {
    write(StateMap::WGradDeps, key, deps.data(), deps.size());
  }
  // One more micro-batch used op's weights; returns how many have.
  int count_weight_use(int op) {
    if (observer_) observer_->on_weight_use(op);
    return ++w_done_[op];
  }

  // Unobserved: what a template instance writes (pass_replay.h).
  void put(StateMap map, uint64_t key, const int* values, size_t n) {
    const int mb = static_cast<int>((map == StateMap::WGradDeps ? kWKeyMb : kProviderMb).get(key));
    switch (map) {
      case StateMap::Provider:
        providers_.set(mb, key, values[0]);
        break;
      case StateMap::GradProvider:
        grad_providers_.set(mb, key, values[0]);
        break;
      case StateMap::Regathered:
        regathered_.set(mb, key, values[0]);
        break;
      case StateMap::WGradDeps:
        w_grad_deps_[key].assign(values, values + n);
        break;
    }
  }
  void add_weight_use(int op) { ++w_done_[op]; }

  // The last compute task; the last two that used weights (ZeRO-3 prefetch keeps two in flight).
  int last_compute = -1, last_weight_compute = -1, prev_weight_compute = -1;

 private:
  void write(StateMap map, uint64_t key, const int* values, size_t n) {
    put(map, key, values, n);
    if (observer_) observer_->on_write(map, key, values, n);
  }

  MicroBatchIdMap providers_;
  MicroBatchIdMap grad_providers_;
  MicroBatchIdMap regathered_;  // backward re-gathers of saved shards
  std::unordered_map<uint64_t, std::vector<int>> w_grad_deps_;
  std::vector<int> w_done_;
  StateObserver* observer_ = nullptr;
};

}  // namespace proteus
