// Presets: every one parses, scenarios round-trip through config_to_json, and the constants
// match their published sources (REFERENCE.md section 3, vendor datasheets, model papers).
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include "proteus/config.h"
#include "proteus/error.h"
#include "proteus/presets.h"
#include "relative_approx.h"

using nlohmann::json;
using namespace proteus;

namespace {

// Field-by-field equality of two configs (the structs have no operator==).
bool same(const MoeSpec& a, const MoeSpec& b) {
  return a.experts == b.experts && a.top_k == b.top_k && a.expert_ffn_hidden == b.expert_ffn_hidden &&
         a.capacity_factor == b.capacity_factor && a.routing == b.routing && a.imbalance == b.imbalance &&
         a.shared_expert_ffn_hidden == b.shared_expert_ffn_hidden &&
         a.first_dense_layers == b.first_dense_layers && a.router_bias == b.router_bias;
}
bool same(const GraphOpSpec& a, const GraphOpSpec& b) {
  return a.name == b.name && a.type == b.type && a.in_features == b.in_features &&
         a.out_features == b.out_features && a.in_channels == b.in_channels &&
         a.out_channels == b.out_channels && a.kernel == b.kernel && a.stride == b.stride &&
         a.image == b.image && a.elements == b.elements && a.flops_per_sample == b.flops_per_sample &&
         a.bytes_per_sample == b.bytes_per_sample && a.params == b.params;
}
bool same(const ModelSpec& a, const ModelSpec& b) {
  bool ops = a.ops.size() == b.ops.size();
  for (size_t i = 0; ops && i < a.ops.size(); ++i) ops = same(a.ops[i], b.ops[i]);
  return ops && a.kind == b.kind && a.name == b.name && a.layers == b.layers && a.hidden == b.hidden &&
         a.heads == b.heads && a.kv_heads == b.kv_heads && a.ffn_hidden == b.ffn_hidden &&
         a.seq_len == b.seq_len && a.vocab == b.vocab && a.mlp == b.mlp && a.norm == b.norm &&
         a.tied_embeddings == b.tied_embeddings && a.bias == b.bias && a.dropout == b.dropout &&
         a.flash_attention == b.flash_attention && a.causal == b.causal &&
         a.learned_positions == b.learned_positions && a.type_vocab == b.type_vocab && a.pooler == b.pooler &&
         same(a.moe, b.moe) && a.head_dim == b.head_dim && a.qk_norm == b.qk_norm &&
         a.attention_sinks == b.attention_sinks && a.sliding_window == b.sliding_window &&
         a.full_attention_every == b.full_attention_every && a.mtp_layers == b.mtp_layers &&
         a.mla.q_lora_rank == b.mla.q_lora_rank && a.mla.kv_lora_rank == b.mla.kv_lora_rank &&
         a.mla.qk_nope_head_dim == b.mla.qk_nope_head_dim &&
         a.mla.qk_rope_head_dim == b.mla.qk_rope_head_dim && a.mla.v_head_dim == b.mla.v_head_dim &&
         a.arch == b.arch && a.image_size == b.image_size && a.channels == b.channels &&
         a.classes == b.classes && a.aux_logits == b.aux_logits && a.dense_features == b.dense_features &&
         a.bottom_mlp == b.bottom_mlp && a.top_mlp == b.top_mlp && a.tables == b.tables &&
         a.table_rows == b.table_rows && a.embedding_dim == b.embedding_dim &&
         a.lookups_per_table == b.lookups_per_table && a.input_elements == b.input_elements;
}
bool same(const ClusterSpec& a, const ClusterSpec& b) {
  const GpuSpec &g = a.gpu, &h = b.gpu;
  const IntraNodeSpec &n = a.intra_node, &m = b.intra_node;
  const InterNodeSpec &e = a.inter_node, &f = b.inter_node;
  return a.name == b.name && a.nodes == b.nodes && a.gpus_per_node == b.gpus_per_node && g.name == h.name &&
         g.memory_GiB == h.memory_GiB && g.hbm_GBps == h.hbm_GBps && g.sm_count == h.sm_count &&
         g.peak_fp32_TFLOPS == h.peak_fp32_TFLOPS && g.peak_tf32_TFLOPS == h.peak_tf32_TFLOPS &&
         g.peak_fp16_TFLOPS == h.peak_fp16_TFLOPS && g.peak_bf16_TFLOPS == h.peak_bf16_TFLOPS &&
         g.peak_fp8_TFLOPS == h.peak_fp8_TFLOPS && g.gemm_max_efficiency == h.gemm_max_efficiency &&
         g.gemm_tile_m == h.gemm_tile_m && g.gemm_tile_n == h.gemm_tile_n &&
         g.attention_efficiency == h.attention_efficiency &&
         g.memory_bound_efficiency == h.memory_bound_efficiency && g.kernel_launch_us == h.kernel_launch_us &&
         g.compute_slowdown_with_comm == h.compute_slowdown_with_comm &&
         g.comm_slowdown_with_compute == h.comm_slowdown_with_compute && n.kind == m.kind &&
         n.link_GBps == m.link_GBps && n.links == m.links && n.bus_efficiency == m.bus_efficiency &&
         n.latency_us == m.latency_us && n.pcie_GBps == m.pcie_GBps && n.pcie_fanout == m.pcie_fanout &&
         n.cpu_link_GBps == m.cpu_link_GBps && n.pcie_latency_us == m.pcie_latency_us &&
         e.nics_per_node == f.nics_per_node && e.nic_GBps == f.nic_GBps && e.latency_us == f.latency_us &&
         e.bus_efficiency == f.bus_efficiency && e.oversubscription == f.oversubscription &&
         e.nodes_per_leaf == f.nodes_per_leaf;
}
bool same(const StrategySpec& a, const StrategySpec& b) {
  bool overrides = a.overrides.size() == b.overrides.size();
  for (size_t i = 0; overrides && i < a.overrides.size(); ++i) {
    const OverrideSpec &x = a.overrides[i], &y = b.overrides[i];
    overrides = x.path == y.path && x.map == y.map && x.recompute == y.recompute && x.stage == y.stage;
  }
  return overrides && a.dp == b.dp && a.tp == b.tp && a.pp == b.pp && a.cp == b.cp && a.ep == b.ep &&
         a.micro_batch == b.micro_batch && a.schedule == b.schedule && a.virtual_stages == b.virtual_stages &&
         a.sequence_parallel == b.sequence_parallel && a.zero == b.zero && a.recompute == b.recompute &&
         a.overlap_grad_reduce == b.overlap_grad_reduce && a.overlap_param_gather == b.overlap_param_gather &&
         a.grad_bucket_MB == b.grad_bucket_MB && a.stage_layers == b.stage_layers;
}
bool same(const Config& a, const Config& b) {
  return a.name == b.name && same(a.model, b.model) && same(a.cluster, b.cluster) &&
         a.training.global_batch == b.training.global_batch && a.training.seq_len == b.training.seq_len &&
         a.training.precision == b.training.precision && a.training.optimizer == b.training.optimizer &&
         same(a.strategy, b.strategy) && a.simulation.symmetry == b.simulation.symmetry &&
         a.simulation.max_tasks == b.simulation.max_tasks &&
         a.simulation.max_events == b.simulation.max_events &&
         a.simulation.max_timeline_spans == b.simulation.max_timeline_spans;
}

Config scenario(const std::string& name) { return parse_config("{\"preset\": \"" + name + "\"}"); }

// A one-node cluster preset under data parallelism over its GPUs, to parse a model preset alone.
Config model_on_one_node(const std::string& model) {
  return parse_config(R"({"model": ")" + model +
                      R"(", "cluster": "dgx-h100", "training": {"global_batch": 8}, "strategy": {"dp": 8}})");
}

