// The hardware: the typed form of the config's "cluster" object (DESIGN.md §4).
// Every number here comes from a preset (core/presets/clusters/*.json) that cites its source.
#pragma once
#include <map>
#include <string>
#include <vector>
#include "proteus/attention_table.h"
#include "proteus/gemm_table.h"
#include "proteus/training_spec.h"

namespace proteus {

struct GpuSpec {
  std::string name;
  double memory_GiB = 0;
  double hbm_GBps = 0;
  int sm_count = 0;
  // Dense peak per precision; 0 = the GPU has no fast path for it (falls back to the next wider).
  double peak_fp32_TFLOPS = 0, peak_tf32_TFLOPS = 0, peak_fp16_TFLOPS = 0, peak_bf16_TFLOPS = 0,
         peak_fp8_TFLOPS = 0;
  // Calibration (each with its source in the preset)
  double gemm_max_efficiency = 0.8;  // ceiling for large, square GEMMs
  // Maximum achievable matmul TFLOP/s measured per precision (MAMF, stas00/ml-engineering);
  // where given, max_achievable / peak lowers the ceiling for that precision (never raises it
  // above gemm_max_efficiency, the best of any precision).
  std::map<Precision, double> max_achievable_TFLOPS;
  int gemm_tile_m = 128, gemm_tile_n = 128;
  double attention_efficiency = 0.5;        // fused/unfused attention kernels vs peak
  double memory_bound_efficiency = 0.8;     // fraction of HBM bandwidth elementwise kernels reach
  double kernel_launch_us = 4;              // per kernel
  double compute_slowdown_with_comm = 1.1;  // compute beside NCCL kernels (Proteus: 1.1 V100)
  double comm_slowdown_with_compute = 1.0;  // NCCL beside compute kernels
  // The share of the preset's measured compute throughput this part sustains: every
  // compute-bound op (GEMM table, roofline, attention) runs at it, memory-bound kernels and the
  // links do not. Below 1 for a part run under a lower power limit than the one its tables
  // were measured at (the SM clock drops, the HBM clock does not): docs/fidelity/gemm.md, "Power limits".
  double compute_throughput_fraction = 1.0;
  // Maximum sustainable matmul TFLOP/s per precision (MSMF, stas00/ml-engineering mamf-finder:
  // the chip saturated at its power limit). The GEMM table and the MAMF ceilings are bursts at
  // boost clock; a GEMM that would draw more than the power limit at boost settles at this rate
  // in a training run, one that draws less keeps its burst rate. So it caps every GEMM's
  // throughput (not attention, not memory-bound kernels): docs/fidelity/gemm.md, "Sustained GEMMs".
  std::map<Precision, double> sustained_TFLOPS;
  // An MXFP8 GEMM's time over a per-tensor-scaled FP8 GEMM's of the same shape (>= 1): the
  // block-scaled kernel reads an E8M0 scale per 32 values of each operand and applies them in
  // the main loop. The FP8 tables and ceilings are per-tensor-scaled measurements, so GEMMs of
  // the mxfp8 recipe run at them divided by this factor: docs/fidelity/gemm.md, "MXFP8 GEMMs".
  double mxfp8_gemm_slowdown = 1.0;
  // Measured op times (op_signature(work, precision) -> microseconds) that replace the roofline
  // for matching ops: the config's "gpu.measured_us" (docs/fidelity/gemm.md, scripts/measure_ops.py).
  std::map<std::string, double> measured_us;
  // Measured GEMM throughput by shape (gemm_table.h); replaces the roofline's GEMM efficiency
  // where it covers a shape and precision (docs/fidelity/gemm.md).
  GemmTable gemm_table;
  // Measured attention kernels by sequence length (attention_table.h), used relative to the
  // kernel attention_efficiency stands for (docs/fidelity/attention.md, "Attention by kernel").
  AttentionTable attention_table;
  double peak_TFLOPS(Precision p) const;  // with fallback to a wider precision
  // The GEMM efficiency ceiling in precision p: min(gemm_max_efficiency,
  // max_achievable_TFLOPS[p] / peak), or gemm_max_efficiency where no measurement is given.
  double gemm_ceiling(Precision p) const;
};

enum class IntraNodeKind { NvSwitch, NvLinkMesh, PcieTree };

// Measured efficiency of collectives whose members all sit in one node (docs/fidelity/communication.md,
// "Collectives inside a node"): the fraction of link_GBps a collective of members[i] GPUs
// reaches, per kind, fitted to a measured table through the flow model itself
// (scripts/collective_sweep.py fit_flow_model). Sizes between two listed ones interpolate
// linearly, sizes outside take the nearest. Empty: every flow runs at bus_efficiency.
struct NodeCollectiveEfficiency {
  std::vector<int> members;                                                // ascending group sizes, each >= 2
  std::vector<double> all_reduce, all_gather, reduce_scatter, all_to_all;  // one per members entry
  double send_recv = 0;  // a send-recv inside a node; 0: it runs at bus_efficiency
  bool empty() const { return members.empty() && send_recv == 0; }
};

struct IntraNodeSpec {
  IntraNodeKind kind = IntraNodeKind::NvSwitch;
  double link_GBps = 0;  // nvswitch: per GPU per direction; nvlink-mesh: per link per direction
  std::vector<std::vector<int>> links;  // nvlink-mesh: links between GPU i and j (symmetric)
  double bus_efficiency = 0.8;          // fraction of link bandwidth NCCL reaches
  double latency_us = 3.4;              // per ring hop
  // PCIe tree (also the path GPU <-> NIC on every kind of node)
  double pcie_GBps = 31.5;       // x16 link per direction
  std::vector<int> pcie_fanout;  // pcie-tree: {gpus per switch, switches per CPU root, roots}
  double cpu_link_GBps = 0;      // pcie-tree: socket-to-socket (QPI/UPI) per direction
  double pcie_latency_us = 5.7;
  NodeCollectiveEfficiency collective_efficiency;
  // NVLink SHARP (third-generation NVSwitch and later): the switch reduces, and NCCL runs an
  // all-reduce across nodes as its NVLS tree (NCCL_ALGO NVLSTree) when that is faster.
  bool nvls = false;
};

struct InterNodeSpec {
  int nics_per_node = 1;
  double nic_GBps = 12.5;  // per NIC per direction
  double latency_us = 5;   // per ring hop through the network
  double bus_efficiency = 0.9;
  double oversubscription = 1.0;  // leaf uplink : downlink bandwidth = 1 / oversubscription
  int nodes_per_leaf = 0;         // 0 = one non-blocking switch for all nodes
};

// The collective library's own cost (NCCL's tuning model, src/graph/tuning.cc): a fixed
// latency per collective call on top of the per-hop latencies. The default is neutral (no
// library overhead); the presets carry NCCL's value (8.4 us) with its source.
struct CollectiveSpec {
  double base_latency_us = 0;  // per collective call (NCCL ring/Simple: 8.4)
};

struct ClusterSpec {
  std::string name;
  int nodes = 1;
  int gpus_per_node = 8;
  GpuSpec gpu;
  IntraNodeSpec intra_node;
  InterNodeSpec inter_node;
  CollectiveSpec collectives;
  int gpus() const { return nodes * gpus_per_node; }
};

const char* to_string(IntraNodeKind);

}  // namespace proteus
