// Typed reading of config JSON with JSON-path errors. Every check that concerns one value
// (type, integrality, range, length, enum spelling) and one object (its exact key set) is here;
// rules that relate several fields live in validate.cpp.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>
#include "proteus/error.h"

namespace proteus::config_detail {

using Json = nlohmann::json;

std::string join_path(const std::string& base, const std::string& key);
std::string index_path(const std::string& base, size_t index);
// The last segment of a path ("strategy.overrides[1].stage" -> "stage"), for messages.
std::string field_name(const std::string& path);
// A short rendering of a value for messages (truncated).
std::string describe(const Json& value);

int64_t as_integer(const Json& value, const std::string& path, int64_t min, int64_t max);
double as_number(const Json& value, const std::string& path, double min, double max,
                 bool min_exclusive = false);
bool as_bool(const Json& value, const std::string& path);
std::string as_string(const Json& value, const std::string& path);
const Json& as_array(const Json& value, const std::string& path, size_t max_size);
std::vector<int64_t> as_integer_array(const Json& value, const std::string& path, size_t max_size,
                                      int64_t min, int64_t max);

// An enum spelled as one of names[0..n) (its values are 0..n-1 in declaration order).
template <class E>
E as_enum(const Json& value, const std::string& path, std::initializer_list<E> values) {
  std::string text = as_string(value, path);
  std::string expected;
  for (E candidate : values) {
    if (text == to_string(candidate)) return candidate;
    expected += (expected.empty() ? "" : ", ") + std::string(to_string(candidate));
  }
  throw invalid_config(path, field_name(path) + " \"" + text + "\" is not one of: " + expected);
}

// One JSON object being read. The constructor checks it is an object and that its keys are
// among `allowed` (plus the documentation keys "source" and "sources").
class ObjectReader {
 public:
  ObjectReader(const Json& value, std::string path, std::initializer_list<const char*> allowed);

  const std::string& path() const { return path_; }
  std::string path_of(const char* key) const { return join_path(path_, key); }
  bool has(const char* key) const { return object_.contains(key); }
  const Json& at(const char* key) const { return object_.at(key); }
  // Throws "missing required field" (with `what` explaining why it is required) if absent.
  const Json& required(const char* key, const std::string& what) const;

  int64_t integer(const char* key, int64_t fallback, int64_t min, int64_t max) const;
  int64_t required_integer(const char* key, int64_t min, int64_t max, const std::string& what) const;
  double number(const char* key, double fallback, double min, double max, bool min_exclusive = false) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  template <class E>
  E enumeration(const char* key, E fallback, std::initializer_list<E> values) const {
    return has(key) ? as_enum(at(key), path_of(key), values) : fallback;
  }

 private:
  const Json& object_;
  std::string path_;
};

}  // namespace proteus::config_detail