Config cluster_with_small_model(const std::string& cluster) {
  // One node of the preset, data parallel over its GPUs (8, or 72 for an NVL72 rack).
  const Preset* p = find_preset(PresetKind::Cluster, cluster);
  const int gpus = p ? json::parse(p->json).value("gpus_per_node", 8) : 8;
  Config probe = parse_config(R"({"model": "gpt2-small", "cluster": ")" + cluster +
                              R"(", "training": {"global_batch": )" + std::to_string(gpus) +
                              R"(}, "strategy": {"dp": )" + std::to_string(gpus) + "}}");
  return probe;
}

// Parameters of a dense or MoE decoder built from the preset's fields: per layer attention
// q,o (h x h) + k,v (h x h*kv/heads), MLP (2 matrices for GELU, 3 for SwiGLU, per expert),
// router (h x experts), 2 norms; plus embeddings (x2 when untied) and a final norm. No biases
// (the Llama-family presets have none).
double llama_params(const ModelSpec& m) {
  const double h = m.hidden, kv = h * m.kv_heads / m.heads;
  const double experts = m.moe.experts > 0 ? m.moe.experts : 1;
  const double ffn = m.moe.experts > 0 ? m.moe.expert_ffn_hidden : m.ffn_hidden;
  const double per_layer =
      2 * h * h + 2 * h * kv + experts * 3 * h * ffn + (m.moe.experts > 0 ? h * experts : 0) + 2 * h;
  return m.layers * per_layer + (m.tied_embeddings ? 1 : 2) * m.vocab * h + h;
}

}  // namespace

