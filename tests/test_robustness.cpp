// Bad input gets a clear error, fast (docs/robustness.md). Every case goes through the same
// entry point as the CLI and the page (simulate_json) and checks: the error code, the JSON path
// of the field to change, a sentence that names the problem, that error_json renders it as
// {"ok": false, ...}, and that the answer took less than a second of processor time (not wall
// time: the check is against hangs and blow-ups, and must not fail because the machine is
// busy). Valid but unusual setups, and configs that do not fit in memory, simulate.
#include <doctest/doctest.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "proteus/api.h"
#include "proteus/config.h"
#include "proteus/error.h"
#include "proteus/op_graph.h"
#include "proteus/strategy_tree.h"

using nlohmann::json;

namespace {

// "Within a second" in a normal build; sanitizers slow everything down several times.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kSecond = 10.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kSecond = 10.0;
#else
constexpr double kSecond = 1.0;
#endif
#else
constexpr double kSecond = 1.0;
#endif

struct Answer {
  bool ok = false;
  std::string code, path, message;
  std::string text;    // the result JSON, or error_json of the error
  double seconds = 0;  // processor time of this process: other load on the machine does not count
};

Answer simulate(const std::string& config, bool timeline = false) {
  Answer a;
  proteus::SimulateOptions options;
  options.timeline = timeline;
  const std::clock_t start = std::clock();
  try {
    a.text = proteus::simulate_json(config, options);
    a.ok = true;
  } catch (const proteus::Error& e) {
    a.code = e.code;
    a.path = e.path;
    a.message = e.what();
    a.text = proteus::error_json(e);
  }
  a.seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  return a;
}

Answer simulate(const json& config) { return simulate(config.dump()); }

// Llama 3 8B on 4 DGX H100 nodes, TP4 x PP2 x DP4 = 32 GPUs, 128 sequences.
json base() {
  return json::parse(R"({
    "model": "llama3-8b",
    "cluster": {"preset": "dgx-h100", "nodes": 4},
    "training": {"global_batch": 128},
    "strategy": {"dp": 4, "tp": 4, "pp": 2}
  })");
}

json with(json config, const json::json_pointer& where, const json& value) {
  config[where] = value;
  return config;
}

// A small valid config that simulates in milliseconds: 2-layer GPT-2 small, 64 tokens.
json small(int gpus_per_node, int nodes = 1) {
  json j = json::parse(R"({"model": {"preset": "gpt2-small", "layers": 2},
                           "training": {"global_batch": 16, "seq_len": 64}})");
  j["cluster"] = {{"preset", "dgx-h100"}, {"gpus_per_node", gpus_per_node}, {"nodes", nodes}};
  return j;
}

#define CHECK_REFUSED(answer_expr, expected_code, expected_path, fragment) \
  do {                                                                     \
    const Answer a_ = (answer_expr);                                       \
    INFO("message: " << a_.message);                                       \
    REQUIRE_FALSE(a_.ok);                                                  \
    CHECK(a_.code == (expected_code));                                     \
    CHECK(a_.path == (expected_path));                                     \
    CHECK(a_.message.find(fragment) != std::string::npos);                 \
    CHECK(a_.seconds < kSecond);                                           \
    const json e_ = json::parse(a_.text);                                  \
    CHECK(e_["ok"] == false);                                              \
    CHECK(e_["error"]["path"] == (expected_path));                         \
    CHECK(e_["error"]["message"] == a_.message);                           \
  } while (false)

// The summary of a successful simulation, after checking every number in it is finite.
json summary_of(const Answer& a) {
  INFO("error: " << a.path << ": " << a.message);
  REQUIRE(a.ok);
  const json r = json::parse(a.text);
  CHECK(r["ok"] == true);
  CHECK(a.text.find("null") == std::string::npos);  // NaN and infinity would print as null
  const json& s = r["summary"];
  CHECK(std::isfinite(s["iteration_time_s"].get<double>()));
  CHECK(s["iteration_time_s"].get<double>() > 0);
  return s;
}

}  // namespace

TEST_CASE("robustness: malformed JSON names line and column") {
  CHECK_REFUSED(simulate(std::string("{\"model\": \"llama3-8b\",\n \"cluster\": ")), "invalid_json", "",
                "line 2");
  CHECK_REFUSED(simulate(std::string("")), "invalid_json", "", "not valid JSON");
  CHECK_REFUSED(simulate(std::string("{\"model\": 'llama3-8b'}")), "invalid_json", "", "line 1, column 11");
  CHECK_REFUSED(simulate(std::string("[]")), "invalid_config", "", "must be a JSON object");
}

