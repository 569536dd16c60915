// The copies PyTorch FSDP2 (framework "fsdp", TorchTitan's fully_shard) makes around its
// collectives, each a memory-bound kernel on the compute stream (docs/frameworks/data-parallelism.md "FSDP2
// copy-in and copy-out"; torch/distributed/_composable/fsdp/_fsdp_collectives.py):
// - all-gather copy-out (foreach_all_gather_copy_out, called by FSDPParamGroup.wait_for_unshard
//   on the current stream after it waits for the all-gather's event): split_with_sizes_copy
//   reads the gathered flat buffer and writes the per-parameter unsharded tensors.
// - reduce-scatter copy-in (foreach_reduce -> foreach_reduce_scatter_copy_in, torch._chunk_cat):
//   reads the unsharded 16-bit gradients and writes the reduce-dtype (fp32) send buffer; the
//   default stream waits for it (current_stream.wait_stream(reduce_scatter_stream)) before it
//   frees the gradients. The division by the group size is NCCL's ReduceOp.AVG for fp32/bf16
//   (_get_gradient_divide_factors returns no factors): no kernel.
// Not charged: the all-gather copy-in (the fp32 -> bf16 cast of the shard and
// all_gather_copy_in) and the post-reduce accumulation, which run on FSDP's own
// all_gather_copy_in / reduce_scatter streams over the 1/d shard, beside the compute.
// Private to the compiler.
#pragma once

namespace proteus {

// Copy-out bytes of one gather: the gathered buffer read and the unsharded parameters written,
// `gathered_bytes` each (its elements at the all-gather's element size: 2 in bf16, 1 for an
// FP8 all-gather, whose uint8 buffer is split the same way).
inline double fsdp_copy_out_bytes(double gathered_bytes) { return 2 * gathered_bytes; }

// Reduce-scatter copy-in bytes: `elements` unsharded gradient elements read at `grad_bytes`
// (the parameter dtype's 16 bits) and written at `reduce_bytes` (TorchTitan reduces in fp32).
inline double fsdp_reduce_copy_in_bytes(double elements, double grad_bytes, double reduce_bytes) {
  return elements * (grad_bytes + reduce_bytes);
}

}  // namespace proteus
