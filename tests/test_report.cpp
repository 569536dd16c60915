// Report: the result JSON (DESIGN.md §5) and the Chrome trace. Expected values are derived by
// hand from hand-made traces, so each test pins one formula or one threshold.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "proteus/report.h"
#include "proteus/simulation.h"
#include "proteus/timeline_columns.h"
#include "proteus/units.h"
#include "test_exec_helpers.h"

using namespace proteus;
using namespace proteus::test;
using nlohmann::json;

namespace {

constexpr double GiB = kBytesPerGiB;

Config test_config() {
  Config c;
  c.cluster = test_cluster(1, 8, 1);  // 80 GiB, bf16 peak 312 TFLOPS
  c.training.precision = Precision::Bf16;
  return c;
}

// A graph of `ranks` simulated ranks with one compute task each (labelled
// "layers.<r>.mlp.fc1", backward-input phase) and a trace written by hand.
struct Fixture {
  Config config = test_config();
  ExecGraph graph;
  Trace trace;
};

Fixture fixture(int ranks, double T) {
  Fixture f;
  f.graph.symmetric = false;
  f.graph.mesh.size = {1, 1, 1, 1, ranks};
  f.graph.gpus = ranks;
  f.graph.queues.resize(static_cast<size_t>(ranks) * kNumStreams);
  f.trace.iteration_time_s = T;
  for (int r = 0; r < ranks; ++r) {
    SimRank s;
    s.gpu = r;
    f.graph.ranks.push_back(s);
    Task t;
    t.rank = r;
    t.phase = Phase::BackwardInput;
    t.micro_batch = 0;
    ComputeWork matmul;
    matmul.op_kind = OpKind::Matmul;
    t.work = f.graph.add_work(matmul);
    t.label = f.graph.label_id("layers." + std::to_string(r) + ".mlp.fc1");
    f.graph.add_task(t, {});
    f.trace.task_start_s.push_back(0);
    f.trace.task_end_s.push_back(T / 2);
    RankTrace rt;
    rt.busy_s[0] = T / 2;
    rt.compute_busy_s = T / 2;
    rt.end_s = T;
    f.trace.ranks.push_back(rt);
  }
  return f;
}

json result(const Fixture& f, SimulateOptions o = {}) {
  return json::parse(result_json(ReportInputs{f.config, f.graph, f.trace}, o));
}

bool has_warning(const json& r, const std::string& sentence) {
  for (const auto& w : r["warnings"])
    if (w.get<std::string>() == sentence) return true;
  return false;
}

}  // namespace

TEST_CASE("summary: throughput, MFU and HFU against the dense peak of the precision") {
  // 8 GPUs, T = 2 s, 1.2e16 model FLOPs and 1.6e16 hardware FLOPs per iteration:
  //   model TFLOPS/GPU = 1.2e16 / 8 / 2 / 1e12 = 750; MFU = 1.2e16 / (8 * 2 * 312e12) = 2.4038
  //   (the numbers need not be physical to check the formula); HFU = 1.6e16 / (8*2*312e12).
  //   samples/s = 512 / 2 = 256; tokens/s = 1,048,576 / 2 = 524,288.
  Fixture f = fixture(8, 2.0);
  f.graph.model_flops_per_iteration = 1.2e16;
  f.graph.hardware_flops_per_iteration = 1.6e16;
  f.graph.samples_per_iteration = 512;
  f.graph.tokens_per_iteration = 1048576;
  const json s = result(f)["summary"];
  CHECK(s["iteration_time_s"].get<double>() == 2.0);
  CHECK(s["samples_per_s"].get<double>() == 256.0);
  CHECK(s["tokens_per_s"].get<double>() == 524288.0);
  CHECK(s["model_tflops_per_gpu"].get<double>() == doctest::Approx(750.0));
  CHECK(s["mfu"].get<double>() == doctest::Approx(1.2e16 / (8 * 2 * 312e12)));
  CHECK(s["hfu"].get<double>() == doctest::Approx(1.6e16 / (8 * 2 * 312e12)));
  CHECK(s["memory_capacity_GiB"].get<double>() == 80.0);
  CHECK(s["oom"].get<bool>() == false);
}