TEST_CASE("robustness: wrong types name the field and the type expected") {
  CHECK_REFUSED(simulate(with(base(), "/strategy/tp"_json_pointer, "4")), "invalid_config", "strategy.tp",
                "tp must be an integer, got the string \"4\"");
  CHECK_REFUSED(simulate(with(base(), "/training/precision"_json_pointer, 16)), "invalid_config",
                "training.precision", "precision must be a string, got 16");
  CHECK_REFUSED(simulate(with(base(), "/strategy/sequence_parallel"_json_pointer, "yes")), "invalid_config",
                "strategy.sequence_parallel", "must be true or false");
  CHECK_REFUSED(simulate(with(base(), "/cluster/nodes"_json_pointer, json::array({4}))), "invalid_config",
                "cluster.nodes", "nodes must be an integer, got an array");
  CHECK_REFUSED(simulate(with(base(), "/model"_json_pointer, 7)), "invalid_config", "model",
                "model must be a preset name or an object, got 7");
  CHECK_REFUSED(simulate(with(base(), "/strategy"_json_pointer, json::array())), "invalid_config", "strategy",
                "strategy must be an object, got an array");
}

TEST_CASE("robustness: unknown fields are named with what was expected") {
  CHECK_REFUSED(simulate(with(base(), "/strategy/tpp"_json_pointer, 2)), "invalid_config", "strategy.tpp",
                "unknown field \"tpp\" in strategy; expected one of: dp, tp, pp");
  CHECK_REFUSED(simulate(with(base(), "/modle"_json_pointer, "llama3-8b")), "invalid_config", "modle",
                "unknown field \"modle\"");
  CHECK_REFUSED(simulate(with(base(), "/cluster/gpu"_json_pointer, {{"memory_GB", 80}})), "invalid_config",
                "cluster.gpu.memory_GB", "unknown field \"memory_GB\" in cluster.gpu");
}

TEST_CASE("robustness: missing required fields") {
  json j = base();
  j.erase("training");
  CHECK_REFUSED(simulate(j), "invalid_config", "training", "missing required field \"training\"");
  CHECK_REFUSED(simulate(with(base(), "/training"_json_pointer, json::object())), "invalid_config",
                "training.global_batch", "missing required field \"global_batch\"");
  CHECK_REFUSED(simulate(with(base(), "/model"_json_pointer,
                              json::parse(R"({"layers": 2, "heads": 8, "seq_len": 128, "vocab": 1000})"))),
                "invalid_config", "model.hidden", "missing required field \"hidden\"");
}

TEST_CASE("robustness: zero, negative, fractional, NaN and huge numbers") {
  CHECK_REFUSED(simulate(with(base(), "/strategy/tp"_json_pointer, 0)), "invalid_config", "strategy.tp",
                "tp must be at least 1, got 0");
  CHECK_REFUSED(simulate(with(base(), "/strategy/dp"_json_pointer, -4)), "invalid_config", "strategy.dp",
                "dp must be at least 1, got -4");
  CHECK_REFUSED(simulate(with(base(), "/strategy/micro_batch"_json_pointer, 1.5)), "invalid_config",
                "strategy.micro_batch", "micro_batch must be an integer, got 1.5");
  CHECK_REFUSED(simulate(with(base(), "/cluster/gpu"_json_pointer, {{"memory_GiB", -80}})), "invalid_config",
                "cluster.gpu.memory_GiB", "must be greater than 0");
  // JSON has no NaN: the literal is a syntax error, the string a type error.
  CHECK_REFUSED(simulate(std::string(R"({"model": "llama3-8b", "training": {"global_batch": NaN}})")),
                "invalid_json", "", "line 1, column 53");
  CHECK_REFUSED(simulate(with(base(), "/strategy/grad_bucket_MB"_json_pointer, "NaN")), "invalid_config",
                "strategy.grad_bucket_MB", "must be a number, got the string \"NaN\"");
  CHECK_REFUSED(simulate(with(base(), "/training/global_batch"_json_pointer, 1e308)), "invalid_config",
                "training.global_batch", "global_batch must be at most 2147483647");
  CHECK_REFUSED(simulate(with(base(), "/strategy/tp"_json_pointer, 18446744073709551615ull)),
                "invalid_config", "strategy.tp", "tp must be at most 1048576");
  CHECK_REFUSED(simulate(with(base(), "/strategy/grad_bucket_MB"_json_pointer, 1e7)), "invalid_config",
                "strategy.grad_bucket_MB", "at most 1000000");
  // Beyond double's range the number cannot even be read: the path is still the field's.
  CHECK_REFUSED(simulate(std::string(R"({"model": "llama3-8b", "training": {"global_batch": 1e400}})")),
                "invalid_json", "training.global_batch", "number overflow");
  CHECK_REFUSED(simulate(std::string(R"({"strategy": {"stage_layers": [16, -1e999]}})")), "invalid_json",
                "strategy.stage_layers[1]", "number overflow");
}

