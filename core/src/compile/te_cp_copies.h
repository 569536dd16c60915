// Transformer Engine's all_gather and a2a context parallelism: the copies each makes on the
// compute streams beside its attention kernels, read from
// transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py (TE 2.x:
// AttnFuncWithCPAndKVAllGather, AttnFuncWithCPAndQKVOA2A, flash_attn_a2a_communicate) for
// Megatron-Core's qkv_format "sbhd" under a causal mask with TE's load balancing (rank r holds
// sequence chunks r and 2cp-1-r). te_cp_ring.h has the p2p ring's.
//   all_gather, forward:  the gathered K and V reordered by torch.index_select (reads and writes
//                         the whole of both); each of the two steps' outputs copied into `out`
//                         (out[i].copy_); the queries' halves and the key ranges are contiguous
//                         slices (no copy).
//   all_gather, backward: dK and dV zero-filled at full length; K and V gathered and reordered
//                         again; dQ's halves copied into dq; each step's dK and dV added into
//                         their key range (rank r's two steps cover r + 1 and 2cp - r of the
//                         2cp chunks: 2cp + 1 in all); dK, dV reordered back by index_select
//                         before their reduce-scatter.
//   a2a (flash_attn_a2a_communicate): a tensor is moved to [cp, ...] by .contiguous() before its
//                         all-to-all and its chunks reordered by index_select after it, or
//                         reordered before and moved back after: two copies per tensor and
//                         exchange. Forward: Q, K, V before the attention, O after; backward: O
//                         and dO before (the forward saved O in the sequence split, so the
//                         backward exchanges it again), dQ, dK, dV after.
// Launches and the softmax statistics are left out.
#pragma once

namespace proteus {

struct TeCpCopyBytes {
  double forward = 0;
  double backward = 0;
};

// HBM bytes per rank and layer: `q_bytes` and `out_bytes` the rank's Q and attention output,
// `kv_bytes` its K and V shards together (before the gather), `cp` the context-parallel size.
TeCpCopyBytes te_cp_all_gather_copy_bytes(double q_bytes, double out_bytes, double kv_bytes, int cp);

// The same for one all-to-all exchange of `tensor_bytes` (what the rank holds of the tensors
// exchanged): the two copies around it.
double te_cp_a2a_exchange_copy_bytes(double tensor_bytes);

}  // namespace proteus
