// What the optimizer keeps per parameter and what its step reads and writes: the one place
// these numbers live, used by the compiler (static memory and the step task,
// compile/op_index.cpp, compile/iteration_tail.cpp) and the search's memory bound
// (search/bounds.cpp). Sources in docs/frameworks/data-parallelism.md, "Master weights as remainders" and
// "Optimizer state dtypes".
#pragma once

#include "proteus/strategy_spec.h"
#include "proteus/strategy_tree.h"
#include "proteus/training_spec.h"

namespace proteus {

// The optimizer and the dtypes of its states, as the config sets them.
struct OptimizerStates {
  Optimizer optimizer = Optimizer::Adam;
  bool mixed = true;              // 16-bit (or FP8) weights with an fp32/fp16 master copy
  bool param_remainders = false;  // the fp32 master as the low 16 bits of the bf16 weight
  StateDtype master = StateDtype::Fp32;
  StateDtype exp_avg = StateDtype::Fp32;
  StateDtype exp_avg_sq = StateDtype::Fp32;
};

OptimizerStates optimizer_states(const StrategySpec& strategy, const TrainingSpec& training);
OptimizerStates optimizer_states(const ParallelConfig& root, const TrainingSpec& training);

// Bytes per parameter the optimizer holds all iteration, before ZeRO divides them.
double optimizer_state_bytes_per_param(const OptimizerStates& states);

// HBM bytes per updated parameter of Megatron's step (Apex's or Transformer Engine's FusedAdam,
// FusedSGD), fp32 gradients read; the caller takes 2 off for 16-bit gradients.
double optimizer_step_bytes_per_param(const OptimizerStates& states);

// Bytes per updated parameter that Transformer Engine's FusedAdam allocates for the length of
// its step: the fp32 copies of every state that is not fp32 (0 when all are).
double optimizer_step_transient_bytes_per_param(const OptimizerStates& states);

// TorchTitan's step (framework fsdp): torch.optim's foreach Adam/SGD over fp32 shards after
// clip_grad_norm_.
double torch_optimizer_bytes_per_param(Optimizer optimizer);

}  // namespace proteus
