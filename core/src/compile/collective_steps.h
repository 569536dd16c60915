// Summing the redistribution steps of several tensors into one collective per (kind, axes), as
// a gradient bucket (iteration_tail.cpp) or an op's ZeRO-3 weight gather (pass_derivation.cpp)
// issues them. Private to the compiler.
#pragma once
#include <algorithm>
#include <vector>

#include "proteus/layout.h"

namespace proteus {

// Adds `steps` to `merged`, each summed into the step of the same kind over the same axes
// (appended if there is none yet).
inline void add_steps(std::vector<CollectiveStep>* merged, const std::vector<CollectiveStep>& steps) {
  for (const CollectiveStep& s : steps) {
    auto it = std::find_if(merged->begin(), merged->end(),
                           [&](const CollectiveStep& m) { return m.kind == s.kind && m.axes == s.axes; });
    if (it == merged->end())
      merged->push_back(s);
    else
      it->bytes += s.bytes;
  }
}

}  // namespace proteus
