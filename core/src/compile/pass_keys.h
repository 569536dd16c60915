// Keys of the program builder's per-micro-batch maps: who provides a tensor in a layout,
// which send a receive waits for, which pass holds a weight gradient's inputs. Each key
// carries the micro-batch in a known field (MbField) so that a micro-batch template
// (pass_replay.h) can clear it when recording and set it when instantiating.
#pragma once
#include <cstdint>

#include "proteus/layout.h"
#include "proteus/schedule.h"

namespace proteus {

inline uint64_t layout_code(const Layout& l) {
  uint64_t c = 0;
  for (int a = 0; a < kNumMeshAxes; ++a) c = (c << 4) | static_cast<uint64_t>(l.placement[a] + 2);
  return c;  // 20 bits
}

// A tensor made by the forward, or made again by a recompute before the backward.
enum Namespace : uint64_t { kFwd = 0, kRecompute = 1 };

inline uint64_t provider_key(int mb, Namespace ns, int tensor, const Layout& l) {
  return (static_cast<uint64_t>(mb) << 42) | (static_cast<uint64_t>(ns) << 41) |
         (static_cast<uint64_t>(tensor) << 20) | layout_code(l);
}

inline uint64_t send_key(int dst_gpu, int tensor, int mb, bool backward) {
  return (static_cast<uint64_t>(dst_gpu) << 43) | (static_cast<uint64_t>(tensor) << 23) |
         (static_cast<uint64_t>(mb) << 1) | (backward ? 1u : 0u);
}

// The gradient of `tensor` that consumer op produced.
inline uint64_t grad_key(int mb, int tensor, int consumer_op) {
  return (static_cast<uint64_t>(mb) << 42) | (static_cast<uint64_t>(tensor) << 21) |
         static_cast<uint64_t>(consumer_op);
}

// The output-gradient dependencies a deferred weight-gradient pass waits for.
inline uint64_t wkey(int mb, int op) { return (static_cast<uint64_t>(mb) << 32) | static_cast<uint64_t>(op); }

inline uint64_t pass_key(PassKind kind, int chunk, int mb) {
  return (static_cast<uint64_t>(mb) << 24) | (static_cast<uint64_t>(chunk) << 2) |
         static_cast<uint64_t>(kind);
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

}  // namespace proteus
