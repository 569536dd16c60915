// Config parser and validation: each rule is checked for its error code and exact JSON path.
#include <doctest/doctest.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include "proteus/config.h"
#include "proteus/error.h"

using nlohmann::json;
using proteus::Config;
using proteus::Error;
using proteus::parse_config;

namespace {

// A valid config: Llama 3 8B on 4 DGX H100 nodes, TP4 x PP2 x DP4 (= 32 GPUs).
json base_config() {
  return json::parse(R"({
    "model": "llama3-8b",
    "cluster": {"preset": "dgx-h100", "nodes": 4},
    "training": {"global_batch": 128},
    "strategy": {"dp": 4, "tp": 4, "pp": 2}
  })");
}

// The Error parse_config throws for `text`, or one with code "none" if it parses.
Error error_of(const std::string& text) {
  try {
    parse_config(text);
  } catch (const Error& error) {
    return error;
  }
  return Error("none", "", "parsed without error");
}

Error error_of(const json& config) { return error_of(config.dump()); }
Error error_of(const char* text) { return error_of(std::string(text)); }

#define CHECK_ERROR(config, expected_code, expected_path) \
  do {                                                    \
    Error error_ = error_of(config);                      \
    INFO("message: " << error_.what());                   \
    CHECK(error_.code == (expected_code));                \
    CHECK(error_.path == (expected_path));                \
    CHECK(std::string(error_.what()).size() > 10);        \
  } while (false)

}  // namespace

TEST_CASE("config: a preset-based config resolves defaults") {
  Config c = parse_config(base_config().dump());
  CHECK(c.model.name == "Llama 3 8B");
  CHECK(c.model.kv_heads == 8);
  CHECK(c.cluster.nodes == 4);
  CHECK(c.cluster.gpus() == 32);
  CHECK(c.training.seq_len == 8192);  // 0/absent = the model's
  CHECK(c.training.precision == proteus::Precision::Bf16);
  CHECK(c.strategy.schedule == proteus::Schedule::OneFOneB);
  // Megatron-Core's DDP bucket: max(40M, 1M x dp x cp) parameters of fp32 gradients (dp 4 here).
  CHECK(c.strategy.grad_bucket_MB == 40e6 * 4 / 1e6);
  CHECK(c.simulation.symmetry);
}

TEST_CASE("config: gradient buckets default to each framework's own") {
  // megatron/core/distributed/distributed_data_parallel.py: bucket_size = max(40M, 1M x dp x cp)
  // parameters, infinite without overlap; DeepSpeed reduce_bucket_size 5e8 elements; PyTorch
  // DDP bucket_cap_mb 25.
  const auto bucket = [](const json& strategy) {
    json j = base_config();
    j["strategy"] = strategy;
    return parse_config(j.dump()).strategy.grad_bucket_MB;
  };
  CHECK(bucket({{"dp", 32}}) == 160);
  CHECK(bucket({{"dp", 32}, {"grad_reduce_in_fp32", false}}) == 80);
  CHECK(bucket({{"dp", 32}, {"overlap_grad_reduce", false}}) == 1e6);            // one bucket
  CHECK(bucket({{"dp", 32}, {"framework", "deepspeed"}, {"zero", 1}}) == 1000);  // 16-bit gradients
  CHECK(bucket({{"dp", 32}, {"framework", "fsdp"}}) == 25);
  // Megatron-FSDP gets the same default from training.py (its FSDP units stay whole).
  CHECK(bucket({{"dp", 32}, {"zero", 2}}) == 160);
  CHECK(bucket({{"dp", 32}, {"grad_bucket_MB", 10}}) == 10);
}

TEST_CASE("config: a full transformer spec needs no preset; kv_heads 0 means heads, ffn defaults to 4h") {
  json j = base_config();
  j["model"] = json::parse(R"({"kind": "transformer", "layers": 4, "hidden": 512, "heads": 8, "kv_heads": 0,
                              "seq_len": 256, "vocab": 1000})");
  j["cluster"]["nodes"] = 1;
  j["strategy"] = {{"dp", 8}};
  j["training"] = {{"global_batch", 16}, {"seq_len", 128}};
  Config c = parse_config(j.dump());
  CHECK(c.model.kv_heads == 8);
  CHECK(c.model.ffn_hidden == 2048);
  CHECK(c.training.seq_len == 128);
  CHECK(c.model.moe.experts == 0);
}

