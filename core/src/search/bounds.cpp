// Lower bounds, term by term (docs/search.md):
//
// Memory. A rank holds its weights, gradients and optimizer states all iteration
// (program_builder's static memory: per parameter 2 or 4 bytes of weight, 4 (or 2: grad_reduce_in_fp32
// false) of gradient and the optimizer's states, divided over the data-parallel ranks by ZeRO 3, 2 and 1).
// Just before the first backward of micro-batch 0 it also holds everything micro-batch 0's forward kept.
// Analytic: the layers of the most loaded stage, every parameter divided by tp * ep (replicated norms only
// add). Compiled: the compiler's own static bytes plus its activations per micro-batch, per stage.
//
// Time. The compute stream of a rank runs its tasks one at a time, each at least its
// cost-model time, so an iteration is at least a stage's compute. In the pipelines whose
// chunk c runs on stage c in order (gpipe, 1f1b, interleaved, zb-h1) stage s also starts
// only after micro-batch 0's forward has passed stages 0..s-1 (the "head"), and its last
// backward (B: input gradient, for zb-h1) must still pass stages s-1..0 (the "tail"), which
// is the pipeline bubble. Communication only adds. Analytic: per-sample FLOPs at the GPU's
// best rate (best_compute_rate); compiled: each task's cost-model time.
#include "bounds.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <numeric>

#include "../compile/torch_op_sac.h"
#include "../strategy/optimizer_state.h"
#include "proteus/collective_flows.h"
#include "proteus/compile.h"
#include "proteus/cost_model.h"
#include "proteus/error.h"
#include "proteus/op_graph.h"
#include "proteus/run.h"
#include "proteus/schedule.h"
#include "proteus/simulation.h"
#include "proteus/strategy_spec.h"
#include "proteus/strategy_tree.h"
#include "proteus/units.h"

