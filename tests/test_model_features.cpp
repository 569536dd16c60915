// The 2025 model presets and the features they need (multi-head latent attention, shared
// experts, dense-then-MoE layers, multi-token prediction, fine-grained experts, attention
// sinks, sliding windows, QK-norm, expert load): parameter counts equal to the model cards,
// and FLOPs derived by hand.
#include <doctest/doctest.h>

#include <string>

#include "proteus/config.h"
#include "proteus/op_graph.h"
#include "relative_approx.h"
#include "test_model_helpers.h"

using namespace proteus;
using namespace proteus::test_model;

namespace {

Config config_of(const std::string& model_json, int64_t seq = 4096) {
  return parse_config("{\"model\": " + model_json +
                      ", \"cluster\": \"dgx-h100\", \"training\": {\"global_batch\": 8, \"seq_len\": " +
                      std::to_string(seq) + "}, \"strategy\": {\"dp\": 8}}");
}

OpGraph graph_of(const std::string& model_json, int64_t seq = 4096) {
  const Config c = config_of(model_json, seq);
  return build_op_graph(c.model, c.training, 1);
}

bool is_weight_named(const Tensor& t, const char* part) { return t.name.find(part) != std::string::npos; }

double elements(const Tensor& t) {
  double n = 1;
  for (int64_t d : t.shape) n *= static_cast<double>(d);
  return n;
}

// Parameters a token uses: routed experts count top_k / experts of theirs. DeepSeek and
// OpenAI leave the input embedding (a lookup) out of the "activated" figure (DeepSeek-V3's
// 36.6B "including 0.9B for the output head"); Qwen counts it (3.3B = 3.04B + 0.31B).
double active_parameters(const OpGraph& g, int top_k, int experts, bool with_embedding = false) {
  double active = 0;
  for (const Tensor& t : g.tensors) {
    if (!t.is_weight) continue;
    if (!with_embedding && is_weight_named(t, "word_embeddings")) continue;
    const bool routed = is_weight_named(t, ".experts.");
    active += elements(t) * (routed ? static_cast<double>(top_k) / experts : 1.0);
  }
  return active;
}

std::string preset(const std::string& name, const std::string& overrides = "") {
  return "{\"preset\": \"" + name + "\"" + overrides + "}";
}

}  // namespace

TEST_CASE("model cards: parameter counts of the 2025 presets") {
  // Each figure from the model card named in the preset's source; the exact sums (sum of
  // numel over the released checkpoint's tensors, derived by hand from the config) first.
  struct Card {
    const char* preset;
    double total_B, card_total_B, card_active_B;
    int top_k, experts;
    bool active_counts_embedding;
  };
  const Card cards[] = {
      {"llama3.1-8b", 8.030261248, 8.03, 0, 0, 0, false},
      {"llama3.1-70b", 70.553706496, 70.6, 0, 0, 0, false},
      {"llama3.1-405b", 405.853388800, 405.9, 0, 0, 0, false},
      {"qwen3-8b", 8.190735360, 8.2, 0, 0, 0, false},                // Qwen3-8B card: 8.2B
      {"qwen3-32b", 32.762123264, 32.8, 0, 0, 0, false},             // Qwen3-32B card: 32.8B
      {"qwen3-30b-a3b", 30.532122624, 30.5, 3.3, 8, 128, true},      // 30.5B total, 3.3B activated
      {"qwen3-235b-a22b", 235.093634560, 235, 22, 8, 128, true},     // 235B total, 22B activated
      {"gpt-oss-120b", 116.829156672, 116.83, 5.13, 4, 128, false},  // card Table 1: 116.83B / 5.13B
      {"gpt-oss-20b", 20.914757184, 20.91, 3.61, 4, 32, false},      // 20.91B / 3.61B
      {"mixtral-8x22b", 140.630071296, 141, 39, 2, 8, true},         // 141B total, 39B active
      {"nemotron-4-340b", 341.029195776, 340, 0, 0, 0, false},       // "340B"
  };
  for (const Card& c : cards) {
    CAPTURE(c.preset);
    const OpGraph g = graph_of(preset(c.preset), 1024);
    const double total = static_cast<double>(g.parameter_count()) / 1e9;
    CHECK(total == proteus::test::approx(c.total_B).epsilon(1e-9));
    CHECK(total == proteus::test::approx(c.card_total_B).epsilon(0.005));  // the card's rounding
    if (c.experts > 0) {
      CHECK(active_parameters(g, c.top_k, c.experts, c.active_counts_embedding) / 1e9 ==
            proteus::test::approx(c.card_active_B).epsilon(0.02));
    }
  }
}

