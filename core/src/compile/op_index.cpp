#include "op_index.h"

#include <algorithm>

#include "../strategy/optimizer_state.h"
#include "proteus/error.h"

namespace proteus {

OpIndex::OpIndex(const ProgramInputs& in, ExecGraph* exec) : g_(in.graph), tree_(in.tree), plans_(in.plans) {
  const int chunks = tree_.model_chunks();
  chunk_ops.assign(static_cast<size_t>(chunks), {});
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    const int c = plans_[i].chunk;
    if (c < 0 || c >= chunks) throw Error("internal", "", "op " + g_.ops[i].name + " has no pipeline chunk");
    chunk_ops[c].push_back(static_cast<int>(i));
  }
  consumers.assign(g_.tensors.size(), {});
  for (size_t i = 0; i < g_.ops.size(); ++i)
    for (size_t k = 0; k < g_.ops[i].inputs.size(); ++k)
      consumers[g_.ops[i].inputs[k].tensor].push_back({static_cast<int>(i), static_cast<int>(k)});
  labels.resize(g_.ops.size());
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    const std::string& path = g_.modules[g_.ops[i].module].path;
    labels[i] = exec->label_id(path.empty() ? g_.ops[i].name : path + "." + g_.ops[i].name);
  }
  build_segments();
  mark_dropped_replays();
  build_fsdp_units();
  std::vector<int> seg_last(g_.ops.size(), -1);
  for (size_t i = 0; i < g_.ops.size(); ++i)
    if (seg_of_op[i] >= 0) seg_last[i] = segments[seg_of_op[i]].ops.back();
  groups = build_recompute_groups(in, seg_of_op, seg_last, chunk_ops);
  weight_stages.assign(g_.tensors.size(), {});
  for (size_t i = 0; i < g_.ops.size(); ++i)
    for (const TensorUse& w : g_.ops[i].weights)
      for (int copy = 0; copy < tree_.copies; ++copy) {  // DualPipe: each copy's stage holds it
        auto& st = weight_stages[w.tensor];
        const int s = tree_.stage_of_chunk(plans_[i].chunk, copy);
        if (std::find(st.begin(), st.end(), s) == st.end()) st.push_back(s);
      }
  for (auto& st : weight_stages) std::sort(st.begin(), st.end());
  const bool mixed = is_mixed_precision(in.training.precision);
  weight_bytes = mixed ? 2 : 4;
  const OptimizerStates states = optimizer_states(tree_.root(), in.training);
  opt_state_bytes = optimizer_state_bytes_per_param(states);
  opt_traffic_bytes = tree_.root().torch_optimizer ? torch_optimizer_bytes_per_param(in.training.optimizer)
                                                   : optimizer_step_bytes_per_param(states);
  opt_transient_bytes = tree_.root().torch_optimizer ? 0 : optimizer_step_transient_bytes_per_param(states);
}

// Full recompute: consecutive ops of one layer (or one non-layer module) in a chunk.
void OpIndex::build_segments() {
  seg_of_op.assign(g_.ops.size(), -1);
  for (const auto& ops : chunk_ops) {
    int prev_key = -2;
    for (int op : ops) {
      if (plans_[op].recompute != Recompute::Full) {
        prev_key = -2;
        continue;
      }
      const Module& m = g_.modules[g_.ops[op].module];
      const int key = m.layer >= 0 ? m.layer : -100 - g_.ops[op].module;
      if (key != prev_key) segments.push_back({});
      segments.back().ops.push_back(op);
      seg_of_op[op] = static_cast<int>(segments.size()) - 1;
      prev_key = key;
    }
  }
  // Checkpoint = the inputs a segment reads from outside itself, stored once, and the outputs
  // an op-level checkpointing policy saves (torch_op_sac.h).
  for (Segment& s : segments) {
    std::vector<int> seen;
    for (int op : s.ops) {
      const Op& o = g_.ops[op];
      s.checkpoint_bytes += cached_output_bytes(op);
      for (size_t k = 0; k < o.inputs.size(); ++k) {
        const int t = o.inputs[k].tensor;
        const int prod = g_.tensors[t].producer;
        if (prod >= 0 && seg_of_op[prod] == seg_of_op[op]) continue;
        if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
        seen.push_back(t);
        s.checkpoint_bytes += tensor_bytes_per_rank(g_.tensors[t], plans_[op].input_required[k], tree_.mesh);
      }
    }
  }
}

// What the forward keeps of an op's output under op-level checkpointing: the saved share of
// it, and a wholly saved op's own saved tensors (the SDPA kernel's logsumexp).
double OpIndex::cached_output_bytes(int op) const {
  const OpPlan& p = plans_[op];
  const int out = g_.ops[op].output.tensor;
  if (!p.op_sac || out < 0) return 0;
  const double extra = p.sac_saved_share >= 1 ? p.saved_extra_bytes : 0;
  const Tensor& t = g_.tensors[out];
  double bytes = p.sac_saved_share * tensor_bytes_per_rank(t, p.output, tree_.mesh) + extra;
  // The policy saves the functional reduce-scatter's result too (a row-parallel linear's
  // output under sequence parallelism), once per layout.
  std::vector<Layout> scattered;
  for (const auto& [c, k] : consumers[out]) {
    const Layout& want = plans_[c].input_required[k];
    if (plans_[c].chunk != p.chunk || std::find(scattered.begin(), scattered.end(), want) != scattered.end())
      continue;
    if (!reads_cached_reduce_scatter(op, c, k)) continue;
    scattered.push_back(want);
    bytes += tensor_bytes_per_rank(t, want, tree_.mesh);
  }
  return bytes;
}

