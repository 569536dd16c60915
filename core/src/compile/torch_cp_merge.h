// PyTorch context parallelism's per-step work besides the SDPA calls (framework fsdp,
// cp > 1; torch/distributed/tensor/experimental/_attention.py, docs/fidelity/overheads.md "PyTorch CP's
// output merge and dK/dV ring"): the forward merges each step's output into an fp32 running
// output (_SDPAMerger, convert_to_f32), the backward accumulates dQ, dK, dV in fp32 and passes
// dK/dV on every step. TorchTitan compiles each TransformerBlock with fullgraph=True, so these
// aten pointwise ops are traced between the SDPA calls and fused by Inductor: per step one read
// of the fp32 running value (4 bytes) and of the step's bf16 result (2), one fp32 write (4).
// Eager PyTorch runs more kernels (a lower bound there). Private to the compiler.
#pragma once

namespace proteus {

inline constexpr double kFusedMergeBytesPerElement = 4 + 2 + 4;  // fp32 read, bf16 read, fp32 write
inline constexpr double kFirstStepBytesPerElement = 2 + 4;       // bf16 read, fp32 write (zeros folded)
inline constexpr double kCastBackBytesPerElement = 4 + 2;        // fp32 read, bf16 write

// Forward: the first step's output cast to fp32, cp - 1 merges, the cast back to bf16.
inline double torch_cp_forward_merge_bytes(double out_elements, int cp) {
  return out_elements *
         (kFirstStepBytesPerElement + (cp - 1) * kFusedMergeBytesPerElement + kCastBackBytesPerElement);
}

// Backward: dQ and dK/dV (q and K/V elements) accumulated over cp steps, then cast back.
inline double torch_cp_backward_accumulate_bytes(double q_elements, double kv_elements, int cp) {
  return (q_elements + kv_elements) *
         (kFirstStepBytesPerElement + (cp - 1) * kFusedMergeBytesPerElement + kCastBackBytesPerElement);
}

}  // namespace proteus
