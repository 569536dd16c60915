// The searched knobs of a strategy as a JSON object that can be pasted into a config's
// "strategy": the search's ranked rows and simulate's fit_advice both print it.
#pragma once
#include <nlohmann/json.hpp>
#include "proteus/strategy_spec.h"

namespace proteus {

// recompute_modules only under selective recompute, where they mean something (and a config
// may hold them); expert_tp where the candidate states it (a mixture of experts).
inline nlohmann::ordered_json strategy_json(const StrategySpec& s) {
  nlohmann::ordered_json j{{"dp", s.dp},
                           {"tp", s.tp},
                           {"pp", s.pp},
                           {"cp", s.cp},
                           {"ep", s.ep},
                           {"micro_batch", s.micro_batch},
                           {"schedule", to_string(s.schedule)},
                           {"virtual_stages", s.virtual_stages},
                           {"sequence_parallel", s.sequence_parallel},
                           {"zero", s.zero},
                           {"recompute", to_string(s.recompute)}};
  if (s.recompute == Recompute::Selective)
    j["recompute_modules"] = recompute_module_names(s.recompute_modules);
  if (s.expert_tp > 0) j["expert_tp"] = s.expert_tp;
  return j;
}

}  // namespace proteus
