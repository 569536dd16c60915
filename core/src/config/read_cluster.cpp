// The "cluster" object: nodes of identical GPUs, the links inside a node and the network.
#include "limits.h"
#include "readers.h"

namespace proteus::config_detail {

namespace {

namespace L = config_limits;

// "measured_us": {"<op signature>": microseconds, ...} (docs/fidelity/gemm.md). The signatures are
// op_signature()'s text; a key that matches no op is harmless, a bad time is an error.
std::map<std::string, double> read_measured_us(const Json& value, const std::string& path) {
  if (!value.is_object())
    throw invalid_config(path, "measured_us must be an object {\"op signature\": microseconds}");
  if (static_cast<int64_t>(value.size()) > L::kMaxGraphOps) {
    throw invalid_config(path, "measured_us has " + std::to_string(value.size()) + " entries; at most " +
                                   std::to_string(L::kMaxGraphOps) + " are supported");
  }
  std::map<std::string, double> table;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key().empty() || static_cast<int64_t>(it.key().size()) > L::kMaxStringChars) {
      throw invalid_config(path, "a measured_us key must be an op signature of 1 to " +
                                     std::to_string(L::kMaxStringChars) + " characters");
    }
    table[it.key()] = as_number(it.value(), join_path(path, it.key()), 0, L::kMaxLatency_us, true);
  }
  return table;
}

// One measured axis of a GEMM table: at least two sizes, strictly increasing.
std::vector<int64_t> read_gemm_axis(const ObjectReader& in, const char* key) {
  const std::string path = in.path_of(key);
  std::vector<int64_t> axis =
      as_integer_array(in.required(key, "measured sizes, increasing"), path, 64, 1, L::kMaxGraphDim);
  if (axis.size() < 2) throw invalid_config(path, std::string(key) + " needs at least two measured sizes");
  for (size_t i = 1; i < axis.size(); ++i) {
    if (axis[i] <= axis[i - 1])
      throw invalid_config(index_path(path, i), std::string(key) + " must be strictly increasing");
  }
  return axis;
}

// "gemm_table": {"m": [...], "n": [...], "k": [...], "TFLOPS": {"bf16": [[[k values] per n] per m]}}
// (gemm_table.h, docs/fidelity/gemm.md).
GemmTable read_gemm_table(const Json& value, const std::string& path) {
  ObjectReader in(value, path, {"m", "n", "k", "TFLOPS"});
  GemmTable table;
  table.m = read_gemm_axis(in, "m");
  table.n = read_gemm_axis(in, "n");
  table.k = read_gemm_axis(in, "k");
  const std::string tflops_path = in.path_of("TFLOPS");
  const Json& per_precision = in.required("TFLOPS", "measured TFLOP/s per precision");
  if (!per_precision.is_object() || per_precision.empty())
    throw invalid_config(tflops_path, "TFLOPS must be an object {\"bf16\": [[[...]]], ...} with a table");
  for (const auto& item : per_precision.items()) {
    const std::string p_path = join_path(tflops_path, item.key());
    const Precision precision =
        as_enum(Json(item.key()), p_path,
                {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16, Precision::Fp8});
    std::vector<double> values;
    const Json& rows_m = as_array(item.value(), p_path, table.m.size());
    if (rows_m.size() != table.m.size())
      throw invalid_config(p_path, "needs one row per m (" + std::to_string(table.m.size()) + ")");
    for (size_t i = 0; i < rows_m.size(); ++i) {
      const std::string i_path = index_path(p_path, i);
      const Json& rows_n = as_array(rows_m[i], i_path, table.n.size());
      if (rows_n.size() != table.n.size())
        throw invalid_config(i_path, "needs one row per n (" + std::to_string(table.n.size()) + ")");
      for (size_t j = 0; j < rows_n.size(); ++j) {
        const std::string j_path = index_path(i_path, j);
        const Json& row_k = as_array(rows_n[j], j_path, table.k.size());
        if (row_k.size() != table.k.size())
          throw invalid_config(j_path, "needs one value per k (" + std::to_string(table.k.size()) + ")");
        for (size_t l = 0; l < row_k.size(); ++l)
          values.push_back(as_number(row_k[l], index_path(j_path, l), 0, L::kMaxTFLOPS, true));
      }
    }
    table.TFLOPS[precision] = std::move(values);
  }
  return table;
}

