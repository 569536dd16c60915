// Ids filed under 64-bit hashes, for finding equal keys that the caller stores itself (the
// caller's `same(id)` tells a real match from a collision). Used where a std::map keyed by
// vectors cost a copy of the key per map and vector comparisons down the tree for every
// lookup (PlanCache merging the flows of a plan: ~1.5 k instructions per flow). Open
// addressing in one array; lookups only, so the table's order is never observed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace proteus::exec {

class HashedIds {
 public:
  explicit HashedIds(size_t expected = 8) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    table_.assign(capacity, Entry{});
  }

  // The first id filed under `hash` for which same(id) holds, or -1.
  template <class Same>
  int find(uint64_t hash, Same same) const {
    for (size_t i = home(hash); table_[i].id >= 0; i = next(i))
      if (table_[i].hash == hash && same(table_[i].id)) return table_[i].id;
    return -1;
  }

  void add(uint64_t hash, int id) {
    if (2 * (size_ + 1) > table_.size()) rehash(2 * table_.size());
    size_t i = home(hash);
    while (table_[i].id >= 0) i = next(i);
    table_[i] = {hash, id};
    ++size_;
  }

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
  struct Entry {
    uint64_t hash = 0;
    int id = -1;  // -1: empty
  };
  size_t home(uint64_t hash) const {
    return static_cast<size_t>((hash * 0x9e3779b97f4a7c15ull) >> 32) & (table_.size() - 1);
  }
  size_t next(size_t i) const { return (i + 1) & (table_.size() - 1); }
  void rehash(size_t capacity) {
    std::vector<Entry> old = std::move(table_);
    table_.assign(capacity, Entry{});
    for (const Entry& e : old) {
      if (e.id < 0) continue;
      size_t i = home(e.hash);
      while (table_[i].id >= 0) i = next(i);
      table_[i] = e;
    }
  }

  std::vector<Entry> table_;
  size_t size_ = 0;
};

}  // namespace proteus::exec