TEST_CASE("config: preset objects merge deeply") {
  json j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"layers", 16}};
  j["cluster"] = json::parse(R"({"preset": "dgx-h100", "nodes": 4, "gpu": {"memory_GiB": 40}})");
  Config c = parse_config(j.dump());
  CHECK(c.model.layers == 16);
  CHECK(c.model.hidden == 4096);
  CHECK(c.cluster.gpu.memory_GiB == 40);
  CHECK(c.cluster.gpu.hbm_GBps == 3350);  // untouched sibling of the overridden field
  CHECK(c.cluster.gpu.peak_bf16_TFLOPS == doctest::Approx(989.4));
}

TEST_CASE("config: a scenario preset with overrides") {
  Config plain = parse_config(R"({"preset": "default"})");
  CHECK(plain.strategy.tp == 4);
  Config c =
      parse_config(R"({"preset": "default", "strategy": {"tp": 2, "dp": 8}, "model": {"layers": 16}})");
  CHECK(c.strategy.tp == 2);
  CHECK(c.strategy.dp == 8);
  CHECK(c.strategy.pp == 2);  // kept from the scenario
  CHECK(c.model.layers == 16);
  CHECK(c.model.hidden == 4096);  // the scenario's model preset, merged under the override
  Config other = parse_config(R"({"preset": "default", "model": "llama2-7b"})");
  CHECK(other.model.name == "Llama 2 7B");
  CHECK(other.model.kv_heads == 32);
}

TEST_CASE("config: unknown presets name the field and list what exists") {
  json j = base_config();
  j["model"] = "gpt5";
  Error e = error_of(j);
  CHECK(e.code == "unknown_preset");
  CHECK(e.path == "model");
  CHECK(std::string(e.what()).find("llama3-8b") != std::string::npos);
  j["model"] = {{"preset", "gpt5"}};
  CHECK_ERROR(j, "unknown_preset", "model.preset");
  j = base_config();
  j["cluster"] = "dgx-z900";
  Error ce = error_of(j);
  CHECK(ce.code == "unknown_preset");
  CHECK(ce.path == "cluster");
  CHECK(std::string(ce.what()).find("dgx-h100") != std::string::npos);
  CHECK_ERROR(R"({"preset": "nope"})", "unknown_preset", "preset");
}

TEST_CASE("config: malformed JSON gives invalid_json with line and column") {
  Error e = error_of(std::string("{\n  \"model\": \"llama3-8b\",\n  \"cluster\": tru\n}"));
  CHECK(e.code == "invalid_json");
  CHECK(e.path == "");
  CHECK(std::string(e.what()).find("line 3") != std::string::npos);
  CHECK_ERROR("", "invalid_json", "");
  CHECK_ERROR("{\"model\": \"llama3-8b\",}", "invalid_json", "");
  CHECK_ERROR("{\"a\": 1e400}", "invalid_json", "a");  // number overflow: the path of the number
  CHECK_ERROR(R"({"strategy": {"tp": 1, "tp": 2}})", "invalid_json", "strategy.tp");  // duplicate key
  CHECK_ERROR("[1, 2]", "invalid_config", "");
  CHECK_ERROR("\"llama3-8b\"", "invalid_config", "");
}

TEST_CASE("config: unknown fields are errors") {
  json j = base_config();
  j["strategy"]["tpp"] = 2;
  CHECK_ERROR(j, "invalid_config", "strategy.tpp");
  j = base_config();
  j["foo"] = 1;
  CHECK_ERROR(j, "invalid_config", "foo");
  j = base_config();
  j["cluster"]["gpu"] = {{"memory_gb", 80}};
  CHECK_ERROR(j, "invalid_config", "cluster.gpu.memory_gb");
  j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"arch", "resnet50"}};  // a field of another model kind
  CHECK_ERROR(j, "invalid_config", "model.arch");
}

