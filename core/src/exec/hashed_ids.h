// Ids filed under 64-bit hashes, for finding equal keys that the caller stores itself (the
// caller's `same(id)` tells a real match from a collision). Used where a std::map keyed by
// vectors cost a copy of the key per map and vector comparisons down the tree for every
// lookup (PlanCache merging the flows of a plan: ~1.5 k instructions per flow). One
// OpenAddressing table keyed by the hash, several ids per hash.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include "open_addressing.h"

namespace proteus::exec {

class HashedIds {
 public:
  explicit HashedIds(size_t expected = 8) : table_(expected) {}

  // The first id filed under `hash` for which same(id) holds, or -1.
  template <class Same>
  int find(uint64_t hash, Same same) const {
    const int* id = table_.find_if(hash, same);
    return id ? *id : -1;
  }

  // `id` >= 0 (-1 marks a free slot).
  void add(uint64_t hash, int id) { table_.add(hash, id); }

  // Hash building blocks: a value mixed into a running hash; doubles by their bits, with
  // -0.0 as +0.0 (they compare equal, so they must hash alike).
  static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
  }
  static uint64_t bits(double x) {
    const double normal = x + 0.0;
    uint64_t b = 0;
    std::memcpy(&b, &normal, sizeof b);
    return b;
  }

 private:
  // Any 64-bit value is a hash, so the id marks a free slot.
  struct Traits {
    using Entry = HashEntry<uint64_t, int>;
    static size_t hash(uint64_t h) { return static_cast<size_t>((h * 0x9e3779b97f4a7c15ull) >> 32); }
    static Entry empty() { return {0, -1}; }
    static bool is_empty(const Entry& e) { return e.value < 0; }
  };
  OpenAddressing<uint64_t, int, Traits> table_;
};

}  // namespace proteus::exec