TEST_CASE("model cards: DeepSeek-V3 671B main model, 685B with the MTP module, 37B activated") {
  // Main model (no MTP): 671B; activated 37B. Per layer (hand count from config.json):
  // MLA 7168*1536 + 1536 + 1536*128*192 + 7168*576 + 512 + 512*128*256 + 128*128*7168
  // = 187,107,328; dense MLP 3*7168*18432; MoE layer: router 256*7168 + 256 bias, 256 + 1
  // experts of 3*7168*2048; norms 2*7168; embedding and head 2*129280*7168; final norm.
  const OpGraph main = graph_of(preset("deepseek-v3", ", \"mtp_layers\": 0"), 1024);
  CHECK(main.parameter_count() == 671'026'419'200);
  CHECK(active_parameters(main, 8, 256) / 1e9 ==
        proteus::test::approx(36.6).epsilon(0.01));  // "36.6B incl. 0.9B head"
  // With the MTP module: eh_proj 2*7168*7168, enorm/hnorm/norm, one MoE block; embedding and
  // head shared (DeepSeek-V3 report section 2.2): 11.6B unique ("11.5B" in README_WEIGHTS).
  const OpGraph full = graph_of(preset("deepseek-v3"), 1024);
  const double mtp = static_cast<double>(full.parameter_count() - main.parameter_count());
  CHECK(mtp / 1e9 == proteus::test::approx(11.5).epsilon(0.01));
  // The checkpoint stores the MTP module's embedding and head again: 685B as published.
  const double stored = static_cast<double>(full.parameter_count()) + 2.0 * 129280 * 7168;
  CHECK(stored / 1e9 == proteus::test::approx(685).epsilon(0.001));
}

TEST_CASE("model features: FLOPs of MLA, sliding windows, shared experts and expert load") {
  // MLA attention core: QK^T over 192-wide heads and AV over 128-wide ones, 128 heads, s = 4096:
  // 2*b*a*s*s*(192 + 128) per micro-batch of one sequence.
  const OpGraph ds = graph_of(preset("deepseek-v3", ", \"mtp_layers\": 0"), 4096);
  for (const Op& op : ds.ops) {
    if (op.name != "attn" || ds.modules[op.module].layer != 0) continue;
    CHECK(op.fwd_flops == doctest::Approx(2.0 * 128 * 4096 * 4096 * 320));
  }
  // GPT-OSS: even layers see a 128-token window, odd layers everything. Keys per query in the
  // full-square convention: w(2s - w + 1)/s = 128 * 8065 / 4096 for s = 4096.
  const OpGraph oss = graph_of(preset("gpt-oss-20b"), 4096);
  int windowed = 0, full = 0;
  for (const Op& op : oss.ops) {
    if (op.name != "attn") continue;
    const double per_key = 2.0 * 64 * 4096 * (64 + 64);
    const int layer = oss.modules[op.module].layer;
    if (layer % 2 == 0) {
      CHECK(op.fwd_flops == doctest::Approx(per_key * 128.0 * 8065 / 4096));
      ++windowed;
    } else {
      CHECK(op.fwd_flops == doctest::Approx(per_key * 4096));
      ++full;
    }
  }
  CHECK(windowed == 12);
  CHECK(full == 12);
  // Dense-then-MoE: DeepSeek-V3's layers 0-2 have an MLP module, 3-60 an MoE with shared experts.
  int mlp_layers = 0, shared = 0;
  for (const Module& m : ds.modules) {
    if (m.kind == "mlp" && m.path.find("shared_experts") == std::string::npos) ++mlp_layers;
    if (m.path.find("shared_experts") != std::string::npos) ++shared;
  }
  CHECK(mlp_layers == 3);
  CHECK(shared == 58);
  // Expert load: dropless routing with the busiest expert at 2x its share doubles the
  // expert GEMMs' slots (Qwen3-30B-A3B, s = 4096, top-8 of 128: 256 -> 512 slots).
  auto expert_flops = [](const OpGraph& g) {
    for (const Op& op : g.ops)
      if (op.name == "expert_fc1") return op.fwd_flops;
    return 0.0;
  };
  const double balanced = expert_flops(graph_of(preset("qwen3-30b-a3b"), 4096));
  const double skewed =
      expert_flops(graph_of(preset("qwen3-30b-a3b", ", \"moe\": {\"imbalance\": 2.0}"), 4096));
  CHECK(balanced == doctest::Approx(2.0 * 128 * 256 * 2 * 768 * 2048));
  CHECK(skewed == doctest::Approx(2 * balanced));
  // A capacity factor with dropping sizes buckets by the factor instead.
  const double capped = expert_flops(graph_of(
      preset("qwen3-30b-a3b", ", \"moe\": {\"routing\": \"capacity\", \"capacity_factor\": 1.25}"), 4096));
  CHECK(capped == doctest::Approx(1.25 * balanced));
}
