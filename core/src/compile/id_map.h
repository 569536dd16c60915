// IdMap: a hash map from 64-bit keys to int task ids, with open addressing (linear probing)
// in one flat array. The program builder looks up and inserts about one key per emitted
// task (who provides a tensor in a layout, which send a receive waits for); with
// std::unordered_map every insert was a heap node and every lookup a pointer chase, a fifth
// of the compile time of a 1,024-GPU GPT-3. Lookups and inserts only: nothing iterates it,
// so its layout never shows in any result.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "proteus/error.h"

namespace proteus {

// The IdMap key of a double (a byte count): its bits, with -0.0 and +0.0 alike.
inline uint64_t id_key(double d) {
  d += 0.0;
  uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

class IdMap {
 public:
  static constexpr uint64_t kEmpty = ~0ull;  // no builder key has all 64 bits set

  IdMap() { rehash(16); }

  // Pointer to the value of `key`, or nullptr.
  const int* find(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  int* find(uint64_t key) { return const_cast<int*>(static_cast<const IdMap*>(this)->find(key)); }

  // Inserts or overwrites.
  void set(uint64_t key, int value) {
    if (key == kEmpty) throw Error("internal", "", "IdMap: reserved key");
    if ((size_ + 1) * 4 > keys_.size() * 3) rehash(keys_.size() * 2);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        values_[i] = value;
        return;
      }
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        values_[i] = value;
        ++size_;
        return;
      }
    }
  }

  // Room for n keys without growing.
  void reserve(size_t n) {
    size_t cap = keys_.size();
    while (n * 4 > cap * 3) cap *= 2;
    if (cap != keys_.size()) rehash(cap);
  }

  void clear() {
    std::fill(keys_.begin(), keys_.end(), kEmpty);
    size_ = 0;
  }
  size_t size() const { return size_; }

 private:
  // splitmix64's finalizer: the builder's keys are bit fields; mix them over the whole word.
  size_t slot(uint64_t k) const {
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return static_cast<size_t>(k) & mask_;
  }

  void rehash(size_t capacity) {  // capacity: a power of two
    std::vector<uint64_t> old_keys(capacity, kEmpty);
    std::vector<int> old_values(capacity, 0);
    old_keys.swap(keys_);
    old_values.swap(values_);
    mask_ = capacity - 1;
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != kEmpty) set(old_keys[i], old_values[i]);
  }

  std::vector<uint64_t> keys_;
  std::vector<int> values_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// IdMaps split by micro-batch: the builder's per-micro-batch keys (who provides a tensor of
// micro-batch m) land in a small table of their own that stays in cache while micro-batch m
// is built, instead of one table of every micro-batch's keys where each access is a miss.
class MicroBatchIdMap {
 public:
  const int* find(int mb, uint64_t key) const {
    return static_cast<size_t>(mb) < by_mb_.size() ? by_mb_[static_cast<size_t>(mb)].find(key) : nullptr;
  }
  void set(int mb, uint64_t key, int value) {
    if (static_cast<size_t>(mb) >= by_mb_.size()) by_mb_.resize(static_cast<size_t>(mb) + 1);
    by_mb_[static_cast<size_t>(mb)].set(key, value);
  }
  void clear() {
    for (IdMap& m : by_mb_) m.clear();
  }

 private:
  std::vector<IdMap> by_mb_;
};

}  // namespace proteus
