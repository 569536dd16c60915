// Errors are values at the boundary: inside the core a problem with the input is thrown as
// proteus::Error (code + JSON path + sentence); the CLI turns it into exit code 2 and the
// wasm bindings into {"ok":false,...}. Nothing in core calls exit() or abort().
#pragma once
#include <stdexcept>
#include <string>

namespace proteus {

struct Error : std::runtime_error {
  std::string code;  // "invalid_config", "invalid_json", "unknown_preset", "limit_exceeded", "internal"
  std::string path;  // JSON path of the offending field, e.g. "strategy.tp"; may be empty
  Error(std::string code_, std::string path_, const std::string& message)
      : std::runtime_error(message), code(std::move(code_)), path(std::move(path_)) {}
};

inline Error invalid_config(const std::string& path, const std::string& message) {
  return Error("invalid_config", path, message);
}

}  // namespace proteus