namespace proteus::search_detail {

namespace {
bool compute_bound(OpKind k) { return k == OpKind::Matmul || k == OpKind::Attention || k == OpKind::Conv2d; }
}  // namespace

PipelineShape pipeline_shape(Schedule s) {
  switch (s) {
    case Schedule::GPipe:
    case Schedule::OneFOneB:
    case Schedule::Interleaved1F1B:
      return {true, true, false};
    case Schedule::ZbH1:
      return {true, true, true};
    case Schedule::ZbH2:  // warm-up forwards fill the head; no head/tail term is proven for
    case Schedule::ZbV:   // these (or for a given order): the plain compute bound, still a
    case Schedule::DualPipeV:
    case Schedule::DualPipe:
    case Schedule::Explicit:  // lower bound
      return {};
  }
  return {};
}

double bytes_per_param(const Config& c, double data_ranks) {
  const bool mixed = is_mixed_precision(c.training.precision);
  const double weight = mixed ? 2 : 4, grad = grad_bytes_per_element(c.strategy.grad_reduce_in_fp32);
  const double opt = optimizer_state_bytes_per_param(optimizer_states(c.strategy, c.training));
  const int zero = c.strategy.zero;
  const int state_zero = optimizer_state_zero(c.strategy, c.training.precision);
  return weight / (zero >= 3 ? data_ranks : 1) + grad / (zero >= 2 ? data_ranks : 1) +
         opt / (state_zero >= 1 ? data_ranks : 1);
}

namespace {
// The ZeRO stage a profile is compiled at: 0, whose static memory and optimizer step
// bounds_from_profile divides for the candidate's stage. DeepSpeed bf16 with fp32 accumulation
// (zero 0's default, grad_accum_in_fp32 at zero 1) is its BF16_Optimizer, whose per-micro-batch
// accumulation DeepSpeed's ZeRO optimizer does not run: every DeepSpeed bf16 profile is compiled
// at zero 1 with the ZeRO optimizer and the parameter gathers after the step (nothing the
// forward waits for), a lower bound for every stage and optimizer.
int profile_zero(const Config& c) {
  return c.strategy.framework == Framework::DeepSpeed && c.training.precision == Precision::Bf16 ? 1 : 0;
}

// Stage of each chunk and layers of each chunk, as the strategy tree splits them.
std::vector<int> stage_units(int units, int pp, int v, std::vector<int>* chunk_units) {
  *chunk_units = split_layers(units, pp * v);
  std::vector<int> first(static_cast<size_t>(pp * v) + 1, 0);
  for (int c = 0; c < pp * v; ++c) first[c + 1] = first[c] + (*chunk_units)[c];
  return first;  // chunk c holds units [first[c], first[c+1])
}
}  // namespace

std::vector<double> stage_params(const ModelProfile& prof, const std::vector<int>& chunk_stage, int pp) {
  std::vector<int> chunk_units;
  const int chunks = static_cast<int>(chunk_stage.size());
  const std::vector<int> first = stage_units(prof.units, chunks, 1, &chunk_units);
  std::vector<double> params(static_cast<size_t>(pp), 0);
  for (int ch = 0; ch < chunks; ++ch)
    for (int u = first[ch]; u < first[ch + 1]; ++u)
      params[static_cast<size_t>(chunk_stage[static_cast<size_t>(ch)])] += prof.params[u];
  return params;
}

// Whatever the schedule, a micro-batch's forward passes every chunk in pipeline order and its
// input gradient comes back through every chunk in reverse, each pass after the one before
// (the activation or the gradient it needs arrives from there); recompute and weight
// gradients may run off that path. So the iteration lasts at least the sum of one
// micro-batch's forward and input-gradient work over the whole model. It is what bounds a
// pipeline of fewer micro-batches than stages, where the per-stage terms see one stage's share.
double critical_path_s(const std::vector<double>& chunk_forward_and_input_grad_s) {
  return std::accumulate(chunk_forward_and_input_grad_s.begin(), chunk_forward_and_input_grad_s.end(), 0.0);
}

// max over stages of head + work (+ tail), given per-chunk per-micro-batch times and the
// per-stage totals.
double pipeline_time(const PipelineShape& shape, int pp, const std::vector<double>& head_fwd,
                     const std::vector<double>& tail_bwd, const std::vector<double>& stage_total,
                     const std::vector<double>& stage_before_tail) {
  double best = 0, head = 0, tail = 0;
  for (int s = 0; s < pp; ++s) {
    const double h = shape.head ? head : 0;
    best = std::max(best, h + stage_total[s]);
    if (shape.tail) best = std::max(best, h + stage_before_tail[s] + tail);
    head += head_fwd[s];
    tail += tail_bwd[s];
  }
  return best;
}

bool megatron_placement(Schedule s) {
  return s == Schedule::GPipe || s == Schedule::OneFOneB || s == Schedule::Interleaved1F1B ||
         s == Schedule::ZbH1 || s == Schedule::ZbH2;
}

double best_compute_rate(const GpuSpec& gpu, Precision precision) {
  if (!gpu.measured_us.empty()) return 0;
  const double peak = gpu.peak_TFLOPS(precision);
  // A kernel faster than the attention table's reference (FlashAttention-3 over cuDNN) scales
  // attention_efficiency up by at most the table's largest ratio.
  double gemm_tflops = peak * gpu.gemm_max_efficiency;
  // A measured GEMM table interpolates log throughput between its points: never above the
  // fastest of them (sizes past the grid take the edge's value).
  const auto table = gpu.gemm_table.TFLOPS.find(precision);
  if (table != gpu.gemm_table.TFLOPS.end())
    for (double t : table->second) gemm_tflops = std::max(gemm_tflops, t);
  // Every GEMM is capped by the sustained rate (cost_model.cpp); attention keeps its level.
  gemm_tflops = sustained_gemm_TFLOPS(gpu, precision, gemm_tflops);
  const double attention_tflops =
      peak * gpu.attention_efficiency * max_attention_kernel_factor(gpu.attention_table);
  return std::max(gemm_tflops, attention_tflops) * gpu.compute_throughput_fraction * kFlopsPerTFLOP;
}

namespace {

void add_selective_flops(std::vector<std::pair<RecomputeModules, double>>* by_set, RecomputeModules set,
                         double flops) {
  for (auto& [s, f] : *by_set)
    if (s == set) {
      f += flops;
      return;
    }
  by_set->push_back({set, flops});
}

// What selective recompute runs again: each op whose modules the strategy selects, once.
double selective_recompute_flops(const std::vector<std::pair<RecomputeModules, double>>& by_set,
                                 RecomputeModules selected) {
  double f = 0;
  for (const auto& [s, flops] : by_set)
    if ((s & selected) != 0) f += flops;
  return f;
}

}  // namespace

ModelProfile profile_model(const Config& base) {
  const OpGraph g = build_op_graph(base.model, base.training, 1);
  ModelProfile p;
  const bool layered = base.model.kind == ModelKind::Transformer || base.model.kind == ModelKind::Graph;
  p.units = layered ? g.num_layers : 0;
  if (base.model.kind == ModelKind::Graph) p.units = static_cast<int>(g.ops.size());
  const size_t n = static_cast<size_t>(p.units);
  p.params.assign(n, 0);
  p.fwd_flops.assign(n, 0);
  p.bwd_input_flops.assign(n, 0);
  p.bwd_weight_flops.assign(n, 0);
  p.selective_flops.assign(n, {});
  p.torch_op_sac_flops.assign(n, 0);
  const std::vector<double> sac_shares = torch_op_sac_saved_shares(g);
  std::vector<bool> weight_seen(g.tensors.size(), false);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (compute_bound(op.kind))
      p.total_compute_flops += op.fwd_flops + op.bwd_input_flops + op.bwd_weight_flops;
    int unit = -1;
    if (base.model.kind == ModelKind::Graph)
      unit = static_cast<int>(i);
    else if (p.units > 0 && op.module >= 0)
      unit = g.modules[static_cast<size_t>(op.module)].layer;
    if (unit < 0 || unit >= p.units) continue;  // embedding, head: left out (a lower bound)
    const size_t u = static_cast<size_t>(unit);
    for (const TensorUse& w : op.weights) {
      if (w.tensor < 0 || weight_seen[static_cast<size_t>(w.tensor)]) continue;
      weight_seen[static_cast<size_t>(w.tensor)] = true;
      p.params[u] += static_cast<double>(g.tensors[static_cast<size_t>(w.tensor)].elements());
    }
    if (!compute_bound(op.kind)) continue;
    p.fwd_flops[u] += op.fwd_flops;
    p.bwd_input_flops[u] += op.bwd_input_flops;
    p.bwd_weight_flops[u] += op.bwd_weight_flops;
    if (op.recompute_modules != 0)
      add_selective_flops(&p.selective_flops[u], op.recompute_modules, op.fwd_flops);
    if (sac_shares[i] >= 0) p.torch_op_sac_flops[u] += op.fwd_flops * (1 - sac_shares[i]);
  }
  return p;
}

