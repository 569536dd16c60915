// A Hugging Face config.json -> the model part of a config. Field meanings are those of the
// transformers library's configuration classes (LlamaConfig, MistralConfig, MixtralConfig,
// Qwen2Config, Qwen3Config, Qwen3MoeConfig, DeepseekV3Config, GptOssConfig, GemmaConfig,
// Gemma2Config); docs/import.md lists the mapping.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>

#include "../config/json_text.h"
#include "hf_model.h"
#include "proteus/error.h"
#include "proteus/import.h"

namespace proteus {

namespace import_detail {

namespace {

using In = nlohmann::json;

class HfReader {
 public:
  explicit HfReader(const In& root) : root_(root) {}

  bool has(const char* key) {
    used_.insert(key);
    return root_.contains(key) && !root_.at(key).is_null();
  }
  int64_t integer(const char* key, int64_t fallback, int64_t min, int64_t max) {
    if (!has(key)) {
      if (fallback < 0) throw Error("invalid_config", key, std::string("missing \"") + key + "\"");
      return fallback;
    }
    const In& v = root_.at(key);
    // A whole float within int64 (4096.0) counts; casting one outside it (1e300) would be
    // undefined behaviour, so the range is checked first, as is an unsigned above INT64_MAX.
    constexpr double kBelowInt64Limit = 9.2e18;  // under 2^63 = 9.22e18, where the cast is defined
    const double f = v.is_number_float() ? v.get<double>() : 0;
    const bool whole_float =
        v.is_number_float() && std::isfinite(f) && std::abs(f) < kBelowInt64Limit && f == std::trunc(f);
    const bool integer = v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX);
    if (!integer && !whole_float) {
      throw Error("invalid_config", key, std::string(key) + " must be an integer, got " + v.dump());
    }
    const int64_t x = integer ? v.get<int64_t>() : static_cast<int64_t>(f);
    if (x < min || x > max) {
      throw Error("invalid_config", key,
                  std::string(key) + " " + std::to_string(x) + " is out of range [" + std::to_string(min) +
                      ", " + std::to_string(max) + "]");
    }
    return x;
  }
  bool boolean(const char* key, bool fallback) {
    if (!has(key)) return fallback;
    if (!root_.at(key).is_boolean())
      throw Error("invalid_config", key, std::string(key) + " must be true or false");
    return root_.at(key).get<bool>();
  }
  double number(const char* key, double fallback) {
    if (!has(key)) return fallback;
    if (!root_.at(key).is_number())
      throw Error("invalid_config", key, std::string(key) + " must be a number");
    return root_.at(key).get<double>();
  }
  std::string string(const char* key, const std::string& fallback) {
    if (!has(key)) return fallback;
    if (!root_.at(key).is_string())
      throw Error("invalid_config", key, std::string(key) + " must be a string");
    return root_.at(key).get<std::string>();
  }
  const In& at(const char* key) {
    used_.insert(key);
    return root_.at(key);
  }
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (auto it = root_.begin(); it != root_.end(); ++it)
      if (!used_.count(it.key())) out.push_back(it.key());
    return out;
  }

