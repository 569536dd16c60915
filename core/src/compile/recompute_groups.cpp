#include "recompute_groups.h"

#include <algorithm>
#include <map>
#include <utility>

#include "fp8_plan.h"

namespace proteus {

namespace {

// The module an op is recomputed with: the outermost of its selected modules (moe holds the
// shared experts and the experts' activation), core_attn excepted (its own replay).
int group_module(RecomputeModules selected) {
  constexpr RecomputeModule kOrder[] = {RecomputeModule::Moe,       RecomputeModule::SharedExperts,
                                        RecomputeModule::Mlp,       RecomputeModule::MlaUpProj,
                                        RecomputeModule::Layernorm, RecomputeModule::MoeAct};
  for (RecomputeModule m : kOrder)
    if (selected & recompute_bit(m)) return static_cast<int>(m);
  return -1;
}

// The transformer block an op's module belongs to (a layer, or a multi-token prediction module).
int block_of(const OpGraph& g, int module) {
  int m = module;
  while (m > 0 && g.modules[m].kind != "layer" && g.modules[m].kind != "mtp") m = g.modules[m].parent;
  return m;
}

class Builder {
 public:
  Builder(const ProgramInputs& in, const std::vector<int>& full_seg_of_op,
          const std::vector<int>& full_seg_last, const std::vector<std::vector<int>>& chunk_ops)
      : in_(in), g_(in.graph), full_seg_(full_seg_of_op), full_last_(full_seg_last), chunk_ops_(chunk_ops) {
    const size_t n = g_.ops.size();
    out_.group_of_op.assign(n, -1);
    out_.triggered_by.assign(n, {});
  }

  RecomputeGroups build() {
    for (const auto& ops : chunk_ops_) form_groups(ops);
    if (out_.groups.empty()) return std::move(out_);
    set_triggers();
    const size_t n = g_.ops.size();
    RecomputeMemory& m = out_.memory;
    m.fwd.assign(n, 0);
    m.discarded.assign(n, 0);
    m.replay.assign(n, 0);
    m.remade.assign(n, 0);
    replayed_.assign(out_.groups.size(), {});
    for (const auto& ops : chunk_ops_) attribute_memory(ops);
    return std::move(out_);
  }

 private:
  void form_groups(const std::vector<int>& ops) {
    std::map<std::pair<int, int>, int> by_key;  // (module, block) -> group
    for (int op : ops) {
      const int module = group_module(in_.plans[op].recompute_modules);
      if (module < 0) continue;
      const std::pair<int, int> key{module, block_of(g_, g_.ops[op].module)};
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        it = by_key.emplace(key, static_cast<int>(out_.groups.size())).first;
        out_.groups.push_back({});
        out_.groups.back().discards_output = discards_output(static_cast<RecomputeModule>(module));
      }
      out_.groups[it->second].ops.push_back(op);
      out_.group_of_op[op] = it->second;
    }
  }

  // Where op c's backward first needs what it read: its own backward, or the replay of the
  // group or full-recompute segment it belongs to.
  int need_point(int c) const {
    if (full_seg_[c] >= 0) return full_last_[c];
    const int gi = out_.group_of_op[c];
    if (gi < 0) return c;
    const RecomputeGroup& gr = out_.groups[gi];
    return gr.discards_output ? gr.trigger : gr.ops.back();
  }

  // A checkpoint runs again before its last op's backward; an output-discarding group before
  // the first backward (the latest consumer in forward order) that reads one of its outputs.
  // Consumers come later in the forward, so groups are settled from the last one back.
  void set_triggers() {
    std::vector<int> order(out_.groups.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return out_.groups[a].ops.back() > out_.groups[b].ops.back(); });
    for (int gi : order) {
      RecomputeGroup& gr = out_.groups[gi];
      gr.trigger = gr.ops.back();
      if (!gr.discards_output) continue;
      int latest = -1;
      for (int op : gr.ops)
        for (int c : consumers_in_chunk(op))
          if (out_.group_of_op[c] != gi) latest = std::max(latest, need_point(c));
      if (latest >= 0) gr.trigger = latest;
    }
    for (int gi = 0; gi < static_cast<int>(out_.groups.size()); ++gi)
      out_.triggered_by[out_.groups[gi].trigger].push_back(gi);
    for (auto& list : out_.triggered_by)  // producers' groups first
      std::sort(list.begin(), list.end(),
                [&](int a, int b) { return out_.groups[a].ops.front() < out_.groups[b].ops.front(); });
  }

  std::vector<int> consumers_in_chunk(int op) const {
    std::vector<int> out;
    const int t = g_.ops[op].output.tensor;
    if (t < 0) return out;
    for (size_t c = 0; c < g_.ops.size(); ++c) {
      if (in_.plans[c].chunk != in_.plans[op].chunk) continue;
      for (const TensorUse& u : g_.ops[c].inputs)
        if (u.tensor == t) {
          out.push_back(static_cast<int>(c));
          break;
        }
    }
    return out;
  }