TEST_CASE("presets: the embedded set holds every documented preset") {
  for (const char* name : {"gpt1", "gpt2-small", "gpt2-1.5b", "gpt3-1.3b", "gpt3-175b", "bert-large",
                           "llama2-7b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
                           "mixtral-8x7b", "alexnet", "vgg19", "resnet50", "inception-v3", "dlrm"}) {
    INFO(std::string(name));
    CHECK(find_preset(PresetKind::Model, name) != nullptr);
  }
  for (const char* name : {"dgx1-v100-1ib", "dgx1-v100-2ib", "gtx1080ti-1ib", "titanxp-pcie", "dgx-a100-40g",
                           "dgx-a100-80g", "dgx-h100", "dgx-h200", "dgx-b200", "mi300x-8"}) {
    INFO(std::string(name));
    CHECK(find_preset(PresetKind::Cluster, name) != nullptr);
  }
  for (const char* name : {"default", "gpt3-175b-megatron", "gpt2-1.5b-proteus", "gpt-12l-dp32",
                           "alexnet-hybrid", "dlrm-table-parallel", "mixtral-8x7b-ep", "llama3-405b-16k"}) {
    INFO(std::string(name));
    CHECK(find_preset(PresetKind::Scenario, name) != nullptr);
  }
  CHECK(find_preset(PresetKind::Model, "dgx-h100") == nullptr);  // a cluster, not a model
  CHECK(find_preset(PresetKind::Model, "nope") == nullptr);
}

TEST_CASE("presets: every preset parses, and every scenario round-trips through config_to_json") {
  for (const Preset& preset : embedded_presets()) {
    INFO(preset.name);
    CHECK_NOTHROW(json::parse(preset.json));
    if (preset.kind == PresetKind::Model) {
      CHECK_NOTHROW(model_on_one_node(preset.name));
    } else if (preset.kind == PresetKind::Cluster) {
      CHECK_NOTHROW(cluster_with_small_model(preset.name));
    } else {
      Config config = scenario(preset.name);
      std::string text = config_to_json(config);
      Config again = parse_config(text);
      CHECK(same(config, again));
      CHECK(config_to_json(again) == text);
      CHECK(json::parse(text).at("schema") == 1);
    }
  }
}