TEST_CASE("result keys are in the schema's order") {
  Fixture f = fixture(1, 1.0);
  const json r = result(f);
  std::vector<std::string> keys;
  for (auto it = r.begin(); it != r.end(); ++it) keys.push_back(it.key());
  // nlohmann::json sorts keys; the text itself must follow the schema's order.
  const std::string text = result_json(ReportInputs{f.config, f.graph, f.trace}, SimulateOptions{});
  size_t last = 0;
  for (const char* k :
       {"\"ok\"", "\"schema\"", "\"summary\"", "\"devices\"", "\"breakdown\"", "\"warnings\"", "\"stats\""}) {
    const size_t at = text.find(k);
    REQUIRE(at != std::string::npos);
    CHECK(at >= last);
    last = at;
  }
  CHECK(r["ok"].get<bool>());
  CHECK(r["schema"].get<int>() == 1);
  CHECK(!r.contains("timeline"));
  CHECK(!r.contains("memory_curves"));
  CHECK(!r["stats"].contains("wall_ms"));
}

TEST_CASE("fractions are averaged over simulated ranks weighted by multiplicity") {
  // T = 1 s. Rank 0 stands for 3 GPUs: compute 0.8, exposed 0.1; rank 1 for 1 GPU: compute
  // 0.4, exposed 0.3. compute = (3*0.8 + 0.4)/4 = 0.7; exposed = (3*0.1 + 0.3)/4 = 0.15;
  // bubble = 1 - 0.7 - 0.15 = 0.15.
  Fixture f = fixture(2, 1.0);
  f.graph.ranks[0].multiplicity = 3;
  f.trace.ranks[0].compute_busy_s = 0.8;
  f.trace.ranks[0].exposed_comm_s = 0.1;
  f.trace.ranks[1].compute_busy_s = 0.4;
  f.trace.ranks[1].exposed_comm_s = 0.3;
  const json s = result(f)["summary"];
  CHECK(s["compute_fraction"].get<double>() == doctest::Approx(0.7));
  CHECK(s["exposed_comm_fraction"].get<double>() == doctest::Approx(0.15));
  CHECK(s["bubble_fraction"].get<double>() == doctest::Approx(0.15));
}

TEST_CASE("warnings: pipeline bubble over 20%, exposed communication over 30%") {
  // compute 0.66 + exposed 0.0 -> bubble 0.34 with 2 stages and 8 micro-batches.
  Fixture f = fixture(1, 1.0);
  f.graph.pipeline_stages = 2;
  f.graph.micro_batches = 8;
  f.trace.ranks[0].compute_busy_s = 0.66;
  json r = result(f);
  CHECK(has_warning(
      r,
      "Pipeline bubble is 34% of the iteration: more micro-batches (now 8) or interleaving (virtual stages) "
      "would shrink it."));
  CHECK(r["warnings"].size() == 1);
  // Already interleaved: the advice is more virtual stages, not "interleaving".
  f.config.strategy.schedule = Schedule::Interleaved1F1B;
  f.config.strategy.virtual_stages = 2;
  CHECK(has_warning(
      result(f),
      "Pipeline bubble is 34% of the iteration: more micro-batches (now 8) or more virtual stages per "
      "GPU (now 2) would shrink it."));
  // ZB-H1 already fills the bubble with weight-gradient work: only more micro-batches.
  f.config.strategy.schedule = Schedule::ZbH1;
  f.config.strategy.virtual_stages = 1;
  CHECK(has_warning(result(f),
                    "Pipeline bubble is 34% of the iteration: more micro-batches (now 8) would shrink it."));
  f.config.strategy.schedule = Schedule::OneFOneB;
  // bubble 0.19: no warning.
  f.trace.ranks[0].compute_busy_s = 0.81;
  CHECK(result(f)["warnings"].empty());
  // exposed 0.35 (bubble 0.15): the communication warning only.
  f.trace.ranks[0].compute_busy_s = 0.5;
  f.trace.ranks[0].exposed_comm_s = 0.35;
  r = result(f);
  REQUIRE(r["warnings"].size() == 1);
  CHECK(r["warnings"][0].get<std::string>().rfind("Exposed communication is 35% of the iteration", 0) == 0);
  // exposed 0.29: none.
  f.trace.ranks[0].exposed_comm_s = 0.29;
  f.trace.ranks[0].compute_busy_s = 0.6;
  CHECK(result(f)["warnings"].empty());
}