// One kernel's curves of an attention table: one positive TFLOP/s per measured length.
std::vector<double> read_attention_curve(const ObjectReader& in, const char* key, size_t lengths) {
  const std::string path = in.path_of(key);
  const Json& values = as_array(in.required(key, "one TFLOP/s per sequence length"), path, lengths);
  if (values.size() != lengths)
    throw invalid_config(path, "needs one value per sequence length (" + std::to_string(lengths) + ")");
  std::vector<double> curve;
  for (size_t i = 0; i < values.size(); ++i)
    curve.push_back(as_number(values[i], index_path(path, i), 0, L::kMaxTFLOPS, true));
  return curve;
}

// "attention_table": {"head_dim": 128, "reference": "cudnn", "seq": [...], "level_seq": 16384,
// "TFLOPS": {"fa2": {"forward_causal": [...], "forward": [...], "backward": [...]}, ...}}
// (attention_table.h); "forward" and "backward" optional.
AttentionTable read_attention_table(const Json& value, const std::string& path) {
  ObjectReader in(value, path, {"head_dim", "reference", "seq", "level_seq", "TFLOPS"});
  AttentionTable table;
  table.head_dim = in.required_integer("head_dim", 1, L::kMaxGraphDim, "the measured head dimension");
  const std::initializer_list<AttentionKernel> kernels = {AttentionKernel::Cudnn, AttentionKernel::Fa2,
                                                          AttentionKernel::Fa3};
  table.reference = as_enum(in.required("reference", "the kernel attention_efficiency stands for"),
                            in.path_of("reference"), kernels);
  table.seq = read_gemm_axis(in, "seq");
  if (in.has("level_seq")) {
    table.level_seq = in.required_integer("level_seq", 1, L::kMaxGraphDim,
                                          "the length at which attention_efficiency holds");
    if (table.level_seq < table.seq.front() || table.level_seq > table.seq.back())
      throw invalid_config(in.path_of("level_seq"), "level_seq must lie within the measured lengths " +
                                                        std::to_string(table.seq.front()) + ".." +
                                                        std::to_string(table.seq.back()));
  }
  const std::string tflops_path = in.path_of("TFLOPS");
  const Json& per_kernel = in.required("TFLOPS", "measured TFLOP/s per kernel");
  if (!per_kernel.is_object() || per_kernel.empty())
    throw invalid_config(tflops_path, "TFLOPS must be an object {\"cudnn\": {...}, \"fa2\": {...}}");
  for (const auto& item : per_kernel.items()) {
    const std::string k_path = join_path(tflops_path, item.key());
    const AttentionKernel kernel = as_enum(Json(item.key()), k_path, kernels);
    ObjectReader curves(item.value(), k_path, {"forward_causal", "forward", "backward"});
    // A source may measure the causal forward only (cudnn-frontend's Blackwell sweep): the
    // other curves are then optional, and the causal forward stands for them (attention_table.h).
    const auto optional_curve = [&](const char* key) {
      return curves.has(key) ? read_attention_curve(curves, key, table.seq.size()) : std::vector<double>{};
    };
    table.TFLOPS[kernel] = {read_attention_curve(curves, "forward_causal", table.seq.size()),
                            optional_curve("forward"), optional_curve("backward")};
  }
  if (!table.TFLOPS.count(table.reference))
    throw invalid_config(in.path_of("reference"), std::string("the reference kernel \"") +
                                                      to_string(table.reference) +
                                                      "\" needs its own curves in TFLOPS");
  return table;
}

// A measured TFLOP/s per precision ("max_achievable_TFLOPS", "sustained_TFLOPS"): positive numbers.
std::map<Precision, double> read_TFLOPS_by_precision(const ObjectReader& gpu, const char* key) {
  ObjectReader in(gpu.at(key), gpu.path_of(key), {"fp32", "tf32", "fp16", "bf16", "fp8"});
  std::map<Precision, double> out;
  for (const Precision p :
       {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16, Precision::Fp8})
    if (in.has(to_string(p)))
      out[p] = as_number(in.at(to_string(p)), in.path_of(to_string(p)), 0, L::kMaxTFLOPS, true);
  return out;
}