TEST_CASE("presets: graph models and overrides round-trip too") {
  Config config = parse_config(R"({"model": {"kind": "graph", "input_elements": 784, "ops": [
      {"name": "fc1", "type": "linear", "in_features": 784, "out_features": 1024},
      {"name": "conv", "type": "conv2d", "in_channels": 1, "out_channels": 4, "kernel": 3, "stride": 2, "image": 32},
      {"name": "act", "type": "elementwise", "elements": 1024},
      {"name": "odd", "type": "custom", "flops_per_sample": 1.5e6, "bytes_per_sample": 4096, "params": 10}]},
    "cluster": "dgx-h100", "training": {"global_batch": 16, "precision": "fp8"},
    "strategy": {"dp": 4, "pp": 2, "stage_layers": [3, 1], "zero": 3, "framework": "fsdp",
                 "overlap_param_gather": false,
                 "overrides": [{"path": "fc1", "map": {"dp": null, "tp": "out"}, "stage": 0, "recompute": "full"}]},
    "simulation": {"symmetry": false, "max_timeline_spans": 0}})");
  Config again = parse_config(config_to_json(config, -1));
  CHECK(same(config, again));
}

TEST_CASE("presets: GPU facts (REFERENCE.md section 3 and datasheets)") {
  auto gpu = [](const char* cluster) { return cluster_with_small_model(cluster).cluster.gpu; };
  GpuSpec v100 = gpu("dgx1-v100-1ib"), a100_40 = gpu("dgx-a100-40g"), a100 = gpu("dgx-a100-80g"),
          h100 = gpu("dgx-h100"), h200 = gpu("dgx-h200"), b200 = gpu("dgx-b200"), mi300x = gpu("mi300x-8"),
          gtx = gpu("gtx1080ti-1ib"), titan = gpu("titanxp-pcie");
  CHECK(v100.peak_TFLOPS(Precision::Fp16) == 125);
  CHECK(v100.memory_GiB == 32);
  CHECK(v100.hbm_GBps == 900);
  CHECK(a100.peak_TFLOPS(Precision::Bf16) == 312);
  CHECK(a100.peak_TFLOPS(Precision::Fp32) == 19.5);
  CHECK(a100.memory_GiB == 80);
  CHECK(a100.hbm_GBps == 2039);
  CHECK(a100_40.memory_GiB == 40);
  CHECK(a100_40.hbm_GBps == 1555);
  CHECK(h100.peak_TFLOPS(Precision::Bf16) == doctest::Approx(989.4));
  CHECK(h100.memory_GiB == 80);
  CHECK(h100.hbm_GBps == 3350);
  CHECK(h200.peak_TFLOPS(Precision::Bf16) == doctest::Approx(989.4));
  CHECK(h200.memory_GiB == 141);
  CHECK(h200.hbm_GBps == 4800);
  CHECK(h200.gemm_max_efficiency ==
        proteus::test::approx(790.0 / 989.4).epsilon(0.02));  // measured 8192^3 GEMM
  CHECK(h200.memory_bound_efficiency == proteus::test::approx(4.3 / 4.8).epsilon(0.01));  // measured copy
  CHECK(b200.peak_TFLOPS(Precision::Bf16) == 2250);
  CHECK(b200.hbm_GBps == 8000);
  CHECK(mi300x.peak_TFLOPS(Precision::Bf16) == doctest::Approx(1307.4));
  CHECK(mi300x.memory_GiB == 192);
  CHECK(mi300x.hbm_GBps == 5300);
  CHECK(gtx.peak_TFLOPS(Precision::Fp32) == proteus::test::approx(11.3).epsilon(0.01));
  CHECK(gtx.memory_GiB == 11);
  CHECK(gtx.hbm_GBps == 484);
  CHECK(titan.peak_TFLOPS(Precision::Fp32) == proteus::test::approx(12.1).epsilon(0.01));
  CHECK(titan.memory_GiB == 12);
  // Proteus's interference factors: 1.1 on V100 clusters, 1.3 on PCIe-only GTX 1080 Ti / Titan Xp.
  CHECK(v100.compute_slowdown_with_comm == 1.1);
  CHECK(gtx.compute_slowdown_with_comm == 1.3);
  CHECK(titan.compute_slowdown_with_comm == 1.3);
  // Calibration stays within the published ranges: large GEMMs 70-85% of peak on NVIDIA GPUs.
  for (const GpuSpec* g : {&v100, &a100, &h100, &h200, &b200}) {
    CHECK(g->gemm_max_efficiency >= 0.7);
    CHECK(g->gemm_max_efficiency <= 0.85);
  }
}

