// Transformer Engine's context-parallel ring (cp_comm_type "p2p", and the ring of "a2a+p2p"):
// the per-layer work besides the attention kernels, read from
// transformer_engine/pytorch/attention.py (AttnFuncWithCP in TE 1.x up to 1.9, the
// AttnFuncWithCPAndKVP2P of later versions), for Megatron-Core's qkv_format "sbhd" under a
// causal mask with TE's load balancing (rank r holds sequence chunks r and 2cp-1-r, so a half of
// Q, O or K/V is a contiguous [2, s/2, ...] slice and costs no copy; a half of the K/V ring
// buffer, [2 (K, V), 2, s/2, ...][:, 0], does).
//   forward:  torch.cat of K and V into the ring buffer; on the steps 1 <= i <= r the first half
//             of the received K/V made contiguous; `out` zero-filled; after the ring every
//             step's partial output merged into `out` (flash_attn_fwd_out_correction, a
//             jit_fuser kernel: reads the step's output and `out`, writes `out`), the whole of
//             `out` for steps i <= r, its second half for the others;
//   backward: K/V copied into the ring buffer; per step the first half of K/V made contiguous
//             where the step ran on it, dK and dV joined by torch.cat, dQ copied or added into
//             its accumulator and dK/dV into the one travelling the ring, in halves or whole as
//             the step's mask covers them (the branches of AttnFuncWithCP.backward).
// The softmax statistics (one fp32 per query and head, 1/head_dim of O) are left out. All of it
// runs on the compute streams beside the attention kernels, so it adds to the layer's time.
// Proteus simulates one rank for all, so the bytes are the mean over the ring's ranks.
#pragma once

namespace proteus {

struct TeCpRingBytes {
  double forward = 0;
  double backward = 0;
};

// HBM bytes per rank and layer: `out_bytes` the rank's attention output (Q's size), `kv_bytes`
// its K and V shards together, `ring` the ranks around the ring (cp, or cp / a2a size).
TeCpRingBytes te_cp_ring_bytes(double out_bytes, double kv_bytes, int ring);

}  // namespace proteus