GpuSpec read_gpu(const Json& value, const std::string& path) {
  ObjectReader in(value, path,
                  {"name",
                   "memory_GiB",
                   "hbm_GBps",
                   "sm_count",
                   "peak_TFLOPS",
                   "gemm_max_efficiency",
                   "gemm_tile_m",
                   "gemm_tile_n",
                   "attention_efficiency",
                   "memory_bound_efficiency",
                   "kernel_launch_us",
                   "compute_slowdown_with_comm",
                   "comm_slowdown_with_compute",
                   "compute_throughput_fraction",
                   "measured_us",
                   "gemm_table",
                   "max_achievable_TFLOPS",
                   "sustained_TFLOPS",
                   "mxfp8_gemm_slowdown",
                   "attention_table"});
  const std::string why = "a GPU needs it";
  GpuSpec gpu;
  gpu.name = in.string("name", "");
  gpu.memory_GiB =
      as_number(in.required("memory_GiB", why), in.path_of("memory_GiB"), 0, L::kMaxMemory_GiB, true);
  gpu.hbm_GBps =
      as_number(in.required("hbm_GBps", why), in.path_of("hbm_GBps"), 0, L::kMaxBandwidth_GBps, true);
  gpu.sm_count = static_cast<int>(in.required_integer("sm_count", 1, L::kMaxSmCount, why));
  {
    ObjectReader peak(in.required("peak_TFLOPS", "dense peak per precision"), in.path_of("peak_TFLOPS"),
                      {"fp32", "tf32", "fp16", "bf16", "fp8"});
    gpu.peak_fp32_TFLOPS =
        as_number(peak.required("fp32", "every GPU has an fp32 peak, the fallback of the others"),
                  peak.path_of("fp32"), 0, L::kMaxTFLOPS, true);
    gpu.peak_tf32_TFLOPS = peak.number("tf32", 0, 0, L::kMaxTFLOPS);
    gpu.peak_fp16_TFLOPS = peak.number("fp16", 0, 0, L::kMaxTFLOPS);
    gpu.peak_bf16_TFLOPS = peak.number("bf16", 0, 0, L::kMaxTFLOPS);
    gpu.peak_fp8_TFLOPS = peak.number("fp8", 0, 0, L::kMaxTFLOPS);
  }
  const GpuSpec defaults;
  gpu.gemm_max_efficiency = in.number("gemm_max_efficiency", defaults.gemm_max_efficiency, 0, 1, true);
  gpu.gemm_tile_m = static_cast<int>(in.integer("gemm_tile_m", defaults.gemm_tile_m, 1, L::kMaxTile));
  gpu.gemm_tile_n = static_cast<int>(in.integer("gemm_tile_n", defaults.gemm_tile_n, 1, L::kMaxTile));
  gpu.attention_efficiency = in.number("attention_efficiency", defaults.attention_efficiency, 0, 1, true);
  gpu.memory_bound_efficiency =
      in.number("memory_bound_efficiency", defaults.memory_bound_efficiency, 0, 1, true);
  gpu.kernel_launch_us = in.number("kernel_launch_us", defaults.kernel_launch_us, 0, L::kMaxLatency_us);
  gpu.compute_slowdown_with_comm =
      in.number("compute_slowdown_with_comm", defaults.compute_slowdown_with_comm, 1, L::kMaxSlowdown);
  gpu.comm_slowdown_with_compute =
      in.number("comm_slowdown_with_compute", defaults.comm_slowdown_with_compute, 1, L::kMaxSlowdown);
  gpu.compute_throughput_fraction =
      in.number("compute_throughput_fraction", defaults.compute_throughput_fraction, 0, 1, true);
  gpu.mxfp8_gemm_slowdown =
      in.number("mxfp8_gemm_slowdown", defaults.mxfp8_gemm_slowdown, 1, L::kMaxSlowdown);
  if (in.has("measured_us"))
    gpu.measured_us = read_measured_us(in.at("measured_us"), in.path_of("measured_us"));
  if (in.has("max_achievable_TFLOPS"))
    gpu.max_achievable_TFLOPS = read_TFLOPS_by_precision(in, "max_achievable_TFLOPS");
  if (in.has("sustained_TFLOPS")) gpu.sustained_TFLOPS = read_TFLOPS_by_precision(in, "sustained_TFLOPS");
  if (in.has("gemm_table")) gpu.gemm_table = read_gemm_table(in.at("gemm_table"), in.path_of("gemm_table"));
  if (in.has("attention_table"))
    gpu.attention_table = read_attention_table(in.at("attention_table"), in.path_of("attention_table"));
  return gpu;
}

