#include "strategy_summary.h"

#include "proteus/recompute_modules.h"

namespace proteus {

namespace {

std::string knob(const char* name, int64_t value) { return std::string(name) + "=" + std::to_string(value); }

// "(core_attn+moe_act)" under selective recompute when the set is not the core attention alone.
std::string recompute_modules_text(const StrategySpec& s) {
  if (s.recompute != Recompute::Selective || s.recompute_modules == kDefaultRecomputeModules) return "";
  std::string joined;
  for (const std::string& n : recompute_module_names(s.recompute_modules))
    joined += (joined.empty() ? "" : "+") + n;
  return "(" + joined + ")";
}

}  // namespace

std::string strategy_summary(const StrategySpec& s) {
  std::string text = knob("dp", s.dp) + " " + knob("tp", s.tp) + " " + knob("pp", s.pp);
  if (s.cp != 1) text += " " + knob("cp", s.cp);
  if (s.ep != 1) text += " " + knob("ep", s.ep);
  if (s.expert_tp > 0 && s.expert_tp != s.tp) text += " " + knob("etp", s.expert_tp);
  text += " " + knob("mb", s.micro_batch) + " " + to_string(s.schedule);
  if (s.virtual_stages != 1) text += " " + knob("v", s.virtual_stages);
  if (s.sequence_parallel) text += " sp";
  text += " " + knob("zero", s.zero) + " recompute=" + to_string(s.recompute) + recompute_modules_text(s);
  return text;
}

}  // namespace proteus
