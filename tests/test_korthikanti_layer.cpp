// One transformer layer against a measurement of the part: Korthikanti et al. 2022 ("Reducing
// Activation Recomputation in Large Transformer Models", arXiv 2205.05198), Table 4, times the
// forward and the backward of one layer of their 22B GPT (hidden 6144, 64 heads, sequence
// 2048, micro-batch 4, TP 8 on one DGX A100, fp16, attention without flash attention) in five
// settings. scripts/korthikanti_table4.py prints the same comparison; docs/fidelity/attention.md,
// "Attention without flash attention: the backward's own kernels", has the figures.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "proteus/api.h"
#include "relative_approx.h"

namespace {

struct LayerSpans {
  double forward_ms = 0;
  double backward_ms = 0;  // input and weight gradients, and the replay of a recompute
};

// The span of layer 10's forward compute tasks and of its backward ones on rank 0, micro-batch 0
// (the tensor-parallel collectives between them included).
LayerSpans layer_spans(bool sequence_parallel, const char* recompute) {
  const std::string config =
      R"({"model":{"kind":"transformer","name":"GPT 22b","layers":48,"hidden":6144,"heads":64,)"
      R"("ffn_hidden":24576,"seq_len":2048,"vocab":51200,"mlp":"gelu","norm":"layernorm",)"
      R"("tied_embeddings":true},"cluster":{"preset":"dgx-a100-80g","nodes":1},)"
      R"("training":{"global_batch":4,"seq_len":2048,"precision":"fp16","optimizer":"adam"},)"
      R"("strategy":{"tp":8,"pp":1,"dp":1,"micro_batch":4,"overlap_grad_reduce":false,)"
      R"("sequence_parallel":)" +
      std::string(sequence_parallel ? "true" : "false") + R"(,"recompute":")" + recompute + R"("}})";
  proteus::SimulateOptions options;
  options.timeline = true;
  const nlohmann::json r = nlohmann::json::parse(proteus::simulate_json(config, options));
  REQUIRE(r["ok"] == true);
  double f0 = 1e30, f1 = 0, b0 = 1e30, b1 = 0;
  for (const auto& t : r["timeline"]) {
    if (t["rank"] != 0 || t["mb"] != 0 || t["name"].get<std::string>().rfind("layers.10.", 0) != 0) continue;
    const double start = t["start_s"], end = t["end_s"];
    const std::string kind = t["kind"];  // compute tasks' phase; a collective's kind
    if (kind == "forward") {
      f0 = std::min(f0, start);
      f1 = std::max(f1, end);
    } else if (kind == "backward_input" || kind == "backward_weight" || kind == "recompute") {
      b0 = std::min(b0, start);
      b1 = std::max(b1, end);
    }
  }
  return {(f1 - f0) * 1e3, (b1 - b0) * 1e3};
}

}  // namespace

TEST_CASE(
    "one 22B layer: forward + backward within 6% of Korthikanti et al.'s Table 4 in all five settings") {
  // Table 4 in ms (its overhead column, -3%, 39%, 7% and 4% over the 19.6 ms baseline, checks
  // the sums). Before the unfused attention's backward moved its kernels' bytes (19 per score,
  // not twice the forward's 26) the model was 7.9%, 3.4%, 7.3%, 6.8% and 2.5% above them.
  struct Row {
    bool sequence_parallel;
    const char* recompute;
    double forward_ms, backward_ms;
  };
  for (const Row& row :
       {Row{false, "none", 7.7, 11.9}, Row{true, "none", 7.2, 11.8}, Row{false, "full", 7.7, 19.5},
        Row{false, "selective", 7.7, 13.2}, Row{true, "selective", 7.2, 13.1}}) {
    CAPTURE(row.sequence_parallel);
    CAPTURE(row.recompute);
    const LayerSpans s = layer_spans(row.sequence_parallel, row.recompute);
    MESSAGE("forward " << s.forward_ms << " ms (" << row.forward_ms << "), backward " << s.backward_ms
                       << " ms (" << row.backward_ms << ")");
    CHECK(s.forward_ms + s.backward_ms ==
          proteus::test::approx(row.forward_ms + row.backward_ms).epsilon(0.06));
  }
}