TEST_CASE("config: source and sources are documentation, accepted anywhere") {
  json j = base_config();
  j["source"] = "a test";
  j["strategy"]["sources"] = {{"tp", "Megatron-LM"}};
  j["cluster"]["gpu"] = {{"source", "datasheet"}};
  CHECK_NOTHROW(parse_config(j.dump()));
  j["strategy"]["sources"] = {{"tp", 4}};
  CHECK_ERROR(j, "invalid_config", "strategy.sources.tp");
}

TEST_CASE("config: integer fields reject strings, booleans, fractions, out-of-range values") {
  auto with_tp = [](json value) {
    json j = base_config();
    j["strategy"]["tp"] = value;
    return j;
  };
  CHECK_ERROR(with_tp("4"), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(true), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(2.5), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(nullptr), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(0), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(-1), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(1e30), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(json::array({4})), "invalid_config", "strategy.tp");
  CHECK_ERROR(with_tp(18446744073709551615ull), "invalid_config", "strategy.tp");
  CHECK(parse_config(with_tp(4.0).dump()).strategy.tp == 4);  // an integral number is an integer
  Error fraction = error_of(with_tp(2.5));
  CHECK(std::string(fraction.what()) == "tp must be an integer, got 2.5");
}

TEST_CASE("config: stated caps") {
  json j = base_config();
  j["training"]["global_batch"] = (int64_t{1} << 31) + 1;
  CHECK_ERROR(j, "invalid_config", "training.global_batch");
  j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"layers", 10001}};
  CHECK_ERROR(j, "invalid_config", "model.layers");
  j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"hidden", 2097152}};
  CHECK_ERROR(j, "invalid_config", "model.hidden");
  j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"vocab", int64_t{1} << 32}};
  CHECK_ERROR(j, "invalid_config", "model.vocab");
  j = base_config();
  j["cluster"]["nodes"] = 200000;  // 1.6M GPUs > 1,048,576
  CHECK_ERROR(j, "invalid_config", "cluster.nodes");
  j = base_config();
  j["name"] = std::string(5000, 'x');
  CHECK_ERROR(j, "invalid_config", "name");
  j = base_config();
  j["cluster"]["gpu"] = {{"hbm_GBps", -1}};
  CHECK_ERROR(j, "invalid_config", "cluster.gpu.hbm_GBps");
  j = base_config();
  j["cluster"]["gpu"] = {{"memory_GiB", 0}};
  CHECK_ERROR(j, "invalid_config", "cluster.gpu.memory_GiB");
  j = base_config();
  j["cluster"]["intra_node"] = {{"bus_efficiency", 1.5}};
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.bus_efficiency");
}

TEST_CASE("config: missing required fields") {
  json j = base_config();
  j.erase("model");
  CHECK_ERROR(j, "invalid_config", "model");
  j = base_config();
  j.erase("cluster");
  CHECK_ERROR(j, "invalid_config", "cluster");
  j = base_config();
  j.erase("training");
  CHECK_ERROR(j, "invalid_config", "training");
  j = base_config();
  j["training"] = json::object();
  CHECK_ERROR(j, "invalid_config", "training.global_batch");
  j = base_config();
  j["model"] = json::parse(R"({"layers": 4, "heads": 8, "seq_len": 256, "vocab": 1000})");
  CHECK_ERROR(j, "invalid_config", "model.hidden");
  j = base_config();
  j["model"] = {{"kind", "cnn"}};
  CHECK_ERROR(j, "invalid_config", "model.arch");
  j = base_config();
  j["model"] = json::parse(R"({"kind": "dlrm", "bottom_mlp": [13, 64], "top_mlp": [1], "table_rows": 10,
                               "embedding_dim": 64})");
  CHECK_ERROR(j, "invalid_config", "model.tables");
  j = base_config();
  j["cluster"] = {{"nodes", 4}};
  CHECK_ERROR(j, "invalid_config", "cluster.gpu");
}