TEST_CASE("robustness: rates so small that every time would overflow are refused") {
  // 1e-300 GB/s passes "greater than 0" but makes times ~1e300 s, and 4e-320 (a denormal)
  // makes them infinite, which the result JSON would print as null.
  json j = small(8, 2);
  j["strategy"] = {{"dp", 16}};
  CHECK_REFUSED(simulate(with(j, "/cluster/inter_node"_json_pointer, {{"nic_GBps", 4e-320}})),
                "invalid_config", "cluster.inter_node.nic_GBps", "nic_GBps must be at least 0.001");
  CHECK_REFUSED(simulate(with(j, "/cluster/intra_node"_json_pointer, {{"link_GBps", 1e-300}})),
                "invalid_config", "cluster.intra_node.link_GBps", "at least 0.001");
  CHECK_REFUSED(simulate(with(j, "/cluster/gpu"_json_pointer, {{"hbm_GBps", 5e-324}})), "invalid_config",
                "cluster.gpu.hbm_GBps", "at least 0.001");
  CHECK_REFUSED(
      simulate(with(j, "/cluster/gpu"_json_pointer, {{"peak_TFLOPS", {{"fp32", 1e-9}, {"bf16", 0}}}})),
      "invalid_config", "cluster.gpu.peak_TFLOPS.fp32", "at least 0.001");
  CHECK_REFUSED(simulate(with(j, "/cluster/gpu"_json_pointer, {{"attention_efficiency", 1e-200}})),
                "invalid_config", "cluster.gpu.attention_efficiency", "at least 0.001");
  // At the stated minimum the simulation is slow hardware, not an overflow.
  summary_of(simulate(with(j, "/cluster/inter_node"_json_pointer, {{"nic_GBps", 0.001}})));
}

TEST_CASE("robustness: parallel degrees that do not divide heads, layers, batch or GPU count") {
  json j = base();
  j["cluster"] = {{"preset", "dgx-h100"}, {"gpus_per_node", 3}};
  j["training"]["global_batch"] = 12;
  j["strategy"] = {{"tp", 3}};
  CHECK_REFUSED(simulate(j), "invalid_config", "strategy.tp", "tp=3 does not divide heads=32");
  // Layers: a pipeline cannot have more chunks than the model has layers...
  j["strategy"] = {{"pp", 3}, {"schedule", "interleaved-1f1b"}, {"virtual_stages", 11}};
  j["training"]["global_batch"] = 3;
  CHECK_REFUSED(simulate(j), "invalid_config", "strategy.virtual_stages", "more than the model's 32 layers");
  // ... but layers that do not divide evenly are split as evenly as possible, the first and last
  // stages lighter (the strategy issue's rule, as Llama 3 405B's 126 layers on 16 stages):
  // 32 layers on 3 stages run as 10 + 11 + 11.
  j["strategy"] = {{"pp", 3}};
  j["training"]["global_batch"] = 12;
  CHECK(simulate(j).ok);
  j["strategy"]["stage_layers"] = {11, 11, 10};
  CHECK(simulate(j).ok);
  CHECK_REFUSED(simulate(with(base(), "/training/global_batch"_json_pointer, 130)), "invalid_config",
                "training.global_batch", "global_batch=130 is not divisible by dp=4");
  CHECK_REFUSED(simulate(with(base(), "/strategy/pp"_json_pointer, 1)), "invalid_config", "strategy",
                "dp*tp*pp*cp = 16 but the cluster has 32 GPUs");
  CHECK_REFUSED(simulate(with(base(), "/strategy/micro_batch"_json_pointer, 64)), "invalid_config",
                "strategy.micro_batch", "micro_batch=64 is larger than the per-replica batch 32");
  CHECK_REFUSED(simulate(with(base(), "/strategy/micro_batch"_json_pointer, 3)), "invalid_config",
                "training.global_batch", "not divisible by dp*micro_batch = 4*3 = 12");
}

