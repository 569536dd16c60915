// The work context parallelism adds beside an attention op's kernels, on the compute stream
// after them: Transformer Engine's ring corrections and accumulations (te_cp_ring.h), its
// all_gather and a2a copies (te_cp_copies.h), DeepSpeed-Ulysses' (ulysses_copies.h), PyTorch's fp32
// merges (torch_cp_merge.h); TE's a2a backward's second exchange of the saved output; and what an
// all-gathered K/V holds in memory.

#include "pass_derivation.h"
#include "te_cp_copies.h"
#include "te_cp_ring.h"
#include "torch_cp_merge.h"
#include "ulysses_copies.h"

namespace proteus {

// The op's slot in `ids` (two per op) for a direction: forward (and recompute) or backward.
int* PassDeriver::cp_side_work_slot(std::vector<int>* ids, int op, int which) {
  return &(*ids)[static_cast<size_t>(2 * op + (which == 0 ? 0 : 1))];
}

// Transformer Engine's ring (te_cp_ring.h): the K/V copies, the output corrections and the
// dQ, dK/dV accumulation beside the attention blocks, on the compute stream after the last
// block. PyTorch's context parallelism has its own (torch_cp_merge).
int PassDeriver::te_cp_ring_work(int op, int mb, Phase phase, int which, int ring, double kv_bytes,
                                 int attention) {
  if (ring <= 1) return attention;
  const auto bytes = [&] {
    const Op& o = g_.ops[op];
    const double out_bytes =
        o.output.tensor < 0 ? 0
                            : tensor_bytes_per_rank(g_.tensors[o.output.tensor], plans_[op].output, mesh_);
    const TeCpRingBytes b = te_cp_ring_bytes(out_bytes, kv_bytes, ring);
    return which == 0 ? b.forward : b.backward;
  };
  return side_task(cp_side_work_slot(&cp_merge_work_ids_, op, which), bytes,
                   which == 0 ? "cp_ring_out_correction" : "cp_ring_grad_accumulate", phase, mb, attention);
}

// Transformer Engine's all_gather and a2a context parallelism (te_cp_copies.h): their copies
// beside the attention kernels, on the compute stream after the attention.
int PassDeriver::te_cp_copy_work(int op, int mb, Phase phase, int which, int attention) {
  const Op& o = g_.ops[op];
  const int cp = mesh_.size[kAxisCp];
  const CpCommType flavour = tree_.nodes[o.module].config.cp_comm_type;
  if (o.kind != OpKind::Attention || cp <= 1 ||
      (flavour != CpCommType::AllGather && flavour != CpCommType::A2a))
    return attention;
  const auto bytes = [&] {
    const OpPlan& p = plans_[op];
    double q_bytes = 0, kv_bytes = 0;
    for (size_t k = 0; k < o.inputs.size(); ++k)
      (k == 0 ? q_bytes : kv_bytes) +=
          tensor_bytes_per_rank(g_.tensors[o.inputs[k].tensor], p.input_required[k], mesh_);
    const double out_bytes =
        o.output.tensor < 0 ? 0 : tensor_bytes_per_rank(g_.tensors[o.output.tensor], p.output, mesh_);
    if (flavour == CpCommType::AllGather) {
      // The gathered K/V are the attention's inputs; the shards were 1/cp of them.
      const TeCpCopyBytes b = te_cp_all_gather_copy_bytes(q_bytes, out_bytes, kv_bytes / cp, cp);
      return which == 0 ? b.forward : b.backward;
    }
    if (tree_.root().ulysses_cp)  // forward Q, K, V and O; backward dO and dQ, dK, dV
      return ulysses_exchange_copy_bytes(q_bytes + kv_bytes) + ulysses_exchange_copy_bytes(out_bytes);
    return which == 0
               ? te_cp_a2a_exchange_copy_bytes(q_bytes + kv_bytes) + te_cp_a2a_exchange_copy_bytes(out_bytes)
               : 2 * te_cp_a2a_exchange_copy_bytes(out_bytes) +
                     te_cp_a2a_exchange_copy_bytes(q_bytes + kv_bytes);
  };
  const char* name = flavour == CpCommType::AllGather ? "cp_all_gather_copies"
                     : tree_.root().ulysses_cp        ? "cp_ulysses_copies"
                                                      : "cp_a2a_copies";
  return side_task(cp_side_work_slot(&cp_merge_work_ids_, op, which), bytes, name, phase, mb, attention);
}

// TE's a2a backward exchanges the saved output again, to the head split, beside dO
// (AttnFuncWithCPAndQKVOA2A.backward: flash_attn_a2a_communicate([out, dout], ...)); DeepSpeed-
// Ulysses does not (ulysses_copies.h). Returns the exchange's last task, -1 when there is none.
int PassDeriver::te_cp_a2a_saved_output_exchange(int op, int mb) {
  const Op& o = g_.ops[op];
  if (o.kind != OpKind::Attention || mesh_.size[kAxisCp] <= 1 || tree_.root().torch_cp ||
      tree_.root().ulysses_cp || tree_.nodes[o.module].config.cp_comm_type != CpCommType::A2a ||
      o.output.tensor < 0)
    return -1;
  const OpPlan& p = plans_[op];
  for (const auto& [c_op, k] : index_.consumers[o.output.tensor]) {
    if (plans_[c_op].chunk != p.chunk) continue;
    const auto steps =
        redistribute(plans_[c_op].input_required[k], p.output, g_.tensors[o.output.tensor].bytes(), mesh_);
    int last = -1;
    for (const CollectiveStep& step : steps)
      last = emit_.collective(step.kind, step.axes, step.bytes, Stream::TpComm, Phase::BackwardInput, mb,
                              index_.labels[op], last < 0 ? std::vector<int>{} : std::vector<int>{last},
                              "activation");
    return last;
  }
  return -1;
}

// PyTorch CP (torch_cp_merge.h): after the attention's SDPA calls, the fused fp32 merge of the
// outputs (forward, recompute) or accumulation of dQ, dK, dV (backward), on the compute stream,
// whichever way K/V travel (_templated_ring_attention merges the same under both rotate
// methods). `local_kv_bytes`: the rank's own K/V shard, whose dK/dV it accumulates.
int PassDeriver::torch_cp_merge(int op, int mb, Phase phase, int which, int attention,
                                double local_kv_bytes) {
  const auto bytes = [&] {
    const Tensor& out = g_.tensors[g_.ops[op].output.tensor];
    const double out_elements = tensor_bytes_per_rank(out, plans_[op].output, mesh_) / out.bytes() *
                                static_cast<double>(out.elements());
    const int cp = mesh_.size[kAxisCp];
    const double kv_elements = local_kv_bytes / out.bytes() * static_cast<double>(out.elements());
    return which == 0 ? torch_cp_forward_merge_bytes(out_elements, cp)
                      : torch_cp_backward_accumulate_bytes(out_elements, kv_elements, cp);
  };
  return side_task(cp_side_work_slot(&cp_merge_work_ids_, op, which), bytes,
                   which == 0 ? "cp_sdpa_merge" : "cp_grad_accumulate", phase, mb, attention);
}

// cp_comm_type all_gather (TE AttnFuncWithCPAndKVAllGather): the attention works on K/V gathered
// over cp (k_ag, v_ag) and saves only the local shards; the forward holds the gathered K/V while
// it runs, the backward gathers them again and also accumulates dK/dV at full length (dk, dv =
// torch.zeros of cp x the local shape): per rank, the whole K/V once in the forward, twice in
// the backward, beside the saved activations. PyTorch's all-gather rotater holds the gathered
// K/V as SDPA reads them (TorchTitan's repeated ones) and fp32 dK/dV in flight, about the same.
// 0 for any other op.
double PassDeriver::gathered_kv_bytes(int op) const {
  const Op& o = g_.ops[op];
  if (o.kind != OpKind::Attention || mesh_.size[kAxisCp] <= 1 ||
      tree_.nodes[o.module].config.cp_comm_type != CpCommType::AllGather)
    return 0;
  // TE's attention requires K/V gathered; PyTorch's keeps the local shard and gathers it itself.
  return attention_kv_bytes(op) * (is_torch_gather_attention(op) ? mesh_.size[kAxisCp] : 1);
}

}  // namespace proteus