 private:
  const In& root_;
  std::set<std::string> used_;
};

enum class Arch { Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3Moe, DeepseekV3, GptOss, Gemma, Gemma2 };

Arch architecture(HfReader& in) {
  if (!in.has("architectures") || !in.at("architectures").is_array() || in.at("architectures").empty() ||
      !in.at("architectures")[0].is_string()) {
    throw Error("invalid_config", "architectures",
                "missing \"architectures\": a Hugging Face config.json names its model class there");
  }
  const std::string name = in.at("architectures")[0].get<std::string>();
  static const std::pair<const char*, Arch> known[] = {
      {"LlamaForCausalLM", Arch::Llama},           {"MistralForCausalLM", Arch::Mistral},
      {"MixtralForCausalLM", Arch::Mixtral},       {"Qwen2ForCausalLM", Arch::Qwen2},
      {"Qwen3ForCausalLM", Arch::Qwen3},           {"Qwen3MoeForCausalLM", Arch::Qwen3Moe},
      {"DeepseekV3ForCausalLM", Arch::DeepseekV3}, {"GptOssForCausalLM", Arch::GptOss},
      {"GemmaForCausalLM", Arch::Gemma},           {"Gemma2ForCausalLM", Arch::Gemma2}};
  std::string list;
  for (const auto& [n, a] : known) {
    if (name == n) return a;
    list += (list.empty() ? "" : ", ") + std::string(n);
  }
  throw Error("invalid_config", "architectures[0]",
              "architecture " + name + " is not supported; supported: " + list);
}

// Keys that describe inference, tokenizer ids, numerics or provenance: no effect on the
// training iteration's shape or cost.
bool unused_key(const std::string& k) {
  static const std::set<std::string> keys = {"_name_or_path",
                                             "model_type",
                                             "torch_dtype",
                                             "dtype",
                                             "transformers_version",
                                             "bos_token_id",
                                             "eos_token_id",
                                             "pad_token_id",
                                             "use_cache",
                                             "initializer_range",
                                             "rms_norm_eps",
                                             "layer_norm_eps",
                                             "rope_theta",
                                             "rope_scaling",
                                             "pretraining_tp",
                                             "auto_map",
                                             "quantization_config",
                                             "output_router_logits",
                                             "router_aux_loss_coef",
                                             "router_jitter_noise",
                                             "use_sliding_window",
                                             "max_window_layers",
                                             "attention_dropout",
                                             "bias",
                                             "norm_topk_prob",
                                             "routed_scaling_factor",
                                             "scoring_func",
                                             "topk_method",
                                             "n_group",
                                             "topk_group",
                                             "aux_loss_alpha",
                                             "seq_aux",
                                             "ep_size",
                                             "hidden_act",
                                             "hidden_activation",
                                             "query_pre_attn_scalar",
                                             "final_logit_softcapping",
                                             "attn_logit_softcapping",
                                             "swiglu_limit",
                                             "rope_interleave",
                                             "id2label",
                                             "label2id",
                                             "tie_word_embeddings",
                                             "architectures",
                                             "num_local_experts"};
  return keys.count(k) > 0;
}

}  // namespace

// attn_implementation (saved as "_attn_implementation" by some versions): the kernel the model's
// attention runs. flash_attention_2/3 are the flash-attn packages; sdpa is PyTorch's
// F.scaled_dot_product_attention, whose FLASH_ATTENTION backend (FlashAttention-2) PyTorch tries
// first on Hopper (docs/frameworks/attention-and-kernels.md, "Attention kernels"); eager is unfused. Absent:
// fused, the framework's kernel (assumed).
static void attention_implementation(HfReader& in, nlohmann::ordered_json& m, HfModel& out) {
  const char* key = in.has("attn_implementation") ? "attn_implementation" : "_attn_implementation";
  const std::string impl = in.string(key, "");
  m["flash_attention"] = impl != "eager";
  if (impl == "flash_attention_2" || impl == "sdpa") out.strategy["attention_kernel"] = "fa2";
  if (impl == "flash_attention_3") out.strategy["attention_kernel"] = "fa3";
  if (impl.empty())
    out.assumed.push_back(
        "flash_attention: true (a config.json does not say how attention is computed in training)");
  else if (impl != "eager" && !out.strategy.contains("attention_kernel"))
    out.ignored.push_back(std::string(key) + " \"" + impl +
                          "\": not a kernel Proteus has measured; fused attention at the framework's kernel");
}

