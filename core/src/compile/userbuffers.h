// Transformer Engine's tensor-parallel communication/GEMM overlap ("userbuffers", Megatron-Core
// --tp-comm-overlap; docs/frameworks/tensor-parallelism-and-moe.md "Tensor-parallel communication overlap").
// The defaults are TE's `initialize_ub` (transformer_engine/pytorch/module/base.py, get_default_config):
//   ring_exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad: the all-gather feeding a GEMM):
//     num_splits = tp, num_sm = 1, set_sm_margin = False, use_ce = True (copy engine);
//   pipeline (proj_fprop, fc2_fprop: the reduce-scatter of a GEMM's output):
//     num_splits = 4, num_sm = 16, cga_size = 2, set_sm_margin = True;
//   bulk (qkv/fc1 _dgrad: all-gather of the saved input during the data-gradient GEMM;
//     qkv/fc1 _wgrad: reduce-scatter of the input gradient during the weight-gradient GEMM):
//     num_sm = 16, set_sm_margin = True.
// Under framework fsdp tp_comm_overlap stands for PyTorch's async TP instead
// (ParallelConfig::torch_async_tp; torch/distributed/_symmetric_memory): its fused all-gather +
// matmul is the same tp-chunk ring on the copy engine; its fused matmul + reduce-scatter has tp
// chunks, copy-engine pulls and a reduction kernel (PassDeriver::symm_mem_matmul_reduce_scatter);
// it has no bulk kernels, so the backward's collectives are NCCL's and no GEMM gives up SMs.
#pragma once

namespace proteus {

// SMs a pipeline or bulk userbuffers kernel holds; the GEMM beside it runs on the others.
constexpr int kUserbuffersCommSms = 16;
// Chunks of a pipelined GEMM + reduce-scatter.
constexpr int kUserbuffersPipelineSplits = 4;
// Compute streams TE issues a split GEMM's chunks on, round-robin (NVTE_COMM_OVERLAP_MAX_STREAMS,
// transformer_engine/common/include/transformer_engine/comm_gemm_overlap.h; CommOverlapBase::
// split_overlap_rs and CommOverlapP2PBase::split_overlap_ag launch chunk i on
// _stream_compute[i % _stream_compute.size()]): up to this many chunks run at once.
constexpr int kUserbuffersComputeStreams = 3;

}  // namespace proteus