TEST_CASE("config: enum values") {
  json j = base_config();
  j["strategy"]["schedule"] = "1f2b";
  Error e = error_of(j);
  CHECK(e.path == "strategy.schedule");
  CHECK(std::string(e.what()).find("interleaved-1f1b") != std::string::npos);
  j = base_config();
  j["training"]["precision"] = "fp64";
  CHECK_ERROR(j, "invalid_config", "training.precision");
  j = base_config();
  j["training"]["optimizer"] = "lamb";
  CHECK_ERROR(j, "invalid_config", "training.optimizer");
  j = base_config();
  j["strategy"]["recompute"] = "some";
  CHECK_ERROR(j, "invalid_config", "strategy.recompute");
  j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"norm", "batchnorm"}};
  CHECK_ERROR(j, "invalid_config", "model.norm");
  j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"mlp", "relu"}};
  CHECK_ERROR(j, "invalid_config", "model.mlp");
  j = base_config();
  j["model"] = {{"preset", "resnet50"}, {"arch", "resnet18"}};
  CHECK_ERROR(j, "invalid_config", "model.arch");
  j = base_config();
  j["cluster"]["intra_node"] = {{"kind", "infiniband"}};
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.kind");
  j = base_config();
  j["model"] = {{"kind", "rnn"}};
  CHECK_ERROR(j, "invalid_config", "model.kind");
  j = base_config();
  j["schema"] = 2;
  CHECK_ERROR(j, "invalid_config", "schema");
  j["schema"] = 1;
  CHECK_NOTHROW(parse_config(j.dump()));
}

TEST_CASE("config: model checks") {
  json j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"heads", 30}};  // 4096 / 30 is not whole
  CHECK_ERROR(j, "invalid_config", "model.heads");
  j["model"] = {{"preset", "llama3-8b"}, {"kv_heads", 5}};
  CHECK_ERROR(j, "invalid_config", "model.kv_heads");
  j["model"] = {{"preset", "llama3-8b"}, {"kv_heads", 64}};
  CHECK_ERROR(j, "invalid_config", "model.kv_heads");
  j["model"] = json::parse(R"({"preset": "llama3-8b", "moe": {"experts": 8, "top_k": 9}})");
  CHECK_ERROR(j, "invalid_config", "model.moe.top_k");
  j["model"] = json::parse(R"({"preset": "llama3-8b", "moe": {"experts": 8}})");
  CHECK_ERROR(j, "invalid_config", "model.moe.top_k");
  j["model"] =
      json::parse(R"({"preset": "llama3-8b", "moe": {"experts": 8, "top_k": 2, "capacity_factor": 0}})");
  CHECK_ERROR(j, "invalid_config", "model.moe.capacity_factor");
  j["model"] = json::parse(R"({"preset": "resnet50", "image_size": 16})");  // five halvings need >= 32
  j["strategy"] = {{"dp", 32}};
  CHECK_ERROR(j, "invalid_config", "model.image_size");
  j["model"] = json::parse(R"({"preset": "resnet50", "aux_logits": true})");
  CHECK_ERROR(j, "invalid_config", "model.aux_logits");
  j["model"] = json::parse(R"({"preset": "dlrm", "embedding_dim": 32})");  // bottom MLP ends at 64
  CHECK_ERROR(j, "invalid_config", "model.bottom_mlp");
  j["model"] = json::parse(R"({"preset": "dlrm", "top_mlp": [1024, 2]})");
  CHECK_ERROR(j, "invalid_config", "model.top_mlp");
  j["model"] = json::parse(R"({"preset": "dlrm", "dense_features": 13})");
  CHECK_ERROR(j, "invalid_config", "model.dense_features");
  j["model"] = json::parse(R"({"preset": "dlrm", "bottom_mlp": [128, 0, 64]})");
  CHECK_ERROR(j, "invalid_config", "model.bottom_mlp[1]");
}