std::vector<std::vector<int>> read_links(const Json& value, const std::string& path, int gpus_per_node) {
  const std::string size = std::to_string(gpus_per_node);
  const Json& rows = as_array(value, path, static_cast<size_t>(L::kMaxGpusPerNode));
  if (rows.size() != static_cast<size_t>(gpus_per_node)) {
    throw invalid_config(path, "links must be a " + size + "x" + size + " matrix (gpus_per_node=" + size +
                                   "), got " + std::to_string(rows.size()) + " rows");
  }
  std::vector<std::vector<int>> links;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<int64_t> row = as_integer_array(
        rows[i], index_path(path, i), static_cast<size_t>(L::kMaxGpusPerNode), 0, L::kMaxLinksPerPair);
    if (row.size() != rows.size()) {
      throw invalid_config(index_path(path, i), "row " + std::to_string(i) + " of links has " +
                                                    std::to_string(row.size()) + " entries, expected " +
                                                    size);
    }
    links.emplace_back(row.begin(), row.end());
  }
  for (size_t i = 0; i < links.size(); ++i) {
    if (links[i][i] != 0) {
      throw invalid_config(index_path(index_path(path, i), i), "a GPU has no links to itself: links[" +
                                                                   std::to_string(i) + "][" +
                                                                   std::to_string(i) + "] must be 0");
    }
    for (size_t j = i + 1; j < links.size(); ++j) {
      if (links[i][j] != links[j][i]) {
        throw invalid_config(index_path(index_path(path, i), j),
                             "links must be symmetric: links[" + std::to_string(i) + "][" +
                                 std::to_string(j) + "]=" + std::to_string(links[i][j]) + " but links[" +
                                 std::to_string(j) + "][" + std::to_string(i) +
                                 "]=" + std::to_string(links[j][i]));
      }
    }
  }
  return links;
}

// "collective_efficiency": {"members": [2, 4, 8], "all_reduce": [...], "all_gather": [...],
// "reduce_scatter": [...], "all_to_all": [...], "send_recv": e} (cluster_spec.h).
// Group sizes may exceed gpus_per_node: a table measured on 8-GPU nodes stays valid when a
// config overrides gpus_per_node (lookups clamp to the listed sizes).
NodeCollectiveEfficiency read_collective_efficiency(const Json& value, const std::string& path) {
  ObjectReader in(value, path,
                  {"members", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"});
  NodeCollectiveEfficiency table;
  const std::vector<int64_t> members =
      as_integer_array(in.required("members", "the group sizes the efficiencies belong to"),
                       in.path_of("members"), static_cast<size_t>(L::kMaxGpusPerNode), 2, L::kMaxGpusPerNode);
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0 && members[i] <= members[i - 1])
      throw invalid_config(index_path(in.path_of("members"), i), "members must be strictly ascending");
    table.members.push_back(static_cast<int>(members[i]));
  }
  auto read_kind = [&](const char* key, std::vector<double>& out) {
    const std::string kind_path = in.path_of(key);
    const Json& values = as_array(in.required(key, "one efficiency per members entry"), kind_path,
                                  static_cast<size_t>(L::kMaxGpusPerNode));
    if (values.size() != table.members.size())
      throw invalid_config(
          kind_path, "needs one efficiency per members entry (" + std::to_string(table.members.size()) + ")");
    for (size_t i = 0; i < values.size(); ++i)
      out.push_back(as_number(values[i], index_path(kind_path, i), 0, 1, true));
  };
  for (auto [key, out] :
       {std::pair{"all_reduce", &table.all_reduce}, std::pair{"all_gather", &table.all_gather},
        std::pair{"reduce_scatter", &table.reduce_scatter}, std::pair{"all_to_all", &table.all_to_all}})
    if (!table.members.empty() || in.has(key)) read_kind(key, *out);
  table.send_recv = in.number("send_recv", 0, 0, 1);
  return table;
}

