// The check every cluster.gpu number field gets: each bad value is refused with an error naming
// the field, and a good one is read and kept by show (config_to_json, then read again).
#pragma once
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "error_path.h"
#include "proteus/config.h"

namespace proteus::test {

// `node` is a config's text up to inside its cluster object (the check adds a "gpu" override and
// closes it); `get` reads the field from a parsed config.
template <class Get>
void check_gpu_field(const std::string& node, const std::string& field,
                     std::initializer_list<const char*> bad, double good, Get get) {
  const auto with = [&](const std::string& value) {
    return node + R"(, "gpu": {")" + field + R"(": )" + value + "}}}";
  };
  for (const char* value : bad) {
    CAPTURE(value);
    CHECK(error_path([&] { parse_config(with(value)); }) == "cluster.gpu." + field);
  }
  const Config c = parse_config(with(std::to_string(good)));
  CHECK(get(c) == good);
  CHECK(get(parse_config(config_to_json(c))) == good);
}

}  // namespace proteus::test