TEST_CASE("config: graph models") {
  json j = base_config();
  j["model"] = json::parse(R"({"kind": "graph", "name": "mlp", "input_elements": 784, "ops": [
      {"name": "fc1", "type": "linear", "in_features": 784, "out_features": 1024},
      {"name": "act", "type": "elementwise", "elements": 1024},
      {"name": "conv", "type": "conv2d", "in_channels": 1, "out_channels": 4, "kernel": 3, "image": 32},
      {"name": "odd", "type": "custom", "flops_per_sample": 1e6, "bytes_per_sample": 4096}]})");
  j["strategy"] = {{"dp", 32}};
  Config c = parse_config(j.dump());
  REQUIRE(c.model.ops.size() == 4);
  CHECK(c.model.ops[2].stride == 1);
  CHECK(c.model.ops[3].flops_per_sample == 1e6);
  CHECK(c.training.seq_len == 1);
  json bad = j;
  bad["model"]["ops"][1]["type"] = "softmax";
  CHECK_ERROR(bad, "invalid_config", "model.ops[1].type");
  bad = j;
  bad["model"]["ops"][0].erase("out_features");
  CHECK_ERROR(bad, "invalid_config", "model.ops[0].out_features");
  bad = j;
  bad["model"]["ops"][1]["in_features"] = 3;  // not a field of an elementwise op
  CHECK_ERROR(bad, "invalid_config", "model.ops[1].in_features");
  bad = j;
  bad["model"]["ops"][1]["name"] = "fc1";
  CHECK_ERROR(bad, "invalid_config", "model.ops[1].name");
  bad = j;
  bad["model"]["ops"] = json::array();
  CHECK_ERROR(bad, "invalid_config", "model.ops");
  bad = j;
  bad["strategy"] = {{"dp", 8}, {"pp", 4}, {"stage_layers", {1, 1, 1, 2}}};  // 5 != 4 ops
  CHECK_ERROR(bad, "invalid_config", "strategy.stage_layers");
}

TEST_CASE("config: cluster checks") {
  json j = base_config();
  j["cluster"] = json::parse(R"({"preset": "dgx1-v100-1ib", "nodes": 4})");
  CHECK_NOTHROW(parse_config(j.dump()));
  j["cluster"]["intra_node"] = {{"links", json::parse(R"([
      [0,1,1,2,2,0,0,0],[1,0,2,1,0,2,0,0],[1,2,0,2,0,0,1,0],[2,1,1,0,0,0,0,1],
      [2,0,0,0,0,1,1,2],[0,2,0,0,1,0,2,1],[0,0,1,0,1,2,0,2],[0,0,0,1,2,1,2,0]])")}};
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.links[2][3]");  // links[2][3]=2, links[3][2]=1
  j["cluster"]["intra_node"]["links"] = json::parse("[[0,1],[1,0]]");
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.links");
  j["cluster"]["intra_node"]["links"] = json::parse(R"([
      [1,1,1,2,2,0,0,0],[1,0,2,1,0,2,0,0],[1,2,0,2,0,0,1,0],[2,1,2,0,0,0,0,1],
      [2,0,0,0,0,1,1,2],[0,2,0,0,1,0,2,1],[0,0,1,0,1,2,0,2],[0,0,0,1,2,1,2,0]])");
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.links[0][0]");
  j["cluster"]["intra_node"] = {{"links", json::parse(R"([[0,1,1,2,2,0,0,0],[1,0,2,1,0,2,0,0]])")}};
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.links");
  j = base_config();
  j["cluster"] =
      json::parse(R"({"preset": "gtx1080ti-1ib", "nodes": 4, "intra_node": {"pcie_fanout": [2, 2, 1]}})");
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.pcie_fanout");
  j["cluster"]["intra_node"] = {{"pcie_fanout", json::array()}};
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.pcie_fanout");
  j["cluster"]["intra_node"] = {{"cpu_link_GBps", 0}};
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.cpu_link_GBps");
  j = base_config();
  j["cluster"]["inter_node"] = {{"nics_per_node", 0}};
  CHECK_ERROR(j, "invalid_config", "cluster.inter_node.nics_per_node");
  j = base_config();
  j["cluster"]["inter_node"] = {{"oversubscription", 0.5}};
  CHECK_ERROR(j, "invalid_config", "cluster.inter_node.oversubscription");
  j = base_config();
  j["cluster"]["gpu"] = {{"peak_TFLOPS", {{"fp32", 0}}}};
  CHECK_ERROR(j, "invalid_config", "cluster.gpu.peak_TFLOPS.fp32");
  j = base_config();
  j["cluster"]["intra_node"] = {{"links", json::parse("[[0]]")}};  // only for nvlink-mesh
  CHECK_ERROR(j, "invalid_config", "cluster.intra_node.links");
}

