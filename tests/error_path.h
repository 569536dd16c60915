// The check every "errors name the field" test makes: run a call and report the JSON path (or
// argument) of the proteus::Error it throws.
#pragma once
#include <string>

#include "proteus/error.h"

namespace proteus::test {

// What error_path returns when the call throws nothing.
inline const std::string kNoError = "<no error>";

template <class F>
std::string error_path(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.path;
  }
  return kNoError;
}

}  // namespace proteus::test
