// scripts/measure_ops.py against the simulator: the signatures the script measures for a
// transformer are exactly those the compiler's GEMM-shaped tasks ask the cost model for, and
// its own tests pass (timing tests skip themselves where PyTorch is missing), and a fitted
// collective sweep merges into a config as a cluster override. Needs python3;
// without it the cases say so and check nothing.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "relative_approx.h"

namespace {

bool have_python() { return std::system("python3 -c pass > /dev/null 2>&1") == 0; }

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe)) out += buffer;
  pclose(pipe);
  return out;
}

// The signatures of the compiler's GEMM-shaped compute tasks (linears and attention) for a config,
// each in the precision `costs` times it in.
std::set<std::string> compiler_signatures(const std::string& config, const proteus::CostModel& costs) {
  const proteus::CompiledModel compiled = proteus::compile(proteus::parse_config(config));
  std::set<std::string> out;
  for (const proteus::Task& t : compiled.exec.tasks) {
    if (t.kind != proteus::TaskKind::Compute) continue;
    const proteus::ComputeWork& w = compiled.exec.work_of(t);
    if (w.gemm_m <= 0 || (w.op_kind != proteus::OpKind::Matmul && w.op_kind != proteus::OpKind::Attention))
      continue;
    out.insert(proteus::op_signature(w, costs.precision_of(w)));
  }
  return out;
}

proteus::CostModel costs_in(proteus::Precision precision) {
  proteus::CostModel costs;
  costs.precision = precision;
  return costs;
}

// The signatures `measure_ops.py --list` prints for these arguments.
std::set<std::string> script_signatures(const std::string& arguments) {
  const std::string listed = run("python3 " PROTEUS_SOURCE_DIR "/scripts/measure_ops.py --list " + arguments);
  std::set<std::string> out;
  std::istringstream lines(listed);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) out.insert(line);
  return out;
}

}  // namespace

TEST_CASE("measure_ops.py: its transformer signatures are the compiler's GEMM-shaped tasks") {
  if (!have_python()) {
    MESSAGE("python3 not found: skipped");
    return;
  }
  // GPT-3-like layer, scaled down: hidden 1024, 16 heads, ffn 4096, seq 512, vocab 8192, TP 4,
  // micro-batch 2, fp16.
  const std::string config = R"({"model": {"kind": "transformer", "layers": 2, "hidden": 1024, "heads": 16,
    "ffn_hidden": 4096, "seq_len": 512, "vocab": 8192, "mlp": "gelu", "norm": "layernorm"},
    "cluster": {"preset": "dgx-a100-80g"}, "training": {"global_batch": 4, "precision": "fp16"},
    "strategy": {"tp": 4, "dp": 2, "micro_batch": 2}})";
  const std::set<std::string> compiler = compiler_signatures(config, costs_in(proteus::Precision::Fp16));
  const std::set<std::string> script = script_signatures(
      "--precision fp16 --tp 4 --micro-batch 2 "
      "--transformer hidden=1024,heads=16,ffn=4096,seq=512,vocab=8192");
  // Per GPU (tokens 1024): Megatron's fused linear_qkv 1024 x 768 x 1024 (q and kv each timed
  // as their share of it), o 1024 x 1024 x 256, fc1 = fc2 1024 x 1024 x 1024, lm_head 1024 x
  // 2048 x 1024, each with its input gradient (M, K, N) and weight gradient (N, K, M); o's two
  // are one shape, fc's its own: 9 GEMM shapes, and attention forward and backward.
  CHECK(script.size() == 11);
  CHECK(script.count("matmul:M=768,N=1024,K=1024,B=1:fp16") == 1);   // qkv's weight gradient
  CHECK(script.count("matmul:M=1024,N=1024,K=2048,B=1:fp16") == 1);  // lm_head's input gradient
  CHECK(script == compiler);
}

TEST_CASE("measure_ops.py: under FSDP its signatures are TorchTitan's separate wq, wk, wv, w1, w3") {
  if (!have_python()) {
    MESSAGE("python3 not found: skipped");
    return;
  }
  // Llama-like: hidden 1024, 16 heads, 4 kv heads, SwiGLU ffn 2048, TP 4, micro-batch 2, bf16.
  const std::string config = R"({"model": {"kind": "transformer", "layers": 2, "hidden": 1024, "heads": 16,
    "kv_heads": 4, "ffn_hidden": 2048, "seq_len": 512, "vocab": 8192, "mlp": "swiglu", "norm": "rmsnorm",
    "flash_attention": true}, "cluster": {"preset": "dgx-h100"}, "training": {"global_batch": 4, "precision": "bf16"},
    "strategy": {"framework": "fsdp", "tp": 4, "dp": 2, "zero": 3, "micro_batch": 2}})";
  const std::set<std::string> compiler = compiler_signatures(config, costs_in(proteus::Precision::Bf16));
  const std::set<std::string> script = script_signatures(
      "--precision bf16 --tp 4 --micro-batch 2 "
      "--framework fsdp --transformer hidden=1024,heads=16,kv_heads=4,ffn=2048,seq=512,"
      "vocab=8192,mlp=swiglu");
  CHECK(script.count("matmul:M=1024,N=64,K=1024,B=1:bf16") == 1);   // wk (and wv): 4 x 64 / 4
  CHECK(script.count("matmul:M=1024,N=512,K=1024,B=1:bf16") == 1);  // w1 (and w3): 2048 / 4
  CHECK(script.count("matmul:M=1024,N=256,K=1024,B=1:bf16") == 1);  // wq
  CHECK(script == compiler);
}

