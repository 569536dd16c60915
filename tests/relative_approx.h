// doctest::Approx compares |a - b| < epsilon * (scale + max(|a|, |b|)) with scale 1 by default, so
// below 1 its epsilon is an absolute tolerance: a check of a small quantity (a bubble fraction,
// seconds, GiB) passes whatever the value within it. approx(v) sets scale 0, making epsilon
// relative to the values alone (an exact zero then never compares equal: check it with ==).
#pragma once
#include <doctest/doctest.h>

namespace proteus::test {

inline doctest::Approx approx(double value) { return doctest::Approx(value).scale(0); }

}  // namespace proteus::test
