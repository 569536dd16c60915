// Selective recompute by module (recompute_modules.h; docs/frameworks/recompute.md, "Selective recompute
// by module"): the ops of one recomputed module of one layer form a group, and what each op
// keeps for its backward follows the group's kind.
//  - A checkpoint (mlp, moe, shared_experts: Megatron's tensor_parallel.checkpoint) keeps the
//    inputs it reads from outside the group, nothing inside it, and runs its forward again
//    before the backward of its last op.
//  - An output-discarding checkpoint (layernorm, moe_act, mla_up_proj: CheckpointWithoutOutput)
//    also keeps only its outside inputs, and frees its outputs after the forward: the ops that
//    read them keep nothing of them until the group's forward runs again, before the first
//    backward that needs them.
// core_attn keeps its own per-op replay (OpIndex::drops_extra). A module nested in another
// (shared_experts or moe_act inside moe) is recomputed as part of the outer one, once.
#pragma once
#include <vector>

#include "program_builder.h"

namespace proteus {

struct RecomputeGroup {
  std::vector<int> ops;  // forward order
  bool discards_output = false;
  int trigger = -1;  // the op before whose backward the group's forward runs again
};

// Bytes per rank, per op, when any group exists (else the op plans' figures stand).
struct RecomputeMemory {
  std::vector<double> fwd;        // kept from the op's forward to its backward
  std::vector<double> discarded;  // of fwd: tensors a group frees after the forward
  std::vector<double> replay;     // kept from the op's forward run again to its backward
  std::vector<double> remade;     // its output, made again for the ops that keep it (their discarded)
};

struct RecomputeGroups {
  std::vector<RecomputeGroup> groups;
  std::vector<int> group_of_op;                // -1: in no group
  std::vector<std::vector<int>> triggered_by;  // per op: groups run again before its backward
  RecomputeMemory memory;
};

// full_seg_of_op: the full-recompute segment of each op (-1: none), whose ops keep their own
// accounting; chunk_ops: the ops of each model chunk in forward order.
RecomputeGroups build_recompute_groups(const ProgramInputs& in, const std::vector<int>& full_seg_of_op,
                                       const std::vector<int>& full_seg_last_op,
                                       const std::vector<std::vector<int>>& chunk_ops);

}  // namespace proteus
