// Hand-built ExecGraphs for the executor and report tests.
//
// A StageProgram is the program every GPU of one pipeline stage runs (ops in queue order,
// deps by op index within the same program). build_graph() instantiates it either on one
// representative GPU per stage (symmetric = true, the reduction) or on every GPU of the mesh
// (symmetric = false), creating the collectives with their groups and member tasks, so that
// the two graphs describe the same training step.
#pragma once
#include <map>
#include <string>
#include <tuple>
#include <vector>
#include "proteus/cluster_spec.h"
#include "proteus/cost_model.h"
#include "proteus/exec_graph.h"
#include "proteus/topology.h"

namespace proteus::test {

struct ProgramOp {
  bool collective = false;
  Phase phase = Phase::Forward;
  Stream stream = Stream::Compute;
  int mb = 0;
  std::string label;
  ComputeWork work;  // compute
  CollectiveKind kind = CollectiveKind::AllReduce;
  AxisMask axes = 0;  // collective (send-recv: pp)
  double bytes = 0;
  int peer_stage = -1;    // send-recv: the stage at the other end
  bool sender = true;     // send-recv: this stage sends (group = {me, peer}) or receives
  std::vector<int> deps;  // op indices in the same program
  std::vector<MemEvent> mem;
};

inline ProgramOp compute_op(const std::string& label, Phase phase, double flops, std::vector<int> deps = {},
                            int mb = 0) {
  ProgramOp op;
  op.label = label;
  op.phase = phase;
  op.mb = mb;
  op.work.op_kind = OpKind::Matmul;
  op.work.flops = flops;
  op.work.bytes = flops / 100.0;
  op.work.gemm_m = 4096;
  op.work.gemm_n = 4096;
  op.work.gemm_k = static_cast<int64_t>(flops / (2.0 * 4096 * 4096));
  op.deps = std::move(deps);
  return op;
}

inline ProgramOp collective_op(const std::string& label, CollectiveKind kind, AxisMask axes, double bytes,
                               Stream stream, std::vector<int> deps = {}, int mb = 0) {
  ProgramOp op;
  op.collective = true;
  op.label = label;
  op.kind = kind;
  op.axes = axes;
  op.bytes = bytes;
  op.stream = stream;
  op.deps = std::move(deps);
  op.mb = mb;
  op.phase = Phase::Forward;
  return op;
}

inline ProgramOp p2p_op(const std::string& label, int peer_stage, bool sender, double bytes,
                        std::vector<int> deps = {}, int mb = 0) {
  ProgramOp op = collective_op(label, CollectiveKind::SendRecv, axis_bit(kAxisPp), bytes, Stream::PpComm,
                               std::move(deps), mb);
  op.peer_stage = peer_stage;
  op.sender = sender;
  return op;
}

inline ExecGraph build_graph(const Mesh& mesh, const std::vector<std::vector<ProgramOp>>& stages,
                             bool symmetric, const std::array<double, kNumMemCategories>& static_bytes = {}) {
  ExecGraph g;
  g.mesh = mesh;
  g.symmetric = symmetric;
  g.gpus = mesh.ranks();
  g.pipeline_stages = mesh.size[kAxisPp];
  const int per_stage = g.gpus / g.pipeline_stages;
  std::vector<int> sim_gpus;
  for (int gpu = 0; gpu < g.gpus; ++gpu) {
    const auto c = mesh.coords_of(gpu);
    bool rep = true;
    for (int a = 1; a < kNumMeshAxes; ++a) rep = rep && c[a] == 0;
    if (!symmetric || rep) sim_gpus.push_back(gpu);
  }
  for (int gpu : sim_gpus) {
    SimRank r;
    r.gpu = gpu;
    r.stage = mesh.coords_of(gpu)[kAxisPp];
    r.multiplicity = symmetric ? per_stage : 1;
    r.static_bytes = static_bytes;
    g.ranks.push_back(r);
  }
  g.queues.resize(g.ranks.size() * kNumStreams);
  // (label, micro-batch, group) -> collective index: one collective per instance
  std::map<std::tuple<std::string, int, std::vector<int>>, int> coll_of;
  for (size_t r = 0; r < g.ranks.size(); ++r) {
    const int gpu = g.ranks[r].gpu;
    const auto coords = mesh.coords_of(gpu);
    const auto& program = stages[static_cast<size_t>(coords[kAxisPp])];
    std::vector<int> task_of(program.size(), -1);
    for (size_t i = 0; i < program.size(); ++i) {
      const ProgramOp& op = program[i];
      Task t;
      t.kind = op.collective ? TaskKind::Collective : TaskKind::Compute;
      t.phase = op.phase;
      t.stream = op.stream;
      t.rank = static_cast<int>(r);
      t.micro_batch = op.mb;
      t.label = g.label_id(op.label);
      t.stage = coords[kAxisPp];
      if (!op.collective) t.work = g.add_work(op.work);
      std::vector<int> group;
      if (op.collective) {
        if (op.kind == CollectiveKind::SendRecv) {
          auto peer = coords;
          peer[kAxisPp] = op.peer_stage;
          group =
              op.sender ? std::vector<int>{gpu, mesh.gpu_of(peer)} : std::vector<int>{mesh.gpu_of(peer), gpu};
        } else {
          group = mesh.group(gpu, op.axes);
        }
        auto key = std::make_tuple(op.label, op.mb, group);
        auto it = coll_of.find(key);
        if (it == coll_of.end()) {
          Collective c;
          c.kind = op.kind;
          c.bytes = op.bytes;
          c.axes = op.axes;
          c.group = group;
          it = coll_of.emplace(key, static_cast<int>(g.collectives.size())).first;
          g.collectives.push_back(c);
        }
        t.collective = it->second;
      }
      std::vector<int> deps;
      for (int d : op.deps) deps.push_back(task_of[static_cast<size_t>(d)]);
      task_of[i] = g.add_task(t, deps, op.mem);
      if (op.collective) g.collectives[static_cast<size_t>(t.collective)].member_tasks.push_back(task_of[i]);
    }
  }
  // Cross-stage sends/receives are synchronized by the collective itself; in the reduced
  // graph its group lists non-simulated GPUs, but both member tasks are simulated.
  return g;
}

// An NVSwitch node type with round numbers: NVLink 300 GB/s per GPU per direction at bus
// efficiency 0.8 -> 240e9 B/s; PCIe 31.5 GB/s at 0.8 -> 25.2e9 B/s; NIC 25 GB/s at 0.9 ->
// 22.5e9 B/s.
inline ClusterSpec test_cluster(int nodes, int gpus_per_node, int nics_per_node) {
  ClusterSpec c;
  c.name = "test";
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.gpu.name = "test-gpu";
  c.gpu.memory_GiB = 80;
  c.gpu.hbm_GBps = 2039;
  c.gpu.sm_count = 108;
  c.gpu.peak_fp32_TFLOPS = 19.5;
  c.gpu.peak_tf32_TFLOPS = 156;
  c.gpu.peak_fp16_TFLOPS = 312;
  c.gpu.peak_bf16_TFLOPS = 312;
  c.gpu.compute_slowdown_with_comm = 1.0;
  c.gpu.comm_slowdown_with_compute = 1.0;
  c.intra_node.kind = IntraNodeKind::NvSwitch;
  c.intra_node.link_GBps = 300;
  c.intra_node.bus_efficiency = 0.8;
  c.intra_node.latency_us = 3.4;
  c.intra_node.pcie_GBps = 31.5;
  c.inter_node.nics_per_node = nics_per_node;
  c.inter_node.nic_GBps = 25;
  c.inter_node.latency_us = 5;
  c.inter_node.bus_efficiency = 0.9;
  return c;
}

inline CostModel test_cost(const ClusterSpec& c) {
  CostModel m;
  m.gpu = c.gpu;
  m.precision = Precision::Bf16;
  return m;
}

inline Mesh make_mesh(int pp, int dp, int tp) {
  Mesh m;
  m.size = {pp, dp, 1, 1, tp};
  return m;
}

}  // namespace proteus::test
