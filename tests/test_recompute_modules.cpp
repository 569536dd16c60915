// Selective recompute by module (strategy.recompute_modules, Megatron-Core's --recompute-modules;
// docs/frameworks/recompute.md "Selective recompute by module"). What each module stops keeping is checked
// against the tensors' sizes by hand; what it adds is its ops' forward, run again.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "../core/src/search/bounds.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/import.h"
#include "relative_approx.h"

using namespace proteus;
using nlohmann::json;

namespace {

constexpr double kLayers = 2, kS = 256, kH = 512;

// GPT-style (GELU, LayerNorm, dropout), 2 layers, h 512, s 256: 8 data-parallel ranks of one
// DGX H100, one sample each per micro-batch, 16-bit activations.
std::string dense(const std::string& fields, const std::string& precision = "bf16", int micro_batch = 1) {
  return test::config_json_in(precision, test::gpt_model(2, 512, 8, 256, 8000),
                              R"({"preset":"dgx-h100","nodes":1})", 16 * micro_batch,
                              R"({"dp":8,"micro_batch":)" + std::to_string(micro_batch) +
                                  R"(,"overlap_grad_reduce":false)" + fields + "}");
}

// A small Qwen3-style MoE: 8 experts of 512 (SwiGLU), top-2, dropless, flash attention; expert
// parallel 8 (one expert per rank), so each rank's expert sees top_k x s = 512 token slots.
std::string moe_model(const std::string& extra = "") {
  return R"({"kind":"transformer","name":"test-moe","layers":2,"hidden":512,"heads":8,"kv_heads":2,)"
         R"("ffn_hidden":1024,"seq_len":256,"vocab":8000,"mlp":"swiglu","norm":"rmsnorm","bias":false,)"
         R"("dropout":false,"flash_attention":true,"tied_embeddings":false,)"
         R"("moe":{"experts":8,"top_k":2,"expert_ffn_hidden":512,"routing":"dropless","imbalance":1.0})" +
         extra + "}";
}

std::string moe(const std::string& fields, const std::string& model_extra = "") {
  return test::config_json_in("bf16", moe_model(model_extra), R"({"preset":"dgx-h100","nodes":1})", 16,
                              R"({"dp":8,"ep":8,"micro_batch":1,"overlap_grad_reduce":false)" + fields + "}");
}

std::string selective(const std::string& modules) {
  return R"(,"recompute":"selective","recompute_modules":)" + modules;
}

double activations_per_micro_batch(const std::string& cfg) {
  return test::compile_text(cfg).stats.activation_bytes_per_microbatch_per_stage[0];
}

json simulate(const std::string& cfg, bool timeline = false) {
  SimulateOptions o;
  o.timeline = timeline;
  json r = json::parse(simulate_json(cfg, o));
  REQUIRE_MESSAGE(r["ok"] == true, r.dump());
  return r;
}

// Rank 0's compute spans by (op label, phase): summed seconds.
std::map<std::pair<std::string, std::string>, double> compute_seconds(const json& result) {
  std::map<std::pair<std::string, std::string>, double> out;
  for (const json& s : result["timeline"]) {
    if (s["rank"] != 0 || s["stream"] != "compute") continue;
    const std::string name = s["name"].get<std::string>();  // "layers.0.mlp.fc1 F"
    out[{name.substr(0, name.rfind(' ')), s["kind"].get<std::string>()}] +=
        s["end_s"].get<double>() - s["start_s"].get<double>();
  }
  return out;
}

bool ends_with_one_of(const std::string& label, const std::vector<std::string>& ends) {
  for (const std::string& e : ends)
    if (label.size() >= e.size() && label.compare(label.size() - e.size(), e.size(), e) == 0) return true;
  return false;
}

// The recompute phase runs exactly the forward of the ops whose label ends with one of `ops`:
// every recompute compute task of rank 0 does the work of a forward task of the same op, and
// each listed op runs again once per micro-batch.
void check_recompute_is_forward_of(const std::string& cfg, const std::vector<std::string>& ops) {
  const CompiledModel c = test::compile_text(cfg);
  std::map<std::pair<int, int>, int> forward;  // (label, micro-batch) -> work
  for (const Task& t : c.exec.tasks)
    if (t.rank == 0 && t.kind == TaskKind::Compute && t.phase == Phase::Forward)
      forward[{t.label, t.micro_batch}] = t.work;
  int replayed = 0, listed_forward = 0;
  for (const Task& t : c.exec.tasks) {
    if (t.rank != 0 || t.kind != TaskKind::Compute) continue;
    const std::string& label = c.exec.labels[static_cast<size_t>(t.label)];
    if (t.phase == Phase::Forward && ends_with_one_of(label, ops)) ++listed_forward;
    if (t.phase != Phase::Recompute) continue;
    CAPTURE(label);
    CHECK(ends_with_one_of(label, ops));
    CHECK(forward.at({t.label, t.micro_batch}) == t.work);
    ++replayed;
  }
  CHECK(replayed == listed_forward);
  CHECK(replayed > 0);
}

// ... and where nothing else runs beside it (dense, no overlapped reductions), the replayed
// forward takes exactly the forward's time.
void check_recompute_time_is_forward_time(const std::string& cfg) {
  const auto secs = compute_seconds(simulate(cfg, true));
  double recompute = 0, forward = 0;
  for (const auto& [key, t] : secs) {
    if (key.second != "recompute") continue;
    CAPTURE(key.first);
    recompute += t;
    forward += secs.at({key.first, "forward"});
    CHECK(t == proteus::test::approx(secs.at({key.first, "forward"})).epsilon(1e-9));
  }
  CHECK(recompute > 0);
  CHECK(recompute == proteus::test::approx(forward).epsilon(1e-9));
}

}  // namespace

