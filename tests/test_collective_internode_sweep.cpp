// All-reduce across two nodes of 8 Hopper GPUs, size by size, against the published nccl-tests
// tables (docs/fidelity/communication.md, "Collectives across nodes"). The presets' constants are not fitted
// to these tables: the test states where the flow model sits and by how much it may differ.
//
// Bus bandwidth of an all-reduce over n GPUs (nccl-tests' definition): 2(n-1)/n * S / t, with t
// the time of one call alone on the fabric (as nccl-tests runs it; out-of-place column).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>
#include "lone_collective.h"
#include "proteus/collective_flows.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/error.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"

using namespace proteus;

namespace {

ClusterSpec two_nodes(const std::string& preset) {
  return parse_config(R"({"model": "llama3-8b", "cluster": {"preset": ")" + preset +
                      R"(", "nodes": 2}, "training": {"global_batch": 16}, "strategy": {"dp": 16}})")
      .cluster;
}

// One all-reduce over every GPU of the cluster, alone on the fabric.
double all_reduce_s(const ClusterSpec& cluster, double bytes) {
  return test::lone_collective_s(cluster, CollectiveKind::AllReduce, bytes);
}

double busbw_GBps(const ClusterSpec& cluster, double bytes) {
  const double n = cluster.nodes * cluster.gpus_per_node;
  return 2 * (n - 1) / n * bytes / all_reduce_s(cluster, bytes) / 1e9;
}

std::string algorithm_of(const ClusterSpec& cluster, double bytes) {
  std::vector<int> group;
  for (int r = 0; r < cluster.nodes * cluster.gpus_per_node; ++r) group.push_back(r);
  return plan_collective(build_topology(cluster), CollectiveKind::AllReduce, group, bytes).algorithm;
}

struct Point {
  double bytes, busbw_GBps;
};

const double kMiB = 1024.0 * 1024;

// schmaustech/nvidia-tools-image README.md: two Dell nodes of 8 H200, 8 BlueField-3 SuperNICs
// of 400 Gb/s per node (RoCE: NCCL_IB_GID_INDEX=3), NCCL 2.30.4, nccl-tests 2.18.3,
// all_reduce_perf 1 KiB..16 GiB, NCCL's default algorithm; out-of-place busbw. 16 MiB (103.37
// out of place, 151.52 in place) is left out: the two columns disagree by half.
const std::vector<Point> kH200RoCE = {{1 * kMiB, 25.58},     {2 * kMiB, 45.53},     {4 * kMiB, 74.10},
                                      {8 * kMiB, 105.03},    {32 * kMiB, 227.23},   {64 * kMiB, 272.94},
                                      {128 * kMiB, 339.10},  {256 * kMiB, 394.69},  {512 * kMiB, 432.57},
                                      {1024 * kMiB, 458.75}, {2048 * kMiB, 473.86}, {4096 * kMiB, 481.78},
                                      {8192 * kMiB, 485.57}, {16384 * kMiB, 485.66}};

}  // namespace

TEST_CASE("internode sweep: 2 x 8 H200 all-reduce against the published nccl-tests table, size by size") {
  const ClusterSpec cluster = two_nodes("dgx-h200");
  double sum_abs = 0;
  for (const Point& p : kH200RoCE) {
    CAPTURE(p.bytes);
    const double model = busbw_GBps(cluster, p.bytes);
    const double error = model / p.busbw_GBps - 1;
    CAPTURE(model);
    sum_abs += std::fabs(error);
    if (p.bytes <= 4 * kMiB) {
      // Latency-bound: 8.4 us + 2 x 7 NVLink hops x 3.73 us + 2 x 9.6 us against ~77-106 us.
      CHECK(std::fabs(error) < 0.12);
    } else if (p.bytes <= 128 * kMiB) {
      // Mid sizes: the model is fast by up to ~30% (NCCL's own tuning.cc corrects its tree
      // estimate by 0.6-0.9 at these sizes: pipelining does not reach the alpha-beta line).
      CHECK(error > 0);
      CHECK(error < 0.32);
    } else {
      // Large sizes: NCCL's NVLS tree; the node's part at XLA's measured 8-GPU all-reduce
      // efficiency (0.873, 402 GB/s of bus bandwidth at 2 GiB in one node, where nccl-tests
      // reaches ~480), so the model's limit, ~420 GB/s, sits up to ~14% under 486.
      CHECK(error < 0.02);
      CHECK(error > -0.15);
    }
  }
  // Mean absolute error over the 14 sizes: ~12% (it was ~15% before the NVLS tree, with the
  // plain tree's NVLink chains limiting the bus bandwidth to ~385 GB/s).
  CHECK(sum_abs / kH200RoCE.size() < 0.13);
}

