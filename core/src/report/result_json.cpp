// Trace -> the result object (DESIGN.md §5). Keys are in a fixed order (ordered_json) and
// doubles are printed by nlohmann's shortest round-trip formatter, so the same inputs give
// byte-identical text natively and in WebAssembly. Divisions by a zero iteration time give 0.
//
// Each section of the result is its own function, and the large ones are kept out of line
// (PROTEUS_OUT_OF_LINE): LLVM inlines a static function that has a single caller whatever its
// size, which made result_json one 27 kB WebAssembly function. V8 optimises a hot wasm
// function whole, in the background, in time that grows faster than its size, competing
// with the page's first simulation for the CPU (web/README.md, "Start-up";
// docs/performance.md, "The page's first simulation"). Apart, only the loop over the tasks
// (busiest_rank_times) is hot, and it is small. Out-of-line calls change no arithmetic: the
// output is byte-identical (web/tests/node/parity.test.ts, scripts/dump_results.sh).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../search/strategy_json.h"
#include "proteus/report.h"
#include "proteus/timeline_columns.h"
#include "proteus/units.h"
#include "report_names.h"

namespace proteus {
namespace {

using nlohmann::ordered_json;

#define PROTEUS_OUT_OF_LINE [[gnu::noinline]]

// Warning thresholds (what practitioners treat as "worth a look").
constexpr double kBubbleWarnFraction = 0.20;
constexpr double kExposedCommWarnFraction = 0.30;
constexpr double kMemoryWarnFraction = 0.90;
// Fractions below this are rounding residue of interval sums, not idle time.
constexpr double kFractionResolution = 1e-12;
// Modules listed in breakdown.compute_by_module_s (the rest are summed as "other").
constexpr size_t kMaxModules = 20;

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// 80 -> "80", 79.5 -> "79.5"
std::string gib_text(double gib) {
  return std::fabs(gib - std::round(gib)) < 0.05 ? fixed(std::round(gib), 0) : fixed(gib, 1);
}

std::string percent_text(double fraction) { return fixed(fraction * 100.0, 0) + "%"; }

// "layers.3.mlp.fc1" -> "layers.*.mlp.fc1": time by module kind rather than by instance.
std::string module_kind(const std::string& label) {
  std::string out;
  size_t i = 0;
  while (i <= label.size()) {
    size_t j = label.find('.', i);
    if (j == std::string::npos) j = label.size();
    const std::string seg = label.substr(i, j - i);
    const bool numeric =
        !seg.empty() && std::all_of(seg.begin(), seg.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!out.empty()) out += '.';
    out += numeric ? "*" : seg;
    i = j + 1;
  }
  return out;
}

constexpr Phase kPhases[] = {Phase::Forward,   Phase::BackwardInput, Phase::BackwardWeight,
                             Phase::Recompute, Phase::Optimizer,     Phase::Sync};
constexpr CollectiveKind kCollectiveKinds[] = {CollectiveKind::AllReduce,     CollectiveKind::AllGather,
                                               CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
                                               CollectiveKind::SendRecv,      CollectiveKind::RingExchange};
constexpr Stream kStreams[] = {Stream::Compute, Stream::TpComm, Stream::DpComm, Stream::PpComm,
                               Stream::ParamComm};
constexpr MemCategory kCategories[] = {MemCategory::Weights, MemCategory::Gradients,
                                       MemCategory::OptimizerStates, MemCategory::Activations,
                                       MemCategory::CommBuffers};

struct Fractions {
  double compute = 0, exposed_comm = 0, bubble = 0;
};

// Averages over simulated ranks weighted by the GPUs each stands for.
PROTEUS_OUT_OF_LINE Fractions fractions(const ExecGraph& graph, const Trace& trace) {
  Fractions f;
  double weight = 0;
  const double T = trace.iteration_time_s;
  for (size_t r = 0; r < trace.ranks.size() && r < graph.ranks.size(); ++r) {
    const double m = graph.ranks[r].multiplicity;
    f.compute += m * ratio(trace.ranks[r].compute_busy_s, T);
    f.exposed_comm += m * ratio(trace.ranks[r].exposed_comm_s, T);
    weight += m;
  }
  if (weight > 0) {
    f.compute /= weight;
    f.exposed_comm /= weight;
  }
  f.bubble = 1.0 - f.compute - f.exposed_comm;
  // Sums of busy intervals leave rounding residue (5.6e-17 for a fully busy rank): show 0.
  if (T <= 0 || f.bubble < kFractionResolution) f.bubble = 0;
  return f;
}

// Peak memory per physical stage (max over its ranks), and the stage of the highest peak.
struct StagePeaks {
  std::map<int, double> peak_bytes;
  int worst_stage = 0;
  double worst_bytes = 0;
};

PROTEUS_OUT_OF_LINE StagePeaks stage_peaks(const ExecGraph& graph, const Trace& trace) {
  StagePeaks s;
  for (size_t r = 0; r < trace.ranks.size() && r < graph.ranks.size(); ++r) {
    const int stage = graph.ranks[r].stage;
    const double b = trace.ranks[r].peak_memory_bytes;
    auto [it, inserted] = s.peak_bytes.emplace(stage, b);
    if (!inserted) it->second = std::max(it->second, b);
  }
  bool first = true;
  for (const auto& [stage, b] : s.peak_bytes)
    if (first || b > s.worst_bytes) {
      s.worst_stage = stage;
      s.worst_bytes = b;
      first = false;
    }
  return s;
}

PROTEUS_OUT_OF_LINE ordered_json summary_json(const ReportInputs& in, const Fractions& f, double peak_bytes) {
  const ExecGraph& g = in.graph;
  const double T = in.trace.iteration_time_s;
  const double peak_flops = in.config.cluster.gpu.peak_TFLOPS(in.config.training.precision) * kFlopsPerTFLOP;
  const double gpus = g.gpus > 0 ? g.gpus : 1;
  const double capacity_GiB = in.config.cluster.gpu.memory_GiB;
  ordered_json s;
  s["iteration_time_s"] = T;
  s["samples_per_s"] = ratio(static_cast<double>(g.samples_per_iteration), T);
  s["tokens_per_s"] = ratio(static_cast<double>(g.tokens_per_iteration), T);
  s["model_tflops_per_gpu"] = ratio(g.model_flops_per_iteration, gpus * T) / kFlopsPerTFLOP;
  s["mfu"] = ratio(g.model_flops_per_iteration, gpus * T * peak_flops);
  s["hfu"] = ratio(g.hardware_flops_per_iteration, gpus * T * peak_flops);
  s["peak_memory_GiB"] = peak_bytes / kBytesPerGiB;
  s["memory_capacity_GiB"] = capacity_GiB;
  s["oom"] = peak_bytes / kBytesPerGiB > capacity_GiB;
  s["compute_fraction"] = f.compute;
  s["exposed_comm_fraction"] = f.exposed_comm;
  s["bubble_fraction"] = f.bubble;
  return s;
}

PROTEUS_OUT_OF_LINE ordered_json device_json(const SimRank& rank, const RankTrace& tr) {
  ordered_json d;
  d["rank"] = rank.gpu;
  d["stage"] = rank.stage;
  d["multiplicity"] = rank.multiplicity;
  d["peak_memory_GiB"] = tr.peak_memory_bytes / kBytesPerGiB;
  ordered_json mem;
  for (MemCategory c : kCategories)
    mem[to_string(c)] = tr.memory_at_peak_bytes[static_cast<size_t>(c)] / kBytesPerGiB;
  d["memory_breakdown_GiB"] = std::move(mem);
  ordered_json busy;
  for (Stream s : kStreams) busy[to_string(s)] = tr.busy_s[static_cast<size_t>(s)];
  d["busy_s"] = std::move(busy);
  d["exposed_comm_s"] = tr.exposed_comm_s;
  d["end_s"] = tr.end_s;
  return d;
}

PROTEUS_OUT_OF_LINE ordered_json devices_json(const ExecGraph& g, const Trace& trace) {
  ordered_json devices = ordered_json::array();
  for (size_t r = 0; r < trace.ranks.size() && r < g.ranks.size(); ++r)
    devices.push_back(device_json(g.ranks[r], trace.ranks[r]));
  return devices;
}

// The rank with the most compute (the first of equals); -1 when there is none.
int busiest_rank(const ExecGraph& g, const Trace& trace) {
  int busiest = -1;
  for (size_t r = 0; r < trace.ranks.size() && r < g.ranks.size(); ++r)
    if (busiest < 0 ||
        trace.ranks[r].compute_busy_s > trace.ranks[static_cast<size_t>(busiest)].compute_busy_s)
      busiest = static_cast<int>(r);
  return busiest;
}

// One rank's task time by phase, collective kind, op kind and module kind.
struct RankTimes {
  std::array<double, std::size(kPhases)> by_phase{};
  std::array<double, std::size(kCollectiveKinds)> by_collective{};
  std::map<int, double> by_op_kind;         // OpKind value -> s
  std::map<std::string, double> by_module;  // module kind -> s
};

// The one pass over every task of the graph (the hot loop of the report).
PROTEUS_OUT_OF_LINE RankTimes busiest_rank_times(const ExecGraph& g, const Trace& trace, int rank) {
  RankTimes times;
  // Module kind of each label, derived once per label (a rank runs each label per micro-batch);
  // time summed per module in task order.
  std::vector<int> module_of_label(g.labels.size() + 1, -1);  // last: tasks without a label
  std::map<std::string, int> module_index;
  std::vector<double> module_s;
  for (size_t t = 0; t < g.tasks.size() && t < trace.task_end_s.size(); ++t) {
    const Task& task = g.tasks[t];
    if (task.rank != rank) continue;
    const double d = trace.task_end_s[t] - trace.task_start_s[t];
    if (task.kind == TaskKind::Collective) {
      times.by_collective[static_cast<size_t>(g.collectives[static_cast<size_t>(task.collective)].kind)] += d;
      continue;
    }
    times.by_phase[static_cast<size_t>(task.phase)] += d;
    times.by_op_kind[static_cast<int>(g.work_of(task).op_kind)] += d;
    const bool labelled = task.label >= 0 && static_cast<size_t>(task.label) < g.labels.size();
    int& module = module_of_label[labelled ? static_cast<size_t>(task.label) : g.labels.size()];
    if (module < 0) {
      const std::string kind =
          module_kind(labelled ? g.labels[static_cast<size_t>(task.label)] : "unlabelled");
      auto [it, inserted] = module_index.emplace(kind, static_cast<int>(module_s.size()));
      if (inserted) module_s.push_back(0);
      module = it->second;
    }
    module_s[static_cast<size_t>(module)] += d;
  }
  for (const auto& [kind, index] : module_index) times.by_module[kind] = module_s[static_cast<size_t>(index)];
  return times;
}

// Modules by time, longest first (name breaks ties), the tail summed as "other".
PROTEUS_OUT_OF_LINE ordered_json modules_json(const std::map<std::string, double>& by_module) {
  std::vector<std::pair<std::string, double>> modules(by_module.begin(), by_module.end());
  std::stable_sort(modules.begin(), modules.end(),
                   [](const auto& a, const auto& x) { return a.second > x.second; });
  ordered_json mods;
  double other = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (i < kMaxModules)
      mods[modules[i].first] = modules[i].second;
    else
      other += modules[i].second;
  }
  if (modules.size() > kMaxModules) mods["other"] = other;
  return mods;
}

// Where the time of the busiest rank (most compute) goes.
PROTEUS_OUT_OF_LINE ordered_json breakdown_json(const ExecGraph& g, const Trace& trace) {
  const int busiest = busiest_rank(g, trace);
  if (busiest < 0) return ordered_json::object();
  const RankTrace& tr = trace.ranks[static_cast<size_t>(busiest)];
  const RankTimes times = busiest_rank_times(g, trace, busiest);

  ordered_json b;
  b["rank"] = g.ranks[static_cast<size_t>(busiest)].gpu;
  b["stage"] = g.ranks[static_cast<size_t>(busiest)].stage;
  b["iteration_s"] = trace.iteration_time_s;
  b["compute_s"] = tr.compute_busy_s;
  b["exposed_comm_s"] = tr.exposed_comm_s;
  b["idle_s"] = std::max(0.0, trace.iteration_time_s - tr.compute_busy_s - tr.exposed_comm_s);
  ordered_json phases;
  for (Phase p : kPhases) phases[to_string(p)] = times.by_phase[static_cast<size_t>(p)];
  b["compute_by_phase_s"] = std::move(phases);
  ordered_json kinds;
  for (CollectiveKind k : kCollectiveKinds) kinds[to_string(k)] = times.by_collective[static_cast<size_t>(k)];
  b["comm_by_collective_s"] = std::move(kinds);
  ordered_json ops;
  for (const auto& [kind, s] : times.by_op_kind) ops[to_string(static_cast<OpKind>(kind))] = s;
  b["compute_by_op_kind_s"] = std::move(ops);
  b["compute_by_module_s"] = modules_json(times.by_module);
  return b;
}

// What would shrink the bubble under the schedule in use: suggesting interleaving when the
// schedule already interleaves (or zero-bubble work when it already fills the bubble) misleads.
std::string bubble_remedy(const StrategySpec& strategy, int micro_batches) {
  const std::string more_mb = "more micro-batches (now " + std::to_string(micro_batches) + ")";
  if (strategy.virtual_stages > 1)
    return more_mb + " or more virtual stages per GPU (now " + std::to_string(strategy.virtual_stages) + ")";
  if (strategy.schedule == Schedule::ZbH1) return more_mb;
  return more_mb + " or interleaving (virtual stages)";
}

// The warning lines of the fit advice: one "To fit:" line a change, or that none fits.
PROTEUS_OUT_OF_LINE std::vector<std::string> fit_advice_lines(const std::vector<FitChange>& advice) {
  std::vector<std::string> lines;
  if (advice.empty())
    lines.push_back(
        "No change of one or two knobs (recompute, ZeRO, sequence parallelism, micro-batch, "
        "pipeline or tensor parallelism) makes it fit.");
  for (const FitChange& c : advice)
    lines.push_back("To fit: " + c.change + " (" + fixed(c.iteration_time_s, 3) + " s per iteration, " +
                    fixed(c.peak_memory_GiB, 1) + " GiB).");
  return lines;
}

// A run that does not fit: by how much, and the changes that would make it fit.
PROTEUS_OUT_OF_LINE void out_of_memory_warnings(const ReportInputs& in, const StagePeaks& peaks,
                                                std::vector<std::string>& w) {
  const double capacity_GiB = in.config.cluster.gpu.memory_GiB;
  const double capacity_bytes = capacity_GiB * kBytesPerGiB;
  int over = 0;
  for (const auto& [stage, b] : peaks.peak_bytes) over += b > capacity_bytes ? 1 : 0;
  std::string s = "Out of memory: stage " + std::to_string(peaks.worst_stage) + " needs " +
                  fixed(peaks.worst_bytes / kBytesPerGiB, 1) + " GiB but the GPU has " +
                  gib_text(capacity_GiB) + " GiB.";
  if (over > 1)
    s += " " + std::to_string(over) + " of the " + std::to_string(peaks.peak_bytes.size()) +
         " pipeline stages exceed it.";
  w.push_back(s);
  w.push_back("The speed figures are those of a run that does not fit.");
  if (in.fit_advice)
    for (std::string& line : fit_advice_lines(*in.fit_advice)) w.push_back(std::move(line));
}

PROTEUS_OUT_OF_LINE void memory_warnings(const ReportInputs& in, const StagePeaks& peaks,
                                         std::vector<std::string>& w) {
  const double capacity_GiB = in.config.cluster.gpu.memory_GiB;
  const double capacity_bytes = capacity_GiB * kBytesPerGiB;
  if (capacity_bytes > 0 && peaks.worst_bytes > capacity_bytes) {
    out_of_memory_warnings(in, peaks, w);
  } else if (capacity_bytes > 0 && peaks.worst_bytes > kMemoryWarnFraction * capacity_bytes) {
    w.push_back("Memory is tight: stage " + std::to_string(peaks.worst_stage) + " peaks at " +
                fixed(peaks.worst_bytes / kBytesPerGiB, 1) + " GiB, " +
                percent_text(peaks.worst_bytes / capacity_bytes) + " of the GPU's " + gib_text(capacity_GiB) +
                " GiB; allocator fragmentation and temporary buffers may not fit.");
  }
}

// Idle time (the pipeline bubble, or GPUs waiting) and communication no computation hides.
PROTEUS_OUT_OF_LINE void time_warnings(const ReportInputs& in, const Fractions& f,
                                       std::vector<std::string>& w) {
  if (f.bubble > kBubbleWarnFraction) {
    if (in.graph.pipeline_stages > 1)
      w.push_back("Pipeline bubble is " + percent_text(f.bubble) + " of the iteration: " +
                  bubble_remedy(in.config.strategy, in.graph.micro_batches) + " would shrink it.");
    else
      w.push_back("GPUs are idle " + percent_text(f.bubble) +
                  " of the iteration, neither computing nor communicating.");
  }
  if (f.exposed_comm > kExposedCommWarnFraction)
    w.push_back("Exposed communication is " + percent_text(f.exposed_comm) +
                " of the iteration (communication no computation hides): overlapping it, or parallelism "
                "that keeps heavy traffic inside a node, would help.");
}

// A cost the run depends on that the GPU's preset has no measurement of.
PROTEUS_OUT_OF_LINE void cost_warnings(const ReportInputs& in, std::vector<std::string>& w) {
  const TrainingSpec& t = in.config.training;
  if (t.precision == Precision::Fp8 && t.fp8_recipe == Fp8Recipe::Mxfp8 &&
      in.config.cluster.gpu.mxfp8_gemm_slowdown == 1.0)
    w.push_back(
        "MXFP8's block-scaled GEMMs have no measured cost on this GPU (cluster.gpu.mxfp8_gemm_slowdown): "
        "they are costed as per-tensor FP8 GEMMs; on Blackwell MXFP8 GEMMs take 1.051 times as long "
        "(docs/fidelity/gemm.md, \"MXFP8 GEMMs\").");
}

std::vector<std::string> warnings(const ReportInputs& in, const Fractions& f, const StagePeaks& peaks) {
  std::vector<std::string> w;
  memory_warnings(in, peaks, w);
  time_warnings(in, f, w);
  cost_warnings(in, w);
  return w;
}

// The timeline (timeline_selection: capped at simulation.max_timeline_spans, every rank's
// window [0, horizon) complete).
PROTEUS_OUT_OF_LINE ordered_json timeline_json(const ReportInputs& in, std::vector<std::string>& warns) {
  const ExecGraph& g = in.graph;
  const Trace& trace = in.trace;
  std::string warning;
  ordered_json spans = ordered_json::array();
  for (int t : timeline_selection(in, &warning)) {
    const Task& task = g.tasks[static_cast<size_t>(t)];
    ordered_json s;
    s["rank"] = g.ranks[static_cast<size_t>(task.rank)].gpu;
    s["stream"] = to_string(task.stream);
    s["name"] = report::task_name(g, t);
    s["kind"] = report::task_kind(g, t);
    s["mb"] = task.micro_batch;
    s["start_s"] = trace.task_start_s[static_cast<size_t>(t)];
    s["end_s"] = trace.task_end_s[static_cast<size_t>(t)];
    spans.push_back(std::move(s));
  }
  if (!warning.empty()) warns.push_back(warning);
  return spans;
}

PROTEUS_OUT_OF_LINE ordered_json memory_curves_json(const ReportInputs& in) {
  ordered_json curves = ordered_json::array();
  for (MemoryCurveColumns& c : memory_curve_columns(in)) {
    ordered_json j;
    j["rank"] = c.rank;
    j["t_s"] = std::move(c.t_s);
    j["GiB"] = std::move(c.GiB);
    curves.push_back(std::move(j));
  }
  return curves;
}

PROTEUS_OUT_OF_LINE ordered_json fit_advice_json(const std::vector<FitChange>& fit_advice) {
  ordered_json advice = ordered_json::array();
  for (const FitChange& c : fit_advice)
    advice.push_back({{"change", c.change},
                      {"strategy", strategy_json(c.strategy)},
                      {"iteration_time_s", c.iteration_time_s},
                      {"peak_memory_GiB", c.peak_memory_GiB},
                      {"mfu", c.mfu}});
  return advice;
}

PROTEUS_OUT_OF_LINE ordered_json stats_json(const ReportInputs& in, const SimulateOptions& options) {
  ordered_json stats;
  stats["tasks"] = static_cast<int64_t>(in.graph.tasks.size());
  stats["events"] = in.trace.events;
  stats["flows"] = in.trace.flows;
  stats["simulated_ranks"] = static_cast<int64_t>(in.graph.ranks.size());
  stats["gpus"] = in.graph.gpus;
  stats["symmetry_uneven_overlaps"] = in.trace.symmetry_uneven_overlaps;
  if (options.wall_time) stats["wall_ms"] = in.wall_ms;
  return stats;
}

// What the zero-bubble runtime's planners were given (in ms, as its log prints them, per stage)
// and the order they chose (docs/frameworks/pipeline.md, "Zero-bubble planning").
PROTEUS_OUT_OF_LINE ordered_json pipeline_plan_json(const PassProfile& p,
                                                    const std::vector<std::string>* orders) {
  constexpr double kMsPerS = 1e3;
  auto ms = [&](const std::vector<double>& seconds) {
    ordered_json a = ordered_json::array();
    for (double s : seconds) a.push_back(s * kMsPerS);
    return a;
  };
  ordered_json out;
  out["planned_from"] = "pass times of a first play (strategy.zb_plan \"profiled\")";
  out["forward_ms"] = ms(p.f_s);
  out["backward_input_ms"] = ms(p.b_s);
  out["backward_weight_ms"] = ms(p.w_s);
  out["send_ms"] = p.send_s * kMsPerS;
  if (orders) out["stage_orders"] = *orders;
  return out;
}

}  // namespace

