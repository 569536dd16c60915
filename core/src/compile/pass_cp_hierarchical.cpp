// Context parallelism with cp_comm_type "a2a+p2p" (Transformer Engine's hierarchical context
// parallelism: DotProductAttention with cp_group = [a2a group, p2p group], which Megatron-Core
// builds from --hierarchical-context-parallel-sizes; AttnFuncWithCPAndKVP2P runs the all-to-alls
// of AttnFuncWithCPAndQKVOA2A around its ring). The cp ranks form an a x r grid: a = cp_a2a_size
// consecutive cp ranks (inside a node, beside tp) exchange heads by all-to-all; the r = cp / a
// ranks a apart (across nodes) pass K/V around a ring.
//   forward:  all-to-all of Q, K, V in the a-group (sequence-sharded -> head-sharded: each rank
//             then holds a x its tokens for 1/a of the heads), the ring over the r-group
//             (r attention blocks, r-1 steps of the K/V now held: the same bytes as the local
//             K/V shard), all-to-all of the output back;
//   backward: all-to-all of dO, the ring passing K/V and dK/dV (twice the bytes), all-to-all of
//             dQ, dK, dV.
// Each all-to-all moves (a-1)/a of its tensors inside the node; only the ring crosses nodes.
#include "pass_derivation.h"
#include "te_cp_copies.h"

namespace proteus {

int PassDeriver::hierarchical_cp_attention(int op, int mb, Phase phase, int which,
                                           const std::vector<int>& deps, const std::vector<MemEvent>& mem,
                                           double kv_bytes) {
  const Op& o = g_.ops[op];
  const OpPlan& p = plans_[op];
  const int cp = mesh_.size[kAxisCp];
  const int a = tree_.nodes[o.module].config.cp_a2a_size, r = cp / a;
  std::array<int, kNumMeshAxes> coords = mesh_.coords_of(emit_.gpu());
  const int ring_index = coords[kAxisCp] / a, inner = coords[kAxisCp] % a;
  std::vector<int> a2a_group, ring_group;
  for (int j = 0; j < a; ++j) {
    coords[kAxisCp] = ring_index * a + j;
    a2a_group.push_back(mesh_.gpu_of(coords));
  }
  for (int i = 0; i < r; ++i) {
    coords[kAxisCp] = i * a + inner;
    ring_group.push_back(mesh_.gpu_of(coords));
  }
  // All-to-all size S: what each rank sends in total, its own share included (exec_graph.h).
  double qkv_bytes = 0;
  for (size_t k = 0; k < o.inputs.size(); ++k)
    qkv_bytes += tensor_bytes_per_rank(g_.tensors[o.inputs[k].tensor], p.input_required[k], mesh_);
  const double out_bytes =
      o.output.tensor < 0 ? 0 : tensor_bytes_per_rank(g_.tensors[o.output.tensor], p.output, mesh_);
  const double before = which == 0 ? qkv_bytes : out_bytes, after = which == 0 ? out_bytes : qkv_bytes;
  const int label = index_.labels[op];
  std::vector<int> ring_deps = deps;
  if (a > 1)
    ring_deps = {emit_.collective(CollectiveKind::AllToAll, axis_bit(kAxisCp), before, Stream::TpComm, phase,
                                  mb, label, deps, "activation", a2a_group)};
  int last = ring_compute(
      op, mb, phase, ring_deps, mem,
      {kAxisCp, (which == 0 ? 1 : 2) * kv_bytes, ring_block_work(op, which, r), "activation", ring_group},
      nullptr);
  last = te_cp_ring_work(op, mb, phase, which, r, kv_bytes, last);
  if (a > 1) {
    // flash_attn_a2a_communicate's copies around both exchanges (te_cp_copies.h), on the
    // compute stream before the last.
    last = side_task(
        cp_side_work_slot(&cp_a2a_copy_work_ids_, op, which),
        [&] { return te_cp_a2a_exchange_copy_bytes(before) + te_cp_a2a_exchange_copy_bytes(after); },
        "cp_a2a_copies", phase, mb, last);
    last = emit_.collective(CollectiveKind::AllToAll, axis_bit(kAxisCp), after, Stream::TpComm, phase, mb,
                            label, {last}, "activation", a2a_group);
  }
  return last;
}

}  // namespace proteus