TEST_CASE("robustness: unknown preset names list the available ones") {
  CHECK_REFUSED(simulate(with(base(), "/model"_json_pointer, "llama9-8b")), "unknown_preset", "model",
                "unknown model preset \"llama9-8b\"; available: ");
  CHECK_REFUSED(simulate(with(base(), "/cluster/preset"_json_pointer, "dgx-z")), "unknown_preset",
                "cluster.preset", "unknown cluster preset \"dgx-z\"");
  CHECK_REFUSED(simulate(std::string(R"({"preset": "no-such-scenario"})")), "unknown_preset", "preset",
                "unknown scenario preset");
  // A preset name is a string of at most 4096 characters like any other.
  CHECK_REFUSED(simulate(with(base(), "/model"_json_pointer, std::string(10000, 'x'))), "invalid_config",
                "model", "strings are limited to 4096");
}

TEST_CASE("robustness: 10^5 levels of nesting and a 100 MB string are refused at once") {
  CHECK_REFUSED(simulate(std::string(100000, '[') + std::string(100000, ']')), "invalid_json", "",
                "nests arrays/objects more than 256 levels deep (at line 1, column 257)");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  CHECK_REFUSED(simulate(objects), "invalid_json", "", "more than 256 levels deep");
  const std::string huge = "{\"name\": \"" + std::string(size_t{100} << 20, 'a') + "\"}";
  CHECK_REFUSED(simulate(huge), "invalid_json", "",
                "the config is 104857612 bytes; the limit is 16777216 bytes");
  // Millions of values in 16 MiB are read in linear time (the parser once rescanned the array
  // after every object, which took minutes); millions of objects are refused before they are
  // built (5.6 million {} took 1 GB).
  std::string objects_array = "{\"model\": [{}";
  while (objects_array.size() < (size_t{16} << 20) - 8) objects_array += ",{}";
  objects_array += "]}";
  CHECK_REFUSED(simulate(objects_array), "invalid_json", "model",
                "more than 250000 objects and arrays in one config");
  std::string numbers_array = "{\"model\": [0";
  while (numbers_array.size() < (size_t{16} << 20) - 8) numbers_array += ",0";
  numbers_array += "]}";
  CHECK_REFUSED(simulate(numbers_array), "invalid_json", "model", "more than 2000000 values in one config");
  // Just under both limits: 249,000 objects and 1.9 million numbers (8 MB), read in a second.
  std::string many = "{\"model\": [[0";
  for (int i = 1; i < 1650000; ++i) many += ",0";
  many += "]";
  for (int i = 0; i < 248990; ++i) many += ",{}";
  many += "]}";
  CHECK_REFUSED(simulate(many), "invalid_config", "model",
                "model must be a preset name or an object, got an array");
  // Under the size limit, a long string is refused by the string limit, at its path.
  json j = base();
  j["name"] = std::string(size_t{15} << 20, 'a');
  CHECK_REFUSED(simulate(j), "invalid_config", "name",
                "name is 15728640 characters long; strings are limited to 4096");
  // A long key is refused as a string too, and the message does not repeat it whole.
  const std::string long_key = "{\"strategy\": {\"" + std::string(size_t{15} << 20, 'k') + "\": 1}}";
  const Answer key = simulate(long_key);
  CHECK_REFUSED(key, "invalid_json", "strategy", "a key of 15728640 characters");
  CHECK(key.text.size() < 1000);
}

TEST_CASE("robustness: 10^6 layers and 10^6 GPUs are refused by stated limits") {
  CHECK_REFUSED(simulate(with(base(), "/model"_json_pointer, {{"preset", "llama3-8b"}, {"layers", 1000000}})),
                "invalid_config", "model.layers", "layers must be at most 10000, got 1000000");
  // 131,072 nodes of 8 GPUs = 1,048,576 GPUs (dp 131,072 x tp 8).
  json mega = base();
  mega["cluster"]["nodes"] = 131072;
  mega["training"]["global_batch"] = 131072;
  mega["strategy"] = {{"dp", 131072}, {"tp", 8}};
  CHECK_REFUSED(simulate(mega), "invalid_config", "cluster.nodes",
                "the cluster has 1048576 GPUs (131072 nodes x 8); at most 131072 are supported");
}

TEST_CASE("robustness: simulation.max_tasks and max_events stop big simulations with a clear error") {
  // The default scenario needs far more than 100 tasks and 1000 events.
  CHECK_REFUSED(simulate(std::string(R"({"preset": "default", "simulation": {"max_tasks": 100}})")),
                "limit_exceeded", "simulation.max_tasks", "more than simulation.max_tasks = 100");
  CHECK_REFUSED(simulate(std::string(R"({"preset": "default", "simulation": {"max_events": 1000}})")),
                "limit_exceeded", "simulation.max_events",
                "more than 1000 events; raise simulation.max_events");
  // A 2-layer model on one GPU, 16 micro-batches, fits in 5000 tasks and 100,000 events.
  json j = small(1);
  j["simulation"] = {{"max_tasks", 5000}, {"max_events", 100000}};
  summary_of(simulate(j));
}