TEST_CASE("measure_ops.py: under FP8 its signatures carry the precision each op is costed in") {
  if (!have_python()) {
    MESSAGE("python3 not found: skipped");
    return;
  }
  // The layer's linears FP8, the LM head and attention bf16: a table whose keys said fp8 for
  // those would match nothing, and one timed in bf16 under fp8 keys would be twice too slow.
  const std::string config = R"({"model": {"kind": "transformer", "layers": 2, "hidden": 1024, "heads": 16,
    "ffn_hidden": 4096, "seq_len": 512, "vocab": 8192, "mlp": "gelu", "norm": "layernorm", "flash_attention": true},
    "cluster": {"preset": "dgx-h100"}, "training": {"global_batch": 4, "precision": "fp8"},
    "strategy": {"tp": 4, "dp": 2, "micro_batch": 2, "sequence_parallel": true}})";
  const std::set<std::string> compiler = compiler_signatures(config, costs_in(proteus::Precision::Fp8));
  const std::set<std::string> script = script_signatures(
      "--precision fp8 --tp 4 --micro-batch 2 "
      "--transformer hidden=1024,heads=16,ffn=4096,seq=512,vocab=8192");
  CHECK(script.size() == 11);  // as above: 6 FP8 linear shapes, the LM head's 3 in bf16, attention's 2
  CHECK(script == compiler);
  CHECK(script.count("matmul:M=1024,N=2048,K=1024,B=1:bf16") == 1);  // the LM head
  CHECK(script.count("matmul:M=2048,N=1024,K=1024,B=1:bf16") == 1);  // its weight gradient
  CHECK(script.count("matmul:M=1024,N=1024,K=1024,B=1:fp8") == 1);   // fc1 and fc2
}

TEST_CASE("measure_ops.py: its own tests pass (timing skipped without PyTorch)") {
  if (!have_python()) {
    MESSAGE("python3 not found: skipped");
    return;
  }
  CHECK(std::system("python3 " PROTEUS_SOURCE_DIR "/tests/test_measure_ops.py > /dev/null 2>&1") == 0);
}

TEST_CASE("measure_ops.py: a fitted collective sweep is a cluster override the config accepts") {
  if (!have_python()) {
    MESSAGE("python3 not found: skipped");
    return;
  }
  // All-reduce over 8 GPUs as the ring model times it, with 450 GB/s links at 82% and 2.5 us
  // per hop: t = 8.4 + 14 x 2.5 + (7/4) S / (450e9 x 0.82) s, at the sweep's sizes.
  nlohmann::json points = nlohmann::json::array();
  for (double s = 8192; s <= 1073741824.0; s *= 4)
    points.push_back({s, 8.4 + 14 * 2.5 + 1.75 * s / (450e9 * 0.82) * 1e6});
  // One file per process: several worktrees' suites may run this test at the same time.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("proteus_collective_points_" + std::to_string(getpid()) + ".json"))
                               .string();
  {
    std::ofstream f(path);
    f << nlohmann::json{{"collective", "all_reduce"}, {"world", 8}, {"points", points}}.dump();
  }
  const std::string fragment =
      run("python3 " PROTEUS_SOURCE_DIR "/scripts/measure_ops.py --fit-collectives " + path +
          " --level intra_node --link-GBps 450");
  std::filesystem::remove(path);
  const auto intra = nlohmann::json::parse(fragment).at("cluster").at("intra_node");
  const nlohmann::json config = {{"model", {{"preset", "gpt2-small"}}},
                                 {"cluster", {{"preset", "dgx-h100"}, {"intra_node", intra}}},
                                 {"training", {{"global_batch", 8}}},
                                 {"strategy", {{"dp", 8}}}};
  const proteus::Config parsed = proteus::parse_config(config.dump());
  CHECK(parsed.cluster.intra_node.bus_efficiency == proteus::test::approx(0.82).epsilon(1e-4));
  CHECK(parsed.cluster.intra_node.latency_us == proteus::test::approx(2.5).epsilon(1e-3));
  CHECK(parsed.cluster.intra_node.link_GBps == 450);  // the rest of the preset stays
}
