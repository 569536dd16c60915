// What every libFuzzer target here treats as a finding, shared so the targets agree on it: an
// abort with a message, and a proteus::Error that bad input must never produce.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

#include "proteus/error.h"

namespace fuzz_contract {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FINDING: %s\n", what.c_str());
  std::abort();
}

// Which error codes are bad input's. invalid_request is the caller's (a request missing what
// only the caller can say, such as the importers' node count): a target whose API takes no
// such request leaves it out, so an internal path that throws it is a finding there.
enum class Requests { Refused, Allowed };

// An Error from bad input has a known code and a non-empty message, and is never "internal"
// (an internal error means a valid input reached an inconsistent state: a bug).
inline void check_error(const proteus::Error& e, const char* stage, Requests requests = Requests::Refused) {
  const std::string code = e.code;
  const bool known = code == "invalid_json" || code == "invalid_config" || code == "unknown_preset" ||
                     code == "limit_exceeded" || (requests == Requests::Allowed && code == "invalid_request");
  if (!known) finding(std::string(stage) + ": error code \"" + code + "\" (" + e.path + "): " + e.what());
  if (std::string(e.what()).empty()) finding(std::string(stage) + ": empty error message at " + e.path);
}

}  // namespace fuzz_contract
