// Topology paths, bandwidth sharing on real paths, and collectives as flows
// (core/src/hardware/topology.cpp, core/src/exec/collective_flows.cpp). The clusters here are
// written out in the test (not presets) so each expected number can be derived in a comment.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>
#include "proteus/bandwidth_sharing.h"
#include "proteus/collective_flows.h"
#include "proteus/topology.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

using proteus::test::approx;

// 8 GPUs per node on NVSwitch (A100-like): 300 GB/s per GPU per direction at 0.8 bus
// efficiency -> 240e9 B/s; PCIe gen4 31.5 GB/s at 0.8 -> 25.2e9 B/s; NICs 25 GB/s at 0.9 ->
// 22.5e9 B/s.
ClusterSpec nvswitch_cluster(int nodes, int nics) {
  ClusterSpec c;
  c.name = "test-nvswitch";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.intra_node.kind = IntraNodeKind::NvSwitch;
  c.intra_node.link_GBps = 300;
  c.intra_node.bus_efficiency = 0.8;
  c.intra_node.latency_us = 3.4;
  c.intra_node.pcie_GBps = 31.5;
  c.intra_node.pcie_latency_us = 5.7;
  c.inter_node.nics_per_node = nics;
  c.inter_node.nic_GBps = 25;
  c.inter_node.bus_efficiency = 0.9;
  c.inter_node.latency_us = 9.6;
  return c;
}