Bounds analytic_bounds(const ModelProfile& prof, const Config& c) {
  const StrategySpec& s = c.strategy;
  Bounds b;
  const double rate = best_compute_rate(c.cluster.gpu, c.training.precision);
  const double gbs = static_cast<double>(c.training.global_batch);
  const double gpus = c.cluster.gpus();
  if (prof.units == 0) {
    b.time_s = rate > 0 ? prof.total_compute_flops * gbs / gpus / rate : 0;
    return b;
  }
  const int pp = s.pp, v = s.schedule == Schedule::Interleaved1F1B ? s.virtual_stages : 1;
  std::vector<int> chunk_units;
  const std::vector<int> first = stage_units(prof.units, pp, v, &chunk_units);
  const double per_replica_gpus = double(s.tp) * s.cp;  // GPUs sharing one sample's work in a stage
  const double micro_batches = gbs / (double(s.dp) * s.micro_batch);
  const double mb = static_cast<double>(s.micro_batch);
  std::vector<double> params_per_stage(pp, 0), head(pp, 0), tail(pp, 0), total(pp, 0), before_tail(pp, 0);
  const PipelineShape shape = pipeline_shape(s.schedule);
  std::vector<double> chain(static_cast<size_t>(pp * v), 0);
  for (int ch = 0; ch < pp * v; ++ch) {
    const int st = ch % pp;
    double f = 0, bi = 0, bw = 0, r = 0;
    for (int u = first[ch]; u < first[ch + 1]; ++u) {
      params_per_stage[st] += prof.params[u];
      f += prof.fwd_flops[u];
      bi += prof.bwd_input_flops[u];
      bw += prof.bwd_weight_flops[u];
      r += s.recompute == Recompute::Full        ? prof.fwd_flops[u]
           : s.recompute != Recompute::Selective ? 0
           : s.framework == Framework::Fsdp
               // torch.compile drops a row-parallel linear's replay under tp (OpIndex::
               // mark_dropped_replays): the bound then counts none.
               ? (s.torch_compile && s.tp > 1 ? 0 : prof.torch_op_sac_flops[u])
               : selective_recompute_flops(prof.selective_flops[u], s.recompute_modules);
    }
    if (rate <= 0) continue;
    // Seconds for one micro-batch of this chunk on one GPU of its stage.
    const double scale = mb / per_replica_gpus / rate;
    const double all = (f + bi + bw + r) * scale;
    chain[static_cast<size_t>(ch)] = (f + bi) * scale;
    total[st] += all * micro_batches;
    before_tail[st] += (shape.tail_input_only ? (f + bi + r) * scale : all) * micro_batches;
    if (ch < pp) {
      head[st] = f * scale;
      tail[st] = (shape.tail_input_only ? bi + r : bi + bw + r) * scale;
    }
  }
  b.time_s = pipeline_time(shape, pp, head, tail, total, before_tail);
  const double data_ranks = double(s.dp) * s.cp;
  double params = *std::max_element(params_per_stage.begin(), params_per_stage.end());
  if (!megatron_placement(s.schedule)) {  // chunks placed otherwise: the average stage
    params = std::accumulate(params_per_stage.begin(), params_per_stage.end(), 0.0) / pp;
    b.time_s = std::accumulate(total.begin(), total.end(), 0.0) / pp;
  }
  b.time_s = std::max(b.time_s, critical_path_s(chain));
  b.memory_bytes = params / (double(s.tp) * s.ep) * bytes_per_param(c, data_ranks);
  return b;
}