TEST_CASE("warnings: out of memory and memory over 90% of capacity") {
  // 80 GiB GPU. Stage 0 peaks at 93.1 GiB -> OOM.
  Fixture f = fixture(1, 1.0);
  f.trace.ranks[0].compute_busy_s = 1.0;
  f.trace.ranks[0].peak_memory_bytes = 93.1 * GiB;
  json r = result(f);
  CHECK(r["summary"]["oom"].get<bool>());
  CHECK(r["summary"]["peak_memory_GiB"].get<double>() == doctest::Approx(93.1));
  CHECK(has_warning(r, "Out of memory: stage 0 needs 93.1 GiB but the GPU has 80 GiB."));
  // 75 GiB = 93.75% of 80: tight.
  f.trace.ranks[0].peak_memory_bytes = 75 * GiB;
  r = result(f);
  CHECK(!r["summary"]["oom"].get<bool>());
  REQUIRE(r["warnings"].size() == 1);
  CHECK(r["warnings"][0].get<std::string>().rfind(
            "Memory is tight: stage 0 peaks at 75.0 GiB, 94% of the GPU's 80 GiB", 0) == 0);
  // 70 GiB = 87.5%: none.
  f.trace.ranks[0].peak_memory_bytes = 70 * GiB;
  CHECK(result(f)["warnings"].empty());
}

TEST_CASE("devices: GPU id, stage, multiplicity, memory breakdown at the peak, busy time per stream") {
  Fixture f = fixture(1, 1.0);
  f.graph.ranks[0].gpu = 5;
  f.graph.ranks[0].stage = 1;
  f.graph.ranks[0].multiplicity = 4;
  f.trace.ranks[0].peak_memory_bytes = 12 * GiB;
  f.trace.ranks[0].memory_at_peak_bytes = {2 * GiB, 4 * GiB, 1 * GiB, 4.5 * GiB, 0.5 * GiB};
  f.trace.ranks[0].busy_s = {0.5, 0.25, 0.125, 0.0625};
  const json d = result(f)["devices"][0];
  CHECK(d["rank"].get<int>() == 5);
  CHECK(d["stage"].get<int>() == 1);
  CHECK(d["multiplicity"].get<int>() == 4);
  CHECK(d["peak_memory_GiB"].get<double>() == 12.0);
  CHECK(d["memory_breakdown_GiB"]["weights"].get<double>() == 2.0);
  CHECK(d["memory_breakdown_GiB"]["gradients"].get<double>() == 4.0);
  CHECK(d["memory_breakdown_GiB"]["optimizer_states"].get<double>() == 1.0);
  CHECK(d["memory_breakdown_GiB"]["activations"].get<double>() == 4.5);
  CHECK(d["memory_breakdown_GiB"]["communication_buffers"].get<double>() == 0.5);
  CHECK(d["busy_s"]["compute"].get<double>() == 0.5);
  CHECK(d["busy_s"]["tp_comm"].get<double>() == 0.25);
  CHECK(d["busy_s"]["dp_comm"].get<double>() == 0.125);
  CHECK(d["busy_s"]["pp_comm"].get<double>() == 0.0625);
}

TEST_CASE("breakdown: the busiest rank's time by phase, collective kind, op kind and module") {
  // Each fixture rank runs one 0.5 s backward-input matmul; all ranks tie, the first wins.
  Fixture f = fixture(2, 1.0);
  const json b = result(f)["breakdown"];
  CHECK(b["rank"].get<int>() == 0);
  CHECK(b["compute_by_phase_s"]["backward_input"].get<double>() == 0.5);
  CHECK(b["compute_by_phase_s"]["forward"].get<double>() == 0.0);
  CHECK(b["comm_by_collective_s"]["all_reduce"].get<double>() == 0.0);
  CHECK(b["compute_by_op_kind_s"].size() == 1);
  CHECK(b["compute_by_module_s"]["layers.*.mlp.fc1"].get<double>() == 0.5);
}

