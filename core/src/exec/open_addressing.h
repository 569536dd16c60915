// A hash table in one array: linear probing, a power-of-two capacity kept at least twice the
// entries (doubling when an insertion would pass half full). The executor's plan building
// (docs/performance.md, session 14) looks up a few to a few thousand small keys per plan,
// where a node per entry (std::unordered_map) or vector keys down a tree (std::map) cost
// more than the lookups themselves. Lookups only: no iteration, and no erase (a probe chain
// ends at the first empty slot, so erasing would need tombstones nobody needs).
//
// Traits, the per-use parameters:
//   static size_t hash(const Key&)             the home slot is hash & (capacity - 1), so
//                                              the hash must spread keys over its low bits
//   static Entry empty()                       what a free slot holds
//   static bool is_empty(const Entry&)         tells a free slot from an entry
// where Entry is HashEntry<Key, Value>. The empty marker is a key or value that no entry
// ever holds (a link id of -1, say). Filing an entry that reads as empty would corrupt the
// table (it would vanish and cut probe chains), so it is rejected: proteus::Error "internal".
#pragma once
#include <cstddef>
#include <utility>
#include <vector>
#include "proteus/error.h"

namespace proteus::exec {

template <class Key, class Value>
struct HashEntry {
  Key key;
  Value value;
};

template <class Key, class Value, class Traits>
class OpenAddressing {
 public:
  using Entry = HashEntry<Key, Value>;

  // `expected`: about how many entries (the table grows past it). At least 16 slots.
  explicit OpenAddressing(size_t expected = 8) : table_(capacity_for(expected), Traits::empty()) {}

  // The value filed under `key`, or nullptr. Valid until the next insertion.
  const Value* find(const Key& key) const {
    for (size_t i = home(key); !Traits::is_empty(table_[i]); i = next(i))
      if (table_[i].key == key) return &table_[i].value;
    return nullptr;
  }

  // Several entries under one key (add): the first, in probe order, whose value satisfies
  // match(value), or nullptr.
  template <class Match>
  const Value* find_if(const Key& key, Match match) const {
    for (size_t i = home(key); !Traits::is_empty(table_[i]); i = next(i))
      if (table_[i].key == key && match(table_[i].value)) return &table_[i].value;
    return nullptr;
  }

  // The value filed under `key`, filed as `fresh` when absent; second: whether it was added.
  // The pointer is valid until the next insertion.
  std::pair<Value*, bool> find_or_add(const Key& key, const Value& fresh) {
    reserve_one();
    size_t i = home(key);
    for (; !Traits::is_empty(table_[i]); i = next(i))
      if (table_[i].key == key) return {&table_[i].value, false};
    fill(i, Entry{key, fresh});
    return {&table_[i].value, true};
  }

  // A new entry, even when `key` is already filed (find_if tells such entries apart).
  void add(const Key& key, const Value& value) {
    reserve_one();
    size_t i = home(key);
    while (!Traits::is_empty(table_[i])) i = next(i);
    fill(i, Entry{key, value});
  }

  size_t size() const { return size_; }

 private:
  static size_t capacity_for(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    return capacity;
  }
  size_t home(const Key& key) const { return Traits::hash(key) & (table_.size() - 1); }
  size_t next(size_t i) const { return (i + 1) & (table_.size() - 1); }
  void fill(size_t i, const Entry& e) {
    if (Traits::is_empty(e)) reject_empty();
    table_[i] = e;
    ++size_;
  }
  // Out of line: the hot insertions keep only the test and a call.
  [[noreturn, gnu::noinline]] static void reject_empty() {
    throw Error("internal", "", "an open-addressing table was asked to file its empty marker");
  }
  // Room for one more entry: at most half full after it, so probe chains stay short and
  // every chain ends at an empty slot.
  void reserve_one() {
    if (2 * (size_ + 1) > table_.size()) grow();
  }
  void grow() {
    std::vector<Entry> old = std::move(table_);
    table_.assign(2 * old.size(), Traits::empty());
    for (const Entry& e : old) {
      if (Traits::is_empty(e)) continue;
      size_t i = home(e.key);
      while (!Traits::is_empty(table_[i])) i = next(i);
      table_[i] = e;
    }
  }

  std::vector<Entry> table_;
  size_t size_ = 0;
};

}  // namespace proteus::exec
