// The symmetry reduction (DESIGN.md §3): simulating one rank per pipeline stage, with sibling
// flows as weights on the links, must give the same result as simulating every GPU.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "proteus/api.h"

namespace {

nlohmann::json run(const std::string& scenario, bool symmetry, const std::string& extra = "") {
  const std::string cfg = "{\"preset\":\"" + scenario +
                          "\",\"simulation\":{\"symmetry\":" + (symmetry ? "true" : "false") + "}" + extra +
                          "}";
  return nlohmann::json::parse(proteus::simulate_json(cfg, {}));
}

void check_equal(const std::string& scenario, const std::string& extra = "", double rel = 1e-9) {
  CAPTURE(scenario);
  CAPTURE(extra);
  const auto reduced = run(scenario, true, extra);
  const auto full = run(scenario, false, extra);
  REQUIRE(reduced["ok"] == true);
  REQUIRE(full["ok"] == true);
  const double t_reduced = reduced["summary"]["iteration_time_s"];
  const double t_full = full["summary"]["iteration_time_s"];
  CHECK(t_reduced == doctest::Approx(t_full).epsilon(rel).scale(0));
  const double m_reduced = reduced["summary"]["peak_memory_GiB"];
  const double m_full = full["summary"]["peak_memory_GiB"];
  // Peak memory depends on timing only through transient buffers (gathered ZeRO-3 weights)
  // live at the peak: equal where the times are, within the same tolerance where they are not.
  CHECK(m_reduced == doctest::Approx(m_full).epsilon(rel).scale(0));
  // The reduced run simulates fewer ranks.
  CHECK(reduced["stats"]["simulated_ranks"] < full["stats"]["simulated_ranks"]);
}

// In a full simulation of symmetric hardware, the ranks of one pipeline stage do the same work
// on images of the same links: they must end at the same instant and be busy as long.
void check_stages_uniform(const nlohmann::json& full) {
  std::map<int, nlohmann::json> first_of_stage;
  for (const auto& d : full["devices"]) {
    const int stage = d["stage"];
    const auto [it, first] = first_of_stage.emplace(stage, d);
    if (first) continue;
    CAPTURE(d["rank"]);
    CHECK(d["end_s"] == it->second["end_s"]);
    CHECK(d["busy_s"] == it->second["busy_s"]);
  }
  CHECK(first_of_stage.size() > 1);
}

}  // namespace

TEST_CASE("symmetry: reduced simulation equals simulating every rank (1e-9)") {
  // 32 GPUs on 4 DGX H100: TP4 x PP2 x DP4; each data-parallel group has 2 members per node.
  check_equal("default", R"(,"training":{"global_batch":16,"seq_len":2048})");
  // ZeRO-3 on the same machine: weight all-gathers per use.
  check_equal("default",
              R"(,"training":{"global_batch":16,"seq_len":2048},"strategy":{"zero":3,"framework":"fsdp"})");
  // 64 V100 on 8 DGX-1 (2 NICs): PP4 x TP4 x DP4, the original Proteus evaluation.
  check_equal("gpt2-1.5b-proteus");
  // Tensor parallelism across two DGX-1 nodes (TP16 x PP2 x DP2).
  check_equal("gpt2-1.5b-proteus", R"(,"strategy":{"tp":16,"pp":2,"dp":2,"micro_batch":1})");
  // 32 V100 on 4 DGX-1 with ONE NIC each: 8 data-parallel groups share every NIC.
  check_equal("gpt-12l-dp32");
  // Expert parallelism (all-to-all) on 16 H100.
  check_equal("mixtral-8x7b-ep", R"(,"training":{"global_batch":16,"seq_len":1024})");
  // The CNN hybrid: data-parallel convolutions, tensor-parallel classifier.
  check_equal("alexnet-hybrid");
}

TEST_CASE("symmetry: interleaved pipeline with ZeRO-3 agrees to 1e-5") {
  // Under framework fsdp with its default kernel, FlashAttention-2 (docs/frameworks.md,
  // "Attention kernels"). The full simulation is itself symmetric: the 16 ranks of each stage
  // end at the same instant and are busy as long, to the last bit (checked below). So the
  // difference is not an asymmetry between ranks (an executor tie-break, a flow order) but the
  // reduction's approximation: siblings are weights on the representative's links
  // (executor_plans.h), and flows of different collectives that overlap only partly in time
  // share links a little differently than the 16 real flows do. The first task that differs
  // is stage 1's pipeline send of layers.15 (micro-batch 1, from 36.489 ms), beside stage 1's
  // ZeRO-3 gathers of layers.24 across nodes and stage 0's send the other way: it ends 1.3 us
  // later in the full run (36.6369 vs 36.6356 ms); the iteration 9.4e-7 later (0.28297962 vs
  // 0.28297936 s), peak memory equal. With cuDNN attention the two are equal. (At 39145e5,
  // with the costs of then, FlashAttention-2 gave 8.4e-4, and the case pinned cuDNN at 6e-4.)
  const std::string extra =
      R"(,"training":{"global_batch":16,"seq_len":2048},"strategy":{"zero":3,"framework":"fsdp","schedule":"interleaved-1f1b","virtual_stages":2})";
  check_equal("default", extra, 1e-5);
  check_stages_uniform(run("default", false, extra));
}

TEST_CASE("symmetry: where the hardware itself is asymmetric the reduction is an approximation") {
  // DGX-1 attaches each NIC under one PCIe switch, so GPUs of one stage reach their NIC over
  // different paths and their pipeline sends are not identical; simulating one of them for all
  // stays within 1% here (docs/design.md, "Symmetry"; 0.1% before ZeRO-3's prefetched gathers
  // ran on their own stream beside the pipeline sends, whose paths differ per GPU).
  check_equal("gpt2-1.5b-proteus",
              R"(,"strategy":{"tp":8,"pp":2,"dp":4,"micro_batch":1,"zero":3,"framework":"fsdp"})", 1e-2);
}