bool OpIndex::replay_served_from_cache(int op) const {
  return seg_of_op[op] >= 0 && (plans_[op].sac_saved_share >= 1 || replay_dropped_[op]);
}

// Consumer input k reads producer's output through a reduce-scatter op-level checkpointing saved.
bool OpIndex::reads_cached_reduce_scatter(int producer, int consumer, int k) const {
  const OpPlan& p = plans_[producer];
  if (!p.op_sac) return false;
  const Tensor& t = g_.tensors[g_.ops[producer].output.tensor];
  const auto steps = redistribute(p.output, plans_[consumer].input_required[k], t.bytes(), tree_.mesh);
  return steps.size() == 1 && steps[0].kind == CollectiveKind::ReduceScatter;
}

// torch.compile traces the checkpointed block with the policy's tags and its partitioner
// recomputes only what the backward reads: an op is run again if an op of its block reads its
// output for its own backward (a saved input) or to be run again itself, not through a saved
// reduce-scatter. Eager PyTorch replays the whole block. Walks each segment from its end.
void OpIndex::mark_dropped_replays() {
  replay_dropped_.assign(g_.ops.size(), 0);
  if (!tree_.root().torch_op_sac || tree_.root().eager_elementwise) return;
  for (const Segment& seg : segments) {
    if (!plans_[seg.ops.front()].op_sac) continue;
    for (auto it = seg.ops.rbegin(); it != seg.ops.rend(); ++it) {
      const int op = *it;
      const int out = g_.ops[op].output.tensor;
      // Its own backward reads what its forward made beside the output (a norm's statistics,
      // a dropout mask) or the output itself.
      bool needed = !g_.ops[op].saved_extra.empty() || g_.ops[op].backward_reads_output;
      for (const auto& [c, k] : out < 0 ? std::vector<std::pair<int, int>>{} : consumers[out]) {
        if (seg_of_op[c] != seg_of_op[op] || reads_cached_reduce_scatter(op, c, k)) continue;
        const bool replayed = plans_[c].sac_saved_share < 1 && !replay_dropped_[c];
        needed = needed || g_.ops[c].saves_inputs || replayed;
      }
      replay_dropped_[op] = plans_[op].sac_saved_share < 1 && !needed;
    }
  }
}

// What a segment's op keeps from the replay for its backward: its saved inputs and tensors,
// less what the forward already keeps (cached_output_bytes): a saved output the op would save
// again as its input is the cached tensor itself (an FP8 linear's FP8 copy of it is not).
double OpIndex::segment_replay_bytes(int op) const {
  const OpPlan& p = plans_[op];
  const Op& o = g_.ops[op];
  // The repeated K/V are made again whatever the policy saves (a copy is never saved).
  double bytes =
      p.saved_input_bytes + (p.sac_saved_share >= 1 ? 0 : p.saved_extra_bytes) + p.repeat_kv_saved_bytes;
  for (size_t k = 0; k < o.inputs.size() && k < p.first_saves_input.size(); ++k) {
    const int prod = g_.tensors[o.inputs[k].tensor].producer;
    if (!p.first_saves_input[k] || prod < 0 || seg_of_op[prod] != seg_of_op[op]) continue;
    if (k == 0 && p.fp8_input_bytes_per_element > 0) continue;
    bytes -= plans_[prod].sac_saved_share *
             tensor_bytes_per_rank(g_.tensors[o.inputs[k].tensor], p.input_saved[k], tree_.mesh);
  }
  return std::max(0.0, bytes);
}

bool OpIndex::drops_extra(int op) const {
  return (plans_[op].recompute_modules & recompute_bit(RecomputeModule::CoreAttn)) != 0;
}

// Without recompute groups the op plans' figures stand (each tensor kept by its first saver);
// with them, recompute_groups.cpp attributes every op's again (RecomputeMemory).
double OpIndex::fwd_alloc(int op) const {
  const OpPlan& p = plans_[op];
  const int s = seg_of_op[op];
  if (s >= 0) return segments[s].ops.front() == op ? segments[s].checkpoint_bytes : 0;
  if (!groups.groups.empty()) return groups.memory.fwd[op] - groups.memory.discarded[op];
  return p.saved_input_bytes + (drops_extra(op) ? 0 : p.saved_extra_bytes) + p.repeat_kv_saved_bytes;
}

double OpIndex::recompute_alloc(int op) const {
  const OpPlan& p = plans_[op];
  if (seg_of_op[op] >= 0) return segment_replay_bytes(op);
  if (!groups.groups.empty()) return groups.memory.replay[op];
  return drops_extra(op) ? p.saved_extra_bytes : 0;
}

double OpIndex::held(int op) const {
  const double discarded = groups.groups.empty() || seg_of_op[op] >= 0 ? 0 : groups.memory.discarded[op];
  return fwd_alloc(op) + recompute_alloc(op) + discarded;
}

double OpIndex::replay_alloc(int op) const {
  const double remade = groups.groups.empty() || seg_of_op[op] >= 0 ? 0 : groups.memory.remade[op];
  return recompute_alloc(op) + remade;
}

bool OpIndex::has_w(int op) const {
  return plans_[op].has_weights() && (g_.ops[op].bwd_weight_flops > 0 || g_.ops[op].bwd_weight_bytes > 0);
}

bool OpIndex::input_needed_by_w(int op) const {
  const OpKind k = g_.ops[op].kind;
  return has_w(op) && (k == OpKind::Matmul || k == OpKind::Conv2d);
}

}  // namespace proteus
