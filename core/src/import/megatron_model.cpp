// Megatron's model arguments -> the config's model: what the training script builds, the
// transformer's shape (layers, widths, heads, GQA, MLA, FFN), its vocabulary as Megatron pads
// it, norms, biases, dropout, positions, sliding windows and multi-token prediction.
#include <cstdlib>
#include <string>
#include <vector>

#include "megatron_arg_reader.h"
#include "megatron_parts.h"
#include "proteus/error.h"

namespace proteus::import_detail {

Family script_family(const std::string& script, std::vector<std::string>& assumed) {
  const std::string base =
      script.substr(script.find_last_of('/') == std::string::npos ? 0 : script.find_last_of('/') + 1);
  if (base.empty()) {
    assumed.push_back("no training script given: a GPT-style decoder (pretrain_gpt.py) is assumed");
    return Family::Gpt;
  }
  if (base.find("bert") != std::string::npos) return Family::Bert;
  for (const char* other : {"t5", "mamba", "retro", "vlm", "ict", "vit", "llava", "multimodal"}) {
    if (base.find(other) != std::string::npos) {
      throw Error(
          "invalid_config", "script",
          "the training script " + base +
              " builds a model Proteus does not simulate (decoders via pretrain_gpt.py and BERT via pretrain_bert.py are supported)");
    }
  }
  if (base.find("gpt") == std::string::npos && base.find("llama") == std::string::npos &&
      base.find("mixtral") == std::string::npos && base.find("deepseek") == std::string::npos &&
      base.find("qwen") == std::string::npos) {
    assumed.push_back("training script " + base + ": a GPT-style decoder (as pretrain_gpt.py) is assumed");
  }
  return Family::Gpt;
}

namespace {

// Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by * tp
// (megatron/training/tokenizer: _vocab_size_with_padding).
int64_t padded_vocab(int64_t vocab, int64_t divisible_by, int64_t tp) {
  const int64_t multiple = divisible_by * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

// The unpadded vocabulary: --vocab-size, or the size of a tokenizer whose size is fixed.
int64_t vocab_size(ArgReader& in, Family family, std::vector<std::string>& assumed) {
  if (in.has("--vocab-size")) return in.integer("--vocab-size", 0, 1, kBig);
  // pretrain_gpt.py / pretrain_bert.py pass these tokenizer types as argument defaults.
  std::string type =
      in.text("--tokenizer-type", family == Family::Gpt ? "GPT2BPETokenizer" : "BertWordPieceLowerCase");
  const std::string model = in.text("--tokenizer-model");
  in.has("--vocab-file");
  in.has("--merge-file");
  // Sizes of the tokenizers' published vocabularies.
  if (type == "GPT2BPETokenizer") return 50257;        // GPT-2's encoder.json
  if (type == "BertWordPieceLowerCase") return 30522;  // bert-large-uncased vocab.txt
  if (type == "BertWordPieceCase") return 28996;       // bert-large-cased vocab.txt
  if (type == "Llama2Tokenizer") return 32000;         // Llama 2 tokenizer.model
  struct Known {
    const char* fragment;
    int64_t size;
  };
  // Hugging Face tokenizers by model name (the vocab_size of each model's config.json).
  static const Known known[] = {{"Llama-3", 128256},   {"llama-3", 128256},     {"Llama3", 128256},
                                {"Llama-2", 32000},    {"llama-2", 32000},      {"Mixtral", 32000},
                                {"Mistral-7B", 32000}, {"DeepSeek-V3", 129280}, {"Qwen3", 151936},
                                {"gpt2", 50257}};
  for (const Known& k : known) {
    if (model.find(k.fragment) != std::string::npos) {
      assumed.push_back("vocabulary " + std::to_string(k.size) + " from --tokenizer-model " + model);
      return k.size;
    }
  }
  const std::string path = in.has("--tokenizer-model") ? "--tokenizer-model" : "--tokenizer-type";
  throw Error("invalid_config", path,
              "the vocabulary size of tokenizer " + type + (model.empty() ? "" : " (" + model + ")") +
                  " is not known: add --vocab-size N");
}

}  // namespace

// "--moe-layer-freq" etc. are read later by the model-feature mapping; here the transformer's
// own fields.
Json model_part(ArgReader& in, Family family, int64_t tp, std::vector<std::string>& ignored,
                std::vector<std::string>& assumed) {
  Json m;
  m["kind"] = "transformer";
  const int64_t layers = in.has("--num-layers")           ? in.integer("--num-layers", 0, 1, 10000)
                         : in.has("--decoder-num-layers") ? in.integer("--decoder-num-layers", 0, 1, 10000)
                                                          : in.integer("--encoder-num-layers", 0, 1, 10000);
  if (layers == 0) throw Error("invalid_config", "--num-layers", "missing --num-layers");
  const int64_t hidden = in.integer("--hidden-size", 0, 1, 1 << 20);
  if (hidden == 0) throw Error("invalid_config", "--hidden-size", "missing --hidden-size");
  const int64_t heads = in.integer("--num-attention-heads", 0, 1, 65536);
  if (heads == 0) throw Error("invalid_config", "--num-attention-heads", "missing --num-attention-heads");
  m["layers"] = layers;
  m["hidden"] = hidden;
  m["heads"] = heads;
  const bool gqa = in.flag("--group-query-attention");
  if (gqa) {
    m["kv_heads"] = in.integer("--num-query-groups", 1, 1, 65536);
  } else {
    if (in.has("--num-query-groups"))
      ignored.push_back("--num-query-groups: Megatron uses it only with --group-query-attention");
    m["kv_heads"] = heads;
  }
  const bool swiglu = in.flag("--swiglu");
  // Megatron's default FFN width: 4h, or for SwiGLU 2/3 of it rounded down to a multiple of 64.
  const int64_t default_ffn = swiglu ? (4 * hidden * 2 / 3) / 64 * 64 : 4 * hidden;
  m["ffn_hidden"] = in.integer("--ffn-hidden-size", default_ffn, 1, 16777216);
  const int64_t seq = in.has("--seq-length") ? in.integer("--seq-length", 0, 1, 16777216)
                                             : in.integer("--encoder-seq-length", 0, 1, 16777216);
  if (seq == 0) throw Error("invalid_config", "--seq-length", "missing --seq-length");
  m["seq_len"] = in.integer("--max-position-embeddings", seq, 1, 16777216);
  // BigScience's Megatron-DeepSpeed pads to an exact size instead (_vocab_size_with_padding:
  // --pad-vocab-size-to, which must divide by tp).
  if (in.has("--pad-vocab-size-to")) {
    const int64_t to = in.integer("--pad-vocab-size-to", 0, 1, kBig);
    if (to % tp != 0)
      throw Error("invalid_config", "--pad-vocab-size-to",
                  "--pad-vocab-size-to " + std::to_string(to) + " is not divisible by tensor parallel " +
                      std::to_string(tp));
    m["vocab"] = to;
  } else {
    m["vocab"] = padded_vocab(vocab_size(in, family, assumed),
                              in.integer("--make-vocab-size-divisible-by", 128, 1, kBig), tp);
  }
  m["mlp"] = swiglu ? "swiglu" : "gelu";
  if (in.flag("--squared-relu"))
    ignored.push_back("--squared-relu: the activation is costed as GELU (same two matrices)");
  const std::string norm = in.choice("--normalization", "LayerNorm", {"LayerNorm", "RMSNorm"});
  m["norm"] = norm == "RMSNorm" ? "rmsnorm" : "layernorm";
  m["tied_embeddings"] = !in.flag("--untie-embeddings-and-output-weights");
  m["bias"] = !in.flag("--disable-bias-linear");
  if (in.flag("--add-qkv-bias"))
    ignored.push_back("--add-qkv-bias: Proteus has one bias switch for all linear layers");
  const double hidden_dropout = in.number("--hidden-dropout", 0.1),
               attention_dropout = in.number("--attention-dropout", 0.1);
  m["dropout"] = hidden_dropout > 0 || attention_dropout > 0;
  if ((hidden_dropout > 0) != (attention_dropout > 0))
    ignored.push_back(
        "--hidden-dropout / --attention-dropout: one is 0; Proteus has one dropout switch (on)");
  bool flash = false;
  if (in.flag("--use-flash-attn")) flash = true;
  // Megatron-DeepSpeed's names: flash-attn 2 (the framework's kernel), 1, or its Triton port.
  if (in.flag("--use-flash-attn-v2")) flash = true;
  for (const char* older : {"--use-flash-attn-v1", "--use-flash-attn-triton"}) {
    if (!in.flag(older)) continue;
    flash = true;
    assumed.push_back(std::string(older) + ": costed as FlashAttention-2");
  }
  if (in.has("--attention-backend")) {
    const std::string b =
        in.choice("--attention-backend", "auto", {"auto", "flash", "fused", "unfused", "local"});
    flash = b != "unfused" && b != "local";
  } else if (!flash) {
    assumed.push_back(
        "attention unfused (no --attention-backend or --use-flash-attn, as Megatron-LM before Core 0.10)");
  }
  m["flash_attention"] = flash;
  m["causal"] = family == Family::Gpt;
  std::string pos = in.choice("--position-embedding-type", "learned_absolute",
                              {"learned_absolute", "rope", "yarn", "mrope", "relative", "none", "alibi"});
  if (in.flag("--use-rotary-position-embeddings")) pos = "rope";
  if (in.flag("--no-position-embedding") && pos == "learned_absolute") pos = "none";
  if (pos == "relative")
    throw Error("invalid_config", "--position-embedding-type",
                "relative position embeddings (T5) are not simulated");
  m["learned_positions"] = pos == "learned_absolute";
  if (pos == "none")
    ignored.push_back(
        "--position-embedding-type none: costed as rotary embeddings (a few elementwise FLOPs)");
  if (pos == "alibi")  // Megatron-DeepSpeed (BLOOM): a bias added to the attention scores
    ignored.push_back(
        "--position-embedding-type alibi: ALiBi's score bias is costed as rotary embeddings "
        "(a few elementwise FLOPs)");
  if (in.flag("--embed-layernorm"))
    ignored.push_back("--embed-layernorm: the LayerNorm after the word embedding (BLOOM) is not simulated");
  if (family == Family::Bert) {
    const bool binary_head = !in.flag("--bert-no-binary-head");
    m["type_vocab"] = binary_head ? 2 : 0;  // pretrain_bert.py: num_tokentypes = 2 if binary head
    m["pooler"] = binary_head;
  }
  if (in.has("--kv-channels")) {
    m["head_dim"] = in.integer("--kv-channels", 0, 1, 1 << 20);
  }
  const bool mla = in.flag("--multi-latent-attention");
  if (mla) {
    // Megatron's MLATransformerConfig defaults: q_lora_rank None, kv_lora_rank 32,
    // qk_head_dim 128, qk_pos_emb_head_dim 64, v_head_dim 128.
    Json l;
    l["q_lora_rank"] = in.has("--q-lora-rank") ? in.integer("--q-lora-rank", 0, 1, 1 << 20) : 0;
    l["kv_lora_rank"] = in.integer("--kv-lora-rank", 32, 1, 1 << 20);
    l["qk_nope_head_dim"] = in.integer("--qk-head-dim", 128, 1, 1 << 20);
    l["qk_rope_head_dim"] = in.integer("--qk-pos-emb-head-dim", 64, 1, 1 << 20);
    l["v_head_dim"] = in.integer("--v-head-dim", 128, 1, 1 << 20);
    m["mla"] = l;
    m.erase("head_dim");
    m["kv_heads"] = heads;
    if (in.flag("--qk-layernorm"))
      ignored.push_back("--qk-layernorm: MLA's latent norms are always simulated");
  } else {
    for (const char* arg :
         {"--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim", "--v-head-dim"})
      if (in.has(arg)) ignored.push_back(std::string(arg) + ": used only with --multi-latent-attention");
    if (in.flag("--qk-layernorm")) m["qk_norm"] = true;
  }
  const int64_t mtp = in.integer("--mtp-num-layers", 0, 0, 100);
  if (mtp > 0) m["mtp_layers"] = mtp;
  if (in.has("--window-size")) {
    // "(w, 0)": w tokens to the left, none to the right (causal sliding window).
    const auto& words = in.args().values.at("--window-size");
    std::string t;
    for (const std::string& w : words) t += w;
    int64_t left = -1;
    size_t i = t.find_first_of("0123456789-");
    if (i != std::string::npos) left = std::strtoll(t.c_str() + i, nullptr, 10);
    if (left < 1)
      throw Error("invalid_config", "--window-size",
                  "--window-size \"" + t + "\" is not \"(w, 0)\" with w >= 1");
    m["sliding_window"] = left;
    if (in.has("--window-attn-skip-freq"))
      m["full_attention_every"] = in.integer("--window-attn-skip-freq", 0, 1, 10000);
  } else if (in.has("--window-attn-skip-freq")) {
    ignored.push_back("--window-attn-skip-freq: used only with --window-size");
  }
  if (in.choice("--softmax-type", "vanilla", {"vanilla", "off-by-one", "learnable"}) == "learnable")
    m["attention_sinks"] = true;
  return m;
}

}  // namespace proteus::import_detail
