// How many GEMM kernels a linear op of the op graph is, by framework: the graph splits a
// layer's projections the way tensor parallelism binds them (q_proj to the query heads, kv_proj to
// the kv heads; a gated fc1 is one op), and the frameworks launch them otherwise:
//  - Megatron-Core, legacy Megatron and Megatron-DeepSpeed run Q, K and V as one GEMM,
//    linear_qkv / query_key_value, of N = (a + 2k) d / tp (megatron/core/transformer/
//    attention.py SelfAttention: `self.linear_qkv = build_module(..., self.query_projection_size
//    + 2 * self.kv_projection_size, ...)`; megatron/legacy/model/transformer.py ParallelAttention
//    `query_key_value`). q_proj and kv_proj are each timed as its share of that GEMM.
//  - A PyTorch model under FSDP (TorchTitan's Llama: wq, wk, wv and w1, w3 are nn.Linear each,
//    torchtitan/models/llama3/model.py) runs one aten.mm per nn.Linear: kv_proj is wk then wv and
//    a gated fc1 w1 then w3, each a GEMM of half the op's N (Op::torch_linears).
// The FLOPs stay the op's; only the shape the GEMM is timed at, its launches and the share of a
// measured time of that shape change (ComputeWork::gemm_kernel_share).
//
// And where the weight-gradient GEMM writes: Megatron's gradient_accumulation_fusion (on by
// default, `--no-gradient-accumulation-fusion` turns it off) has every linear's weight gradient
// added into the parameter's main_grad by the GEMM itself, beta = 1 (Megatron-Core
// tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication:
// fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32 / _fp16; Transformer Engine's linears with
// fuse_wgrad_accumulation: the wgrad GEMM with accumulate=True, out=weight.main_grad). Its epilogue
// reads and writes main_grad in main_grad's dtype: fp32 (4 + 4 bytes per element) unless the
// gradients are reduced in 16 bits (2 + 2). Without the fusion (strategy.gradient_accumulation_fusion
// false) the GEMM writes the gradient once and Megatron's backward hook adds it into main_grad
// (megatron/core/distributed/distributed_data_parallel.py, _make_backward_post_hook:
// param.main_grad.add_(param.grad.data)): a memory-bound kernel beside the weight gradient.
// PyTorch's autograd (framework fsdp) writes param.grad once.
#pragma once

#include "op_plan.h"
#include "proteus/training_spec.h"

namespace proteus {

struct ParallelConfig;

void apply_linear_kernels(const Op& op, const ParallelConfig& cfg, OpPlan* p);

// Megatron's weight-gradient accumulation into main_grad, for a run training in `precision`:
// fused (ComputeWork::accumulate_bytes_per_output of the weight-gradient pass) or the separate add
// (its side bytes).
void apply_wgrad_accumulation(const Op& op, const ParallelConfig& cfg, Precision precision, OpPlan* p);

}  // namespace proteus
