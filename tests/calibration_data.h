// The published measurements kept in tests/calibration/ (each file names its sources), and the
// median the calibration tests summarise a sweep's relative errors with.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace proteus::test {

inline nlohmann::json calibration_json(const std::string& file) {
  std::ifstream f(std::string(PROTEUS_SOURCE_DIR) + "/tests/calibration/" + file);
  REQUIRE_MESSAGE(f.good(), "tests/calibration/" << file);
  std::stringstream text;
  text << f.rdbuf();
  return nlohmann::json::parse(text.str());
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace proteus::test
