// The open-addressing table template (core/src/exec/open_addressing.h) and its two named
// users. Facts checked: every filed key is found with its value after many doublings,
// keys never filed are not found, colliding keys (one home slot for all) stay apart, several
// entries under one key are told apart by find_if, and the empty marker is refused.
#include <doctest/doctest.h>
#include <cstdint>
#include <vector>
#include "../core/src/exec/hashed_ids.h"
#include "../core/src/exec/link_slots.h"
#include "../core/src/exec/open_addressing.h"
#include "proteus/error.h"

using proteus::exec::HashEntry;
using proteus::exec::OpenAddressing;

namespace {

// Non-negative int keys, -1 free. kBuckets home slots only: with kBuckets = 1 every key
// collides with every other, the worst case linear probing must still get right.
template <uint64_t kBuckets>
struct FewBuckets {
  using Entry = HashEntry<int, int>;
  static size_t hash(int key) { return static_cast<size_t>(static_cast<uint64_t>(key) % kBuckets); }
  static Entry empty() { return {-1, 0}; }
  static bool is_empty(const Entry& e) { return e.key < 0; }
};

// The value a test files under `key`: distinct from the key and from its neighbours'.
int value_of(int key) { return 7 * key + 3; }

template <class Table>
void check_holds_exactly(const Table& table, int filed) {
  for (int key = 0; key < filed; ++key) {
    const int* value = table.find(key);
    REQUIRE(value != nullptr);
    CHECK(*value == value_of(key));
  }
  for (int key = filed; key < 2 * filed; ++key) CHECK(table.find(key) == nullptr);
  CHECK(table.find(-1) == nullptr);  // the empty marker is never a filed key
  CHECK(table.size() == static_cast<size_t>(filed));
}

}  // namespace

TEST_CASE("open addressing: every key found with its value through many doublings") {
  constexpr int kKeys = 5000;  // 16 slots to 16384: ten doublings
  OpenAddressing<int, int, FewBuckets<1000003>> table(1);
  for (int key = 0; key < kKeys; ++key) {
    const auto [value, added] = table.find_or_add(key, value_of(key));
    CHECK(added);
    CHECK(*value == value_of(key));
    if (key == 7 || key == 500 || key == kKeys - 1) check_holds_exactly(table, key + 1);
  }
  check_holds_exactly(table, kKeys);
}

TEST_CASE("open addressing: keys that all share one home slot") {
  constexpr int kKeys = 600;
  OpenAddressing<int, int, FewBuckets<1>> all_collide;
  OpenAddressing<int, int, FewBuckets<3>> three_buckets;
  for (int key = 0; key < kKeys; ++key) {
    all_collide.find_or_add(key, value_of(key));
    three_buckets.find_or_add(key, value_of(key));
  }
  check_holds_exactly(all_collide, kKeys);
  check_holds_exactly(three_buckets, kKeys);
}

TEST_CASE("open addressing: find_or_add of a filed key keeps its value and adds nothing") {
  OpenAddressing<int, int, FewBuckets<1>> table;
  for (int key = 0; key < 100; ++key) table.find_or_add(key, value_of(key));
  for (int key = 0; key < 100; ++key) {
    const auto [value, added] = table.find_or_add(key, -5);
    CHECK_FALSE(added);
    CHECK(*value == value_of(key));
    *value = value_of(key) + 1;  // the pointer reaches the filed value
  }
  CHECK(table.size() == 100);
  for (int key = 0; key < 100; ++key) CHECK(*table.find(key) == value_of(key) + 1);
}

TEST_CASE("open addressing: several entries under one key, told apart by find_if") {
  // Keys 0..9, each with 50 values (value % 10 == key), added interleaved so that the
  // entries of one key are spread along a shared probe chain and across doublings.
  OpenAddressing<int, int, FewBuckets<2>> table;
  for (int v = 0; v < 500; ++v) table.add(v % 10, v);
  CHECK(table.size() == 500);
  for (int v = 0; v < 500; ++v) {
    const int* found = table.find_if(v % 10, [v](int value) { return value == v; });
    REQUIRE(found != nullptr);
    CHECK(*found == v);
  }
  // A value filed under another key is not found under this one.
  CHECK(table.find_if(3, [](int value) { return value == 4; }) == nullptr);
  CHECK(table.find_if(10, [](int) { return true; }) == nullptr);
}

TEST_CASE("open addressing: the empty marker is refused and the table stays intact") {
  OpenAddressing<int, int, FewBuckets<1>> table;
  for (int key = 0; key < 20; ++key) table.find_or_add(key, value_of(key));
  CHECK_THROWS_AS(table.find_or_add(-1, 0), proteus::Error);
  CHECK_THROWS_AS(table.add(-1, 0), proteus::Error);
  check_holds_exactly(table, 20);
}

TEST_CASE("LinkSlots numbers links densely in order of first sight") {
  proteus::exec::LinkSlots slots(2);
  // Link ids 1000 apart, repeated: slot k for the k-th distinct link.
  for (int round = 0; round < 3; ++round)
    for (int k = 0; k < 300; ++k) {
      bool added = false;
      CHECK(slots.number(1000 * k, &added) == k);
      CHECK(added == (round == 0));
    }
  CHECK(slots.size() == 300);
  CHECK(slots.find(1000 * 299) == 299);
  CHECK(slots.find(1) == -1);
}

TEST_CASE("HashedIds finds an id by hash and caller's equality, several ids per hash") {
  proteus::exec::HashedIds ids(1);
  // Ids 0..399 under 40 hashes; the caller's equality is id == wanted.
  for (int id = 0; id < 400; ++id) ids.add(static_cast<uint64_t>(id % 40) * 0x100000001ull, id);
  for (int id = 0; id < 400; ++id)
    CHECK(ids.find(static_cast<uint64_t>(id % 40) * 0x100000001ull, [id](int x) { return x == id; }) == id);
  CHECK(ids.find(41 * 0x100000001ull, [](int) { return true; }) == -1);
  CHECK(ids.find(0, [](int x) { return x == 1; }) == -1);  // id 1 is filed under another hash
  // Equal doubles hash alike, -0.0 included.
  CHECK(proteus::exec::HashedIds::bits(-0.0) == proteus::exec::HashedIds::bits(0.0));
}
