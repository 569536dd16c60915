// HTAE executor: each test states the physics it checks and derives the expected value by hand
// (compute durations come from the cost model, which the executor must call once per task
// and otherwise leave alone; link rates are the test cluster's round numbers).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "../core/src/exec/executor_memory_curve.h"
#include "../core/src/exec/executor_plans.h"
#include "../core/src/exec/network_p2p_sms.h"
#include "proteus/collective_flows.h"
#include "proteus/error.h"
#include "proteus/simulation.h"
#include "proteus/units.h"
#include "relative_approx.h"
#include "test_exec_helpers.h"

using namespace proteus;
using namespace proteus::test;

namespace {

constexpr double kNvlink_Bps = 300e9 * 0.8;  // test_cluster: NVSwitch per GPU per direction
constexpr double kNic_Bps = 25e9 * 0.9;      // test_cluster: NIC per direction

bool close_rel(double a, double b, double rel = 1e-9) {
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

// A graph of `ranks` GPUs simulated one by one (no symmetry): rank r is GPU r.
ExecGraph plain_graph(int ranks) {
  ExecGraph g;
  g.symmetric = false;
  g.mesh.size = {1, 1, 1, 1, ranks};
  g.gpus = ranks;
  for (int r = 0; r < ranks; ++r) {
    SimRank s;
    s.gpu = r;
    g.ranks.push_back(s);
  }
  g.queues.resize(static_cast<size_t>(ranks) * kNumStreams);
  return g;
}

ComputeWork matmul_work(double flops) {
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.flops = flops;
  w.bytes = flops / 100;
  w.gemm_m = 4096;
  w.gemm_n = 4096;
  w.gemm_k = static_cast<int64_t>(flops / (2.0 * 4096 * 4096));
  return w;
}

// A GEMM of `flops` on `rank`; its work is added to g.
Task compute_task(ExecGraph& g, int rank, double flops, Stream stream = Stream::Compute) {
  Task t;
  t.kind = TaskKind::Compute;
  t.rank = rank;
  t.stream = stream;
  t.work = g.add_work(matmul_work(flops));
  return t;
}

// A collective over `members` (rank r = GPU r); returns its member task ids.
std::vector<int> add_collective(ExecGraph& g, CollectiveKind kind, const std::vector<int>& members,
                                double bytes, Stream stream, const std::vector<std::vector<int>>& deps = {}) {
  Collective c;
  c.kind = kind;
  c.bytes = bytes;
  c.group = members;
  c.axes = axis_bit(kAxisTp);
  const int id = static_cast<int>(g.collectives.size());
  g.collectives.push_back(c);
  std::vector<int> tasks;
  for (size_t i = 0; i < members.size(); ++i) {
    Task t;
    t.kind = TaskKind::Collective;
    t.rank = members[i];
    t.stream = stream;
    t.collective = id;
    t.label = g.label_id("collective" + std::to_string(id));
    tasks.push_back(g.add_task(t, i < deps.size() ? deps[i] : std::vector<int>{}));
  }
  g.collectives[static_cast<size_t>(id)].member_tasks = tasks;
  return tasks;
}

double duration(const CostModel& cost, double flops) { return cost.compute_time_s(matmul_work(flops)); }

ExecOptions opts() { return ExecOptions{}; }

}  // namespace

TEST_CASE("a single compute task lasts what the cost model says") {
  const ClusterSpec cl = test_cluster(1, 1, 1);
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(1);
  g.add_task(compute_task(g, 0, 1e12), {});
  const Trace tr = execute(g, cost, topo, opts());
  const double d = duration(cost, 1e12);
  CHECK(d > 0);
  CHECK(tr.iteration_time_s == proteus::test::approx(d).epsilon(1e-12));
  CHECK(tr.task_start_s[0] == 0.0);
  CHECK(tr.ranks[0].busy_s[0] == proteus::test::approx(d).epsilon(1e-12));
  CHECK(tr.ranks[0].compute_busy_s == proteus::test::approx(d).epsilon(1e-12));
  CHECK(tr.ranks[0].exposed_comm_s == 0.0);
  CHECK(tr.events == 1);
}

TEST_CASE("a task waits for its dependency on another rank") {
  // B on rank 1 depends on A on rank 0: B starts when A ends; T = dA + dB.
  const ClusterSpec cl = test_cluster(1, 2, 1);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(2);
  const int a = g.add_task(compute_task(g, 0, 1e12), {});
  const int b = g.add_task(compute_task(g, 1, 3e12), {a});
  const Trace tr = execute(g, cost, build_topology(cl), opts());
  const double dA = duration(cost, 1e12), dB = duration(cost, 3e12);
  CHECK(tr.task_start_s[static_cast<size_t>(b)] == proteus::test::approx(dA).epsilon(1e-12));
  CHECK(tr.iteration_time_s == proteus::test::approx(dA + dB).epsilon(1e-12));
  CHECK(tr.ranks[0].end_s == proteus::test::approx(dA).epsilon(1e-12));
  CHECK(tr.ranks[1].end_s == proteus::test::approx(dA + dB).epsilon(1e-12));
}

TEST_CASE("streams are in-order queues; different streams run concurrently") {
  // Rank 0's compute queue is [X (waits for Y on rank 1), Z (no deps)]: Z may not overtake X,
  // so Z starts at dY + dX. H, a compute-kind task on rank 0's tp stream, starts at 0.
  const ClusterSpec cl = test_cluster(1, 2, 1);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(2);
  const int y = g.add_task(compute_task(g, 1, 2e12), {});
  const int x = g.add_task(compute_task(g, 0, 1e12), {y});
  const int z = g.add_task(compute_task(g, 0, 1e12), {});
  const int h = g.add_task(compute_task(g, 0, 1e12, Stream::TpComm), {});
  const Trace tr = execute(g, cost, build_topology(cl), opts());
  const double d1 = duration(cost, 1e12), d2 = duration(cost, 2e12);
  CHECK(tr.task_start_s[static_cast<size_t>(x)] == proteus::test::approx(d2).epsilon(1e-12));
  CHECK(tr.task_start_s[static_cast<size_t>(z)] == proteus::test::approx(d2 + d1).epsilon(1e-12));
  CHECK(tr.task_start_s[static_cast<size_t>(h)] == 0.0);
  CHECK(tr.iteration_time_s == proteus::test::approx(d2 + 2 * d1).epsilon(1e-12));
}

TEST_CASE("a collective starts when every member is at the head of its stream, and all end together") {
  // Rank 0 computes 1e12 FLOPs, rank 1 4e12, then both all-reduce S over NVSwitch. The
  // all-reduce starts at max(dA, dB) = dB on both. 2-rank ring: each of the 2 flows carries
  // 2(n-1)/n S = S bytes on its own tx/rx links at 240e9 B/s, so it lasts S/240e9 + latency.
  const ClusterSpec cl = test_cluster(1, 2, 1);
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(2);
  const double S = 480e6;
  const int a = g.add_task(compute_task(g, 0, 1e12), {});
  const int b = g.add_task(compute_task(g, 1, 4e12), {});
  const auto ar = add_collective(g, CollectiveKind::AllReduce, {0, 1}, S, Stream::TpComm, {{a}, {b}});
  const Trace tr = execute(g, cost, topo, opts());
  const double dB = duration(cost, 4e12);
  const double latency = plan_collective(topo, CollectiveKind::AllReduce, {0, 1}, S).latency_s;
  for (int t : ar) {
    CHECK(tr.task_start_s[static_cast<size_t>(t)] == proteus::test::approx(dB).epsilon(1e-12));
    CHECK(tr.task_end_s[static_cast<size_t>(t)] ==
          proteus::test::approx(dB + S / kNvlink_Bps + latency).epsilon(1e-9));
  }
  CHECK(tr.ranks[0].busy_s[static_cast<size_t>(Stream::TpComm)] ==
        proteus::test::approx(S / kNvlink_Bps + latency).epsilon(1e-9));
  // Rank 0 waits idle from dA to dB (not comm: the collective had not started), then the
  // all-reduce is exposed on both ranks.
  CHECK(tr.ranks[0].exposed_comm_s == proteus::test::approx(S / kNvlink_Bps + latency).epsilon(1e-9));
}

TEST_CASE("1 GiB ring all-reduce on 8 GPUs over NVSwitch: 2(n-1)/n S / bus bandwidth + latency") {
  // Every GPU sends 2*7/8 * 2^30 B = 1,879,048,192 B to its ring neighbour over its own
  // NVSwitch up-link (240e9 B/s): 7.8294e-3 s, then the plan's latency (2(n-1) hops).
  const ClusterSpec cl = test_cluster(1, 8, 1);
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(8);
  const double S = 1024.0 * 1024.0 * 1024.0;
  std::vector<int> members = {0, 1, 2, 3, 4, 5, 6, 7};
  add_collective(g, CollectiveKind::AllReduce, members, S, Stream::DpComm);
  const CollectivePlan plan = plan_collective(topo, CollectiveKind::AllReduce, members, S);
  CHECK(plan.latency_s >= 14 * 3.4e-6 * (1 - 1e-12));  // 2(n-1) hops of 3.4 µs, at least
  const Trace tr = execute(g, cost, topo, opts());
  CHECK(tr.iteration_time_s ==
        proteus::test::approx(2.0 * 7 / 8 * S / kNvlink_Bps + plan.latency_s).epsilon(1e-9));
  CHECK(tr.flows == static_cast<int64_t>(plan.flows.size()));
}

TEST_CASE("a collective over one GPU takes its latency only") {
  const ClusterSpec cl = test_cluster(1, 1, 1);
  const Topology topo = build_topology(cl);
  ExecGraph g = plain_graph(1);
  add_collective(g, CollectiveKind::AllReduce, {0}, 1e9, Stream::TpComm);
  const Trace tr = execute(g, test_cost(cl), topo, opts());
  const CollectivePlan plan = plan_collective(topo, CollectiveKind::AllReduce, {0}, 1e9);
  CHECK(plan.flows.empty());
  CHECK(tr.iteration_time_s == plan.latency_s);  // exact: the collective ends at 0 + its latency
}

TEST_CASE("two transfers through one NIC share it, then the survivor speeds up") {
  // 2 nodes x 2 GPUs, one NIC per node (22.5e9 B/s; each GPU's PCIe link, 25.2e9 B/s, is not
  // the bottleneck). GPU0 -> GPU2 sends 1e9 B, GPU1 -> GPU3 sends 2e9 B, both through node 0's
  // NIC tx and node 1's NIC rx: 11.25e9 B/s each. The first ends at 1e9 / 11.25e9 = 88.9 ms;
  // the second has 1e9 B left at the full 22.5e9 B/s: + 44.4 ms = 133.3 ms.
  const ClusterSpec cl = test_cluster(2, 2, 1);
  const Topology topo = build_topology(cl);
  ExecGraph g = plain_graph(4);
  const auto a = add_collective(g, CollectiveKind::SendRecv, {0, 2}, 1e9, Stream::PpComm);
  const auto b = add_collective(g, CollectiveKind::SendRecv, {1, 3}, 2e9, Stream::PpComm);
  const Trace tr = execute(g, test_cost(cl), topo, opts());
  const double lat = plan_collective(topo, CollectiveKind::SendRecv, {0, 2}, 1e9).latency_s;
  const double t1 = 1e9 / (kNic_Bps / 2);
  const double t2 = t1 + 1e9 / kNic_Bps;
  for (int t : a)
    CHECK(tr.task_end_s[static_cast<size_t>(t)] == proteus::test::approx(t1 + lat).epsilon(1e-9));
  for (int t : b)
    CHECK(tr.task_end_s[static_cast<size_t>(t)] == proteus::test::approx(t2 + lat).epsilon(1e-9));
}

TEST_CASE("compute beside communication is slowed by the interference factor") {
  // compute_slowdown_with_comm = 1.5. Rank 0 computes d while a 2-GPU all-reduce of c =
  // S/240e9 + latency runs on its tp stream (c < d). During [0, c] the kernel progresses at
  // 1/(1.5 d): it finishes c/(1.5 d) of its work; the rest takes (1 - c/(1.5d)) d, so it
  // ends at c + d - c/1.5 = d + c/3.
  ClusterSpec cl = test_cluster(1, 2, 1);
  cl.gpu.compute_slowdown_with_comm = 1.5;
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(2);
  const double S = 240e6;
  const int x = g.add_task(compute_task(g, 0, 8e12), {});
  add_collective(g, CollectiveKind::AllReduce, {0, 1}, S, Stream::TpComm);
  const Trace tr = execute(g, cost, topo, opts());
  const double d = duration(cost, 8e12);
  const double c = S / kNvlink_Bps + plan_collective(topo, CollectiveKind::AllReduce, {0, 1}, S).latency_s;
  REQUIRE(c < d);
  CHECK(tr.task_end_s[static_cast<size_t>(x)] == proteus::test::approx(d + c / 3).epsilon(1e-9));
  CHECK(tr.ranks[0].exposed_comm_s == 0.0);
  CHECK(tr.ranks[1].exposed_comm_s == proteus::test::approx(c).epsilon(1e-9));
}

TEST_CASE("an interference that starts midway moves the end time by the slowed part only") {
  // compute_slowdown_with_comm = 1.5. Rank 0 computes d from 0; rank 1 computes e < d, then the
  // 2-GPU all-reduce (c = S/240e9 + latency) starts at e on both ranks and ends at e + c < d.
  // Rank 0's kernel runs at full speed on [0, e], at 1/1.5 on [e, e + c], then full speed:
  // end = d + c - c/1.5 = d + c/3, whatever e is.
  ClusterSpec cl = test_cluster(1, 2, 1);
  cl.gpu.compute_slowdown_with_comm = 1.5;
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(2);
  const double S = 240e6;
  const int x = g.add_task(compute_task(g, 0, 8e12), {});
  const int y = g.add_task(compute_task(g, 1, 1e12), {});
  const auto ar = add_collective(g, CollectiveKind::AllReduce, {0, 1}, S, Stream::TpComm, {{}, {y}});
  const Trace tr = execute(g, cost, topo, opts());
  const double d = duration(cost, 8e12), e = duration(cost, 1e12);
  const double c = S / kNvlink_Bps + plan_collective(topo, CollectiveKind::AllReduce, {0, 1}, S).latency_s;
  REQUIRE(e + c < d);
  CHECK(tr.task_start_s[static_cast<size_t>(ar[0])] == proteus::test::approx(e).epsilon(1e-12));
  CHECK(tr.task_end_s[static_cast<size_t>(x)] == proteus::test::approx(d + c / 3).epsilon(1e-9));
  // Rank 1's kernel ended before the all-reduce began: not slowed.
  CHECK(tr.task_end_s[static_cast<size_t>(y)] == proteus::test::approx(e).epsilon(1e-12));
}

TEST_CASE(
    "NCCL p2p to peers on other nodes holds 2 CTAs per peer; with a peer on the node it is not counted") {
  // 4 nodes of 2 GPUs: GPU g is on node g / 2.
  const Topology topo = build_topology(test_cluster(4, 2, 1));
  Collective pair;
  pair.kind = CollectiveKind::SendRecv;
  pair.group = {1, 2};  // nodes 0 and 1
  CHECK(network_p2p_ctas(pair, 1, topo) == kNcclChannelsPerNetPeer);
  CHECK(network_p2p_ctas(pair, 2, topo) == 2);
  pair.group = {2, 3};  // one node: NVLink copies, a collective's slowdown instead
  CHECK(network_p2p_ctas(pair, 2, topo) == 0);
  Collective ring;
  ring.kind = CollectiveKind::RingExchange;
  ring.group = {0, 2, 4, 6};  // one member per node: both peers remote
  CHECK(network_p2p_ctas(ring, 4, topo) == 2 * kNcclChannelsPerNetPeer);
  ring.group = {0, 1, 2, 3};  // two members per node: each has a peer on its own node
  for (int gpu : ring.group) CHECK(network_p2p_ctas(ring, gpu, topo) == 0);
  // ... and one on another node: once the NVLink copy is done, the remote peer's 2 CTAs.
  for (int gpu : ring.group) CHECK(network_p2p_ctas_after_local(ring, gpu, topo) == kNcclChannelsPerNetPeer);
  ring.group = {0, 2, 4, 6};  // both peers remote: no local part to finish first
  CHECK(network_p2p_ctas_after_local(ring, 4, topo) == -1);
  ring.group = {0, 1};  // a ring of two on one node: NVLink only
  CHECK(network_p2p_ctas_after_local(ring, 0, topo) == -1);
  pair.group = {1, 2};  // a pair is all local or all remote
  CHECK(network_p2p_ctas_after_local(pair, 1, topo) == -1);
  // 2 nodes of 4 GPUs: in the ring 0 1 2 | 4 5 6, GPU 1's peers are both on its node (nothing
  // left once its copies are done), GPU 2 sends to GPU 4 on the other node.
  const Topology four = build_topology(test_cluster(2, 4, 1));
  ring.group = {0, 1, 2, 4, 5, 6};
  CHECK(network_p2p_ctas_after_local(ring, 1, four) == 0);
  CHECK(network_p2p_ctas_after_local(ring, 2, four) == kNcclChannelsPerNetPeer);
  ring.group = {0, 1, 2};  // a ring inside one node: its copies are the whole transfer
  CHECK(network_p2p_ctas_after_local(ring, 1, four) == -1);
  Collective gather = ring;
  gather.kind = CollectiveKind::AllGather;
  gather.group = {0, 2, 4, 6};
  CHECK(network_p2p_ctas(gather, 0, topo) == 0);  // a collective: many channels
  CHECK(sm_held_factor(132, 4) == proteus::test::approx(132.0 / 128.0).epsilon(1e-15));
  CHECK(sm_held_factor(132, 0) == 1.0);
  CHECK(sm_held_factor(4, 10) == 4.0);  // at least one SM left
}

TEST_CASE("compute beside a send-recv between nodes runs on the SMs its 2 CTAs leave") {
  // compute_slowdown_with_comm = 1.5, but the only communication is a send-recv between two
  // nodes, whose kernels hold 2 of the 108 SMs: during the transfer [0, c] rank 0's kernel
  // runs at 106/108 of its rate, so it ends at c + (d - c * 106/108) = d + c * 2/108.
  // The same transfer between two GPUs of one node slows it by 1.5: d + c/3.
  for (const bool across_nodes : {true, false}) {
    CAPTURE(across_nodes);
    ClusterSpec cl = across_nodes ? test_cluster(2, 1, 1) : test_cluster(1, 2, 1);
    cl.gpu.compute_slowdown_with_comm = 1.5;
    const Topology topo = build_topology(cl);
    const CostModel cost = test_cost(cl);
    ExecGraph g = plain_graph(2);
    const int x = g.add_task(compute_task(g, 0, 8e12), {});
    const auto sr = add_collective(g, CollectiveKind::SendRecv, {0, 1}, 240e6, Stream::PpComm);
    const Trace tr = execute(g, cost, topo, opts());
    const double d = duration(cost, 8e12);
    const double c = tr.task_end_s[static_cast<size_t>(sr[0])];
    REQUIRE(c > 0);
    REQUIRE(c < d);
    const double expected = across_nodes ? d + c * 2.0 / 108.0 : d + c / 3;
    CHECK(tr.task_end_s[static_cast<size_t>(x)] == proteus::test::approx(expected).epsilon(1e-9));
  }
}

TEST_CASE(
    "a ring member with a local and a remote peer slows compute by the factor until its NVLink copy ends") {
  // 2 nodes of 2 GPUs, a ring exchange 0 -> 1 -> 2 -> 3 -> 0 of S bytes per hop. Rank 1 receives
  // from rank 0 over NVLink (done at c_local = S / NVLink rate) and sends to rank 2 over the NIC
  // (the ring ends at c_end). Its compute is slowed by 1.5 until c_local, then runs on the 106
  // SMs the remote peer's 2 CTAs leave: end = d + c_local (1 - 1/1.5) + (c_end - c_local)(1 - 106/108).
  // Before the switch it paid 1.5 for the whole ring: d + c_end / 3.
  ClusterSpec cl = test_cluster(2, 2, 1);
  cl.gpu.compute_slowdown_with_comm = 1.5;
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(4);
  const double S = 480e6;
  const int x = g.add_task(compute_task(g, 1, 8e12), {});
  const auto ring = add_collective(g, CollectiveKind::RingExchange, {0, 1, 2, 3}, S, Stream::TpComm);
  const Trace tr = execute(g, cost, topo, opts());
  const double d = duration(cost, 8e12);
  const double c_local = S / kNvlink_Bps, c_end = tr.task_end_s[static_cast<size_t>(ring[1])];
  const double lat = plan_collective(topo, CollectiveKind::RingExchange, {0, 1, 2, 3}, S).latency_s;
  REQUIRE(c_end == proteus::test::approx(S / kNic_Bps + lat).epsilon(1e-9));
  REQUIRE(c_end < d);
  const double expected = d + c_local * (1 - 1 / 1.5) + (c_end - c_local) * (1 - 106.0 / 108.0);
  CHECK(tr.task_end_s[static_cast<size_t>(x)] == proteus::test::approx(expected).epsilon(1e-9));
}

TEST_CASE("a ring member with both peers on its node is free once its NVLink copies end") {
  // 2 nodes of 4 GPUs, the ring 0 -> 1 -> 2 -> 4 -> 5 -> 6 -> 0 (GPUs 3 and 7 idle).
  // Rank 1 exchanges with GPUs 0 and 2 over NVLink only; the ring lasts until its hops
  // between nodes end. Its compute pays 1.5 until c_local, nothing after: d + c_local (1 - 1/1.5).
  ClusterSpec cl = test_cluster(2, 4, 1);
  cl.gpu.compute_slowdown_with_comm = 1.5;
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(8);
  const double S = 480e6;
  const int x = g.add_task(compute_task(g, 1, 8e12), {});
  const auto ring = add_collective(g, CollectiveKind::RingExchange, {0, 1, 2, 4, 5, 6}, S, Stream::TpComm);
  const Trace tr = execute(g, cost, topo, opts());
  const double d = duration(cost, 8e12);
  const double c_local = S / kNvlink_Bps, c_end = tr.task_end_s[static_cast<size_t>(ring[1])];
  REQUIRE(c_end > 2 * c_local);
  REQUIRE(c_end < d);
  CHECK(tr.task_end_s[static_cast<size_t>(x)] ==
        proteus::test::approx(d + c_local * (1 - 1 / 1.5)).epsilon(1e-9));
}

TEST_CASE("a collective beside a p2p between nodes still slows compute by its measured factor") {
  // Rank 0 of 2 nodes (1 GPU each) computes d while a send-recv to rank 1 and, on another
  // stream, an all-reduce over both run; the all-reduce (c_ar) is the shorter. While both
  // run the collective's factor 1.5 applies, after it the send-recv's 108/106 until c_sr:
  // end = d + c_ar (1 - 1/1.5) + (c_sr - c_ar)(1 - 106/108), by the progress argument above.
  ClusterSpec cl = test_cluster(2, 1, 1);
  cl.gpu.compute_slowdown_with_comm = 1.5;
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(2);
  const int x = g.add_task(compute_task(g, 0, 8e12), {});
  const auto sr = add_collective(g, CollectiveKind::SendRecv, {0, 1}, 480e6, Stream::PpComm);
  const auto ar = add_collective(g, CollectiveKind::AllReduce, {0, 1}, 24e6, Stream::TpComm);
  const Trace tr = execute(g, cost, topo, opts());
  const double d = duration(cost, 8e12);
  const double c_sr = tr.task_end_s[static_cast<size_t>(sr[0])],
               c_ar = tr.task_end_s[static_cast<size_t>(ar[0])];
  REQUIRE(c_ar < c_sr);
  REQUIRE(c_sr < d);
  const double expected = d + c_ar * (1 - 1 / 1.5) + (c_sr - c_ar) * (1 - 106.0 / 108.0);
  CHECK(tr.task_end_s[static_cast<size_t>(x)] == proteus::test::approx(expected).epsilon(1e-9));
}

TEST_CASE("communication beside compute is slowed by its factor") {
  // comm_slowdown_with_compute = 2. A 2-GPU all-reduce of S = 2.4e9 B alone moves each flow
  // in f = S/240e9 = 10 ms. Rank 0 computes for d < 2f at the same time: the flows progress
  // at 120e9 B/s for d, then at 240e9: they end at d + (S - 120e9 d)/240e9 = f + d/2.
  ClusterSpec cl = test_cluster(1, 2, 1);
  cl.gpu.comm_slowdown_with_compute = 2.0;
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  ExecGraph g = plain_graph(2);
  const double S = 2.4e9;
  g.add_task(compute_task(g, 0, 1e12), {});
  const auto ar = add_collective(g, CollectiveKind::AllReduce, {0, 1}, S, Stream::TpComm);
  const Trace tr = execute(g, cost, topo, opts());
  const double d = duration(cost, 1e12);
  const double f = S / kNvlink_Bps;
  REQUIRE(d < 2 * f);
  const double lat = plan_collective(topo, CollectiveKind::AllReduce, {0, 1}, S).latency_s;
  CHECK(tr.task_end_s[static_cast<size_t>(ar[0])] == proteus::test::approx(f + d / 2 + lat).epsilon(1e-9));
}

TEST_CASE("memory: static bytes plus events at task start and end; breakdown at the first peak") {
  // Static: weights 10 GiB, optimizer states 5 GiB -> 15 GiB at t = 0.
  //   A start: +2 act -> 17;  B start: +3 act -> 20 (peak: act 5, comm 0)
  //   B end: -1 act -> 19;    C start: +1 comm -> 20 (ties the peak: the first one is kept)
  //   C end: -1 comm, -4 act -> 15.
  const double GiB = kBytesPerGiB;
  const ClusterSpec cl = test_cluster(1, 1, 1);
  ExecGraph g = plain_graph(1);
  g.ranks[0].static_bytes = {10 * GiB, 0, 5 * GiB, 0, 0};
  const int a = g.add_task(compute_task(g, 0, 1e12), {}, {{MemCategory::Activations, false, 2 * GiB}});
  const int b =
      g.add_task(compute_task(g, 0, 1e12), {a},
                 {{MemCategory::Activations, false, 3 * GiB}, {MemCategory::Activations, true, -1 * GiB}});
  g.add_task(compute_task(g, 0, 1e12), {b},
             {{MemCategory::CommBuffers, false, 1 * GiB},
              {MemCategory::CommBuffers, true, -1 * GiB},
              {MemCategory::Activations, true, -4 * GiB}});
  const Trace tr = execute(g, test_cost(cl), build_topology(cl), opts());
  const RankTrace& r = tr.ranks[0];
  CHECK(r.peak_memory_bytes == doctest::Approx(20 * GiB));
  CHECK(r.memory_at_peak_bytes[static_cast<size_t>(MemCategory::Weights)] == doctest::Approx(10 * GiB));
  CHECK(r.memory_at_peak_bytes[static_cast<size_t>(MemCategory::OptimizerStates)] ==
        doctest::Approx(5 * GiB));
  CHECK(r.memory_at_peak_bytes[static_cast<size_t>(MemCategory::Activations)] == doctest::Approx(5 * GiB));
  CHECK(r.memory_at_peak_bytes[static_cast<size_t>(MemCategory::CommBuffers)] == 0.0);
  REQUIRE(r.memory_curve.size() == 6);
  CHECK(r.memory_curve.front().bytes == doctest::Approx(15 * GiB));
  CHECK(r.memory_curve[1].bytes == doctest::Approx(17 * GiB));
  CHECK(r.memory_curve.back().bytes == doctest::Approx(15 * GiB));
  CHECK(r.memory_curve.back().time_s == doctest::Approx(tr.iteration_time_s));
}

TEST_CASE("memory curve decimation keeps peaks and the last value") {
  // 100,000 samples of a flat 1 B curve with one 9 B spike at sample 55,555: 1000 buckets
  // keep min and max each (at most 2002 points), the spike among them.
  std::vector<MemorySample> raw;
  for (int i = 0; i < 100000; ++i) raw.push_back({i * 1e-5, i == 55555 ? 9.0 : 1.0});
  raw.push_back({1.0, 3.0});
  const auto out = exec::decimate_memory_curve(raw, 1.0, exec::kMemoryCurveBuckets);
  CHECK(out.size() <= 2002);
  double mx = 0;
  for (const auto& s : out) mx = std::max(mx, s.bytes);
  CHECK(mx == 9.0);
  CHECK(out.back().bytes == 3.0);
  CHECK(out.front().time_s == 0.0);
  for (size_t i = 1; i < out.size(); ++i) CHECK(out[i].time_s >= out[i - 1].time_s);
}

TEST_CASE("sibling groups and symmetry weights: 8 data-parallel groups share one NIC") {
  // Mesh dp=2 x tp=8 on 2 nodes x 8 GPUs with one NIC per node: the dp group {0, 8} has
  // siblings {t, 8+t}, t = 0..7. Each runs a 2-rank ring through node 0's and node 1's NIC,
  // so the representative's flows weigh 8 on the NIC links and 1 on its own PCIe links.
  const ClusterSpec cl = test_cluster(2, 8, 1);
  const Topology topo = build_topology(cl);
  const Mesh mesh = make_mesh(1, 2, 8);
  Collective c;
  c.kind = CollectiveKind::AllReduce;
  c.axes = axis_bit(kAxisDp);
  c.bytes = 1e9;
  c.group = mesh.group(0, c.axes);
  REQUIRE(c.group == std::vector<int>{0, 8});
  const auto sib = exec::sibling_groups(mesh, c);
  REQUIRE(sib.size() == 8);
  for (int t = 0; t < 8; ++t) CHECK(sib[static_cast<size_t>(t)] == std::vector<int>{t, 8 + t});
  const exec::WeightedPlan p = exec::weighted_plan(topo, mesh, true, c);
  REQUIRE(!p.flows.empty());
  int nic_links = 0;
  for (const auto& f : p.flows)
    for (const auto& [link, w] : f.links) {
      if (topo.links[static_cast<size_t>(link)].level == LinkLevel::Nic) {
        CHECK(w == 8.0);
        ++nic_links;
      } else {
        CHECK(w == 1.0);
      }
    }
  CHECK(nic_links > 0);
  const exec::WeightedPlan full = exec::weighted_plan(topo, mesh, false, c);
  for (const auto& f : full.flows)
    for (const auto& lw : f.links) CHECK(lw.second == 1.0);
}

namespace {

// Simulates the same programs reduced (one rank per stage) and in full (every GPU); the
// iteration time and the representative's busy times must agree to 1e-9.
void check_symmetry(const ClusterSpec& cl, const Mesh& mesh,
                    const std::vector<std::vector<ProgramOp>>& programs) {
  const Topology topo = build_topology(cl);
  const CostModel cost = test_cost(cl);
  const ExecGraph reduced = build_graph(mesh, programs, true);
  const ExecGraph full = build_graph(mesh, programs, false);
  REQUIRE(reduced.ranks.size() == static_cast<size_t>(mesh.size[kAxisPp]));
  REQUIRE(full.ranks.size() == static_cast<size_t>(mesh.ranks()));
  const Trace tr = execute(reduced, cost, topo, opts());
  const Trace tf = execute(full, cost, topo, opts());
  INFO("reduced T = " << tr.iteration_time_s << ", full T = " << tf.iteration_time_s);
  CHECK(close_rel(tr.iteration_time_s, tf.iteration_time_s));
  for (size_t r = 0; r < reduced.ranks.size(); ++r) {
    const int gpu = reduced.ranks[r].gpu;  // in the full graph, rank index == GPU id
    for (int s = 0; s < kNumStreams; ++s)
      CHECK(close_rel(tr.ranks[r].busy_s[static_cast<size_t>(s)] + 1e-300,
                      tf.ranks[static_cast<size_t>(gpu)].busy_s[static_cast<size_t>(s)] + 1e-300));
    CHECK(close_rel(tr.ranks[r].exposed_comm_s + 1e-300,
                    tf.ranks[static_cast<size_t>(gpu)].exposed_comm_s + 1e-300));
  }
  CHECK(tr.iteration_time_s > 0);
}

}  // namespace

TEST_CASE("symmetry: data-parallel all-reduces of 8 groups sharing one NIC per node") {
  // 2 nodes x 8 GPUs, 1 NIC: dp=2 x tp=8. Tensor-parallel all-reduces inside the node,
  // gradient all-reduces across nodes overlapping the next backward; both interference
  // factors active. Reduced: 1 rank standing for 16 GPUs; full: 16 ranks.
  ClusterSpec cl = test_cluster(2, 8, 1);
  cl.gpu.compute_slowdown_with_comm = 1.2;
  cl.gpu.comm_slowdown_with_compute = 1.1;
  const AxisMask tp = axis_bit(kAxisTp), dp = axis_bit(kAxisDp);
  std::vector<ProgramOp> p;
  p.push_back(compute_op("layers.0.fc", Phase::Forward, 2e12));  // 0
  p.push_back(
      collective_op("layers.0.tp_ar", CollectiveKind::AllReduce, tp, 64e6, Stream::TpComm, {0}));         // 1
  p.push_back(compute_op("layers.1.fc", Phase::Forward, 2e12, {1}));                                      // 2
  p.push_back(compute_op("layers.1.fc", Phase::BackwardInput, 4e12, {2}));                                // 3
  p.push_back(collective_op("grad.bucket1", CollectiveKind::AllReduce, dp, 300e6, Stream::DpComm, {3}));  // 4
  p.push_back(compute_op("layers.0.fc", Phase::BackwardInput, 4e12, {3}));                                // 5
  p.push_back(
      collective_op("layers.0.tp_ar_b", CollectiveKind::AllReduce, tp, 64e6, Stream::TpComm, {5}));       // 6
  p.push_back(collective_op("grad.bucket0", CollectiveKind::AllReduce, dp, 200e6, Stream::DpComm, {6}));  // 7
  p.push_back(compute_op("optimizer", Phase::Optimizer, 1e11, {4, 7}));                                   // 8
  check_symmetry(cl, make_mesh(1, 2, 8), {p});
}

TEST_CASE("symmetry: tensor- and data-parallel traffic contending on NVSwitch, with compute") {
  // 1 node x 8 GPUs, dp=2 x tp=4: a tp all-reduce and a dp all-reduce run together and share
  // each GPU's NVSwitch up-link; compute runs beside them (both slowdowns active).
  ClusterSpec cl = test_cluster(1, 8, 1);
  cl.gpu.compute_slowdown_with_comm = 1.3;
  cl.gpu.comm_slowdown_with_compute = 1.15;
  const AxisMask tp = axis_bit(kAxisTp), dp = axis_bit(kAxisDp);
  std::vector<ProgramOp> p;
  p.push_back(compute_op("a", Phase::Forward, 1e12));                                               // 0
  p.push_back(collective_op("tp1", CollectiveKind::AllReduce, tp, 500e6, Stream::TpComm, {0}));     // 1
  p.push_back(collective_op("dp1", CollectiveKind::AllReduce, dp, 700e6, Stream::DpComm, {0}));     // 2
  p.push_back(compute_op("b", Phase::Forward, 3e12, {0}));                                          // 3
  p.push_back(collective_op("ag", CollectiveKind::AllGather, tp, 400e6, Stream::TpComm, {3}));      // 4
  p.push_back(collective_op("rs", CollectiveKind::ReduceScatter, dp, 400e6, Stream::DpComm, {4}));  // 5
  p.push_back(compute_op("c", Phase::BackwardInput, 2e12, {4}));                                    // 6
  check_symmetry(cl, make_mesh(1, 2, 4), {p});
}

TEST_CASE("symmetry: a 2-stage pipeline with send-recv across nodes") {
  // 2 nodes x 4 GPUs, 1 NIC per node, pp=2 x tp=4: stage 0 on node 0, stage 1 on node 1.
  // The 4 tensor-parallel ranks of a stage all send their activations through the node's
  // single NIC at once (weight 4). GPipe order with 2 micro-batches, tp all-reduces inside.
  const ClusterSpec cl = test_cluster(2, 4, 1);
  const AxisMask tp = axis_bit(kAxisTp);
  const double act = 50e6;
  std::vector<ProgramOp> s0, s1;
  s0.push_back(compute_op("s0.f", Phase::Forward, 1e12, {}, 0));                                         // 0
  s0.push_back(collective_op("s0.tp.f0", CollectiveKind::AllReduce, tp, 30e6, Stream::TpComm, {0}, 0));  // 1
  s0.push_back(p2p_op("act0", 1, true, act, {1}, 0));                                                    // 2
  s0.push_back(compute_op("s0.f", Phase::Forward, 1e12, {1}, 1));                                        // 3
  s0.push_back(collective_op("s0.tp.f1", CollectiveKind::AllReduce, tp, 30e6, Stream::TpComm, {3}, 1));  // 4
  s0.push_back(p2p_op("act1", 1, true, act, {4}, 1));                                                    // 5
  s0.push_back(p2p_op("grad0", 1, false, act, {}, 0));                                                   // 6
  s0.push_back(p2p_op("grad1", 1, false, act, {}, 1));                                                   // 7
  s0.push_back(compute_op("s0.b", Phase::BackwardInput, 2e12, {6, 4}, 0));                               // 8
  s0.push_back(compute_op("s0.b", Phase::BackwardInput, 2e12, {7, 8}, 1));                               // 9

  s1.push_back(p2p_op("act0", 0, false, act, {}, 0));                                                    // 0
  s1.push_back(p2p_op("act1", 0, false, act, {}, 1));                                                    // 1
  s1.push_back(compute_op("s1.f", Phase::Forward, 1.5e12, {0}, 0));                                      // 2
  s1.push_back(collective_op("s1.tp.f0", CollectiveKind::AllReduce, tp, 30e6, Stream::TpComm, {2}, 0));  // 3
  s1.push_back(compute_op("s1.f", Phase::Forward, 1.5e12, {1, 3}, 1));                                   // 4
  s1.push_back(collective_op("s1.tp.f1", CollectiveKind::AllReduce, tp, 30e6, Stream::TpComm, {4}, 1));  // 5
  s1.push_back(compute_op("s1.b", Phase::BackwardInput, 3e12, {5}, 0));                                  // 6
  s1.push_back(p2p_op("grad0", 0, true, act, {6}, 0));                                                   // 7
  s1.push_back(compute_op("s1.b", Phase::BackwardInput, 3e12, {6}, 1));                                  // 8
  s1.push_back(p2p_op("grad1", 0, true, act, {8}, 1));                                                   // 9
  // Queue order on each stage's pp stream follows program order: s0 sends act0, act1 then
  // receives grad0, grad1; s1 receives act0, act1 then sends grad0, grad1: consistent.
  check_symmetry(cl, make_mesh(2, 1, 4), {s0, s1});
}

TEST_CASE("a cross-ordered pair of collectives is reported as a deadlock") {
  // Rank 0's tp queue holds [c1, c2], rank 1's [c2, c1]: each waits for the other (NCCL would
  // hang). 4 member tasks never start; the first blocked queue is rank 0's tp stream.
  const ClusterSpec cl = test_cluster(1, 2, 1);
  ExecGraph g = plain_graph(2);
  Collective c;
  c.kind = CollectiveKind::AllReduce;
  c.bytes = 1e6;
  c.group = {0, 1};
  g.collectives = {c, c};
  auto member = [&](int rank, int coll) {
    Task t;
    t.kind = TaskKind::Collective;
    t.rank = rank;
    t.stream = Stream::TpComm;
    t.collective = coll;
    t.label = g.label_id(coll == 0 ? "layers.0.c1" : "layers.0.c2");
    const int id = g.add_task(t, {});
    g.collectives[static_cast<size_t>(coll)].member_tasks.push_back(id);
  };
  member(0, 0);
  member(0, 1);
  member(1, 1);
  member(1, 0);
  try {
    execute(g, test_cost(cl), build_topology(cl), opts());
    FAIL("no deadlock reported");
  } catch (const Error& e) {
    CHECK(e.code == "internal");
    const std::string msg = e.what();
    CHECK(msg.find("deadlock: 4 tasks never started") == 0);
    CHECK(msg.find("layers.0.c1") != std::string::npos);
    CHECK(msg.find("rank 0 stream tp_comm") != std::string::npos);
  }
}

TEST_CASE("more events than simulation.max_events is a limit error") {
  // A chain of 10 compute tasks needs 10 events; allow 5.
  const ClusterSpec cl = test_cluster(1, 1, 1);
  ExecGraph g = plain_graph(1);
  int prev = -1;
  for (int i = 0; i < 10; ++i)
    prev = g.add_task(compute_task(g, 0, 1e10), prev < 0 ? std::vector<int>{} : std::vector<int>{prev});
  ExecOptions o;
  o.max_events = 5;
  try {
    execute(g, test_cost(cl), build_topology(cl), o);
    FAIL("no limit error");
  } catch (const Error& e) {
    CHECK(e.code == "limit_exceeded");
    CHECK(e.path == "simulation.max_events");
  }
  o.max_events = 10;
  CHECK(execute(g, test_cost(cl), build_topology(cl), o).events == 10);
}

TEST_CASE("the executor is deterministic") {
  ClusterSpec cl = test_cluster(2, 8, 1);
  cl.gpu.compute_slowdown_with_comm = 1.2;
  const AxisMask tp = axis_bit(kAxisTp), dp = axis_bit(kAxisDp);
  std::vector<ProgramOp> p;
  p.push_back(compute_op("a", Phase::Forward, 1e12));
  p.push_back(collective_op("tp", CollectiveKind::AllReduce, tp, 64e6, Stream::TpComm, {0}));
  p.push_back(collective_op("dp", CollectiveKind::AllReduce, dp, 64e6, Stream::DpComm, {0}));
  p.push_back(compute_op("b", Phase::Forward, 1e12, {1}));
  const ExecGraph g = build_graph(make_mesh(1, 2, 8), {p}, false);
  const Topology topo = build_topology(cl);
  const Trace a = execute(g, test_cost(cl), topo, opts());
  const Trace b = execute(g, test_cost(cl), topo, opts());
  CHECK(a.task_start_s == b.task_start_s);
  CHECK(a.task_end_s == b.task_end_s);
  CHECK(a.events == b.events);
}
