// OpIndex's parameter groups (op_index.h): FSDP2's (framework fsdp, ZeRO-2/3) and Megatron-FSDP's
// (framework megatron, ZeRO-3), what each gathers, prefetches, keeps and reduces as one unit
// (docs/frameworks/data-parallelism.md, "ZeRO-3 (and FSDP)" and "Megatron-FSDP").
#include <algorithm>
#include <set>

#include "op_index.h"

namespace proteus {

void OpIndex::build_fsdp_units() {
  unit_of_op.assign(g_.ops.size(), -1);
  // Framework fsdp with zero 0 is PyTorch DDP (TorchTitan's apply_ddp): no parameter groups.
  // Megatron-FSDP has units only when it shards the weights (optim_grads_params): "optim and
  // optim_grads do not require FSDP units because they do not shard model parameters".
  const bool fsdp2 = tree_.root().fsdp2_copies && tree_.root().zero >= 2;
  if (!fsdp2 && !tree_.root().megatron_fsdp) return;
  const auto add_unit = [&](bool root) {
    fsdp_units.push_back({});
    fsdp_unit_is_root.push_back(root ? 1 : 0);
  };
  const auto layer_of = [&](int op) { return g_.modules[g_.ops[op].module].layer; };
  for (const auto& ops : chunk_ops) {
    // A chunk of layers only (a middle pipeline stage) has no root unit.
    if (std::any_of(ops.begin(), ops.end(), [&](int op) { return layer_of(op) < 0; })) {
      add_unit(true);
      for (int op : ops)
        if (layer_of(op) < 0) {
          fsdp_units.back().push_back(op);
          unit_of_op[op] = static_cast<int>(fsdp_units.size()) - 1;
        }
    }
    int prev_layer = -1;
    for (int op : ops) {
      const int layer = layer_of(op);
      if (layer < 0) continue;
      if (layer != prev_layer) add_unit(false);
      fsdp_units.back().push_back(op);
      unit_of_op[op] = static_cast<int>(fsdp_units.size()) - 1;
      prev_layer = layer;
    }
  }
  count_unit_elements();
}

// Each unit's weight elements on a rank as gathered (a tied weight counted once), and
// Megatron-FSDP's prefetch size per chunk (a chunk being one MegatronFSDP module):
// megatron_fsdp.py sets suggested_communication_unit_size to twice the mean FSDP unit
// (TransformerLayer) and raises it to at least 1e9 elements, and prefetches half of it.
void OpIndex::count_unit_elements() {
  fsdp_unit_elements.assign(fsdp_units.size(), 0);
  std::vector<double> layer_elements(chunk_ops.size(), 0);
  std::vector<int> layer_units(chunk_ops.size(), 0);
  for (size_t u = 0; u < fsdp_units.size(); ++u) {
    std::set<int> counted;
    for (int op : fsdp_units[u])
      for (const WeightPlan& w : plans_[op].weights)
        if (counted.insert(w.tensor).second) fsdp_unit_elements[u] += w.local_params;
    if (fsdp_unit_is_root[u]) continue;
    const int chunk = plans_[fsdp_units[u].front()].chunk;
    layer_elements[chunk] += fsdp_unit_elements[u];
    ++layer_units[chunk];
  }
  megatron_fsdp_prefetch_elements.assign(chunk_ops.size(), 0);
  for (size_t c = 0; c < chunk_ops.size(); ++c) {
    const double mean = layer_units[c] > 0 ? layer_elements[c] / layer_units[c] : 0;
    megatron_fsdp_prefetch_elements[c] = std::max(1e9, 2 * mean) / 2;
  }
}

std::vector<int> OpIndex::fsdp_prefetch_units(int unit, bool forward) const {
  const int chunk = plans_[fsdp_units[static_cast<size_t>(unit)].front()].chunk;
  const auto in_chunk = [&](int u) {
    return u >= 0 && u < static_cast<int>(fsdp_units.size()) &&
           plans_[fsdp_units[static_cast<size_t>(u)].front()].chunk == chunk;
  };
  const bool root = fsdp_unit_is_root[static_cast<size_t>(unit)] != 0;
  if (tree_.root().megatron_fsdp) {
    // AllGatherPipeline.all_gather_params: the next buckets in the pass's order while what it
    // prefetches is under the prefetch size. The root (unit 0, gathered in the forward and never
    // released) has no pre-backward hook, so nothing prefetches the last layer; a layer's
    // backward walks down to the root's bucket, which is kept.
    std::vector<int> ahead;
    if (root && !forward) return ahead;
    double prefetched = 0;
    for (int u = forward ? unit + 1 : unit - 1; in_chunk(u) && !fsdp_unit_is_root[static_cast<size_t>(u)];
         u += forward ? 1 : -1) {
      if (prefetched >= megatron_fsdp_prefetch_elements[static_cast<size_t>(chunk)]) break;
      ahead.push_back(u);
      prefetched += fsdp_unit_elements[static_cast<size_t>(u)];
    }
    return ahead;
  }
  // FSDP2: one unit ahead; backward in reverse post-forward order, so the root prefetches the
  // last layer.
  if (forward) return in_chunk(unit + 1) ? std::vector<int>{unit + 1} : std::vector<int>{};
  if (!root) return in_chunk(unit - 1) ? std::vector<int>{unit - 1} : std::vector<int>{};
  int last = unit;
  while (in_chunk(last + 1)) ++last;
  return last != unit ? std::vector<int>{last} : std::vector<int>{};
}

bool OpIndex::keeps_gather_to_backward(int op) const {
  if (unit_of_op[op] < 0 || tree_.stages != 1) return false;
  if (fsdp_unit_is_root[static_cast<size_t>(unit_of_op[op])]) return true;
  // TorchTitan's apply_fsdp leaves the last block unresharded; Megatron-FSDP's post-forward hook
  // releases every layer.
  return !tree_.root().megatron_fsdp && g_.num_layers > 0 &&
         g_.modules[g_.ops[op].module].layer == g_.num_layers - 1;
}

bool OpIndex::frees_gather_at_root_post_backward(int op) const {
  return keeps_gather_to_backward(op) && fsdp_unit_is_root[static_cast<size_t>(unit_of_op[op])];
}

bool OpIndex::gather_kept_for_iteration(int unit) const {
  return tree_.root().megatron_fsdp && tree_.stages == 1 && fsdp_unit_is_root[static_cast<size_t>(unit)];
}

}  // namespace proteus