// The same table below 1 MiB (schmaustech/nvidia-tools-image README.md, the 2 x 8 H200 run
// above: out-of-place time in us; bus bandwidth has two decimals only at these sizes).
struct TimePoint {
  double bytes, time_us;
};
const std::vector<TimePoint> kH200RoCESmall = {
    {1024, 45.06},  {2048, 43.84},  {4096, 43.51},   {8192, 47.64},   {16384, 53.65},
    {32768, 64.93}, {65536, 70.32}, {131072, 81.24}, {262144, 63.59}, {524288, 80.78}};

TEST_CASE("internode sweep: below 1 MiB the Simple-protocol model is at most 1.9x slow, never fast") {
  // NCCL runs LL there; the model keeps Simple (docs/fidelity/communication.md "NCCL's protocols": NCCL's own
  // LL estimate, 25.2 us, is 1.3-2.6x under these measured times, further off than Simple's).
  // The NVLS tree's ~80 us against 44-81 us measured: slow by up to 1.83x at 4 KiB, within 2%
  // from 128 KiB.
  const ClusterSpec cluster = two_nodes("dgx-h200");
  for (const TimePoint& p : kH200RoCESmall) {
    CAPTURE(p.bytes);
    const double model_us = all_reduce_s(cluster, p.bytes) * 1e6;
    CAPTURE(model_us);
    CHECK(model_us > 0.98 * p.time_us);
    CHECK(model_us < 1.9 * p.time_us);
  }
}

TEST_CASE("internode sweep: NCCL's NVLS tree runs large all-reduces across NVLS nodes") {
  // NCCL picks NVLSTree for an all-reduce across H100/H200 nodes (tuning.cc: its bandwidth is
  // min(intra, inter), the two parts pipelined); the model offers it when intra_node.nvls.
  const ClusterSpec h200 = two_nodes("dgx-h200");
  CHECK(algorithm_of(h200, 8192 * kMiB) == "nvls_tree");
  // Its limit across 2 nodes is the node's measured all-reduce: 450 GB/s x 0.873 / (2 x 7/8)
  // of algorithm bandwidth, x 2 x 15/16 = ~421 GB/s of bus bandwidth (the NICs would allow
  // 8 x 50 x 0.9 = 360 GB/s of algorithm bandwidth, 675 of bus bandwidth).
  const double large = busbw_GBps(h200, 16384 * kMiB);
  CHECK(large > 415);
  CHECK(large < 421.0);
  // The AWS p5.48xlarge table (aws-samples/awsome-distributed-training,
  // micro-benchmarks/nccl-tests/README.md: 2 x 8 H100, EFA 32 x 100 Gb/s = the same 400 GB/s per
  // node as 8 NDR NICs): 437-487 GB/s of bus bandwidth from 1 to 16 GiB. The dgx-h100 model
  // (same NVSwitch and NIC totals) sits 5-14% under.
  const ClusterSpec h100 = two_nodes("dgx-h100");
  const std::vector<Point> p5 = {{1024 * kMiB, 436.95},
                                 {2048 * kMiB, 443.72},
                                 {4096 * kMiB, 465.87},
                                 {8192 * kMiB, 479.28},
                                 {16384 * kMiB, 487.09}};
  for (const Point& p : p5) {
    CAPTURE(p.bytes);
    const double error = busbw_GBps(h100, p.bytes) / p.busbw_GBps - 1;
    CHECK(error < 0);
    CHECK(error > -0.15);
  }
  // Without NVLink SHARP (A100's NVSwitch) there is no NVLS tree.
  CHECK(algorithm_of(two_nodes("dgx-a100-80g"), 8192 * kMiB) != "nvls_tree");
}

TEST_CASE("internode sweep: the NVLS tree needs two members per node and an nvswitch node") {
  const ClusterSpec h100 = two_nodes("dgx-h100");
  const Topology topology = build_topology(h100);
  // One member per node (tensor parallelism over the node, data parallelism across): nothing
  // to reduce in the switch, so ring and tree only.
  CHECK(collective_shapes(topology, CollectiveKind::AllReduce, {0, 8}).candidates.size() == 2);
  CHECK(collective_shapes(topology, CollectiveKind::AllReduce, {0, 1, 8, 9}).candidates.size() == 3);
  // Inside one node: unchanged (the measured single-node efficiency already holds NVLS).
  CHECK(collective_shapes(topology, CollectiveKind::AllReduce, {0, 1, 2, 3}).candidates.size() == 1);
  // All-gather and reduce-scatter stay rings.
  CHECK(collective_shapes(topology, CollectiveKind::AllGather, {0, 1, 8, 9}).candidates.size() == 1);
  // nvls on a node without NVSwitch is an error naming the field.
  try {
    parse_config(R"({"model": "llama3-8b", "cluster": {"preset": "dgx1-v100-1ib", "nodes": 2,
                     "intra_node": {"nvls": true}}, "training": {"global_batch": 16},
                     "strategy": {"dp": 16}})");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.path.find("intra_node.nvls") != std::string::npos);
  }
}