TEST_CASE("presets: peak fallback to a wider precision") {
  GpuSpec v100 = cluster_with_small_model("dgx1-v100-1ib").cluster.gpu;
  CHECK(v100.peak_TFLOPS(Precision::Bf16) == 125);   // no bf16 units: fp16 tensor cores
  CHECK(v100.peak_TFLOPS(Precision::Fp8) == 125);    // fp8 -> bf16 -> fp16
  CHECK(v100.peak_TFLOPS(Precision::Tf32) == 15.7);  // no tf32: fp32
  GpuSpec gtx = cluster_with_small_model("gtx1080ti-1ib").cluster.gpu;
  CHECK(gtx.peak_TFLOPS(Precision::Fp16) == gtx.peak_fp32_TFLOPS);  // no fast fp16 on consumer Pascal
  CHECK(gtx.peak_TFLOPS(Precision::Bf16) == gtx.peak_fp32_TFLOPS);
  GpuSpec a100 = cluster_with_small_model("dgx-a100-80g").cluster.gpu;
  CHECK(a100.peak_TFLOPS(Precision::Fp8) == 312);  // no fp8 on Ampere
  CHECK(a100.peak_TFLOPS(Precision::Tf32) == 156);
  GpuSpec h100 = cluster_with_small_model("dgx-h100").cluster.gpu;
  CHECK(h100.peak_TFLOPS(Precision::Fp8) ==
        proteus::test::approx(2 * 989.4).epsilon(0.001));  // fp8 doubles bf16
}

TEST_CASE("presets: interconnect facts") {
  auto cluster = [](const char* name) { return cluster_with_small_model(name).cluster; };
  // NVLink per GPU per direction: V100 6 x 25 = 150, A100 300, H100/H200 450, B200 900 GB/s.
  ClusterSpec dgx1 = cluster("dgx1-v100-1ib");
  CHECK(dgx1.intra_node.kind == IntraNodeKind::NvLinkMesh);
  REQUIRE(dgx1.intra_node.links.size() == 8);
  for (int i = 0; i < 8; ++i) {
    int links = 0;
    for (int j = 0; j < 8; ++j) links += dgx1.intra_node.links[i][j];
    CHECK(links == 6);  // six NVLink2 ports per V100
    CHECK(links * dgx1.intra_node.link_GBps == 150);
    CHECK(dgx1.intra_node.links[i][i ^ 4] >= 1);  // the cross links 0-4, 1-5, 2-6, 3-7
  }
  // Each quad (0-3, 4-7) is fully connected.
  for (int q = 0; q < 8; q += 4)
    for (int i = q; i < q + 4; ++i)
      for (int j = q; j < q + 4; ++j) CHECK((i == j || dgx1.intra_node.links[i][j] >= 1));
  ClusterSpec dgx1_2ib = cluster("dgx1-v100-2ib");
  CHECK(dgx1_2ib.intra_node.links == dgx1.intra_node.links);
  CHECK(dgx1.inter_node.nics_per_node == 1);
  CHECK(dgx1_2ib.inter_node.nics_per_node == 2);
  CHECK(dgx1.inter_node.nic_GBps == 12.5);  // EDR 100 Gb/s
  CHECK(cluster("dgx-a100-80g").intra_node.link_GBps == 300);
  CHECK(cluster("dgx-h100").intra_node.link_GBps == 450);
  CHECK(cluster("dgx-h200").intra_node.link_GBps == 450);
  CHECK(cluster("dgx-b200").intra_node.link_GBps == 900);
  CHECK(cluster("dgx-a100-80g").inter_node.nics_per_node == 8);
  CHECK(cluster("dgx-a100-80g").inter_node.nic_GBps == 25);  // HDR 200 Gb/s
  CHECK(cluster("dgx-h100").inter_node.nics_per_node == 8);
  CHECK(cluster("dgx-h100").inter_node.nic_GBps == 50);  // NDR 400 Gb/s
  ClusterSpec gtx = cluster("gtx1080ti-1ib");
  CHECK(gtx.intra_node.kind == IntraNodeKind::PcieTree);
  CHECK(gtx.intra_node.pcie_GBps == 15.75);                     // PCIe 3.0 x16
  CHECK(gtx.inter_node.nic_GBps == 7);                          // FDR 56 Gb/s
  CHECK(cluster("titanxp-pcie").inter_node.nic_GBps == 0.125);  // 1 GbE
  // NCCL per-hop latencies: NVLink 3.4 us, PCIe 5.7 us, network 9.6 us.
  CHECK(dgx1.intra_node.latency_us == 3.4);
  CHECK(gtx.intra_node.latency_us == 5.7);
  CHECK(dgx1.inter_node.latency_us == 9.6);
  for (const Preset& preset : embedded_presets()) {
    if (preset.kind != PresetKind::Cluster) continue;
    INFO(preset.name);
    ClusterSpec c = cluster(preset.name.c_str());
    CHECK(c.nodes == 1);  // node count is the user's choice
    CHECK(c.intra_node.bus_efficiency >= 0.65);
    CHECK(c.intra_node.bus_efficiency <= 0.8);
    CHECK(c.inter_node.bus_efficiency == 0.9);
  }
}

