// PyTorch's context parallelism around one attention (framework fsdp, cp > 1):
// torch/distributed/tensor/experimental/_attention.py, _templated_ring_attention and
// _templated_ring_attention_backward as TorchTitan ran them (docs/frameworks/context-parallelism.md
// "PyTorch's context-parallel attention"). Each SDPA call takes the K/V the model code handed to SDPA,
// TorchTitan's repeated ones (OpPlan::kv_repeats).
#include "pass_derivation.h"

namespace proteus {

// cp_comm_type "all_gather" (_RotateMethod.ALL_GATHER, the default rotater): the K/V stay in
// the layout their producer made along cp (op_plan.cpp, keep_kv_local) and the attention gathers
// them itself, overlapped with its first step.
bool PassDeriver::is_torch_gather_attention(int op) const {
  const Op& o = g_.ops[op];
  return tree_.root().torch_cp && o.kind == OpKind::Attention && mesh_.size[kAxisCp] > 1 &&
         tree_.nodes[o.module].config.cp_comm_type == CpCommType::AllGather;
}

// Per rank, the K/V an attention's kernel reads in the layout the op requires them (the local
// shard along cp under a ring or PyTorch's gather), repeated as the model code repeats them.
double PassDeriver::attention_kv_bytes(int op) const {
  double bytes = 0;
  for (const size_t k : kv_inputs(g_.ops[op]))
    bytes +=
        tensor_bytes_per_rank(g_.tensors[g_.ops[op].inputs[k].tensor], plans_[op].input_required[k], mesh_);
  return bytes * plans_[op].kv_repeats;
}

// The all-gather rotater: cp SDPA steps, the first on the local K/V while one all-gather of K/V
// (issued asynchronously before it, ft_c.all_gather_tensor) runs; the later steps wait for it
// (next_buffer). The backward gathers K/V again the same way, and rotates the dK/dV accumulated
// so far in fp32 (convert_to_f32) to the next rank after every step with the all-to-all rotater
// (permute_tensor, `kv_bytes` of 16-bit K/V are 2 kv_bytes in fp32): step i + 2 waits for the
// transfer that followed step i (the accumulation of step i + 1 waits on it, before step i + 2's
// SDPA on the same stream), and the gradients are complete when the transfer after the last step
// arrives. Functional collectives of one group share its NCCL stream, so the transfers queue
// behind the gather. Returns the last task.
int PassDeriver::torch_gather_attention(int op, int mb, Phase phase, int which, const std::vector<int>& deps,
                                        const std::vector<MemEvent>& mem, double kv_bytes) {
  const int cp = mesh_.size[kAxisCp];
  const int label = index_.labels[op];
  const int block = ring_block_work(op, which, cp);
  const bool backward = which == 1;
  const std::vector<MemEvent> none;
  int last = emit_.compute(emit_.compute_task(label, phase, mb, block), deps, none);
  const int gather = emit_.collective(CollectiveKind::AllGather, axis_bit(kAxisCp), cp * kv_bytes,
                                      Stream::TpComm, phase, mb, label, deps, "activation");
  std::vector<int> transfers;
  if (backward) transfers.push_back(torch_dkv_transfer(op, mb, phase, kv_bytes, {last}));
  for (int i = 1; i < cp; ++i) {
    std::vector<int> after = {gather};
    if (backward && i >= 2) after.push_back(transfers[static_cast<size_t>(i - 2)]);
    last = emit_.compute(emit_.compute_task(label, phase, mb, block), after, i + 1 == cp ? mem : none);
    if (backward) transfers.push_back(torch_dkv_transfer(op, mb, phase, kv_bytes, {last, transfers.back()}));
  }
  return backward ? transfers.back() : last;
}

// One transfer of the dK/dV accumulated so far to the next rank of the cp ring: PyTorch's
// all-to-all rotater (dkv_rotater, ALL_TO_ALL) on the group's NCCL stream, in fp32
// (convert_to_f32), i.e. twice the bytes of `kv_bytes` of 16-bit K and V.
int PassDeriver::torch_dkv_transfer(int op, int mb, Phase phase, double kv_bytes,
                                    const std::vector<int>& after) {
  return emit_.collective(CollectiveKind::RingExchange, axis_bit(kAxisCp), 2 * kv_bytes, Stream::TpComm,
                          phase, mb, index_.labels[op], after, "activation");
}

}  // namespace proteus