IntraNodeSpec read_intra_node(const Json& value, const std::string& path, int gpus_per_node) {
  ObjectReader in(value, path,
                  {"kind", "link_GBps", "links", "bus_efficiency", "latency_us", "pcie_GBps", "pcie_fanout",
                   "cpu_link_GBps", "pcie_latency_us", "collective_efficiency", "nvls"});
  IntraNodeSpec node;
  node.kind = as_enum(in.required("kind", "nvswitch, nvlink-mesh or pcie-tree"), in.path_of("kind"),
                      {IntraNodeKind::NvSwitch, IntraNodeKind::NvLinkMesh, IntraNodeKind::PcieTree});
  const IntraNodeSpec defaults;
  if (node.kind == IntraNodeKind::PcieTree) {
    node.link_GBps = in.number("link_GBps", 0, 0, L::kMaxBandwidth_GBps);
  } else {
    node.link_GBps = as_number(in.required("link_GBps", "NVLink bandwidth per direction"),
                               in.path_of("link_GBps"), 0, L::kMaxBandwidth_GBps, true);
  }
  if (node.kind == IntraNodeKind::NvLinkMesh) {
    node.links =
        read_links(in.required("links", "an nvlink-mesh node lists the links between each pair of GPUs"),
                   in.path_of("links"), gpus_per_node);
  } else if (in.has("links")) {
    if (!as_array(in.at("links"), in.path_of("links"), static_cast<size_t>(L::kMaxGpusPerNode)).empty()) {
      throw invalid_config(in.path_of("links"), "links applies only to intra_node.kind \"nvlink-mesh\"");
    }
  }
  node.bus_efficiency = in.number("bus_efficiency", defaults.bus_efficiency, 0, 1, true);
  node.latency_us = in.number("latency_us", defaults.latency_us, 0, L::kMaxLatency_us);
  node.pcie_GBps = in.number("pcie_GBps", defaults.pcie_GBps, 0, L::kMaxBandwidth_GBps, true);
  if (node.kind == IntraNodeKind::PcieTree)
    in.required("pcie_fanout", "a pcie-tree node gives its switch fan-out");
  if (in.has("pcie_fanout")) {
    std::vector<int64_t> fanout =
        as_integer_array(in.at("pcie_fanout"), in.path_of("pcie_fanout"), 3, 1, L::kMaxGpusPerNode);
    if (!fanout.empty()) {
      if (fanout.size() != 3 || fanout[0] * fanout[1] * fanout[2] != gpus_per_node) {
        throw invalid_config(in.path_of("pcie_fanout"),
                             "pcie_fanout must be [GPUs per PCIe switch, switches per CPU root, CPU roots] "
                             "whose product is gpus_per_node=" +
                                 std::to_string(gpus_per_node));
      }
      node.pcie_fanout.assign(fanout.begin(), fanout.end());
    }
  }
  if (node.kind == IntraNodeKind::PcieTree && node.pcie_fanout.empty()) {
    throw invalid_config(
        in.path_of("pcie_fanout"),
        "a pcie-tree node needs pcie_fanout [GPUs per PCIe switch, switches per CPU root, CPU roots]");
  }
  node.cpu_link_GBps = in.number("cpu_link_GBps", 0, 0, L::kMaxBandwidth_GBps);
  if (node.kind == IntraNodeKind::PcieTree && node.pcie_fanout[2] > 1 && node.cpu_link_GBps <= 0) {
    throw invalid_config(in.path_of("cpu_link_GBps"),
                         "cpu_link_GBps must be greater than 0: GPUs under different CPU roots talk over it");
  }
  node.pcie_latency_us = in.number("pcie_latency_us", defaults.pcie_latency_us, 0, L::kMaxLatency_us);
  if (in.has("collective_efficiency"))
    node.collective_efficiency =
        read_collective_efficiency(in.at("collective_efficiency"), in.path_of("collective_efficiency"));
  node.nvls = in.boolean("nvls", false);
  if (node.nvls && node.kind != IntraNodeKind::NvSwitch)
    throw invalid_config(in.path_of("nvls"), "nvls (NVLink SHARP) needs intra_node.kind \"nvswitch\"");
  return node;
}

