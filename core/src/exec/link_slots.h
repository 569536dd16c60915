// Dense numbers for the links one plan crosses, 0, 1, 2, ... in order of first sight. A plan
// crosses tens to hundreds of the topology's links (thousands on a large cluster); an array
// over all of them, filled with -1 for every plan, cost more than the numbering itself
// (collective_flows.cpp, link loads of each candidate; executor_plans.cpp, sibling weights).
// Open addressing in one array; lookups only, so the table's order is never observed.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace proteus::exec {

class LinkSlots {
 public:
  // `expected`: about how many distinct links (the table grows past it).
  explicit LinkSlots(size_t expected = 8) { table_.assign(capacity_for(expected), Entry{}); }

  // The slot of `link`, numbered on first sight; *added tells whether it was new.
  int number(int link, bool* added = nullptr) {
    if (2 * (size_ + 1) > table_.size()) rehash(2 * table_.size());
    size_t i = home(link);
    for (; table_[i].link >= 0; i = next(i))
      if (table_[i].link == link) {
        if (added) *added = false;
        return table_[i].slot;
      }
    table_[i] = {link, size_};
    if (added) *added = true;
    return size_++;
  }

  // The slot of `link`, or -1 when it was never numbered.
  int find(int link) const {
    for (size_t i = home(link); table_[i].link >= 0; i = next(i))
      if (table_[i].link == link) return table_[i].slot;
    return -1;
  }

  int size() const { return size_; }

 private:
  struct Entry {
    int link = -1;  // -1: empty (link ids are >= 0)
    int slot = 0;
  };
  static size_t capacity_for(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    return capacity;
  }
  size_t home(int link) const {
    return static_cast<size_t>((static_cast<uint64_t>(static_cast<uint32_t>(link)) * 0x9e3779b97f4a7c15ull) >>
                               32) &
           (table_.size() - 1);
  }
  size_t next(size_t i) const { return (i + 1) & (table_.size() - 1); }
  void rehash(size_t capacity) {
    std::vector<Entry> old = std::move(table_);
    table_.assign(capacity, Entry{});
    for (const Entry& e : old) {
      if (e.link < 0) continue;
      size_t i = home(e.link);
      while (table_[i].link >= 0) i = next(i);
      table_[i] = e;
    }
  }

  std::vector<Entry> table_;
  int size_ = 0;
};

}  // namespace proteus::exec