// DGX-1 V100 hybrid cube-mesh (nvidia-smi topo -m: NV1 / NV2 = one / two NVLinks), 25 GB/s
// per link per direction; PCIe: 2 GPUs per switch, 2 switches per CPU, 2 CPUs.
ClusterSpec dgx1_cluster(int nodes) {
  ClusterSpec c;
  c.name = "test-dgx1";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.intra_node.kind = IntraNodeKind::NvLinkMesh;
  c.intra_node.link_GBps = 25;
  c.intra_node.links = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
                        {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                        {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  c.intra_node.bus_efficiency = 0.8;
  c.intra_node.latency_us = 3.4;
  c.intra_node.pcie_GBps = 15.75;
  c.intra_node.pcie_fanout = {2, 2, 2};
  c.intra_node.cpu_link_GBps = 19.2;
  c.intra_node.pcie_latency_us = 5.7;
  c.inter_node.nics_per_node = 1;
  c.inter_node.nic_GBps = 12.5;
  c.inter_node.bus_efficiency = 0.9;
  c.inter_node.latency_us = 9.6;
  return c;
}

ClusterSpec pcie_cluster() {
  ClusterSpec c;
  c.name = "test-pcie";
  c.nodes = 1;
  c.gpus_per_node = 8;
  c.intra_node.kind = IntraNodeKind::PcieTree;
  c.intra_node.pcie_GBps = 15.75;
  c.intra_node.pcie_fanout = {2, 2, 2};
  c.intra_node.cpu_link_GBps = 19.2;
  c.intra_node.bus_efficiency = 0.8;
  c.intra_node.pcie_latency_us = 5.7;
  return c;
}

std::vector<std::string> names(const Topology& t, const std::vector<int>& path) {
  std::vector<std::string> out;
  for (int l : path) out.push_back(t.links[l].name);
  return out;
}

std::vector<std::pair<int, double>> unit_weights(const std::vector<int>& path) {
  std::vector<std::pair<int, double>> out;
  for (int l : path) out.push_back({l, 1.0});
  return out;
}

// Rates of a plan's flows alone on the network (all started together).
std::vector<double> plan_rates(const Topology& t, const CollectivePlan& plan, BandwidthSharing& bw) {
  std::vector<int> ids;
  for (const auto& f : plan.flows) ids.push_back(bw.add_flow(unit_weights(f.links)));
  bw.solve();
  std::vector<double> rates;
  for (int id : ids) rates.push_back(bw.rate_Bps(id));
  (void)t;
  return rates;
}

std::vector<double> capacities(const Topology& t) {
  std::vector<double> c;
  for (const auto& l : t.links) c.push_back(l.capacity_Bps);
  return c;
}

}  // namespace

TEST_CASE("topology: nvswitch node, same-node path") {
  const Topology t = build_topology(nvswitch_cluster(1, 8));
  // GPU 2 -> GPU 5: GPU 2's NVLink up-link into the switch, GPU 5's down-link out of it.
  const auto p = t.path(2, 5, 0);
  CHECK(names(t, p) == std::vector<std::string>{"node0.gpu2.nvlink.tx", "node0.gpu5.nvlink.rx"});
  // 300 GB/s * 0.8 bus efficiency = 240e9 B/s.
  CHECK(t.links[p[0]].capacity_Bps == approx(240e9));
  CHECK(t.links[p[0]].level == LinkLevel::NvLink);
  CHECK(t.path(3, 3, 0).empty());
  CHECK(t.hop_latency_s(2, 5) == approx(3.4e-6));
  // A whole-node group on NVSwitch needs one channel: one flow already gets the GPU's link.
  CHECK(t.ring_channels({0, 1, 2, 3, 4, 5, 6, 7}) == 1);
}

TEST_CASE("topology: DGX-1 mesh, direct NVLink vs PCIe fallback") {
  const Topology t = build_topology(dgx1_cluster(1));
  // GPU 0 -> GPU 3 has two NVLinks: one direct link of 2 * 25 GB/s * 0.8 = 40e9 B/s.
  const auto direct = t.path(0, 3, 0);
  REQUIRE(direct.size() == 1);
  CHECK(t.links[direct[0]].name == "node0.gpu0-gpu3.nvlink");
  CHECK(t.links[direct[0]].capacity_Bps == approx(40e9));
  // GPU 0 -> GPU 1 has one NVLink: 20e9 B/s.
  CHECK(t.links[t.path(0, 1, 0)[0]].capacity_Bps == approx(20e9));
  CHECK(t.links[t.path(6, 5, 0)[0]].name == "node0.gpu6-gpu5.nvlink");
  CHECK(t.hop_latency_s(0, 3) == approx(3.4e-6));
  // GPU 0 -> GPU 5: no NVLink. GPU 0 is under switch 0 (CPU 0), GPU 5 under switch 2 (CPU 1):
  // up to the switch, up to the root, across the sockets, down to switch 2, down to GPU 5.
  const auto fallback = t.path(0, 5, 0);
  CHECK(names(t, fallback) == std::vector<std::string>{"node0.gpu0.pcie.up", "node0.sw0.pcie.up",
                                                       "node0.cpu0-cpu1", "node0.sw2.pcie.down",
                                                       "node0.gpu5.pcie.down"});
  // Socket link: 19.2 GB/s * 0.8 = 15.36e9 B/s.
  CHECK(t.links[fallback[2]].capacity_Bps == approx(15.36e9));
  CHECK(t.links[fallback[2]].level == LinkLevel::CpuLink);
  CHECK(t.hop_latency_s(0, 5) == approx(5.7e-6));
  // Each GPU has 6 NVLinks; a ring uses 2 of them per GPU, so at most 3 edge-disjoint
  // Hamiltonian cycles exist, and 3 do (checked by hand against the matrix, all 24 units used):
  //   0-1-2-3-7-5-6-4-0, 0-2-6-7-4-5-1-3-0, 0-3-2-1-5-6-7-4-0
  // (0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 appear twice: exactly the NV2 pairs).
  // A ring and its reverse per cycle: 6 channels, as NCCL runs on a DGX-1.
  CHECK(t.ring_channels({0, 1, 2, 3, 4, 5, 6, 7}) == 6);
  // GPUs 0-3 (a fully connected quad): GPU 0 has 1+1+2 = 4 NVLinks inside it, so at most 2
  // cycles. A = 0-1-2-3-0 and B = 0-2-1-3-0 use 1-2 and 0-3 twice (both NV2) and every other
  // pair once: they fit -> 2 cycles, 4 channels.
  CHECK(t.ring_channels({0, 1, 2, 3}) == 4);
}

TEST_CASE("topology: PCIe tree levels PIX / PHB / SYS") {
  const Topology t = build_topology(pcie_cluster());
  // fanout {2, 2, 2}: GPUs 0,1 on switch 0; 2,3 on switch 1 (both under CPU 0); 4..7 under CPU 1.
  // PIX: same switch, the path turns at the switch.
  CHECK(names(t, t.path(0, 1, 0)) == std::vector<std::string>{"node0.gpu0.pcie.up", "node0.gpu1.pcie.down"});
  // PHB: same CPU, through the root complex.
  CHECK(names(t, t.path(0, 2, 0)) == std::vector<std::string>{"node0.gpu0.pcie.up", "node0.sw0.pcie.up",
                                                              "node0.sw1.pcie.down", "node0.gpu2.pcie.down"});
  // SYS: across the socket link.
  CHECK(names(t, t.path(3, 6, 0)) == std::vector<std::string>{"node0.gpu3.pcie.up", "node0.sw1.pcie.up",
                                                              "node0.cpu0-cpu1", "node0.sw3.pcie.down",
                                                              "node0.gpu6.pcie.down"});
  // 15.75 GB/s * 0.8 = 12.6e9 B/s per PCIe link.
  CHECK(t.links[t.path(0, 1, 0)[0]].capacity_Bps == approx(12.6e9));
  CHECK(t.hop_latency_s(0, 1) == approx(5.7e-6));
  CHECK(t.ring_channels({0, 1, 2, 3}) == 1);
}

TEST_CASE("topology: cross-node path takes the channel's NIC") {
  const Topology t = build_topology(nvswitch_cluster(2, 8));
  // GPU 0 (node 0) -> GPU 11 (node 1, local 3) on channel 5: NIC 5 on both sides.
  CHECK(names(t, t.path(0, 11, 5)) == std::vector<std::string>{"node0.gpu0.pcie.up", "node0.nic5.tx",
                                                               "node1.nic5.rx", "node1.gpu3.pcie.down"});
  // Channel 13 -> NIC 13 % 8 = 5 as well.
  CHECK(t.path(0, 11, 13) == t.path(0, 11, 5));
  const auto p = t.path(0, 11, 5);
  CHECK(t.links[p[1]].capacity_Bps == approx(22.5e9));  // 25 GB/s * 0.9
  CHECK(t.links[p[0]].capacity_Bps == approx(25.2e9));  // 31.5 GB/s * 0.8
  CHECK(t.hop_latency_s(0, 11) == approx(9.6e-6));
  // A group spanning nodes runs one ring channel per NIC.
  CHECK(t.ring_channels({0, 8}) == 8);
}

TEST_CASE("topology: 16,384 GPUs build as O(links)") {
  ClusterSpec c = nvswitch_cluster(2048, 8);
  c.inter_node.nodes_per_leaf = 32;
  const Topology t = build_topology(c);
  // Per node: 16 NVLink + 16 GPU PCIe + 2 switch PCIe (one switch by default) + 16 NIC = 50;
  // 2048 nodes -> 102,400; 64 leaves -> 128 fabric links.
  CHECK(t.links.size() == 102400 + 128);
  CHECK(t.path(0, 16383, 0).size() == 6);  // PCIe, NIC, leaf up, leaf down, NIC, PCIe
}

TEST_CASE("topology: leaf/spine oversubscription halves cross-leaf capacity") {
  // 4 nodes, 2 per leaf, 1 NIC of 22.5e9 B/s each. Nodes 0 and 1 each send to a node of the
  // other leaf (2 and 3). Leaf up-link = nodes_per_leaf * nics * nic / oversubscription.
  //   oversubscription 1: 2 * 22.5e9 = 45e9 for two flows -> NIC-limited at 22.5e9 each.
  //   oversubscription 2: 22.5e9 shared by two flows -> 11.25e9 each: half.
  for (double over : {1.0, 2.0}) {
    ClusterSpec c = nvswitch_cluster(4, 1);
    c.inter_node.nodes_per_leaf = 2;
    c.inter_node.oversubscription = over;
    const Topology t = build_topology(c);
    BandwidthSharing bw(capacities(t));
    const int a = bw.add_flow(unit_weights(t.path(0, 16, 0)));
    const int b = bw.add_flow(unit_weights(t.path(8, 24, 0)));
    bw.solve();
    const double expected = over == 1.0 ? 22.5e9 : 11.25e9;
    CHECK(bw.rate_Bps(a) == approx(expected));
    CHECK(bw.rate_Bps(b) == approx(expected));
    // Same-leaf traffic does not touch the leaf up-link.
    CHECK(t.path(0, 8, 0).size() == 4);
  }
}

TEST_CASE("network: two transfers through one NIC share it, then one speeds up") {
  // 2 nodes, 1 NIC each (22.5e9 B/s effective; the PCIe links at 25.2e9 are not the limit).
  // A: GPU 0 -> GPU 8, 4.5e9 bytes; B: GPU 1 -> GPU 9, 9e9 bytes; both start at t = 0.
  // Phase 1: both cross node0.nic0.tx -> 11.25e9 B/s each. A ends at 4.5e9 / 11.25e9 = 0.4 s,
  //   when B has moved 4.5e9 and has 4.5e9 left.
  // Phase 2: B alone -> 22.5e9 B/s (doubles): 4.5e9 / 22.5e9 = 0.2 s more; B ends at 0.6 s.
  const Topology t = build_topology(nvswitch_cluster(2, 1));
  BandwidthSharing bw(capacities(t));
  const int a = bw.add_flow(unit_weights(t.path(0, 8, 0)));
  const int b = bw.add_flow(unit_weights(t.path(1, 9, 0)));
  bw.solve();
  CHECK(bw.rate_Bps(a) == approx(11.25e9));
  CHECK(bw.rate_Bps(b) == approx(11.25e9));
  double left_a = 4.5e9, left_b = 9e9, now_s = 0;
  const double end_a = now_s + left_a / bw.rate_Bps(a);
  CHECK(end_a == approx(0.4));
  left_b -= bw.rate_Bps(b) * (end_a - now_s);
  now_s = end_a;
  bw.remove_flow(a);
  const auto& changed = bw.solve();
  REQUIRE(changed.size() == 1);
  CHECK(changed[0] == b);
  CHECK(bw.rate_Bps(b) == approx(22.5e9));
  const double end_b = now_s + left_b / bw.rate_Bps(b);
  CHECK(end_b == approx(0.6));
}

TEST_CASE("collectives: ring all-reduce of 1 GiB on 8 GPUs over NVSwitch") {
  const Topology t = build_topology(nvswitch_cluster(1, 8));
  const double S = 1024.0 * 1024 * 1024;
  const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
  const CollectivePlan plan = plan_collective(t, CollectiveKind::AllReduce, group, S);
  CHECK(plan.algorithm == "ring");
  // One channel (NVSwitch, one node): 8 hops 0->1->...->7->0, each carrying 2*7/8*S bytes.
  REQUIRE(plan.flows.size() == 8);
  for (const auto& f : plan.flows) {
    CHECK(f.bytes == approx(2.0 * 7 / 8 * S));
    CHECK(f.dst_gpu == (f.src_gpu + 1) % 8);
    CHECK(f.links.size() == 2);
  }
  // Every GPU's up-link and down-link carries exactly one flow: each flow runs at the link's
  // 300 GB/s * 0.8 = 240e9 B/s, so the data moves in 2*7/8 * 2^30 / 240e9 = 7.829 ms.
  BandwidthSharing bw(capacities(t));
  for (double r : plan_rates(t, plan, bw)) CHECK(r == approx(240e9));
  CHECK(plan.flows[0].bytes / 240e9 == approx(7.8294e-3).epsilon(1e-4));
  // 2(n-1) = 14 steps of 3.4 us (no base latency field: see collective_flows.cpp).
  CHECK(plan.latency_s == approx(14 * 3.4e-6));
}

TEST_CASE("collectives: ring all-gather / reduce-scatter move (n-1)/n of S in n-1 steps") {
  const Topology t = build_topology(nvswitch_cluster(1, 8));
  const double S = 8e6;
  for (auto kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    const CollectivePlan plan = plan_collective(t, kind, {0, 1, 2, 3}, S);
    // 4 ranks: 4 hop flows of 3/4 * 8e6 = 6e6 bytes; 3 steps of 3.4 us.
    REQUIRE(plan.flows.size() == 4);
    for (const auto& f : plan.flows) CHECK(f.bytes == approx(6e6));
    CHECK(plan.latency_s == approx(3 * 3.4e-6));
  }
}

TEST_CASE("collectives: a ring exchange is one step of the all-gather's ring: S per hop, one hop's latency") {
  // Context parallelism over 4 nodes, one GPU per node (TE's K/V ring): each step every member
  // sends its shard S to the next. The ring's hops carry what one step of an all-gather of the
  // whole (4/3 S) carries, but a step waits for one hop's latency, not the all-gather's three:
  // a pass of 3 steps pays 3 hop latencies, as the all-gather it replaces does (before, each
  // step paid 3, the pass 9).
  const Topology t = build_topology(nvswitch_cluster(4, 8));
  const std::vector<int> group = {0, 8, 16, 24};
  const double S = 8e6;
  const CollectivePlan step = plan_collective(t, CollectiveKind::RingExchange, group, S);
  const CollectivePlan gather = plan_collective(t, CollectiveKind::AllGather, group, S * 4 / 3);
  CHECK(step.algorithm == "ring");
  REQUIRE(step.flows.size() == gather.flows.size());
  double sent = 0;
  for (size_t i = 0; i < step.flows.size(); ++i) {
    CHECK(step.flows[i].bytes == approx(gather.flows[i].bytes));
    CHECK(step.flows[i].links == gather.flows[i].links);
    if (step.flows[i].src_gpu == 0) sent += step.flows[i].bytes;
  }
  CHECK(sent == approx(S));  // GPU 0 passes its shard on, over every channel together
  CHECK(step.latency_s == approx(9.6e-6));
  CHECK(gather.latency_s == approx(3 * 9.6e-6));
}

TEST_CASE("collectives: DGX-1 mesh all-reduce runs 6 NVLink rings") {
  const Topology t = build_topology(dgx1_cluster(1));
  const double S = 1024.0 * 1024 * 1024;
  const CollectivePlan plan = plan_collective(t, CollectiveKind::AllReduce, {0, 1, 2, 3, 4, 5, 6, 7}, S);
  // 3 NVLink cycles, forwards and backwards: 6 channels x 8 hops, each 2*7/8*S/6 bytes.
  REQUIRE(plan.flows.size() == 48);
  for (const auto& f : plan.flows) {
    CHECK(f.links.size() == 1);  // every hop is a direct NVLink
    CHECK(f.bytes == approx(2.0 * 7 / 8 * S / 6));
  }
  // A pair with u NVLinks (a link of u * 20e9 B/s) carries u flows per direction (the cycles
  // use it u times, each in both directions): every flow gets 20e9 B/s, i.e. bus bandwidth
  // 6 * 20 = 120 GB/s per GPU.
  BandwidthSharing bw(capacities(t));
  for (double r : plan_rates(t, plan, bw)) CHECK(r == approx(20e9));
  CHECK(plan.latency_s == approx(14 * 3.4e-6));
}

TEST_CASE("collectives: cross-node ring leaves each node through the channel's NIC") {
  // 2 nodes x 8 GPUs, 8 NICs; all-gather (ring only) over all 16 GPUs: 8 channels.
  const Topology t = build_topology(nvswitch_cluster(2, 8));
  const double S = 1024.0 * 1024 * 1024;
  std::vector<int> group;
  for (int i = 0; i < 16; ++i) group.push_back(i);
  const CollectivePlan plan = plan_collective(t, CollectiveKind::AllGather, group, S);
  CHECK(plan.algorithm == "ring");
  // 8 channels x 16 hops, each (15/16) * S / 8 bytes.
  REQUIRE(plan.flows.size() == 128);
  for (const auto& f : plan.flows) CHECK(f.bytes == approx(15.0 / 16 * S / 8));
  // Channel k leaves node 0 from GPU k (NIC k's GPU) to node 1's GPU k+1, and back from GPU 8+k
  // to GPU (k+1)%8. So each NIC's tx carries exactly one flow, from its own GPU.
  std::vector<int> nic_tx_flows(t.links.size(), 0);
  for (const auto& f : plan.flows)
    for (int l : f.links)
      if (t.links[l].level == LinkLevel::Nic && t.links[l].name.find(".tx") != std::string::npos) {
        ++nic_tx_flows[l];
        const int local = f.src_gpu % 8;
        CHECK(t.links[l].name.find("nic" + std::to_string(local) + ".tx") != std::string::npos);
        CHECK(f.dst_gpu % 8 == (local + 1) % 8);
      }
  int nic_links = 0;
  for (size_t l = 0; l < t.links.size(); ++l)
    if (t.links[l].level == LinkLevel::Nic && t.links[l].name.find(".tx") != std::string::npos) {
      CHECK(nic_tx_flows[l] == 1);
      ++nic_links;
    }
  CHECK(nic_links == 16);
  // Rates: inter-node flows are NIC-limited at 22.5e9 (PCIe 25.2e9 is wider). A GPU sends over
  // NVLink in the 7 channels it does not leave the node in: 240e9 / 7 = 34.3e9 per flow.
  BandwidthSharing bw(capacities(t));
  const auto rates = plan_rates(t, plan, bw);
  CHECK(*std::min_element(rates.begin(), rates.end()) == approx(22.5e9));
  CHECK(*std::max_element(rates.begin(), rates.end()) == approx(240e9 / 7));
  // 15 steps of the network hop (9.6 us).
  CHECK(plan.latency_s == approx(15 * 9.6e-6));
}

TEST_CASE("collectives: all-reduce across nodes picks tree or ring by estimated time") {
  // 64 nodes, 1 NIC each (22.5e9 B/s; PCIe 25.2e9 is wider); the group is GPU 0 of every node.
  const Topology t = build_topology(nvswitch_cluster(64, 1));
  std::vector<int> group;
  for (int node = 0; node < 64; ++node) group.push_back(node * 8);
  // Ring: 126 steps * 9.6 us = 1209.6 us; every NIC sends one flow of 2*63/64*S.
  // Double binary tree over 64 nodes: depth 6 in both trees (1->2->4->8->16->32->0), so
  // 2 * 6 * 9.6 us = 115.2 us; an even node is interior in tree 0 (sends S/2 to its parent
  // and S/2 to each of 2 children) and a leaf in tree 1 (S/2 up): 2S through its NIC.
  //   S = 1 MiB: ring 2*63/64*S/22.5e9 + 1209.6 us = 1301 us; tree 2S/22.5e9 + 115.2 us = 208 us -> tree.
  //   S = 4 GiB: ring 0.375809 + 0.001210 = 0.377019 s; tree 0.381775 + 0.000115 = 0.381890 s -> ring.
  const CollectivePlan small = plan_collective(t, CollectiveKind::AllReduce, group, 1024.0 * 1024);
  CHECK(small.algorithm == "tree");
  CHECK(small.latency_s == approx(2 * 6 * 9.6e-6));
  // Tree flows: 63 edges per tree, both directions, 2 trees, S/2 each.
  CHECK(small.flows.size() == 4 * 63);
  for (const auto& f : small.flows) CHECK(f.bytes == approx(1024.0 * 1024 / 2));
  const CollectivePlan large = plan_collective(t, CollectiveKind::AllReduce, group, 4.0 * 1024 * 1024 * 1024);
  CHECK(large.algorithm == "ring");
  CHECK(large.latency_s == approx(126 * 9.6e-6));
  CHECK(large.flows.size() == 64);
}

TEST_CASE("collectives: tree's intra-node reduction wins at 2 full DGX nodes") {
  // 2 nodes x 8 GPUs on NVSwitch, 8 NICs; all-reduce of S = 1 GiB over all 16 GPUs.
  // Ring (8 channels): each NIC sends one hop of 2*15/16*S/8 = 251.7 MB: 11.18 ms + 30 * 9.6 us.
  // Tree (8 channels, chain inside each node): a NIC carries S/8 per direction (the two trees
  //   each move S/16 up and S/16 down across the single edge) = 5.97 ms; the busiest NVLink
  //   sends 14 chain flows of S/8 (2 per channel, 1 where it heads or ends the chain):
  //   1.75 S / 240e9 = 7.83 ms; latency 2 * (1 * 9.6 + 7 * 3.4) us = 66.8 us -> tree.
  const Topology t = build_topology(nvswitch_cluster(2, 8));
  std::vector<int> group;
  for (int i = 0; i < 16; ++i) group.push_back(i);
  const CollectivePlan plan = plan_collective(t, CollectiveKind::AllReduce, group, 1024.0 * 1024 * 1024);
  CHECK(plan.algorithm == "tree");
  CHECK(plan.latency_s == approx(2 * (9.6e-6 + 7 * 3.4e-6)));
}

TEST_CASE("collectives: all-to-all, send-recv, groups of one") {
  const Topology t = build_topology(nvswitch_cluster(2, 8));
  const double S = 16e6;
  std::vector<int> group;
  for (int i = 0; i < 16; ++i) group.push_back(i);
  const CollectivePlan a2a = plan_collective(t, CollectiveKind::AllToAll, group, S);
  CHECK(a2a.algorithm == "direct");
  // n(n-1) = 240 direct flows of S/n = 1e6 bytes; the slowest hop is the network's 9.6 us.
  REQUIRE(a2a.flows.size() == 240);
  for (const auto& f : a2a.flows) {
    CHECK(f.bytes == approx(1e6));
    if (f.src_gpu / 8 != f.dst_gpu / 8)  // through the sender's own NIC
      CHECK(t.links[f.links[1]].name ==
            "node" + std::to_string(f.src_gpu / 8) + ".nic" + std::to_string(f.src_gpu % 8) + ".tx");
  }
  CHECK(a2a.latency_s == approx(9.6e-6));
  // Send-recv: one flow of S from GPU 3 to GPU 11 through NIC 3; one network hop of latency.
  const CollectivePlan p2p = plan_collective(t, CollectiveKind::SendRecv, {3, 11}, S);
  CHECK(p2p.algorithm == "p2p");
  REQUIRE(p2p.flows.size() == 1);
  CHECK(p2p.flows[0].bytes == S);
  CHECK(names(t, p2p.flows[0].links) == std::vector<std::string>{"node0.gpu3.pcie.up", "node0.nic3.tx",
                                                                 "node1.nic3.rx", "node1.gpu3.pcie.down"});
  CHECK(p2p.latency_s == approx(9.6e-6));
  // A group of one moves nothing and waits for nothing.
  const CollectivePlan one = plan_collective(t, CollectiveKind::AllReduce, {5}, S);
  CHECK(one.flows.empty());
  CHECK(one.latency_s == 0);
}
