// The symmetry reduction (DESIGN.md §3): simulating one rank per pipeline stage, with sibling
// flows as weights on the links, must give the same result as simulating every GPU.
#include <doctest/doctest.h>

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

TEST_CASE("symmetry: interleaved pipeline with ZeRO-3 agrees to 6e-4") {
  // Same physics; the weighted flows sum rates in another order than the individual flows.
  // With the A100-like roofline costs the difference was ~3e-8 (rounding). With H100's measured
  // GEMM table (docs/fidelity.md) one pipeline send (layers.23 forward, at 0.1357 s) shares its
  // link with other flows differently in the two runs and ends 61 us later in the full one;
  // the iteration differs by 4.2e-5 (0.353201 vs 0.353216 s). An approximation of the
  // reduction where a send overlaps sibling flows that start at different times, not rounding.
  // Since ZeRO-3's gathers run prefetched on their own stream (docs/frameworks.md) more flows
  // overlap the sends: 1.2e-4 (0.260229 vs 0.260260 s). With the measured efficiencies of
  // collectives inside a node (docs/fidelity.md, "Collectives inside a node") the TP4
  // collectives run at 0.62 of NVLink instead of 0.8, longer beside the sends: 4.6e-4
  // (0.261659 vs 0.261780 s). Under framework fsdp the norms, rotary and SwiGLU now run as
  // TorchTitan's eager kernels (docs/fidelity.md, "Eager PyTorch and torch.compile"); the shifted
  // timing also changes which gathered weights are live at the memory peak: 9.76598 vs
  // 9.76599 GiB (1e-6, about one 8 KB norm weight). The run keeps cuDNN attention: under fsdp's
  // own kernel, FlashAttention-2 (docs/frameworks.md, "Attention kernels"), the attention is
  // 1.6x longer and the sends overlap other flows differently again: 8.4e-4 (0.270943 vs
  // 0.271171 s), the same approximation.
  check_equal(
      "default",
      R"(,"training":{"global_batch":16,"seq_len":2048},"strategy":{"zero":3,"framework":"fsdp","attention_kernel":"cudnn","schedule":"interleaved-1f1b","virtual_stages":2})",
      6e-4);
}

TEST_CASE("symmetry: where the hardware itself is asymmetric the reduction is an approximation") {
  // DGX-1 attaches each NIC under one PCIe switch, so GPUs of one stage reach their NIC over
  // different paths and their pipeline sends are not identical; simulating one of them for all
  // stays within 1% here (docs/design.md, "Symmetry"; 0.1% before ZeRO-3's prefetched gathers
  // ran on their own stream beside the pipeline sends, whose paths differ per GPU).
  check_equal("gpt2-1.5b-proteus",
              R"(,"strategy":{"tp":8,"pp":2,"dp":4,"micro_batch":1,"zero":3,"framework":"fsdp"})", 1e-2);
}