// The most activation memory a stage holds at the start of a backward pass: every (micro-batch,
// chunk) whose forward is done and whose backward has not started keeps what its forward kept;
// under a schedule with W passes of their own, one whose B is done and whose W is not keeps at
// least what its W will free.
std::vector<std::vector<Pass>> stage_orders(const Config& c) {
  const StrategySpec& s = c.strategy;
  const int m = static_cast<int>(c.training.global_batch / (int64_t{s.dp} * s.micro_batch));
  // A zero-bubble order planned from pass times is known only after a simulation (run.h). What
  // every such order holds at its first backward: the forward of that micro-batch; and on the
  // first stage of zb-h1/zb-h2, min(p, m) forwards (the planner's first round fills it with
  // forwards until the first backward is back, at least p T_F + p T_B after the start, within a
  // limit of at least p forwards: auto_schedule.py manual_order).
  if (zb_profiled(c)) {
    std::vector<std::vector<Pass>> orders(static_cast<size_t>(s.pp));
    for (int st = 0; st < s.pp; ++st) {
      const int forwards = st == 0 && s.schedule != Schedule::ZbV ? std::min(s.pp, m) : 1;
      for (int mb = 0; mb < forwards; ++mb) orders[static_cast<size_t>(st)].push_back({PassKind::F, mb, 0});
      orders[static_cast<size_t>(st)].push_back({PassKind::B, 0, 0});
      orders[static_cast<size_t>(st)].push_back({PassKind::W, 0, 0});
    }
    return orders;
  }
  // The order compile() makes (the zero-bubble ones count waiting W as compile does).
  return make_schedule(s.schedule, s.pp, m, chunk_placement(s.pp, chunks_per_stage(s), v_placement(s)),
                       s.microbatch_group_size, schedule_w_memory_fraction(c))
      .order;
}