HfModel read_hf_model(const std::string& text) {
  const In root = config_detail::parse_json_text(text, "the Hugging Face config");
  if (!root.is_object()) throw Error("invalid_config", "", "a Hugging Face config.json is a JSON object");
  HfReader in(root);
  HfModel out;
  const Arch arch = architecture(in);
  auto& m = out.model;
  m["kind"] = "transformer";
  m["name"] = in.string("_name_or_path", root.at("architectures")[0].get<std::string>());
  const int64_t layers = in.integer("num_hidden_layers", -1, 1, 10000);
  const int64_t hidden = in.integer("hidden_size", -1, 1, 1 << 20);
  const int64_t heads = in.integer("num_attention_heads", -1, 1, 65536);
  m["layers"] = layers;
  m["hidden"] = hidden;
  m["heads"] = heads;
  m["kv_heads"] = in.integer("num_key_value_heads", heads, 1, 65536);
  if (in.has("head_dim")) {
    m["head_dim"] = in.integer("head_dim", 0, 1, 1 << 20);
  }
  const int64_t ffn = in.integer("intermediate_size", -1, 1, 16777216);
  m["ffn_hidden"] = ffn;
  m["seq_len"] = in.integer("max_position_embeddings", -1, 1, 16777216);
  m["vocab"] = in.integer("vocab_size", -1, 1, int64_t{1} << 31);
  // Every supported architecture has a gated MLP (gate, up, down); Gemma's gate is GELU.
  const bool gemma = arch == Arch::Gemma || arch == Arch::Gemma2;
  const std::string act = in.string(gemma && in.has("hidden_activation") ? "hidden_activation" : "hidden_act",
                                    gemma ? "gelu_pytorch_tanh" : "silu");
  if (act != "silu" && act != "swish")
    out.ignored.push_back("hidden_act " + act + ": the gated MLP is costed as SwiGLU (same three matrices)");
  m["mlp"] = "swiglu";
  m["norm"] = "rmsnorm";
  // PretrainedConfig's default is tied; LlamaConfig, MistralConfig, Qwen*Config,
  // DeepseekV3Config and GptOssConfig default to untied; Gemma ties.
  m["tied_embeddings"] = in.boolean("tie_word_embeddings", gemma);
  // Qwen2 has q/k/v biases and no others (not a config field); GPT-OSS biases every attention
  // projection and expert (attention_bias); Llama-family configs say attention_bias/mlp_bias.
  const bool attention_bias = in.boolean("attention_bias", arch == Arch::GptOss);
  const bool mlp_bias = in.boolean("mlp_bias", arch == Arch::GptOss);
  if (arch == Arch::Qwen2)
    out.ignored.push_back("Qwen2's q/k/v biases: Proteus has one bias switch for all linear layers (off)");
  if (attention_bias != mlp_bias)
    out.ignored.push_back(std::string("attention_bias ") + (attention_bias ? "true" : "false") +
                          ": Proteus has one bias switch for all linear layers (set from mlp_bias)");
  m["bias"] = arch == Arch::GptOss ? attention_bias : mlp_bias;
  m["dropout"] = in.number("attention_dropout", 0.0) > 0;
  attention_implementation(in, m, out);
  m["causal"] = true;
  m["learned_positions"] = false;  // rotary embeddings in every supported architecture
  if (arch == Arch::Qwen3 || arch == Arch::Qwen3Moe) m["qk_norm"] = true;  // Qwen3Attention's q_norm/k_norm
  if (arch == Arch::GptOss) m["attention_sinks"] = true;                   // GptOssAttention.sinks

  // Sliding windows: a window used by every layer (Mistral) or by all but every Nth
  // (layer_types in GPT-OSS and Gemma 3, alternating in Gemma 2).
  const bool window_used = arch == Arch::Qwen2 || arch == Arch::Qwen3 || arch == Arch::Qwen3Moe
                               ? in.boolean("use_sliding_window", false)
                               : true;
  if (in.has("sliding_window") && window_used) {
    m["sliding_window"] = in.integer("sliding_window", 0, 1, 16777216);
    if (arch == Arch::Gemma2) m["full_attention_every"] = 2;
    if (in.has("layer_types")) {
      const In& types = in.at("layer_types");
      if (!types.is_array() || static_cast<int64_t>(types.size()) != layers)
        throw Error("invalid_config", "layer_types", "layer_types must list one type per layer");
      int every = 0;
      for (size_t i = 0; i < types.size(); ++i) {
        if (types[i] == "full_attention") {
          every = static_cast<int>(i) + 1;
          break;
        }
      }
      for (size_t i = 0; i < types.size(); ++i) {
        const bool full = every > 0 && static_cast<int>(i) % every == every - 1;
        if (types[i] != (full ? "full_attention" : "sliding_attention")) {
          throw Error("invalid_config", "layer_types[" + std::to_string(i) + "]",
                      "layer_types must repeat one pattern (sliding layers, then a full-attention one)");
        }
      }
      m["full_attention_every"] = every;
    }
  } else if (in.has("sliding_window")) {
    in.has("use_sliding_window");
  }

  // Mixture of experts.
  nlohmann::ordered_json moe;
  if (arch == Arch::Mixtral || arch == Arch::GptOss) {
    moe["experts"] = in.integer("num_local_experts", -1, 1, 65536);
    moe["top_k"] = in.integer(
        arch == Arch::GptOss && in.has("experts_per_token") ? "experts_per_token" : "num_experts_per_tok", 2,
        1, 65536);
    moe["expert_ffn_hidden"] = ffn;
    if (arch == Arch::GptOss) moe["router_bias"] = true;  // GptOssTopKRouter.bias
  } else if (arch == Arch::Qwen3Moe) {
    moe["experts"] = in.integer("num_experts", -1, 1, 65536);
    moe["top_k"] = in.integer("num_experts_per_tok", -1, 1, 65536);
    moe["expert_ffn_hidden"] = in.integer("moe_intermediate_size", -1, 1, 16777216);
    if (in.integer("decoder_sparse_step", 1, 1, 1) != 1 ||
        (in.has("mlp_only_layers") && !in.at("mlp_only_layers").empty())) {
      throw Error("invalid_config", "mlp_only_layers",
                  "dense layers between MoE layers are not simulated (only leading ones)");
    }
  } else if (arch == Arch::DeepseekV3) {
    moe["experts"] = in.integer("n_routed_experts", -1, 1, 65536);
    moe["top_k"] = in.integer("num_experts_per_tok", -1, 1, 65536);
    const int64_t f = in.integer("moe_intermediate_size", -1, 1, 16777216);
    moe["expert_ffn_hidden"] = f;
    moe["shared_expert_ffn_hidden"] = in.integer("n_shared_experts", 0, 0, 65536) * f;
    moe["first_dense_layers"] = in.integer("first_k_dense_replace", 0, 0, layers);
    if (in.integer("moe_layer_freq", 1, 1, 1) != 1)
      throw Error("invalid_config", "moe_layer_freq", "MoE every Nth layer is not simulated");
    moe["router_bias"] = in.string("topk_method", "noaux_tc") == "noaux_tc";  // e_score_correction_bias
    nlohmann::ordered_json mla;
    mla["q_lora_rank"] = in.has("q_lora_rank") ? in.integer("q_lora_rank", 0, 0, 1 << 20) : 0;
    mla["kv_lora_rank"] = in.integer("kv_lora_rank", -1, 1, 1 << 20);
    mla["qk_nope_head_dim"] = in.integer("qk_nope_head_dim", -1, 1, 1 << 20);
    mla["qk_rope_head_dim"] = in.integer("qk_rope_head_dim", -1, 1, 1 << 20);
    mla["v_head_dim"] = in.integer("v_head_dim", -1, 1, 1 << 20);
    m["mla"] = mla;
    m.erase("head_dim");
    m["mtp_layers"] = in.integer("num_nextn_predict_layers", 0, 0, 100);
  }
  if (!moe.empty()) {
    // Training frameworks route these models without dropping tokens (Megatron's default).
    moe["routing"] = "dropless";
    moe["imbalance"] = 1.0;
    out.assumed.push_back("MoE routing dropless with perfectly balanced experts (moe.imbalance 1.0)");
    m["moe"] = moe;
  }
  for (const std::string& key : in.unread()) {
    if (unused_key(key)) continue;
    out.ignored.push_back(key);
  }
  return out;
}

}  // namespace import_detail

ImportResult import_hf(const std::string& text) {
  import_detail::HfModel m = import_detail::read_hf_model(text);
  ImportResult result;
  nlohmann::ordered_json config = {{"model", m.model}};
  if (!m.strategy.empty()) config["strategy"] = m.strategy;
  result.config_json = config.dump(2);
  result.ignored = std::move(m.ignored);
  result.assumed = std::move(m.assumed);
  return result;
}

}  // namespace proteus
