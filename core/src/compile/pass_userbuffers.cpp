// The parts of a pass that Transformer Engine's userbuffers change (strategy.tp_comm_overlap;
// docs/frameworks/tensor-parallelism-and-moe.md "Tensor-parallel communication overlap"; userbuffers.h for
// TE's defaults): which GEMMs use them, their split work, the pipelined GEMM + reduce-scatter, and which
// all-gathers and reduce-scatters run inside a GEMM. The ring exchange itself is the ring of
// pass_derivation.cpp (ring_compute), shared with context parallelism. Under framework fsdp the
// same switch is PyTorch's async TP, whose all-gather side is the same ring and whose
// GEMM + reduce-scatter is symm_mem_matmul_reduce_scatter below.
#include <algorithm>
#include <cstdint>

#include "pass_derivation.h"
#include "userbuffers.h"

namespace proteus {
namespace {

// One of `parts` chunks of a GEMM split along its rows (tokens), as TE's split GEMMs are;
// `streams` chunks run at once (TE's round-robin compute streams; PyTorch's async TP issues its
// chunks on the current stream, one at a time).
ComputeWork gemm_chunk(ComputeWork w, int parts, int sm_reserved, int streams) {
  w.flops /= parts;
  w.bytes /= parts;
  w.side_bytes /= parts;
  w.gemm_m = std::max<int64_t>(1, (w.gemm_m + parts - 1) / parts);
  w.sm_reserved = std::max(w.sm_reserved, sm_reserved);
  w.concurrent_gemms = std::max(1, std::min(parts, streams));
  return w;
}

}  // namespace

// tp_comm_overlap applies to this op: a GEMM with weights inside a transformer layer (TE's
// linears; Megatron's output layer is its own ColumnParallelLinear, without userbuffers) whose
// module asks for them, under tensor parallelism (validation requires sequence parallelism).
bool PassDeriver::uses_userbuffers(int op) const {
  const Op& o = g_.ops[op];
  return mesh_.size[kAxisTp] > 1 && o.kind == OpKind::Matmul && plans_[op].has_weights() &&
         g_.modules[o.module].layer >= 0 && tree_.nodes[o.module].config.tp_comm_overlap;
}

// A chunk of op's work (which: 0 forward, 1 input gradient) for a TE split GEMM: `kind` 0 one of
// tp ring-exchange chunks, 2 one of the pipelined reduce-scatter's chunks (with its SM margin).
int PassDeriver::ub_chunk_work(int op, int which, int kind) {
  int& id = ub_work_ids_[static_cast<size_t>(3 * op + which + kind)];
  if (id < 0) {
    const OpPlan& p = plans_[op];
    const ComputeWork& w = which == 0 ? p.fwd : p.bwd_input;
    const int streams = tree_.nodes[g_.ops[op].module].config.torch_async_tp ? 1 : kUserbuffersComputeStreams;
    id = emit_.exec().add_work(kind == 0
                                   ? gemm_chunk(w, mesh_.size[kAxisTp], 0, streams)
                                   : gemm_chunk(w, kUserbuffersPipelineSplits, kUserbuffersCommSms, streams));
  }
  return id;
}

// TE's pipelined GEMM + reduce-scatter (userbuffers "pipeline", proj_fprop / fc2_fprop): the
// GEMM in kUserbuffersPipelineSplits chunks of rows on the SMs the reduce-scatter kernel leaves
// it; each chunk's reduce-scatter (S / splits) runs beside the next chunk. Returns the last
// chunk; *last_rs is the last reduce-scatter, after which the output is in its scattered layout.
int PassDeriver::pipelined_reduce_scatter(int op, int mb, Phase phase, const std::vector<int>& deps,
                                          const std::vector<MemEvent>& mem, double rs_bytes, int* last_rs) {
  if (tree_.nodes[g_.ops[op].module].config.torch_async_tp)
    return symm_mem_matmul_reduce_scatter(op, mb, phase, deps, mem, rs_bytes, last_rs);
  const int n = kUserbuffersPipelineSplits;
  const int label = index_.labels[op];
  const int work = ub_chunk_work(op, 0, 2);
  const std::vector<MemEvent> none;
  const std::vector<int> after;  // the compute stream runs chunks in order
  int last = -1;
  for (int i = 0; i < n; ++i) {
    last = emit_.compute(emit_.compute_task(label, phase, mb, work), i == 0 ? deps : after,
                         i + 1 == n ? mem : none);
    *last_rs = emit_.collective(CollectiveKind::ReduceScatter, axis_bit(kAxisTp), rs_bytes / n,
                                Stream::TpComm, phase, mb, label, {last}, kUserbuffersPurpose);
  }
  return last;
}

// PyTorch's async TP (framework fsdp): Inductor's micro_pipeline_tp_pass turns
// reduce_scatter(A @ B) into symm_mem.fused_matmul_reduce_scatter
// (torch/distributed/_symmetric_memory/__init__.py, _fused_matmul_reduce_scatter_impl and
// _pipelined_produce_and_all2all). The GEMM runs as tp chunks of M/tp rows, one per destination
// rank, on the whole GPU; after chunk s every rank pulls the chunk made for it by the rank s
// behind into its stacked_partials buffer (a copy-engine copy over the symmetric memory: one ring
// step of S/tp), beside chunk s + 1; the rank's own chunk comes last. Then one reduction kernel
// (torch.sum over the tp partials) reads all of stacked_partials, S, and writes the scattered
// output, S/tp. Returns the last chunk; *reduced is the reduction.
int PassDeriver::symm_mem_matmul_reduce_scatter(int op, int mb, Phase phase, const std::vector<int>& deps,
                                                const std::vector<MemEvent>& mem, double rs_bytes,
                                                int* reduced) {
  const int tp = mesh_.size[kAxisTp];
  const int label = index_.labels[op];
  const int work = ub_chunk_work(op, 0, 0);  // one of tp chunks of rows, no SM margin
  const std::vector<MemEvent> none;
  const std::vector<int> after;  // the compute stream runs chunks in order
  int last = -1, pulled = -1;
  for (int i = 0; i < tp; ++i) {
    last = emit_.compute(emit_.compute_task(label, phase, mb, work), i == 0 ? deps : after,
                         i + 1 == tp ? mem : none);
    if (i + 1 < tp)  // the own chunk, made last, stays here
      pulled = emit_.collective(CollectiveKind::RingExchange, axis_bit(kAxisTp), rs_bytes / tp,
                                Stream::TpComm, phase, mb, label, {last}, kUserbuffersPurpose);
  }
  const double reduce_bytes = rs_bytes * (1.0 + 1.0 / tp);
  *reduced = side_task(
      &async_tp_reduce_work_ids_[static_cast<size_t>(op)], [&] { return reduce_bytes; }, "async_tp_reduce",
      phase, mb, pulled);
  return last;
}

// tp_comm_overlap: input k of op, if its all-gather over tp runs inside op's GEMM (TE ring
// exchange, qkv_fprop / fc1_fprop). Returns the shard bytes per rank (0: not so) and adds the
// task that made the shard to deps.
double PassDeriver::ring_exchange_input(int op, int mb, Namespace ns, size_t k, std::vector<int>* deps) {
  if (!uses_userbuffers(op)) return 0;
  const int t = g_.ops[op].inputs[k].tensor;
  const int prod = g_.tensors[t].producer;
  const Layout& want = plans_[op].input_required[k];
  if (prod < 0) return 0;
  const Layout& src = plans_[prod].output;
  // Gathered already: by another GEMM reading it, or, for a replay reading a tensor it does not
  // make again, by the forward (tensor_in_layout). A tensor the replay made is gathered again,
  // by this GEMM's ring exchange as in the forward.
  const bool remade = ns == kRecompute && state_.provider(mb, provider_key(mb, kRecompute, t, src));
  if (state_.provider(mb, provider_key(mb, ns, t, want)) ||
      (ns == kRecompute && !remade && state_.provider(mb, provider_key(mb, kFwd, t, want))))
    return 0;
  if (!is_single(redistribute(src, want, g_.tensors[t].bytes(), mesh_), CollectiveKind::AllGather,
                 axis_bit(kAxisTp)))
    return 0;
  const int made = tensor_in_layout(mb, ns, t, src);
  if (made != INT32_MIN) deps->push_back(made);  // INT32_MIN: a model input, nothing to wait for
  // Under FP8 the ring moves TE's FP8 copy (initialize_ub's fp8_buf: qkv_fprop, fc1_fprop).
  return tensor_bytes_per_rank(g_.tensors[t], src, mesh_) * input_move_bytes(g_.tensors[t], plans_[op], k) /
         g_.tensors[t].bytes();
}

// tp_comm_overlap: the layout op's output is reduce-scattered to over tp for a consumer (TE's
// pipelined proj_fprop / fc2_fprop), and the reduce-scatter's size S; S = 0 when none.
double PassDeriver::pipelined_rs_target(int op, Layout* want) const {
  const int out = g_.ops[op].output.tensor;
  if (!uses_userbuffers(op) || out < 0) return 0;
  for (const auto& [c_op, k] : index_.consumers[out]) {
    const Layout& l = plans_[c_op].input_required[k];
    const auto steps = redistribute(plans_[op].output, l, g_.tensors[out].bytes(), mesh_);
    if (is_single(steps, CollectiveKind::ReduceScatter, axis_bit(kAxisTp))) {
      *want = l;
      return steps[0].bytes;
    }
  }
  return 0;
}

}  // namespace proteus