double held_activation_bytes(const Config& c, const std::vector<Pass>& passes,
                             const std::vector<double>& chunk_bytes,
                             const std::vector<double>& chunk_w_bytes) {
  const int v = chunks_per_stage(c.strategy);
  if (static_cast<int>(chunk_bytes.size()) != v) return 0;
  // Without W passes of its own the B pass frees everything (no B-to-W interval).
  const bool w_held =
      static_cast<int>(chunk_w_bytes.size()) == v &&
      std::any_of(passes.begin(), passes.end(), [](const Pass& p) { return p.kind == PassKind::W; });
  std::vector<int> forward_done(static_cast<size_t>(v), 0), backward_done(static_cast<size_t>(v), 0);
  double most = 0;
  for (const Pass& pass : passes) {
    const size_t k = static_cast<size_t>(pass.chunk);
    if (pass.kind == PassKind::F) ++forward_done[k];
    if (pass.kind == PassKind::W) --backward_done[k];
    if (pass.kind != PassKind::B) continue;
    double bytes = 0;
    for (size_t j = 0; j < static_cast<size_t>(v); ++j)
      bytes += forward_done[j] * chunk_bytes[j] + (w_held ? backward_done[j] * chunk_w_bytes[j] : 0);
    most = std::max(most, bytes);
    --forward_done[k];
    ++backward_done[k];
  }
  return most;
}

// The shortest a collective can take: its latency plus, on the link its flows load most,
// their bytes at the link's full capacity (other traffic and NCCL beside compute only slow
// it down).
double collective_min_s(const Topology& topology, const Collective& col) {
  if (col.kind == CollectiveKind::SendRecv || col.group.size() < 2) return 0;
  const CollectivePlan plan = plan_collective(topology, col.kind, col.group, col.bytes);
  std::map<int, double> load;
  for (const FlowSpec& f : plan.flows)
    for (int link : f.links) load[link] += f.bytes;
  double most = 0;
  for (const auto& [link, bytes] : load) {
    const double capacity = topology.links[static_cast<size_t>(link)].capacity_Bps;
    if (capacity > 0) most = std::max(most, bytes / capacity);
  }
  return plan.latency_s + most;
}

// Time the compute stream must stay idle before task `t`: the longest chain of collectives
// (up to two) that starts after the previous compute task `prev` ends and that `t` waits for
// (a tensor-parallel all-reduce between two layers' GEMMs, a ZeRO-3 gather issued after the
// previous op). Each collective takes at least collective_min_s.
double forced_gap_s(const ExecGraph& g, int prev, int t, const std::function<double(int)>& min_s) {
  if (prev < 0) return 0;
  auto deps = [&g](int task) {
    return std::make_pair(g.deps.begin() + g.dep_offsets[static_cast<size_t>(task)],
                          g.deps.begin() + g.dep_offsets[static_cast<size_t>(task) + 1]);
  };
  auto depends_on = [&](int task, int on) {
    const auto [b, e] = deps(task);
    return std::find(b, e, on) != e;
  };
  double gap = 0;
  const auto [b, e] = deps(t);
  for (auto it = b; it != e; ++it) {
    const int c = *it;
    if (g.tasks[static_cast<size_t>(c)].kind != TaskKind::Collective) continue;
    if (depends_on(c, prev)) gap = std::max(gap, min_s(c));
    const auto [cb, ce] = deps(c);
    for (auto jt = cb; jt != ce; ++jt)
      if (g.tasks[static_cast<size_t>(*jt)].kind == TaskKind::Collective && depends_on(*jt, prev))
        gap = std::max(gap, min_s(c) + min_s(*jt));
  }
  return gap;
}