TEST_CASE("robustness: unusual but real setups simulate") {
  json one = small(1);  // a single GPU
  one["training"]["precision"] = "fp32";
  one["training"]["optimizer"] = "sgd";
  const json s1 = summary_of(simulate(one));
  CHECK(s1["oom"] == false);
  CHECK(s1["bubble_fraction"] == 0.0);
  json across = small(8, 2);  // tensor parallelism over 16 GPUs on two nodes (GPT-3 1.3B: 32 heads)
  across["model"] = {{"preset", "gpt3-1.3b"}, {"layers", 2}};
  across["strategy"] = {{"tp", 16}};
  summary_of(simulate(across));
  json fp32 = small(8);
  fp32["training"]["precision"] = "fp32";
  fp32["strategy"] = {{"dp", 2}, {"tp", 2}, {"pp", 2}};
  summary_of(simulate(fp32));
}

TEST_CASE("robustness: a config that does not fit in memory simulates and reports oom") {
  // 8 layers of Llama 3 405B (16384 wide, 53248 FFN): ~3.2 billion parameters per layer, 26
  // billion in all; with Adam in mixed precision 16 bytes each = 400 GB, five times an 80 GB H100.
  json j = json::parse(R"({"model": {"preset": "llama3-405b", "layers": 8},
                           "cluster": {"preset": "dgx-h100", "gpus_per_node": 1},
                           "training": {"global_batch": 1, "seq_len": 1024}})");
  const json s = summary_of(simulate(j));
  CHECK(s["oom"] == true);
  CHECK(s["peak_memory_GiB"].get<double>() > 80);
}

TEST_CASE("robustness: a batch of 2^31 samples is refused, not wrapped to a negative micro-batch count") {
  // 2^31 / (dp 1 x micro_batch 1) micro-batches does not fit an int; it used to wrap to
  // -2^31 and "simulate" an iteration of 0.6 ms.
  json j = small(1);
  j["training"]["global_batch"] = int64_t{1} << 31;
  CHECK_REFUSED(simulate(j), "invalid_config", "training.global_batch", "at most 2147483647");
  j["training"]["global_batch"] = (int64_t{1} << 31) - 1;  // the largest: refused by the task limit
  CHECK_REFUSED(simulate(j), "limit_exceeded", "simulation.max_tasks", "needs about");
}

TEST_CASE("robustness: many overrides matching many modules stay cheap") {
  json j = small(1);
  j["strategy"]["overrides"] = json::array();
  for (int i = 0; i < 1001; ++i)
    j["strategy"]["overrides"].push_back({{"path", "layers.**"}, {"recompute", "full"}});
  CHECK_REFUSED(simulate(j), "invalid_config", "strategy.overrides", "at most 1000 are allowed");
  // Each node records once what it sets, however many overrides set it (the list used to grow
  // with overrides x modules: 20,000 overrides on 1,000 layers took 1.9 GB).
  json two = small(1);
  two["strategy"]["overrides"] = json::parse(R"([{"path": "layers.0", "recompute": "full"},
                                                {"path": "layers.*", "recompute": "full"},
                                                {"path": "layers.**", "recompute": "full"}])");
  const proteus::Config config = proteus::parse_config(two.dump());
  const proteus::OpGraph graph = proteus::build_op_graph(config.model, config.training, 1);
  const proteus::StrategyTree tree = proteus::build_strategy_tree(config, graph);
  int layer0 = -1;
  for (size_t m = 0; m < graph.modules.size(); ++m)
    if (graph.modules[m].path == "layers.0") layer0 = static_cast<int>(m);
  REQUIRE(layer0 >= 0);
  CHECK(tree.nodes[static_cast<size_t>(layer0)].set == std::vector<std::string>{"recompute"});
  // The most overrides on the most layers: 1,000 x 10,000 layers, refused by the task limit.
  j["strategy"]["overrides"].erase(1000);
  j["model"]["layers"] = 10000;
  j["simulation"] = {{"max_tasks", 1000}};
  const Answer most = simulate(j);
  CHECK(most.code == "limit_exceeded");
  CHECK(most.seconds < 5 * kSecond);
}
