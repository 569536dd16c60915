// The HTAE's global event queue: a 4-ary min-heap on (time, sequence number). The sequence
// number is the order of insertion, so events at the same time pop in the order they were
// pushed: the simulation is deterministic without relying on addresses or hash order.
// Events are 24-byte PODs (the kind rides in the low bits of the sequence word); stale ones
// (a flow or task rescheduled since) carry an old version and are dropped by the executor
// when popped (lazy invalidation). A 4-ary heap halves the depth of a binary one and keeps
// a node's children in one or two cache lines, which is what the pop-heavy loop pays for.
#pragma once
#include <cstdint>
#include <vector>

namespace proteus::exec {

enum class EventKind : uint8_t {
  ComputeEnd,     // id = task
  FlowEnd,        // id = collective: its earliest flow ends
  CollectiveEnd,  // id = collective
};

struct Event {
  double time_s = 0;
  uint64_t seq_kind = 0;  // sequence number << 2 | kind
  int32_t id = 0;
  uint32_t version = 0;
  EventKind kind() const { return static_cast<EventKind>(seq_kind & 3u); }
};

class EventQueue {
 public:
  void reserve(size_t n) { heap_.reserve(n); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }

  void push(double time_s, EventKind kind, int id, uint32_t version) {
    const Event e{time_s, (next_seq_++ << 2) | static_cast<uint64_t>(kind), id, version};
    size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  Event pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n > 0) {
      size_t i = 0;
      for (;;) {
        const size_t first = i * kArity + 1;
        if (first >= n) break;
        size_t best = first;
        const size_t end = first + kArity < n ? first + kArity : n;
        for (size_t c = first + 1; c < end; ++c)
          if (before(heap_[c], heap_[best])) best = c;
        if (!before(heap_[best], last)) break;
        heap_[i] = heap_[best];
        i = best;
      }
      heap_[i] = last;
    }
    return top;
  }

 private:
  static constexpr size_t kArity = 4;
  static bool before(const Event& a, const Event& b) {
    if (a.time_s != b.time_s) return a.time_s < b.time_s;
    return a.seq_kind < b.seq_kind;
  }

  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace proteus::exec