TEST_CASE("config: training checks") {
  json j = base_config();
  j["model"] = "gpt2-small";  // 1024 learned positions
  j["training"]["seq_len"] = 2048;
  CHECK_ERROR(j, "invalid_config", "training.seq_len");
  j["model"] = "llama3-8b";  // rotary positions: longer sequences are fine
  j["training"]["seq_len"] = 16384;
  CHECK(parse_config(j.dump()).training.seq_len == 16384);
  j = base_config();
  j["model"] = "resnet50";
  j["strategy"] = {{"dp", 32}};
  j["training"]["seq_len"] = 128;
  CHECK_ERROR(j, "invalid_config", "training.seq_len");
  j["training"].erase("seq_len");
  CHECK(parse_config(j.dump()).training.seq_len == 1);
}

TEST_CASE("config: the mesh must cover the cluster exactly") {
  json j = base_config();
  j["strategy"]["dp"] = 2;
  Error e = error_of(j);
  CHECK(e.code == "invalid_config");
  CHECK(e.path == "strategy");
  CHECK(std::string(e.what()) == "dp*tp*pp*cp = 16 but the cluster has 32 GPUs (4 nodes x 8)");
  j["strategy"] = {{"dp", 1024}, {"tp", 1024}, {"pp", 1024}, {"cp", 1024}};  // 2^40: no overflow
  CHECK_ERROR(j, "invalid_config", "strategy");
}

TEST_CASE("config: tensor parallel must divide heads, kv_heads and the FFN") {
  json j = base_config();
  j["cluster"] = json::parse(R"({"preset": "dgx-h100", "gpus_per_node": 3})");
  j["strategy"] = {{"tp", 3}};
  Error e = error_of(j);
  CHECK(e.path == "strategy.tp");
  CHECK(std::string(e.what()) == "tp=3 does not divide heads=32");
  j = base_config();
  j["cluster"]["nodes"] = 2;
  j["strategy"] = {{"tp", 16}};  // heads 32 ok, kv_heads 8 not
  e = error_of(j);
  CHECK(e.path == "strategy.tp");
  CHECK(std::string(e.what()) == "tp=16 does not divide kv_heads=8");
  j["model"] = {{"preset", "llama3-8b"}, {"kv_heads", 32}, {"ffn_hidden", 14344}};
  e = error_of(j);
  CHECK(e.path == "strategy.tp");
  CHECK(std::string(e.what()) == "tp=16 does not divide ffn_hidden=14344");
}

TEST_CASE("config: pipeline checks") {
  json j = base_config();
  j["model"] = {{"preset", "llama3-8b"}, {"layers", 1}};
  CHECK_ERROR(j, "invalid_config", "strategy.pp");  // pp=2 > 1 layer
  j = base_config();
  j["strategy"]["virtual_stages"] = 2;  // with 1f1b
  CHECK_ERROR(j, "invalid_config", "strategy.virtual_stages");
  j["strategy"]["schedule"] = "interleaved-1f1b";
  CHECK_NOTHROW(parse_config(j.dump()));
  j["strategy"]["virtual_stages"] = 17;  // 2*17 = 34 chunks > 32 layers
  CHECK_ERROR(j, "invalid_config", "strategy.virtual_stages");
  j["strategy"]["virtual_stages"] = 0;
  CHECK_ERROR(j, "invalid_config", "strategy.virtual_stages");
  // 4 nodes, dp 4: global 36 -> 9 micro-batches per replica, not a multiple of pp=2
  j["strategy"]["virtual_stages"] = 2;
  j["training"]["global_batch"] = 36;
  CHECK_ERROR(j, "invalid_config", "strategy.schedule");
  j["strategy"]["schedule"] = "1f1b";
  j["strategy"]["virtual_stages"] = 1;
  CHECK_NOTHROW(parse_config(j.dump()));  // 1F1B has no such constraint
}

