// A strategy in one line, the way the search's tables, its errors and `proteus validate` name
// it: "dp=8 tp=2 pp=2 mb=1 interleaved-1f1b v=8 sp zero=1 recompute=none". The search's JSON
// carries it beside each candidate's strategy object, so every reader prints the same text.
#pragma once
#include <string>
#include "proteus/strategy_spec.h"

namespace proteus {

// Knobs at their neutral value (cp, ep 1; one virtual stage; expert tp equal to tp; Megatron's
// default selective set, the core attention alone) are left out.
std::string strategy_summary(const StrategySpec& s);

}  // namespace proteus