std::string compiled_profile_key(const StrategySpec& s) {
  const int v = s.schedule == Schedule::Interleaved1F1B ? s.virtual_stages
                : megatron_placement(s.schedule)        ? 0
                                                        : -1 - static_cast<int>(s.schedule);
  return std::to_string(s.dp) + "," + std::to_string(s.tp) + "," + std::to_string(s.pp) + "," +
         std::to_string(s.cp) + "," + std::to_string(s.ep) + "," + std::to_string(v) + "," +
         std::to_string(s.micro_batch) + "," + std::to_string(s.sequence_parallel) + "," +
         std::to_string(static_cast<int>(s.recompute)) + "," + std::to_string(static_cast<int>(s.grad_sync)) +
         "," + std::to_string(expert_tp_of(s)) +
         // Selective recompute compiles what its modules say (the search varies them).
         (s.recompute == Recompute::Selective ? "," + std::to_string(int{s.recompute_modules}) : "");
}

CompiledProfile compile_profile(const Config& candidate, const Topology& topology) {
  Config c = candidate;
  StrategySpec& s = c.strategy;
  // ZeRO changes only the static memory and the optimizer step, which bounds_from_profile
  // divides by the data-parallel ranks; every schedule but interleaved runs the same tasks.
  s.zero = profile_zero(c);
  if (s.zero == 1) s.overlap_param_gather = false;
  // DeepSpeed's ZeRO optimizer, not BF16_Optimizer (its fp32 buffer and accumulation cost more).
  s.grad_accum_in_fp32 = false;
  if (s.schedule != Schedule::Interleaved1F1B && megatron_placement(s.schedule))
    s.schedule = Schedule::OneFOneB;
  const int64_t micro_batches = c.training.global_batch / (int64_t{s.dp} * s.micro_batch);
  // One micro-batch, or the fewest the schedule accepts (interleaved: a multiple of pp). The
  // precision-aware optimizer's dtypes need ZeRO >= 1 and do not depend on the batch: checked
  // without them.
  int64_t reduced = micro_batches;
  Config checked = c;
  checked.strategy.exp_avg_dtype = checked.strategy.exp_avg_sq_dtype = checked.strategy.main_params_dtype =
      StateDtype::Fp32;
  for (int64_t m : {int64_t{1}, int64_t{s.pp}, int64_t{2} * s.pp}) {
    if (m > micro_batches) break;
    c.training.global_batch = int64_t{s.dp} * s.micro_batch * m;
    checked.training.global_batch = c.training.global_batch;
    try {
      validate_config(checked);
      reduced = m;
      break;
    } catch (const Error&) {}
  }
  c.training.global_batch = int64_t{s.dp} * s.micro_batch * reduced;
  const CompiledModel compiled = compile(c);
  const ExecGraph& g = compiled.exec;
  const CostModel cost = cost_model_of(c);
  const int pp = s.pp;
  CompiledProfile p;
  p.stages.resize(static_cast<size_t>(pp));
  for (size_t st = 0; st < compiled.stats.static_bytes_per_stage.size() && st < p.stages.size(); ++st) {
    p.stages[st].static_bytes = compiled.stats.static_bytes_per_stage[st];
    p.stages[st].activation_bytes = compiled.stats.activation_bytes_per_microbatch_per_stage[st];
  }
  std::vector<double> work_time(g.works.size(), -1);
  // By signature (collectives of one signature are equal: the tensor-parallel all-reduces of
  // every layer and micro-batch, a bucket size's gradient reductions), else by index.
  std::map<std::pair<bool, int>, double> collective_s;
  const std::function<double(int)> min_s = [&](int task) {
    const int c = g.tasks[static_cast<size_t>(task)].collective;
    const Collective& col = g.collectives[static_cast<size_t>(c)];
    const std::pair<bool, int> key =
        col.signature >= 0 ? std::make_pair(true, col.signature) : std::make_pair(false, c);
    auto it = collective_s.find(key);
    if (it == collective_s.end()) it = collective_s.emplace(key, collective_min_s(topology, col)).first;
    return it->second;
  };
  std::vector<int> stage_rank(static_cast<size_t>(pp), -1);  // one rank per stage (symmetry off: many)
  for (size_t r = 0; r < g.ranks.size(); ++r)
    if (stage_rank[g.ranks[r].stage] < 0) stage_rank[g.ranks[r].stage] = static_cast<int>(r);
  LayerProfileBuilder layers(g, compiled.graph, pp);
  for (size_t r = 0; r < g.ranks.size(); ++r) {
    const int st = g.ranks[r].stage;
    if (stage_rank[static_cast<size_t>(st)] != static_cast<int>(r)) continue;
    StageProfile& sp = p.stages[static_cast<size_t>(st)];
    // The compute queue in program order. Micro-batch 0's first pass on a stage is the forward
    // of the stage's first chunk (the first run of its forward tasks), its last pass the
    // backward of that chunk (the last run of its other tasks): the head and tail terms.
    bool in_first_forward = false, first_forward_done = false, in_chunk_run = false;
    double backward_run_s = 0, backward_run_no_w_s = 0;
    int prev = -1;
    for (int task : g.queues[r * kNumStreams + static_cast<size_t>(Stream::Compute)]) {
      const Task& t = g.tasks[static_cast<size_t>(task)];
      if (t.kind != TaskKind::Compute) continue;
      double& time_s = work_time[static_cast<size_t>(t.work)];
      if (time_s < 0) time_s = cost.compute_time_s(g.work_of(t));
      // The task's time plus the idle time its collectives force on the stream before it.
      const double gap_s = forced_gap_s(g, prev, task, min_s);
      const double w = time_s + gap_s;
      layers.add(st, task, prev, time_s, gap_s, g.memory_change(task, MemCategory::Activations));
      prev = task;
      if (t.micro_batch < 0) {
        sp.once_s += w;
        continue;
      }
      const bool mb0 = t.micro_batch == 0, forward = t.phase == Phase::Forward;
      const bool weight = t.phase == Phase::BackwardWeight;
      // Micro-batch 0's forward passes come chunk by chunk: each run of its forward tasks is
      // the next local chunk; what they keep is that chunk's activations.
      if (mb0 && forward) {
        if (!in_chunk_run) sp.chunk_activation_bytes.push_back(0);
        in_chunk_run = true;
        sp.chunk_activation_bytes.back() += g.memory_change(task, MemCategory::Activations);
      } else {
        in_chunk_run = false;
      }
      if (in_first_forward && !(mb0 && forward)) {
        in_first_forward = false;
        first_forward_done = true;
      }
      if (mb0 && forward && !first_forward_done) {
        in_first_forward = true;
        sp.head_s += w;
      }
      if (mb0 && !forward) {
        backward_run_s += w;
        backward_run_no_w_s += weight ? 0 : w;
      } else if (mb0 || t.micro_batch != 0) {
        if (backward_run_s > 0) {
          sp.tail_s = backward_run_s;
          sp.tail_no_w_s = backward_run_no_w_s;
        }
        backward_run_s = backward_run_no_w_s = 0;
      }
      if (!mb0) continue;
      if (forward || t.phase == Phase::BackwardInput) sp.chain_s += time_s;
      sp.per_mb_s += w;
      sp.per_mb_busy_s += time_s;
      if (!weight) {
        sp.per_mb_no_w_s += w;
        sp.per_mb_no_w_busy_s += time_s;
      }
    }
    if (backward_run_s > 0) {
      sp.tail_s = backward_run_s;
      sp.tail_no_w_s = backward_run_no_w_s;
    }
  }
  p.layers = layers.take();
  return p;
}

