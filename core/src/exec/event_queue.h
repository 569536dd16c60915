// The HTAE's global event queue: a binary min-heap on (time, sequence number). The sequence
// number is the order of insertion, so events at the same time pop in the order they were
// pushed: the simulation is deterministic without relying on addresses or hash order.
// Events are small PODs; stale ones (a flow or task rescheduled since) carry an old version
// and are dropped by the executor when popped (lazy invalidation).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace proteus::exec {

enum class EventKind : uint8_t {
  ComputeEnd,     // id = task
  FlowEnd,        // id = flow (bandwidth-sharing id)
  CollectiveEnd,  // id = collective
};

struct Event {
  double time_s = 0;
  uint64_t seq = 0;
  int32_t id = 0;
  uint32_t version = 0;
  EventKind kind = EventKind::ComputeEnd;
};

class EventQueue {
 public:
  void reserve(size_t n) { heap_.reserve(n); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }

  void push(double time_s, EventKind kind, int id, uint32_t version) {
    heap_.push_back(Event{time_s, next_seq_++, id, version, kind});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }

  Event pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }

 private:
  // "a comes after b": std heaps keep the greatest element on top, so this puts the
  // earliest (time, seq) there. A functor (not a function pointer) so that it inlines.
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time_s != b.time_s) return a.time_s > b.time_s;
      return a.seq > b.seq;
    }
  };

  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace proteus::exec