TEST_CASE("presets: model facts from the papers") {
  ModelSpec gpt3 = model_on_one_node("gpt3-175b").model;
  CHECK(gpt3.layers == 96);
  CHECK(gpt3.hidden == 12288);
  CHECK(gpt3.heads == 96);
  // 12*l*h^2 weights in the layers + V*h embeddings = 173.9B + 0.63B: "175B"
  double gpt3_params = 12.0 * gpt3.layers * gpt3.hidden * gpt3.hidden + double(gpt3.vocab) * gpt3.hidden;
  CHECK(gpt3_params == proteus::test::approx(175e9).epsilon(0.01));
  // Published sizes: Llama 3 8B has 8.03B parameters, 70B 70.6B, 405B 405.9B (Meta model cards),
  // Llama 2 7B 6.74B, Mixtral 8x7B 46.7B total.
  CHECK(llama_params(model_on_one_node("llama3-8b").model) == proteus::test::approx(8.03e9).epsilon(0.005));
  CHECK(llama_params(model_on_one_node("llama3-70b").model) == proteus::test::approx(70.6e9).epsilon(0.005));
  CHECK(llama_params(model_on_one_node("llama3-405b").model) ==
        proteus::test::approx(405.9e9).epsilon(0.005));
  CHECK(llama_params(model_on_one_node("llama2-7b").model) == proteus::test::approx(6.74e9).epsilon(0.005));
  CHECK(llama_params(model_on_one_node("llama2-70b").model) == proteus::test::approx(69.0e9).epsilon(0.005));
  ModelSpec mixtral = model_on_one_node("mixtral-8x7b").model;
  CHECK(llama_params(mixtral) == proteus::test::approx(46.7e9).epsilon(0.005));
  CHECK(mixtral.moe.top_k == 2);
  ModelSpec bert = model_on_one_node("bert-large").model;
  CHECK_FALSE(bert.causal);
  CHECK(bert.type_vocab == 2);
  CHECK(bert.pooler);
  // REFERENCE.md section 1 settings of the original Proteus evaluation
  ModelSpec gpt1 = model_on_one_node("gpt1").model;
  CHECK(gpt1.seq_len == 512);
  CHECK(gpt1.vocab == 40478);
  ModelSpec gpt2 = model_on_one_node("gpt2-1.5b").model;
  CHECK(gpt2.layers == 48);
  CHECK(gpt2.hidden == 1600);
  CHECK(gpt2.heads == 16);
  CHECK(gpt2.vocab == 50257);
  CHECK(model_on_one_node("inception-v3").model.image_size == 299);
  CHECK(model_on_one_node("resnet50").model.classes == 1000);
  ModelSpec dlrm = model_on_one_node("dlrm").model;
  CHECK(dlrm.bottom_mlp == std::vector<int64_t>{128, 512, 512, 512, 64});
  CHECK(dlrm.tables == 8);
  CHECK(dlrm.table_rows == 1000000);
  // Top-MLP input 100 = 64 (bottom MLP) + C(9, 2) = 36 dot products of the 9 vectors.
  CHECK(dlrm.embedding_dim + (dlrm.tables + 1) * dlrm.tables / 2 == 100);
  CHECK(dlrm.top_mlp == std::vector<int64_t>{1024, 1024, 1024, 1024, 1});
  CHECK(dlrm.lookups_per_table == 100);
}