TEST_CASE("config: stage_layers") {
  json j = base_config();
  j["strategy"]["stage_layers"] = {20, 12};
  CHECK(parse_config(j.dump()).strategy.stage_layers == std::vector<int>{20, 12});
  j["strategy"]["stage_layers"] = {20, 12, 0};
  CHECK_ERROR(j, "invalid_config", "strategy.stage_layers[2]");
  j["strategy"]["stage_layers"] = {32};
  CHECK_ERROR(j, "invalid_config", "strategy.stage_layers");
  j["strategy"]["stage_layers"] = {20, 13};
  CHECK_ERROR(j, "invalid_config", "strategy.stage_layers");
  j["strategy"]["stage_layers"] = {20, 0};
  CHECK_ERROR(j, "invalid_config", "strategy.stage_layers[1]");
  j = base_config();
  j["model"] = "resnet50";
  j["strategy"] = {{"dp", 16}, {"pp", 2}, {"stage_layers", {1, 1}}};
  CHECK_ERROR(j, "invalid_config", "strategy.stage_layers");
}

TEST_CASE("config: batch checks") {
  json j = base_config();
  j["training"]["global_batch"] = 30;  // dp 4
  CHECK_ERROR(j, "invalid_config", "training.global_batch");
  // 32 GPUs as dp 8 x tp 4: per-replica batch 32 / 8 = 4 < micro_batch 8
  j = base_config();
  j["training"]["global_batch"] = 32;
  j["strategy"] = {{"dp", 8}, {"tp", 4}, {"micro_batch", 8}};
  Error e = error_of(j);
  CHECK(e.path == "strategy.micro_batch");
  CHECK(std::string(e.what()) ==
        "micro_batch=8 is larger than the per-replica batch 4 (global_batch 32 / dp 8)");
  j["strategy"]["micro_batch"] = 3;  // 4 % 3 != 0
  CHECK_ERROR(j, "invalid_config", "training.global_batch");
  j["strategy"]["micro_batch"] = 0;
  CHECK_ERROR(j, "invalid_config", "strategy.micro_batch");
  j["strategy"]["micro_batch"] = 4;
  CHECK_NOTHROW(parse_config(j.dump()));
}

TEST_CASE("config: expert parallel checks") {
  json j = base_config();
  j["strategy"]["ep"] = 2;  // llama3-8b is dense
  CHECK_ERROR(j, "invalid_config", "strategy.ep");
  j = json::parse(R"({"preset": "mixtral-8x7b-ep"})");
  CHECK_NOTHROW(parse_config(j.dump()));
  j["strategy"] = {{"ep", 3}};  // does not divide dp 8
  CHECK_ERROR(j, "invalid_config", "strategy.ep");
  // dp 16 (tp 1): ep 16 divides dp but not the 8 experts
  j["strategy"] = {{"tp", 1}, {"dp", 16}, {"ep", 16}};
  Error e = error_of(j);
  CHECK(e.path == "strategy.ep");
  CHECK(std::string(e.what()) == "ep=16 does not divide moe.experts=8");
}

TEST_CASE("config: context parallel checks") {
  json j = base_config();
  j["training"]["seq_len"] = 1004;  // cp 8 needs seq % 8 == 0 (1004 = 8 * 125.5)
  j["strategy"] = {{"dp", 4}, {"cp", 8}};
  CHECK_ERROR(j, "invalid_config", "strategy.cp");
  j["training"]["seq_len"] = 1024;
  CHECK_NOTHROW(parse_config(j.dump()));
  j["model"] = "resnet50";
  j["training"].erase("seq_len");
  CHECK_ERROR(j, "invalid_config", "strategy.cp");
}

TEST_CASE("config: other strategy values") {
  json j = base_config();
  j["strategy"]["zero"] = 4;
  CHECK_ERROR(j, "invalid_config", "strategy.zero");
  j = base_config();
  j["strategy"]["grad_bucket_MB"] = 0;
  CHECK_ERROR(j, "invalid_config", "strategy.grad_bucket_MB");
  j = base_config();
  j["strategy"]["sequence_parallel"] = "yes";
  CHECK_ERROR(j, "invalid_config", "strategy.sequence_parallel");
  j = base_config();
  j["simulation"] = {{"max_tasks", 0}};
  CHECK_ERROR(j, "invalid_config", "simulation.max_tasks");
  j["simulation"] = {{"symmetry", false}, {"max_tasks", 1000}};
  Config c = parse_config(j.dump());
  CHECK_FALSE(c.simulation.symmetry);
  CHECK(c.simulation.max_tasks == 1000);
}