TEST_CASE("recompute modules: the default is today's core_attn, byte for byte") {
  for (const std::string& cfg : {dense(R"(,"recompute":"selective")"), moe(R"(,"recompute":"selective")")}) {
    const std::string plain = R"("recompute":"selective")";
    const size_t at = cfg.find(plain);
    const std::string listed = cfg.substr(0, at) +
                               R"("recompute":"selective","recompute_modules":["core_attn"])" +
                               cfg.substr(at + plain.size());
    CHECK(simulate_json(cfg, {}) == simulate_json(listed, {}));
    CHECK(compile_json(cfg) == compile_json(listed));
  }
}

TEST_CASE(
    "recompute modules: mlp drops what the dense MLP keeps past its input, and runs its forward again") {
  // Per layer and sample the MLP keeps ln2's input x (the checkpoint's input, kept either way),
  // fc1's input (h), GELU's input (4h) and fc2's input (4h): 2 bytes each.
  const double kept = activations_per_micro_batch(dense(selective(R"(["core_attn"])")));
  const double mlp = activations_per_micro_batch(dense(selective(R"(["core_attn","mlp"])")));
  CHECK(kept - mlp == doctest::Approx(kLayers * kS * kH * 2 * (1 + 4 + 4)));
  // On a dense GQA model TE fuses both norms into linears (no "layernorm" to recompute); no MoE.
  CHECK(activations_per_micro_batch(dense(selective(R"(["core_attn","layernorm","moe_act","moe"])"))) ==
        kept);
  check_recompute_is_forward_of(dense(selective(R"(["mlp"])")),
                                {".mlp.ln2", ".mlp.fc1", ".mlp.act", ".mlp.fc2"});
  check_recompute_time_is_forward_time(dense(selective(R"(["mlp"])")));
  // Simulate's breakdown holds the activations at the memory peak. With micro-batches of 4 the
  // peak is the end of the forward (pp 1: one micro-batch in flight), where every layer's MLP
  // tensors are held without recompute and none with it. (With micro-batches of 1 the peak is
  // the fp32 gradients' reduction after the backward, with no activations held; a check there
  // passed whatever the activations were, as doctest's default Approx scale made 5% of 1 GiB
  // the tolerance of a 4.5 MB difference.)
  const double kept4 = activations_per_micro_batch(dense(selective(R"(["core_attn"])"), "bf16", 4));
  const double mlp4 = activations_per_micro_batch(dense(selective(R"(["core_attn","mlp"])"), "bf16", 4));
  CHECK(kept4 - mlp4 == doctest::Approx(4 * (kept - mlp)));
  auto peak_activations_GiB = [](const std::string& cfg) {
    return simulate(cfg)["devices"][0]["memory_breakdown_GiB"]["activations"].get<double>();
  };
  const double peak_kept = peak_activations_GiB(dense(selective(R"(["core_attn"])"), "bf16", 4));
  const double peak_mlp = peak_activations_GiB(dense(selective(R"(["core_attn","mlp"])"), "bf16", 4));
  CHECK(peak_kept - peak_mlp == test::approx((kept4 - mlp4) / (1024.0 * 1024 * 1024)).epsilon(0.01));
}

