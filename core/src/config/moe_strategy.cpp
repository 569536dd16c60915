// Names and mesh arithmetic of the MoE strategy knobs (strategy_spec.h): the token dispatcher
// and expert tensor parallelism (docs/frameworks/tensor-parallelism-and-moe.md, "MoE token dispatch and
// expert TP").
#include "proteus/strategy_spec.h"

namespace proteus {

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::AllToAll:
      return "alltoall";
    case MoeDispatcher::AllGather:
      return "allgather";
  }
  return "?";
}

int expert_tp_of(const StrategySpec& s) { return s.expert_tp > 0 ? s.expert_tp : s.tp; }

bool experts_fold_tp(const StrategySpec& s) { return s.tp > 1 && expert_tp_of(s) == 1; }

// With folding, an expert-parallel group of ep ranks is tp consecutive ranks (Megatron's
// etp-ep-edp order puts the expert ranks of one tp group together) times ep / tp of the
// data-parallel ranks: the mesh's ep axis is the data-parallel part.
int ep_axis_size(const StrategySpec& s) { return experts_fold_tp(s) ? s.ep / s.tp : s.ep; }

}  // namespace proteus