InterNodeSpec read_inter_node(const Json& value, const std::string& path, int nodes) {
  ObjectReader in(
      value, path,
      {"nics_per_node", "nic_GBps", "latency_us", "bus_efficiency", "oversubscription", "nodes_per_leaf"});
  const InterNodeSpec defaults;
  InterNodeSpec net;
  net.nics_per_node =
      static_cast<int>(in.integer("nics_per_node", defaults.nics_per_node, 0, L::kMaxGpusPerNode));
  if (nodes > 1 && net.nics_per_node == 0) {
    throw invalid_config(in.path_of("nics_per_node"),
                         "a cluster of " + std::to_string(nodes) + " nodes needs at least one NIC per node");
  }
  net.nic_GBps = in.number("nic_GBps", defaults.nic_GBps, 0, L::kMaxBandwidth_GBps, true);
  net.latency_us = in.number("latency_us", defaults.latency_us, 0, L::kMaxLatency_us);
  net.bus_efficiency = in.number("bus_efficiency", defaults.bus_efficiency, 0, 1, true);
  net.oversubscription = in.number("oversubscription", defaults.oversubscription, 1, L::kMaxOversubscription);
  net.nodes_per_leaf =
      static_cast<int>(in.integer("nodes_per_leaf", defaults.nodes_per_leaf, 0, L::kMaxGpus));
  return net;
}

// "collectives": the collective library's own cost per call (NCCL's tuning model).
CollectiveSpec read_collectives(const Json& value, const std::string& path) {
  ObjectReader in(value, path, {"base_latency_us"});
  const CollectiveSpec defaults;
  CollectiveSpec c;
  c.base_latency_us = in.number("base_latency_us", defaults.base_latency_us, 0, L::kMaxLatency_us);
  return c;
}

}  // namespace

ClusterSpec read_cluster(const Json& value, const std::string& path) {
  if (!value.is_object()) {
    throw invalid_config(path, "cluster must be a preset name or an object, got " + describe(value));
  }
  ObjectReader in(value, path,
                  {"name", "nodes", "gpus_per_node", "gpu", "intra_node", "inter_node", "collectives"});
  ClusterSpec cluster;
  cluster.name = in.string("name", "");
  cluster.nodes = static_cast<int>(in.integer("nodes", 1, 1, L::kMaxGpus));
  cluster.gpus_per_node = static_cast<int>(in.integer("gpus_per_node", 8, 1, L::kMaxGpusPerNode));
  int64_t gpus = int64_t{cluster.nodes} * cluster.gpus_per_node;
  if (gpus > L::kMaxGpus) {
    throw invalid_config(in.path_of("nodes"), "the cluster has " + std::to_string(gpus) + " GPUs (" +
                                                  std::to_string(cluster.nodes) + " nodes x " +
                                                  std::to_string(cluster.gpus_per_node) + "); at most " +
                                                  std::to_string(L::kMaxGpus) + " are supported");
  }
  cluster.gpu = read_gpu(in.required("gpu", "the GPU of every node"), in.path_of("gpu"));
  cluster.intra_node = read_intra_node(in.required("intra_node", "how GPUs within a node are connected"),
                                       in.path_of("intra_node"), cluster.gpus_per_node);
  cluster.inter_node = read_inter_node(in.has("inter_node") ? in.at("inter_node") : Json::object(),
                                       in.path_of("inter_node"), cluster.nodes);
  cluster.collectives = read_collectives(in.has("collectives") ? in.at("collectives") : Json::object(),
                                         in.path_of("collectives"));
  return cluster;
}

}  // namespace proteus::config_detail