TEST_CASE("recompute modules: layernorm, moe_act and moe on an MoE layer, by hand") {
  const double none = activations_per_micro_batch(moe(selective("[]")));
  // Per layer and rank: the pre-MLP norm's output (s x h), which the router keeps.
  const double norm_out = kS * kH * 2;
  // The expert activation's output, fc2's input: 1 expert x 8 samples x 64 slots x 512 (f).
  const double act_out = 1 * 8 * 64 * 512 * 2;
  CHECK(none - activations_per_micro_batch(moe(selective(R"(["layernorm"])"))) ==
        doctest::Approx(kLayers * norm_out));
  CHECK(none - activations_per_micro_batch(moe(selective(R"(["moe_act"])"))) ==
        doctest::Approx(kLayers * act_out));
  CHECK(none - activations_per_micro_batch(moe(selective(R"(["layernorm","moe_act"])"))) ==
        doctest::Approx(kLayers * (norm_out + act_out)));
  // moe keeps only its input, the norm's output: gone are the router's probabilities (8 samples'
  // share of one: s x 8 experts), the routed tokens (expert_fc1's input), expert_fc1's output
  // (2f wide), the activation's output and the expert outputs combine keeps.
  const double probs = kS * 8 * 2;
  const double routed = 1 * 8 * 64 * kH * 2, up = 1 * 8 * 64 * 1024 * 2, down = 8 * 1 * 64 * kH * 2;
  const double moe_layer = probs + routed + up + act_out + down;
  CHECK(none - activations_per_micro_batch(moe(selective(R"(["moe"])"))) ==
        doctest::Approx(kLayers * moe_layer));
  // With layernorm too, the checkpoint's input is itself discarded until the backward.
  CHECK(none - activations_per_micro_batch(moe(selective(R"(["moe","layernorm"])"))) ==
        doctest::Approx(kLayers * (moe_layer + norm_out)));
  // mlp has no dense MLP to act on here.
  CHECK(activations_per_micro_batch(moe(selective(R"(["mlp"])"))) == none);
}

TEST_CASE("recompute modules: the recompute is the forward of the module's ops again") {
  check_recompute_is_forward_of(moe(selective(R"(["moe_act"])")), {".experts.expert_act"});
  check_recompute_is_forward_of(moe(selective(R"(["layernorm"])")), {".moe.ln2"});
  check_recompute_is_forward_of(moe(selective(R"(["moe"])")),
                                {".moe.router", ".moe.dispatch", ".experts.expert_fc1", ".experts.expert_act",
                                 ".experts.expert_fc2", ".moe.combine"});
  // moe runs its all-to-alls again: dispatch and combine in the recompute.
  const CompiledModel c = test::compile_text(moe(selective(R"(["moe"])")));
  int a2a_recompute = 0;
  for (const Task& t : c.exec.tasks)
    if (t.rank == 0 && t.phase == Phase::Recompute && t.kind == TaskKind::Collective) ++a2a_recompute;
  CHECK(a2a_recompute == 2 * 2 * 2);  // 2 all-to-alls x 2 layers x 2 micro-batches
  // Hardware FLOPs count the replayed forward once.
  const CompiledModel none = test::compile_text(moe(selective("[]")));
  CHECK(c.stats.hardware_flops_per_iteration > none.stats.hardware_flops_per_iteration);
}

TEST_CASE("recompute modules: the search's time bound stays below simulate") {
  for (const char* mods : {R"(["moe"])", R"(["layernorm","moe_act"])", R"([])", R"(["core_attn","moe"])"}) {
    CAPTURE(mods);
    const std::string cfg = moe(selective(mods));
    const Config c = parse_config(cfg);
    const search_detail::Bounds b = search_detail::analytic_bounds(search_detail::profile_model(c), c);
    CHECK(b.time_s <= simulate(cfg)["summary"]["iteration_time_s"].get<double>());
  }
}

TEST_CASE("recompute modules: errors name the field") {
  auto path = [](const std::string& cfg) { return test::error_path([&] { parse_config(cfg); }); };
  CHECK(path(dense(selective(R"(["attn"])"))) == "strategy.recompute_modules[0]");
  CHECK(path(dense(selective(R"(["mlp","mlp"])"))) == "strategy.recompute_modules[1]");
  CHECK(path(dense(R"(,"recompute":"full","recompute_modules":["mlp"])")) == "strategy.recompute_modules");
  CHECK(path(dense(R"(,"recompute_modules":["mlp"])")) == "strategy.recompute_modules");
  // An override's selective recompute is a use.
  CHECK(path(dense(
            R"(,"recompute_modules":["mlp"],"overrides":[{"path":"layers.0","recompute":"selective"}])")) ==
        test::kNoError);
  // Megatron-Core refuses mla_up_proj without MLA, and moe_act / layernorm under delayed FP8.
  CHECK(path(dense(selective(R"(["mla_up_proj"])"))) == "strategy.recompute_modules");
  CHECK(path(dense(selective(R"(["layernorm"])"), "fp8")) == "strategy.recompute_modules");
  CHECK(path(dense(selective(R"(["mlp"])"), "fp8")) == test::kNoError);
  CHECK(path(dense(R"(,"framework":"fsdp","zero":2)" + selective(R"(["mlp"])"))) ==
        "strategy.recompute_modules");
  // Names whose module the model lacks are accepted, as Megatron accepts them.
  CHECK(path(dense(selective(R"(["moe_act","shared_experts","moe"])"))) == test::kNoError);
}