TEST_CASE("timeline: one span per task, named label + phase, capped with a warning") {
  Fixture f = fixture(3, 1.0);
  SimulateOptions o;
  o.timeline = true;
  json r = result(f, o);
  REQUIRE(r["timeline"].size() == 3);
  const json s = r["timeline"][1];
  CHECK(s["rank"].get<int>() == 1);
  CHECK(s["stream"].get<std::string>() == "compute");
  CHECK(s["name"].get<std::string>() == "layers.1.mlp.fc1 B");
  CHECK(s["kind"].get<std::string>() == "backward_input");
  CHECK(s["mb"].get<int>() == 0);
  CHECK(s["start_s"].get<double>() == 0.0);
  CHECK(s["end_s"].get<double>() == 0.5);
  for (const auto& w : r["warnings"]) CHECK(w.get<std::string>().rfind("The timeline", 0) != 0);
  f.config.simulation.max_timeline_spans = 2;
  r = result(f, o);
  CHECK(r["timeline"].size() == 2);
  // All three spans start at t = 0: the cap keeps the first two in queue order.
  CHECK(has_warning(r,
                    "The timeline shows 2 of the 3 spans: every rank up to t = 0 s (raise "
                    "simulation.max_timeline_spans to see more)."));
  o.wall_time = true;
  CHECK(result(f, o)["stats"].contains("wall_ms"));
}

namespace {

// A small pipeline simulated end to end (2 stages, tp all-reduces, send-recv, memory).
struct Simulated {
  Config config = test_config();
  ExecGraph graph;
  Trace trace;
};

Simulated simulate_small() {
  Simulated s;
  s.config.cluster = test_cluster(2, 4, 1);
  s.config.cluster.gpu.compute_slowdown_with_comm = 1.1;
  const AxisMask tp = axis_bit(kAxisTp);
  std::vector<ProgramOp> s0, s1;
  s0.push_back(compute_op("layers.0.mlp.fc1", Phase::Forward, 1e12));
  s0.back().mem = {{MemCategory::Activations, false, 2 * GiB}};
  s0.push_back(collective_op("layers.0.mlp.fc2", CollectiveKind::AllReduce, tp, 30e6, Stream::TpComm, {0}));
  s0.push_back(p2p_op("act", 1, true, 50e6, {1}));
  s0.push_back(p2p_op("grad", 1, false, 50e6, {}));
  s0.push_back(compute_op("layers.0.mlp.fc1", Phase::BackwardInput, 2e12, {3, 1}));
  s0.back().mem = {{MemCategory::Activations, true, -2 * GiB}};
  s1.push_back(p2p_op("act", 0, false, 50e6, {}));
  s1.push_back(compute_op("layers.1.mlp.fc1", Phase::Forward, 1e12, {0}));
  s1.push_back(compute_op("layers.1.mlp.fc1", Phase::BackwardInput, 2e12, {1}));
  s1.push_back(p2p_op("grad", 0, true, 50e6, {2}));
  s.graph = build_graph(make_mesh(2, 1, 4), {s0, s1}, true, {4 * GiB, 4 * GiB, 8 * GiB, 0, 0});
  s.graph.model_flops_per_iteration = 4 * 6e12;
  s.graph.hardware_flops_per_iteration = 4 * 6e12;
  s.graph.samples_per_iteration = 8;
  s.graph.tokens_per_iteration = 8 * 2048;
  s.graph.micro_batches = 1;
  s.trace = execute(s.graph, test_cost(s.config.cluster), build_topology(s.config.cluster), ExecOptions{});
  return s;
}

}  // namespace

