// A deterministic, platform-independent random source for randomized tests (the same
// sequence natively and on any standard library, unlike std::uniform_int_distribution).
#pragma once
#include <cstdint>

namespace proteus::test {

struct Lcg {  // Knuth's MMIX linear congruential generator, the high bits
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(s >> 33);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint32_t>(n)); }
};

}  // namespace proteus::test