TEST_CASE("recompute modules: Megatron import and export") {
  const std::string common =
      "--num-layers 2 --hidden-size 512 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256 "
      "--micro-batch-size 1 --global-batch-size 8 --bf16 --num-experts 8 --moe-router-topk 2 "
      "--expert-model-parallel-size 8 ";
  MegatronImportOptions on_h100;
  on_h100.cluster_json = "dgx-h100";
  on_h100.nodes = 1;
  auto strategy_of = [&](const std::string& args) {
    return json::parse(import_megatron(common + args, on_h100).config_json)["strategy"];
  };
  const json s = strategy_of(
      "--recompute-granularity selective --recompute-modules layernorm moe_act --moe-grouped-gemm");
  CHECK(s["recompute"] == "selective");
  CHECK(s["recompute_modules"] == json::array({"layernorm", "moe_act"}));
  CHECK_FALSE(strategy_of("--recompute-granularity selective --recompute-modules core_attn")
                  .contains("recompute_modules"));
  // --moe-layer-recompute is Megatron's old spelling of selective "moe".
  const json old = strategy_of("--moe-layer-recompute");
  CHECK(old["recompute"] == "selective");
  CHECK(old["recompute_modules"] == json::array({"core_attn", "moe"}));
  auto import_error = [&](const std::string& args) {
    return test::error_path([&] { import_megatron(common + args, on_h100); });
  };
  CHECK(import_error("--recompute-granularity selective --recompute-modules moe_act") ==
        "--recompute-modules");
  CHECK(import_error("--recompute-granularity selective --recompute-modules attn") == "--recompute-modules");
  CHECK(import_error("--recompute-granularity selective --recompute-modules shared_experts "
                     "--moe-shared-expert-overlap") == "--recompute-modules");
  // Round trip.
  const std::string cfg = moe(selective(R"(["layernorm","moe_act","core_attn"])"));
  const std::string script = export_megatron(cfg);
  CHECK(script.find("--recompute-modules") != std::string::npos);
  const json back = json::parse(import_megatron(script, on_h100).config_json)["strategy"];
  CHECK(back["recompute_modules"] == json::array({"core_attn", "moe_act", "layernorm"}));
}

TEST_CASE("recompute modules: MLA's up projections and input norm, by hand") {
  // DeepSeek-style: MLA (q latent 256, kv latent 128 + rope 32, 16 heads of 64 + 32 / v 64),
  // one dense layer then MoE with a shared expert, one MTP module; 8 ranks, one sample each.
  const std::string model =
      R"({"kind":"transformer","name":"mini-dsv3","layers":4,"hidden":1024,"heads":16,"kv_heads":16,)"
      R"("ffn_hidden":2048,"seq_len":1024,"vocab":8000,"mlp":"swiglu","norm":"rmsnorm","tied_embeddings":false,)"
      R"("bias":false,"dropout":false,"flash_attention":true,"mtp_layers":1,)"
      R"("mla":{"q_lora_rank":256,"kv_lora_rank":128,"qk_nope_head_dim":64,"qk_rope_head_dim":32,"v_head_dim":64},)"
      R"("moe":{"experts":16,"top_k":4,"expert_ffn_hidden":512,"routing":"dropless","imbalance":1.0,)"
      R"("shared_expert_ffn_hidden":512,"first_dense_layers":1}})";
  auto cfg = [&](const std::string& mods) {
    return test::config_json_in("bf16", model, R"({"preset":"dgx-h100","nodes":1})", 16,
                                R"({"dp":8,"ep":8,"micro_batch":1)" + selective(mods) + "}");
  };
  const double none = activations_per_micro_batch(cfg("[]"));
  const double s = 1024, h = 1024, blocks = 5;  // 4 layers and the MTP module's block
  // layernorm: MLA's input norm in every block (s x h) and the MoE blocks' pre-MLP norm (4).
  CHECK(none - activations_per_micro_batch(cfg(R"(["layernorm"])")) ==
        doctest::Approx((blocks + 4) * s * h * 2));
  // mla_up_proj keeps the latents (the norms' inputs) and no longer the norms' outputs, which
  // the up projections kept (q 256, kv 128 + 32), nor Q (16 x 96) and [K | V] (16 x (64 + 64)),
  // which the attention kept; the rotary query keeps nothing either way.
  const double up = 256 + 160 + 16 * 96 + 16 * 128;
  CHECK(none - activations_per_micro_batch(cfg(R"(["mla_up_proj"])")) ==
        doctest::Approx(blocks * s * up * 2));
  check_recompute_is_forward_of(cfg(R"(["mla_up_proj"])"),
                                {".q_norm", ".q_up_proj", ".kv_norm", ".kv_up_proj", ".rotary_q"});
}
