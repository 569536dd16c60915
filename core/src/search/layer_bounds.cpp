// Each term is the compiled bound's (bounds.cpp) with the stage's tasks regrouped by layer: a
// stage runs, per micro-batch, the forward, backward and weight-gradient tasks of the layers of
// its chunks (chunk_placement: Megatron's c % pp, or the V of zb-v), each at least its
// cost-model time. Gaps between two layers count only inside one chunk, where a pass runs them
// back to back as in 1F1B; gaps that join a layer to the embedding or the output layer, and the
// once-per-iteration tasks (optimizer, gradient sync), are left out: still a lower bound. Static
// memory is the analytic one (parameters of the stage's layers, ZeRO-divided); activations are
// the layers' own, held as the candidate's schedule holds its chunks.
#include "layer_bounds.h"

#include <algorithm>

#include "bounds.h"
#include "proteus/strategy_tree.h"

namespace proteus::search_detail {

LayerProfileBuilder::LayerProfileBuilder(const ExecGraph& g, const OpGraph& graph, int stages) : g_(g) {
  layer_of_label_.assign(g.labels.size(), -1);
  int layers = 0;
  for (const Op& op : graph.ops) {
    const Module& m = graph.modules[static_cast<size_t>(op.module)];
    if (m.layer < 0) continue;
    const auto it = g.label_index.find(m.path.empty() ? op.name : m.path + "." + op.name);
    if (it == g.label_index.end()) continue;
    layer_of_label_[static_cast<size_t>(it->second)] = m.layer;
    layers = std::max(layers, m.layer + 1);
  }
  if (graph.num_layers == layers) profile_.layers.assign(static_cast<size_t>(layers), {});
  profile_.other.assign(static_cast<size_t>(stages), {});
}

int LayerProfileBuilder::layer_of(int task) const {
  const int label = g_.tasks[static_cast<size_t>(task)].label;
  return label < 0 ? -1 : layer_of_label_[static_cast<size_t>(label)];
}

namespace {

void add_pass(PassCosts* p, Phase phase, double seconds, double activation_bytes) {
  if (phase == Phase::Forward) {
    p->forward_s += seconds;
    p->activation_bytes += activation_bytes;
  } else if (phase == Phase::BackwardWeight) {
    p->weight_s += seconds;
    p->weight_release_bytes += std::max(0.0, -activation_bytes);
  } else {
    p->backward_s += seconds;
  }
}

}  // namespace

void LayerProfileBuilder::add(int stage, int task, int prev, double time_s, double gap_s,
                              double activation_bytes) {
  const Task& t = g_.tasks[static_cast<size_t>(task)];
  if (t.micro_batch != 0) return;  // micro-batch 0 stands for every micro-batch; once-tasks left out
  const int layer = profile_.layers.empty() ? -1 : layer_of(task);
  const int prev_layer = prev < 0 || profile_.layers.empty() ? -2 : layer_of(prev);
  const double chain_s = t.phase == Phase::Forward || t.phase == Phase::BackwardInput ? time_s : 0;
  if (layer < 0) {
    PassCosts& o = profile_.other[static_cast<size_t>(stage)];
    add_pass(&o, t.phase, time_s + (prev_layer == -1 ? gap_s : 0), activation_bytes);
    o.chain_s += chain_s;
    return;
  }
  LayerCosts& l = profile_.layers[static_cast<size_t>(layer)];
  l.chain_s += chain_s;
  add_pass(&l, t.phase, time_s + (prev_layer == layer ? gap_s : 0), activation_bytes);
  if (t.phase == Phase::Forward && prev_layer == layer - 1) l.forward_join_s += gap_s;
  if (t.phase == Phase::BackwardWeight && prev_layer == layer + 1) l.weight_join_s += gap_s;
  if (t.phase != Phase::Forward && t.phase != Phase::BackwardWeight && prev_layer == layer + 1)
    l.backward_join_s += gap_s;
}

namespace {

// Per chunk of the candidate (pipeline order): micro-batch 0's passes from its layers and, on
// the first and the last chunk, the non-layer tasks of the first and the last stage.
std::vector<PassCosts> chunk_costs(const LayerProfile& lp, int chunks) {
  const std::vector<int> units = split_layers(static_cast<int>(lp.layers.size()), chunks);
  std::vector<PassCosts> out(static_cast<size_t>(chunks));
  int first = 0;
  for (int c = 0; c < chunks; ++c) {
    PassCosts& cc = out[static_cast<size_t>(c)];
    const int end = first + units[static_cast<size_t>(c)];
    for (int u = first; u < end; ++u) {
      const LayerCosts& l = lp.layers[static_cast<size_t>(u)];
      const bool after_first = u > first, before_last = u + 1 < end;
      cc.forward_s += l.forward_s + (after_first ? l.forward_join_s : 0);
      cc.backward_s += l.backward_s + (before_last ? l.backward_join_s : 0);
      cc.weight_s += l.weight_s + (before_last ? l.weight_join_s : 0);
      cc.activation_bytes += l.activation_bytes;
      cc.weight_release_bytes += l.weight_release_bytes;
      cc.chain_s += l.chain_s;
    }
    first = end;
  }
  for (PassCosts* to : {&out.front(), &out.back()}) {
    const PassCosts& o = to == &out.front() ? lp.other.front() : lp.other.back();
    to->forward_s += o.forward_s;
    to->backward_s += o.backward_s;
    to->weight_s += o.weight_s;
    to->activation_bytes += o.activation_bytes;
    to->weight_release_bytes += o.weight_release_bytes;
    to->chain_s += o.chain_s;
  }
  return out;
}

}  // namespace

Bounds layer_bounds(const LayerProfile& lp, const ModelProfile& model, const Config& c) {
  const StrategySpec& s = c.strategy;
  const int pp = s.pp, per_stage = chunks_per_stage(s);
  Bounds b;
  // Only where the profile's stages and layers are the candidate's and the first and last
  // stage differ (their non-layer tasks belong to different chunks). Not DualPipe: its first
  // and last stages run half the micro-batches through the embedding's chunk and half through
  // the head's, where the profile cut into a V gives every micro-batch both (not a bound).
  if (lp.layers.empty() || pp < 2 || static_cast<int>(lp.other.size()) != pp ||
      static_cast<int>(lp.layers.size()) != model.units || s.schedule == Schedule::Explicit ||
      s.schedule == Schedule::DualPipe)
    return b;
  const std::vector<int> placement = chunk_placement(pp, per_stage, v_placement(s));
  const std::vector<PassCosts> chunks = chunk_costs(lp, pp * per_stage);
  const std::vector<double> params = stage_params(model, placement, pp);
  const PipelineShape shape = pipeline_shape(s.schedule);
  const double micro_batches = double(c.training.global_batch) / (double(s.dp) * s.micro_batch);
  const double data_ranks = double(s.dp) * s.cp;
  std::vector<double> head(pp, 0), tail(pp, 0), total(pp, 0), before_tail(pp, 0);
  std::vector<std::vector<double>> kept(pp), w_kept(pp);  // per stage, per local chunk
  std::vector<double> chain;
  for (size_t ch = 0; ch < chunks.size(); ++ch) {
    const PassCosts& cc = chunks[ch];
    chain.push_back(cc.chain_s);
    const size_t st = static_cast<size_t>(placement[ch]);
    const double input_only = cc.forward_s + cc.backward_s;
    total[st] += (input_only + cc.weight_s) * micro_batches;
    before_tail[st] += (shape.tail_input_only ? input_only : input_only + cc.weight_s) * micro_batches;
    kept[st].push_back(cc.activation_bytes);
    w_kept[st].push_back(cc.weight_release_bytes);
  }
  const std::vector<std::vector<Pass>> orders = stage_orders(c);
  for (int st = 0; st < pp; ++st) {  // head and tail: chunk st runs on stage st (Megatron's placement)
    const PassCosts& cc = chunks[static_cast<size_t>(st)];
    head[st] = cc.forward_s;
    tail[st] = cc.backward_s + (shape.tail_input_only ? 0 : cc.weight_s);
    const double static_bytes =
        params[static_cast<size_t>(st)] / (double(s.tp) * s.ep) * bytes_per_param(c, data_ranks);
    b.memory_bytes = std::max(
        b.memory_bytes,
        static_bytes + held_activation_bytes(c, orders[static_cast<size_t>(st)], kept[st], w_kept[st]));
  }
  b.time_s = std::max(pipeline_time(shape, pp, head, tail, total, before_tail), critical_path_s(chain));
  return b;
}

}  // namespace proteus::search_detail
