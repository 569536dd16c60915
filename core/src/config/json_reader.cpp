#include "json_reader.h"

#include <cmath>
#include <limits>
#include <sstream>
#include "limits.h"

namespace proteus::config_detail {

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

std::string index_path(const std::string& base, size_t index) {
  return base + "[" + std::to_string(index) + "]";
}

std::string field_name(const std::string& path) {
  size_t end = path.size();
  // "a.b[3][2]" -> "b"
  while (end > 0 && path[end - 1] == ']') {
    size_t open = path.rfind('[', end - 1);
    if (open == std::string::npos) break;
    end = open;
  }
  size_t dot = path.rfind('.', end == 0 ? 0 : end - 1);
  size_t begin = dot == std::string::npos ? 0 : dot + 1;
  std::string name = path.substr(begin, end - begin);
  return name.empty() ? "the config" : name;
}

std::string describe(const Json& value) {
  std::string text;
  switch (value.type()) {
    case Json::value_t::string:
      text = "the string " + value.dump();
      break;
    case Json::value_t::boolean:
      text = std::string("the boolean ") + (value.get<bool>() ? "true" : "false");
      break;
    case Json::value_t::null:
      text = "null";
      break;
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    default:
      text = value.dump();
      break;
  }
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

namespace {

std::string format_number(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

[[noreturn]] void out_of_range(const std::string& path, const std::string& relation, const std::string& bound,
                               const std::string& got) {
  throw invalid_config(path, field_name(path) + " must be " + relation + " " + bound + ", got " + got);
}

}  // namespace

int64_t as_integer(const Json& value, const std::string& path, int64_t min, int64_t max) {
  const std::string name = field_name(path);
  if (!value.is_number()) {
    throw invalid_config(path, name + " must be an integer, got " + describe(value));
  }
  int64_t result = 0;
  if (value.is_number_unsigned()) {
    auto raw = value.get<uint64_t>();
    if (raw > static_cast<uint64_t>(max))
      out_of_range(path, "at most", std::to_string(max), std::to_string(raw));
    result = static_cast<int64_t>(raw);
  } else if (value.is_number_integer()) {
    result = value.get<int64_t>();
  } else {
    double raw = value.get<double>();
    if (!std::isfinite(raw) || std::floor(raw) != raw) {
      throw invalid_config(path, name + " must be an integer, got " + format_number(raw));
    }
    if (raw > static_cast<double>(max))
      out_of_range(path, "at most", std::to_string(max), format_number(raw));
    if (raw < static_cast<double>(min))
      out_of_range(path, "at least", std::to_string(min), format_number(raw));
    result = static_cast<int64_t>(raw);
  }
  if (result < min) out_of_range(path, "at least", std::to_string(min), std::to_string(result));
  if (result > max) out_of_range(path, "at most", std::to_string(max), std::to_string(result));
  return result;
}

double as_number(const Json& value, const std::string& path, double min, double max, bool min_exclusive) {
  if (!value.is_number()) {
    throw invalid_config(path, field_name(path) + " must be a number, got " + describe(value));
  }
  double result = value.get<double>();
  if (!std::isfinite(result)) {
    throw invalid_config(path, field_name(path) + " must be a finite number");
  }
  if (min_exclusive ? !(result > min) : !(result >= min)) {
    out_of_range(path, min_exclusive ? "greater than" : "at least", format_number(min),
                 format_number(result));
  }
  if (result > max) out_of_range(path, "at most", format_number(max), format_number(result));
  return result;
}

bool as_bool(const Json& value, const std::string& path) {
  if (!value.is_boolean()) {
    throw invalid_config(path, field_name(path) + " must be true or false, got " + describe(value));
  }
  return value.get<bool>();
}

std::string as_string(const Json& value, const std::string& path) {
  if (!value.is_string()) {
    throw invalid_config(path, field_name(path) + " must be a string, got " + describe(value));
  }
  const auto& text = value.get_ref<const std::string&>();
  if (static_cast<int64_t>(text.size()) > config_limits::kMaxStringChars) {
    throw invalid_config(path, field_name(path) + " is " + std::to_string(text.size()) +
                                   " characters long; strings are limited to " +
                                   std::to_string(config_limits::kMaxStringChars));
  }
  return text;
}

const Json& as_array(const Json& value, const std::string& path, size_t max_size) {
  if (!value.is_array()) {
    throw invalid_config(path, field_name(path) + " must be an array, got " + describe(value));
  }
  if (value.size() > max_size) {
    throw invalid_config(path, field_name(path) + " has " + std::to_string(value.size()) +
                                   " entries; at most " + std::to_string(max_size) + " are allowed");
  }
  return value;
}

std::vector<int64_t> as_integer_array(const Json& value, const std::string& path, size_t max_size,
                                      int64_t min, int64_t max) {
  const Json& array = as_array(value, path, max_size);
  std::vector<int64_t> result;
  result.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i)
    result.push_back(as_integer(array[i], index_path(path, i), min, max));
  return result;
}

namespace {

void check_documentation(const Json& value, const std::string& path) {
  if (value.contains("source")) as_string(value.at("source"), join_path(path, "source"));
  if (value.contains("sources")) {
    const std::string sources_path = join_path(path, "sources");
    const Json& sources = value.at("sources");
    if (!sources.is_object()) {
      throw invalid_config(sources_path, "sources must be an object of strings, got " + describe(sources));
    }
    for (const auto& item : sources.items()) as_string(item.value(), join_path(sources_path, item.key()));
  }
}

}  // namespace

ObjectReader::ObjectReader(const Json& value, std::string path, std::initializer_list<const char*> allowed)
    : object_(value), path_(std::move(path)) {
  if (!value.is_object()) {
    throw invalid_config(path_, (path_.empty() ? std::string("the config") : field_name(path_)) +
                                    " must be an object, got " + describe(value));
  }
  for (const auto& item : value.items()) {
    const std::string& key = item.key();
    if (key == "source" || key == "sources") continue;
    bool known = false;
    for (const char* name : allowed) known = known || key == name;
    if (!known) {
      std::string expected;
      for (const char* name : allowed) expected += (expected.empty() ? "" : ", ") + std::string(name);
      throw invalid_config(join_path(path_, key), "unknown field \"" + key + "\"" +
                                                      (path_.empty() ? "" : " in " + path_) +
                                                      "; expected one of: " + expected);
    }
  }
  check_documentation(value, path_);
}

const Json& ObjectReader::required(const char* key, const std::string& what) const {
  if (!has(key)) {
    throw invalid_config(path_of(key), "missing required field \"" + std::string(key) + "\"" +
                                           (what.empty() ? "" : " (" + what + ")"));
  }
  return at(key);
}

int64_t ObjectReader::integer(const char* key, int64_t fallback, int64_t min, int64_t max) const {
  return has(key) ? as_integer(at(key), path_of(key), min, max) : fallback;
}

int64_t ObjectReader::required_integer(const char* key, int64_t min, int64_t max,
                                       const std::string& what) const {
  return as_integer(required(key, what), path_of(key), min, max);
}

double ObjectReader::number(const char* key, double fallback, double min, double max,
                            bool min_exclusive) const {
  return has(key) ? as_number(at(key), path_of(key), min, max, min_exclusive) : fallback;
}

bool ObjectReader::boolean(const char* key, bool fallback) const {
  return has(key) ? as_bool(at(key), path_of(key)) : fallback;
}

std::string ObjectReader::string(const char* key, const std::string& fallback) const {
  return has(key) ? as_string(at(key), path_of(key)) : fallback;
}

}  // namespace proteus::config_detail