Bounds bounds_from_profile(const CompiledProfile& p, const Config& c) {
  const StrategySpec& s = c.strategy;
  const int pp = s.pp, zero = s.zero;
  const double data_ranks = double(s.dp) * s.cp;  // the most any weight is sharded over by ZeRO
  // Optimizer states and step: divided here unless the profile already is (profile_zero).
  const bool states_sharded_here = profile_zero(c) == 0 && optimizer_state_zero(s, c.training.precision) >= 1;
  const double micro_batches = double(c.training.global_batch) / (double(s.dp) * s.micro_batch);
  const PipelineShape shape = pipeline_shape(s.schedule);
  Bounds b;
  std::vector<double> head(pp), tail(pp), total(pp), before_tail(pp);
  const std::vector<std::vector<Pass>> orders =
      megatron_placement(s.schedule) ? stage_orders(c) : std::vector<std::vector<Pass>>();
  for (int st = 0; st < pp; ++st) {
    const StageProfile& sp = p.stages[static_cast<size_t>(st)];
    std::array<double, kNumMemCategories> bytes = sp.static_bytes;
    bytes[static_cast<int>(MemCategory::Weights)] /= zero >= 3 ? data_ranks : 1;
    bytes[static_cast<int>(MemCategory::Gradients)] /= zero >= 2 ? data_ranks : 1;
    bytes[static_cast<int>(MemCategory::OptimizerStates)] /= states_sharded_here ? data_ranks : 1;
    // Chunks placed otherwise (zb-v) release activations in an order this bound does not
    // model: their static memory only.
    const double activations =
        megatron_placement(s.schedule)
            ? std::max(sp.activation_bytes,
                       held_activation_bytes(c, orders[static_cast<size_t>(st)], sp.chunk_activation_bytes))
            : 0;
    b.memory_bytes = std::max(b.memory_bytes, std::accumulate(bytes.begin(), bytes.end(), 0.0) + activations);
    head[st] = sp.head_s;
    tail[st] = shape.tail_input_only ? sp.tail_no_w_s : sp.tail_s;
    // DualPipe: half the micro-batches run through copy 1, whose chunk on this stage is the
    // model chunk micro-batch 0 (copy 0) runs on stage pp-1-st: the stage's work per
    // micro-batch is the mean of the two.
    // Its overlapped pairs run one micro-batch's forward beside another's backward, whose
    // compute fills the gaps either one's collectives leave: the compute alone, without them.
    const StageProfile& mirror = p.stages[static_cast<size_t>(pp - 1 - st)];
    const bool copies = s.schedule == Schedule::DualPipe;
    const double per_mb_s = copies ? (sp.per_mb_busy_s + mirror.per_mb_busy_s) / 2 : sp.per_mb_s;
    const double per_mb_no_w_s =
        copies ? (sp.per_mb_no_w_busy_s + mirror.per_mb_no_w_busy_s) / 2 : sp.per_mb_no_w_s;
    total[st] = per_mb_s * micro_batches + sp.once_s / (states_sharded_here ? data_ranks : 1);
    before_tail[st] = (shape.tail_input_only ? per_mb_no_w_s : per_mb_s) * micro_batches;
  }
  std::vector<double> chain(static_cast<size_t>(pp));
  for (int st = 0; st < pp; ++st) chain[static_cast<size_t>(st)] = p.stages[static_cast<size_t>(st)].chain_s;
  b.time_s = std::max(pipeline_time(shape, pp, head, tail, total, before_tail), critical_path_s(chain));
  return b;
}

Bounds compiled_bounds(const Config& candidate) {
  return bounds_from_profile(compile_profile(candidate, build_topology(candidate.cluster)), candidate);
}

}  // namespace proteus::search_detail