  bool discarded_by_group(int tensor) const {
    const int prod = g_.tensors[tensor].producer;
    if (prod < 0) return false;
    const int gi = out_.group_of_op[prod];
    return gi >= 0 && out_.groups[gi].discards_output;
  }

  // Bytes op keeps of its input k, as the op plans count them (an FP8 linear's FP8 copy); a
  // discarded tensor is kept as the original, as TE's save_original_input makes the linears
  // behind an output-discarding checkpoint do.
  double input_bytes(int op, size_t k) const {
    const Op& o = g_.ops[op];
    const OpPlan& p = in_.plans[op];
    const int t = o.inputs[k].tensor;
    const double bytes = tensor_bytes_per_rank(g_.tensors[t], p.input_saved[k], in_.tree.mesh);
    if (discarded_by_group(t)) return bytes;
    return k == 0 && p.fp8_input_bytes_per_element > 0 ? fp8_saved_input_bytes(g_, in_.plans, o, p, bytes)
                                                       : bytes;
  }

  // Records that `holder` keeps tensor t (bytes) for its backward.
  void hold(int holder, int t, double bytes) {
    held_[t] = 1;
    RecomputeMemory& m = out_.memory;
    m.fwd[holder] += bytes;
    if (!discarded_by_group(t)) return;
    m.discarded[holder] += bytes;
    m.remade[g_.tensors[t].producer] += bytes;
  }

  bool is_held(int t) const { return held_[t] != 0; }

  // Each tensor is kept once per chunk, by the first op (or group) in forward order that keeps
  // it, as plan_ops counts; a group keeps its outside inputs from its first op's forward.
  void attribute_memory(const std::vector<int>& ops) {
    held_.assign(g_.tensors.size(), 0);
    RecomputeMemory& m = out_.memory;
    for (int op : ops) {
      const Op& o = g_.ops[op];
      const OpPlan& p = in_.plans[op];
      const int gi = out_.group_of_op[op];
      if (full_seg_[op] >= 0) {  // full recompute keeps its own accounting (OpIndex)
        if (o.saves_inputs)
          for (const TensorUse& u : o.inputs) held_[u.tensor] = 1;
        continue;
      }
      if (gi < 0) {
        if (o.saves_inputs)
          for (size_t k = 0; k < o.inputs.size(); ++k)
            if (!is_held(o.inputs[k].tensor)) hold(op, o.inputs[k].tensor, input_bytes(op, k));
        const bool drops = (p.recompute_modules & recompute_bit(RecomputeModule::CoreAttn)) != 0;
        (drops ? m.replay : m.fwd)[op] += p.saved_extra_bytes;
        m.fwd[op] += p.repeat_kv_saved_bytes;
        continue;
      }
      const RecomputeGroup& gr = out_.groups[gi];
      if (op == gr.ops.front()) keep_group_inputs(gi);
      // Run again, the op keeps what it reads from inside the group, and its saved_extra.
      m.replay[op] += p.saved_extra_bytes + p.repeat_kv_saved_bytes;
      if (!o.saves_inputs) continue;
      for (size_t k = 0; k < o.inputs.size(); ++k) {
        const int t = o.inputs[k].tensor;
        const int prod = g_.tensors[t].producer;
        if (prod < 0 || out_.group_of_op[prod] != gi) continue;
        std::vector<int>& seen = replayed_[gi];
        if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
        seen.push_back(t);
        m.replay[op] += input_bytes(op, k);
      }
    }
  }

  void keep_group_inputs(int gi) {
    const RecomputeGroup& gr = out_.groups[gi];
    for (int r : gr.ops)
      for (size_t k = 0; k < g_.ops[r].inputs.size(); ++k) {
        const int t = g_.ops[r].inputs[k].tensor;
        const int prod = g_.tensors[t].producer;
        if (prod >= 0 && out_.group_of_op[prod] == gi) continue;
        if (is_held(t)) continue;
        // The checkpoint keeps the tensor it was given (a sequence-parallel shard stays one).
        hold(gr.ops.front(), t,
             tensor_bytes_per_rank(g_.tensors[t], in_.plans[r].input_saved[k], in_.tree.mesh));
      }
  }

  const ProgramInputs& in_;
  const OpGraph& g_;
  const std::vector<int>& full_seg_;
  const std::vector<int>& full_last_;
  const std::vector<std::vector<int>>& chunk_ops_;
  RecomputeGroups out_;
  std::vector<char> held_;                  // per tensor: kept in the chunk so far
  std::vector<std::vector<int>> replayed_;  // per group: tensors its replay keeps
};

}  // namespace

RecomputeGroups build_recompute_groups(const ProgramInputs& in, const std::vector<int>& full_seg_of_op,
                                       const std::vector<int>& full_seg_last_op,
                                       const std::vector<std::vector<int>>& chunk_ops) {
  return Builder(in, full_seg_of_op, full_seg_last_op, chunk_ops).build();
}

}  // namespace proteus