TEST_CASE("presets: scenario facts") {
  Config d = scenario("default");
  CHECK(d.cluster.gpus() == 32);
  CHECK(d.training.seq_len == 8192);
  CHECK(d.strategy.sequence_parallel);
  CHECK(d.strategy.recompute == Recompute::Selective);
  Config megatron = scenario("gpt3-175b-megatron");
  CHECK(megatron.cluster.gpus() == 1024);
  CHECK(megatron.training.global_batch / (megatron.strategy.dp * megatron.strategy.micro_batch) == 192);
  CHECK(megatron.training.precision == Precision::Fp16);
  Config proteus_gpt = scenario("gpt2-1.5b-proteus");
  CHECK(proteus_gpt.cluster.gpus() == 64);
  // 8 micro-batches (REFERENCE.md section 1): 64 / (dp 4 * micro_batch 2)
  CHECK(proteus_gpt.training.global_batch / (proteus_gpt.strategy.dp * proteus_gpt.strategy.micro_batch) ==
        8);
  CHECK(proteus_gpt.training.precision == Precision::Fp32);
  Config dp32 = scenario("gpt-12l-dp32");
  CHECK(dp32.model.layers == 12);
  CHECK(dp32.model.hidden == 1024);
  CHECK(dp32.strategy.dp == 32);
  Config alexnet = scenario("alexnet-hybrid");
  REQUIRE(alexnet.strategy.overrides.size() == 1);
  CHECK(alexnet.strategy.overrides[0].path == "classifier");
  CHECK(alexnet.strategy.overrides[0].map.at("dp") == "out");
  CHECK(alexnet.training.optimizer == Optimizer::Sgd);
  Config dlrm = scenario("dlrm-table-parallel");
  CHECK(dlrm.strategy.overrides[0].map.at("dp") == "table");
  CHECK(dlrm.training.global_batch / dlrm.strategy.dp == 128);  // 128 per GPU
  Config llama = scenario("llama3-405b-16k");
  CHECK(llama.cluster.gpus() == 16384);
  CHECK(llama.strategy.stage_layers.front() == 1);  // one layer fewer on the first and last stage
  CHECK(llama.strategy.stage_layers.back() == 1);
}

TEST_CASE("presets: enum names and precision helpers") {
  CHECK(std::string(to_string(Schedule::Interleaved1F1B)) == "interleaved-1f1b");
  CHECK(std::string(to_string(Schedule::ZbH1)) == "zb-h1");
  CHECK(std::string(to_string(CnnArch::InceptionV3)) == "inception-v3");
  CHECK(std::string(to_string(IntraNodeKind::NvLinkMesh)) == "nvlink-mesh");
  CHECK(std::string(to_string(NormKind::RmsNorm)) == "rmsnorm");
  CHECK(std::string(to_string(Recompute::Selective)) == "selective");
  CHECK(activation_bytes(Precision::Fp32) == 4);
  CHECK(activation_bytes(Precision::Tf32) == 4);
  CHECK(activation_bytes(Precision::Bf16) == 2);
  CHECK(activation_bytes(Precision::Fp8) == 2);
  CHECK(is_mixed_precision(Precision::Fp16));
  CHECK(is_mixed_precision(Precision::Fp8));
  CHECK_FALSE(is_mixed_precision(Precision::Fp32));
  CHECK_FALSE(is_mixed_precision(Precision::Tf32));
}