TEST_CASE("config: overrides") {
  json j = base_config();
  j["strategy"]["overrides"] = json::parse(R"([
      {"path": "head", "map": {"tp": "vocab", "dp": null}},
      {"path": "layers.*.mlp", "recompute": "full", "stage": 1},
      {"path": "layers.**", "recompute": "none"}])");
  Config c = parse_config(j.dump());
  REQUIRE(c.strategy.overrides.size() == 3);
  CHECK(c.strategy.overrides[0].map.at("tp") == "vocab");
  CHECK(c.strategy.overrides[0].map.at("dp") == "");  // null = replicate
  CHECK(c.strategy.overrides[1].recompute == proteus::Recompute::Full);
  CHECK(c.strategy.overrides[1].stage == 1);
  CHECK_FALSE(c.strategy.overrides[0].stage.has_value());

  json bad = j;
  bad["strategy"]["overrides"][1]["path"] = "layers..mlp";
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[1].path");
  bad = j;
  bad["strategy"]["overrides"][1]["path"] = "layers.**.mlp";  // '**' only at the end
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[1].path");
  bad = j;
  bad["strategy"]["overrides"][0]["map"] = {{"xp", "out"}};
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[0].map.xp");
  bad = j;
  bad["strategy"]["overrides"][0]["map"] = {{"tp", 3}};
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[0].map.tp");
  bad = j;
  bad["strategy"]["overrides"][0]["map"] = {{"tp", "two words"}};
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[0].map.tp");
  bad = j;
  bad["strategy"]["overrides"][1]["stage"] = 2;  // pp 2: stages 0..1
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[1].stage");
  bad = j;
  bad["strategy"]["overrides"][2] = {{"path", "head"}};
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[2]");
  bad = j;
  bad["strategy"]["overrides"][2] = {{"map", {{"tp", "out"}}}};
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides[2].path");
  bad = j;
  bad["strategy"]["overrides"] = {{"path", "head"}};  // an object, not an array
  CHECK_ERROR(bad, "invalid_config", "strategy.overrides");
}

TEST_CASE("config: unusual but real setups are accepted") {
  json single = base_config();
  single["cluster"] = json::parse(R"({"preset": "dgx-h100", "gpus_per_node": 1})");
  single["strategy"] = json::object();
  single["training"] = {{"global_batch", 1}, {"precision", "fp32"}};
  CHECK_NOTHROW(parse_config(single.dump()));  // one GPU, fp32
  json across = base_config();
  across["model"] = "gpt3-175b";
  across["cluster"] = json::parse(R"({"preset": "dgx-a100-80g", "nodes": 2})");
  across["strategy"] = {{"tp", 16}};  // tensor parallel across two nodes
  across["training"] = {{"global_batch", 8}};
  CHECK_NOTHROW(parse_config(across.dump()));
  json huge = base_config();
  huge["model"] = "llama3-405b";  // far beyond one GPU's memory: a simulation result, not a config error
  huge["cluster"] = json::parse(R"({"preset": "dgx-h100", "gpus_per_node": 1})");
  huge["strategy"] = json::object();
  huge["training"] = {{"global_batch", 1}};
  CHECK_NOTHROW(parse_config(huge.dump()));
}

TEST_CASE("config: hostile input fails fast without crashing") {
  // Processor time, not wall time: other work on the machine must not fail the check.
  const std::clock_t start = std::clock();
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Error e = error_of(deep);
  CHECK(e.code == "invalid_json");
  CHECK(e.path == "");
  std::string deep_object;
  for (int i = 0; i < 100000; ++i) deep_object += "{\"a\":";
  deep_object += "1" + std::string(100000, '}');
  CHECK(error_of(deep_object).code == "invalid_json");
  // Brackets inside strings are not nesting.
  json bracket_name = base_config();
  bracket_name["name"] = std::string(300, '[');
  CHECK_NOTHROW(parse_config(bracket_name.dump()));

  std::string big = "{\"name\": \"" + std::string(100u << 20, 'a') + "\"}";  // 100 MB
  Error size = error_of(big);
  CHECK(size.code == "invalid_json");
  CHECK(size.path == "");
  const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  CHECK(seconds < 5.0);
  CHECK(error_of(std::string("{\"name\": \"\xff\xfe\"}")).code == "invalid_json");  // not UTF-8
}
