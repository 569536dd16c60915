// Dense numbers for the links one plan crosses, 0, 1, 2, ... in order of first sight. A plan
// crosses tens to hundreds of the topology's links (thousands on a large cluster); an array
// over all of them, filled with -1 for every plan, cost more than the numbering itself
// (collective_flows.cpp, link loads of each candidate; executor_plans.cpp, sibling weights).
// One OpenAddressing table from link id to slot.
#pragma once
#include <cstddef>
#include <cstdint>
#include "open_addressing.h"

namespace proteus::exec {

class LinkSlots {
 public:
  // `expected`: about how many distinct links (the table grows past it).
  explicit LinkSlots(size_t expected = 8) : table_(expected) {}

  // The slot of `link` (>= 0), numbered on first sight; *added tells whether it was new.
  int number(int link, bool* added = nullptr) {
    const auto [slot, is_new] = table_.find_or_add(link, size());
    if (added) *added = is_new;
    return *slot;
  }

  // The slot of `link`, or -1 when it was never numbered.
  int find(int link) const {
    const int* slot = table_.find(link);
    return slot ? *slot : -1;
  }

  int size() const { return static_cast<int>(table_.size()); }

 private:
  struct Traits {
    using Entry = HashEntry<int, int>;
    static size_t hash(int link) {
      return static_cast<size_t>(
          (static_cast<uint64_t>(static_cast<uint32_t>(link)) * 0x9e3779b97f4a7c15ull) >> 32);
    }
    static Entry empty() { return {-1, 0}; }  // link ids are >= 0
    static bool is_empty(const Entry& e) { return e.key < 0; }
  };
  OpenAddressing<int, int, Traits> table_;
};

}  // namespace proteus::exec