std::string result_json(const ReportInputs& in, const SimulateOptions& options) {
  const Fractions f = fractions(in.graph, in.trace);
  const StagePeaks peaks = stage_peaks(in.graph, in.trace);
  double peak_bytes = 0;
  for (const RankTrace& r : in.trace.ranks) peak_bytes = std::max(peak_bytes, r.peak_memory_bytes);

  std::vector<std::string> warns = warnings(in, f, peaks);
  ordered_json timeline;
  if (options.timeline) timeline = timeline_json(in, warns);  // may add a warning

  ordered_json out;
  out["ok"] = true;
  out["schema"] = 1;
  out["summary"] = summary_json(in, f, peak_bytes);
  out["devices"] = devices_json(in.graph, in.trace);
  out["breakdown"] = breakdown_json(in.graph, in.trace);
  out["warnings"] = warns;
  if (in.fit_advice) out["fit_advice"] = fit_advice_json(*in.fit_advice);
  if (in.zb_profile) out["pipeline_plan"] = pipeline_plan_json(*in.zb_profile, in.stage_orders);
  out["stats"] = stats_json(in, options);
  if (options.timeline) out["timeline"] = std::move(timeline);
  if (options.memory_curve) out["memory_curves"] = memory_curves_json(in);
  return out.dump(2);
}

std::string fit_advice_result_json(const std::vector<FitChange>& advice) {
  ordered_json out;
  out["ok"] = true;
  out["fit_advice"] = fit_advice_json(advice);
  out["warnings"] = fit_advice_lines(advice);
  return out.dump(2);
}

}  // namespace proteus
