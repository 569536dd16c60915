// TorchTitan's op-level selective activation checkpointing (`activation_checkpoint.mode
// "selective"`, `selective_ac_option "op"`; pytorch/torchtitan
// torchtitan/parallelisms/parallelize_llama.py, `_apply_ac_to_transformer_block`, autumn 2024;
// docs/frameworks/recompute.md "TorchTitan's selective activation checkpointing").
//
// Each transformer block is wrapped in torch.utils.checkpoint with
// create_selective_checkpoint_contexts and a policy that marks MUST_SAVE the outputs of the ops
// in its `_save_list` (aten.mm, the flash and memory-efficient SDPA kernels, the functional
// reduce-scatter) "except every second mm", counted per block in forward order; every other op
// is PREFER_RECOMPUTE. In the backward the block's forward runs again, the saved ops serving
// their outputs from the cache instead of computing them. For a Llama block (wq, wk, wv, wo,
// w1, w3, w2) that recomputes wk, wo and w3 and every norm, rotary embedding, SiLU, product
// and residual add, and keeps the attention.
//
// The compiler models it as full recompute of each block (OpIndex segments) in which every op
// replays the share of its forward the policy does not save, and the forward keeps the saved
// outputs beside the block's input.
#pragma once
#include <vector>

#include "proteus/op_graph.h"

namespace proteus {

// Per op: the share of its forward output the policy saves, in [0, 1] (kv_proj under Llama's
// wk, wv: 1/2, as wv is saved); -1 for ops outside a transformer block, which TorchTitan does
// not checkpoint.
std::vector<double> torch_op_sac_saved_shares(const OpGraph& g);

}  // namespace proteus
