// Reading Megatron's arguments by name, as each mapping asks for them: typed, range-checked,
// with Megatron's default when the argument is absent, and an error naming the argument when a
// value is malformed. The reader remembers what was asked so the importer can list the rest as
// ignored. Shared by the importer's parts (megatron_parts.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "megatron_args.h"
#include "proteus/error.h"
#include "proteus/strategy_spec.h"

namespace proteus::import_detail {

using Json = nlohmann::ordered_json;

class ArgReader {
 public:
  explicit ArgReader(const MegatronArgs& args) : a_(args) {}

  bool has(const std::string& name) {
    used_.insert(name);
    return a_.values.count(name) > 0;
  }
  bool flag(const std::string& name) {
    if (!has(name)) return false;
    const auto& v = a_.values.at(name);
    if (!v.empty()) throw Error("invalid_config", name, name + " takes no value, got \"" + v[0] + "\"");
    return true;
  }
  std::string text(const std::string& name, const std::string& fallback = "") {
    if (!has(name)) return fallback;
    const auto& v = a_.values.at(name);
    if (v.size() != 1) {
      throw Error(
          "invalid_config", name,
          name + (v.empty() ? " needs a value" : " takes one value, got " + std::to_string(v.size())));
    }
    return v[0];
  }
  int64_t integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) {
    if (!has(name)) return fallback;
    const std::string t = text(name);
    char* end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end) throw Error("invalid_config", name, name + " \"" + t + "\" is not an integer");
    if (v < min || v > max) {
      throw Error(
          "invalid_config", name,
          name + " " + t + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return v;
  }
  double number(const std::string& name, double fallback) {
    if (!has(name)) return fallback;
    const std::string t = text(name);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end || !std::isfinite(v)) {
      throw Error("invalid_config", name, name + " \"" + t + "\" is not a number");
    }
    return v;
  }
  std::string choice(const std::string& name, const std::string& fallback,
                     std::initializer_list<const char*> options) {
    if (!has(name)) return fallback;
    const std::string t = text(name);
    std::string list;
    for (const char* o : options) {
      if (t == o) return t;
      list += (list.empty() ? "" : ", ") + std::string(o);
    }
    throw Error("invalid_config", name, name + " \"" + t + "\" is not one of: " + list);
  }
  // Arguments present that no mapping asked about.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const std::string& name : a_.order)
      if (!used_.count(name)) out.push_back(name);
    return out;
  }
  const MegatronArgs& args() const { return a_; }
  // Every value of an argument that takes several (argparse nargs='+'); marks it read.
  const std::vector<std::string>& values(const std::string& name) {
    used_.insert(name);
    return a_.values.at(name);
  }

 private:
  const MegatronArgs& a_;
  std::set<std::string> used_;
};

// The largest count an argument may give (vocabulary, its divisor, batch sizes): 2^31.
constexpr int64_t kBig = int64_t{1} << 31;
// The bucket arithmetic (strategy_part, gradient_dtype_part) starts from fp32 main gradients,
// Megatron's default under bf16.
constexpr double kFp32GradBytes = grad_bytes_per_element(true);

}  // namespace proteus::import_detail