TEST_CASE("report: deterministic, and the chrome trace has one X event per task") {
  SimulateOptions o;
  o.timeline = true;
  o.memory_curve = true;
  const Simulated a = simulate_small();
  const Simulated b = simulate_small();
  const std::string ja = result_json(ReportInputs{a.config, a.graph, a.trace}, o);
  const std::string jb = result_json(ReportInputs{b.config, b.graph, b.trace}, o);
  CHECK(ja == jb);
  const json r = json::parse(ja);
  CHECK(r["stats"]["tasks"].get<int64_t>() == static_cast<int64_t>(a.graph.tasks.size()));
  CHECK(r["stats"]["simulated_ranks"].get<int>() == 2);
  CHECK(r["devices"].size() == 2);
  CHECK(r["devices"][1]["rank"].get<int>() == 4);  // stage 1's representative is GPU 4
  // Stage 0 peaks at static 16 GiB + 2 GiB of activations.
  CHECK(r["devices"][0]["peak_memory_GiB"].get<double>() == doctest::Approx(18.0));
  CHECK(r["memory_curves"].size() == 2);
  CHECK(r["memory_curves"][0]["GiB"][0].get<double>() == doctest::Approx(16.0));
  CHECK(r["timeline"].size() == a.graph.tasks.size());

  const std::string ca = chrome_trace(ReportInputs{a.config, a.graph, a.trace});
  CHECK(ca == chrome_trace(ReportInputs{b.config, b.graph, b.trace}));
  const json c = json::parse(ca);
  size_t x = 0, names = 0;
  for (const auto& e : c["traceEvents"]) {
    if (e["ph"] == "X") {
      ++x;
      CHECK(e["dur"].get<double>() >= 0);
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") ++names;
  }
  CHECK(x == a.graph.tasks.size());
  CHECK(names == 2 * kNumStreams);
}

TEST_CASE("report: timeline columns hold the JSON timeline's spans, send-recv peers and dependencies") {
  SimulateOptions o;
  o.timeline = true;
  const Simulated a = simulate_small();
  const ReportInputs in{a.config, a.graph, a.trace};
  const json r = json::parse(result_json(in, o));
  const TimelineColumns c = timeline_columns(in);
  const json& spans = r["timeline"];
  REQUIRE(c.size() == spans.size());
  CHECK(c.total_tasks == static_cast<int64_t>(a.graph.tasks.size()));
  CHECK(c.dep_offsets.size() == c.size() + 1);
  int act_send = -1, act_recv = -1, fwd1 = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    const json& s = spans[i];
    CHECK(c.rank[i] == s["rank"].get<int>());
    CHECK(c.streams[c.stream[i]] == s["stream"].get<std::string>());
    CHECK(c.names[c.name[i]] == s["name"].get<std::string>());
    CHECK(c.kinds[c.kind[i]] == s["kind"].get<std::string>());
    CHECK(c.micro_batch[i] == s["mb"].get<int>());
    CHECK(c.start_s[i] == s["start_s"].get<double>());
    CHECK(c.end_s[i] == s["end_s"].get<double>());
    const std::string name = c.names[c.name[i]];
    if (name.rfind("act", 0) == 0) (c.rank[i] == 0 ? act_send : act_recv) = static_cast<int>(i);
    if (name == "layers.1.mlp.fc1 F") fwd1 = static_cast<int>(i);
  }
  REQUIRE(act_send >= 0);
  REQUIRE(act_recv >= 0);
  REQUIRE(fwd1 >= 0);
  // The activation send on GPU 0 and its receive on GPU 4 point at each other: 50 MB between
  // two GPUs on two nodes (4 GPUs per node).
  CHECK(c.peer[static_cast<size_t>(act_send)] == act_recv);
  CHECK(c.peer[static_cast<size_t>(act_recv)] == act_send);
  CHECK(c.bytes[static_cast<size_t>(act_send)] == 50e6);
  CHECK(c.group[static_cast<size_t>(act_send)] == 2);
  CHECK(c.nodes[static_cast<size_t>(act_send)] == 2);
  // Stage 1's forward waits for the receive (its dependency {0} in the program above).
  bool waits = false;
  for (int32_t d = c.dep_offsets[static_cast<size_t>(fwd1)]; d < c.dep_offsets[static_cast<size_t>(fwd1) + 1];
       ++d)
    waits = waits || c.deps[static_cast<size_t>(d)] == act_recv;
  CHECK(waits);
  // Compute spans carry their FLOPs: the stage-1 forward is 1e12.
  CHECK(c.flops[static_cast<size_t>(fwd1)] == 1e12);
  CHECK(c.group[static_cast<size_t>(fwd1)] == 0);
}

TEST_CASE("report: capped timeline columns keep the same spans as the capped JSON timeline") {
  SimulateOptions o;
  o.timeline = true;
  Simulated a = simulate_small();
  a.config.simulation.max_timeline_spans = 3;
  const ReportInputs in{a.config, a.graph, a.trace};
  const json r = json::parse(result_json(in, o));
  const TimelineColumns c = timeline_columns(in);
  REQUIRE(r["timeline"].size() == 3);
  REQUIRE(c.size() == 3);
  for (size_t i = 0; i < c.size(); ++i) CHECK(c.start_s[i] == r["timeline"][i]["start_s"].get<double>());
  CHECK(c.total_tasks == static_cast<int64_t>(a.graph.tasks.size()));
}
