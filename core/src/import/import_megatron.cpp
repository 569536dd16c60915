// Megatron-LM / Megatron-Core training arguments -> a Proteus config. Each argument's meaning
// and default are Megatron's own (megatron/training/arguments.py, core_r0.x); docs/import.md
// lists the mapping. The hardware is not in the arguments: the caller names the cluster.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "../config/json_text.h"
#include "megatron_args.h"
#include "proteus/error.h"
#include "proteus/import.h"
#include "proteus/presets.h"
#include "proteus/strategy_spec.h"

namespace proteus {

namespace {

using Json = nlohmann::ordered_json;
using import_detail::MegatronArgs;

class ArgReader {
 public:
  explicit ArgReader(const MegatronArgs& args) : a_(args) {}

  bool has(const std::string& name) {
    used_.insert(name);
    return a_.values.count(name) > 0;
  }
  bool flag(const std::string& name) {
    if (!has(name)) return false;
    const auto& v = a_.values.at(name);
    if (!v.empty()) throw Error("invalid_config", name, name + " takes no value, got \"" + v[0] + "\"");
    return true;
  }
  std::string text(const std::string& name, const std::string& fallback = "") {
    if (!has(name)) return fallback;
    const auto& v = a_.values.at(name);
    if (v.size() != 1) {
      throw Error(
          "invalid_config", name,
          name + (v.empty() ? " needs a value" : " takes one value, got " + std::to_string(v.size())));
    }
    return v[0];
  }
  int64_t integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) {
    if (!has(name)) return fallback;
    const std::string t = text(name);
    char* end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end) throw Error("invalid_config", name, name + " \"" + t + "\" is not an integer");
    if (v < min || v > max) {
      throw Error(
          "invalid_config", name,
          name + " " + t + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return v;
  }
  double number(const std::string& name, double fallback) {
    if (!has(name)) return fallback;
    const std::string t = text(name);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end || !std::isfinite(v)) {
      throw Error("invalid_config", name, name + " \"" + t + "\" is not a number");
    }
    return v;
  }
  std::string choice(const std::string& name, const std::string& fallback,
                     std::initializer_list<const char*> options) {
    if (!has(name)) return fallback;
    const std::string t = text(name);
    std::string list;
    for (const char* o : options) {
      if (t == o) return t;
      list += (list.empty() ? "" : ", ") + std::string(o);
    }
    throw Error("invalid_config", name, name + " \"" + t + "\" is not one of: " + list);
  }
  // Arguments present that no mapping asked about.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const std::string& name : a_.order)
      if (!used_.count(name)) out.push_back(name);
    return out;
  }
  const MegatronArgs& args() const { return a_; }
  // Every value of an argument that takes several (argparse nargs='+'); marks it read.
  const std::vector<std::string>& values(const std::string& name) {
    used_.insert(name);
    return a_.values.at(name);
  }

 private:
  const MegatronArgs& a_;
  std::set<std::string> used_;
};

constexpr int64_t kBig = int64_t{1} << 31;
// The bucket arithmetic below starts from fp32 main gradients, Megatron's default under bf16.
constexpr double kFp32GradBytes = grad_bytes_per_element(true);

// What the training script builds (Megatron's entry points).
enum class Family { Gpt, Bert };

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
  m["vocab"] = padded_vocab(vocab_size(in, family, assumed),
                            in.integer("--make-vocab-size-divisible-by", 128, 1, kBig), tp);
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
                              {"learned_absolute", "rope", "yarn", "mrope", "relative", "none"});
  if (in.flag("--use-rotary-position-embeddings")) pos = "rope";
  if (in.flag("--no-position-embedding") && pos == "learned_absolute") pos = "none";
  if (pos == "relative")
    throw Error("invalid_config", "--position-embedding-type",
                "relative position embeddings (T5) are not simulated");
  m["learned_positions"] = pos == "learned_absolute";
  if (pos == "none")
    ignored.push_back(
        "--position-embedding-type none: costed as rotary embeddings (a few elementwise FLOPs)");
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

// "--moe-layer-freq": 1 (every layer), or a pattern such as "([0]*3+[1]*58)" whose dense
// layers all come first.
int64_t first_dense_layers(ArgReader& in, int64_t layers) {
  const std::string arg = "--moe-layer-freq";
  if (!in.has(arg)) return 0;
  std::string t;
  for (const std::string& w : in.args().values.at(arg)) t += w;
  if (t == "1") return 0;
  std::vector<int> pattern;
  for (size_t i = 0; i < t.size();) {
    if (t[i] == '[') {
      const size_t close = t.find(']', i);
      if (close == std::string::npos) break;
      std::vector<int> items;
      for (size_t k = i + 1; k < close; ++k)
        if (t[k] == '0' || t[k] == '1') items.push_back(t[k] - '0');
      size_t k = close + 1;
      int64_t repeat = 1;
      if (k < t.size() && t[k] == '*') {
        repeat = std::strtoll(t.c_str() + k + 1, nullptr, 10);
        while (++k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) {}
      }
      for (int64_t r = 0; r < repeat && static_cast<int64_t>(pattern.size()) <= layers; ++r)
        pattern.insert(pattern.end(), items.begin(), items.end());
      i = k;
    } else {
      ++i;
    }
  }
  if (static_cast<int64_t>(pattern.size()) != layers) {
    throw Error(
        "invalid_config", arg,
        arg + " \"" + t + "\": expected 1 or a list of one 0/1 per layer (" + std::to_string(layers) + ")");
  }
  int64_t dense = 0;
  while (dense < layers && pattern[static_cast<size_t>(dense)] == 0) ++dense;
  for (int64_t i = dense; i < layers; ++i)
    if (pattern[static_cast<size_t>(i)] == 0)
      throw Error("invalid_config", arg, arg + ": dense layers after the first MoE layer are not simulated");
  return dense;
}

void moe_part(ArgReader& in, Json& model, std::vector<std::string>& ignored,
              std::vector<std::string>& assumed) {
  const int64_t experts = in.integer("--num-experts", 0, 0, 65536);
  if (experts == 0) return;
  Json moe;
  moe["experts"] = experts;
  moe["top_k"] = in.integer("--moe-router-topk", 2, 1, experts);
  moe["expert_ffn_hidden"] =
      in.integer("--moe-ffn-hidden-size", model["ffn_hidden"].get<int64_t>(), 1, 16777216);
  if (in.has("--moe-expert-capacity-factor")) {
    moe["capacity_factor"] = in.number("--moe-expert-capacity-factor", 1.0);
    moe["routing"] = "capacity";
    if (!in.flag("--moe-pad-expert-input-to-capacity"))
      ignored.push_back(
          "--moe-expert-capacity-factor without --moe-pad-expert-input-to-capacity: buckets are costed padded to capacity");
  } else {
    moe["routing"] = "dropless";
    moe["imbalance"] = 1.0;
    assumed.push_back(
        "dropless routing (no --moe-expert-capacity-factor) with perfectly balanced experts (moe.imbalance 1.0)");
  }
  moe["shared_expert_ffn_hidden"] = in.integer("--moe-shared-expert-intermediate-size", 0, 0, 16777216);
  moe["first_dense_layers"] = first_dense_layers(in, model["layers"].get<int64_t>());
  moe["router_bias"] = in.flag("--moe-router-enable-expert-bias");
  model["moe"] = moe;
}

// Expert tensor parallelism and the token dispatcher, with Megatron-LM's defaults
// (arguments.py: --expert-tensor-parallel-size = tp, --moe-token-dispatcher-type allgather).
// flex (DeepEP / HybridEP fused dispatch) is not simulated: refused by name.
void moe_strategy_part(ArgReader& in, const Json& model, int64_t tp, Json& st,
                       std::vector<std::string>& assumed) {
  const int64_t etp = in.integer("--expert-tensor-parallel-size", tp, 1, 1 << 20);
  const std::string dispatcher = in.text("--moe-token-dispatcher-type", "allgather");
  if (dispatcher != "allgather" && dispatcher != "alltoall") {
    throw Error(
        "invalid_config", "--moe-token-dispatcher-type",
        "--moe-token-dispatcher-type " + dispatcher +
            ": only allgather and alltoall are simulated (flex, the DeepEP/HybridEP fused dispatch, is not)");
  }
  if (!model.contains("moe")) return;  // a dense model: Megatron uses neither
  if (dispatcher == "allgather" && tp > 1 && etp != 1) {
    throw Error(
        "invalid_config", "--moe-token-dispatcher-type",
        "--moe-token-dispatcher-type allgather (Megatron's default) with experts split by "
        "--tensor-model-parallel-size " +
            std::to_string(tp) +
            " is not simulated: pass --moe-token-dispatcher-type alltoall or --expert-tensor-parallel-size 1");
  }
  if (etp != tp) st["expert_tp"] = etp;
  st["moe_dispatcher"] = dispatcher;
  if (!in.has("--moe-token-dispatcher-type"))
    assumed.push_back("moe_dispatcher allgather: Megatron-LM's default --moe-token-dispatcher-type");
}

Json cluster_part(const MegatronImportOptions& options, const MegatronArgs& args, int& gpus,
                  std::vector<std::string>& assumed) {
  if (options.cluster_json.empty()) {
    throw Error("invalid_request", "cluster",
                "Megatron arguments do not name the hardware: choose a cluster (proteus import megatron FILE "
                "--cluster dgx-h100 [--nodes N])");
  }
  Json cluster;
  const char first = options.cluster_json.find_first_not_of(" \t\r\n") == std::string::npos
                         ? 0
                         : options.cluster_json[options.cluster_json.find_first_not_of(" \t\r\n")];
  if (first == '{') {
    cluster = Json::parse(config_detail::parse_json_text(options.cluster_json, "the cluster").dump());
  } else {
    cluster = Json{{"preset", options.cluster_json}};
  }
  int per_node = 8;
  if (cluster.contains("gpus_per_node") && cluster["gpus_per_node"].is_number_integer()) {
    per_node = cluster["gpus_per_node"].get<int>();
  } else if (cluster.contains("preset") && cluster["preset"].is_string()) {
    const Preset* p = find_preset(PresetKind::Cluster, cluster["preset"].get<std::string>());
    if (!p)
      throw Error("unknown_preset", "cluster",
                  "no cluster preset \"" + cluster["preset"].get<std::string>() + "\"");
    const auto preset = nlohmann::json::parse(p->json);
    per_node = preset.value("gpus_per_node", 8);
  }
  if (args.nproc_per_node > 0 && args.nproc_per_node != per_node) {
    cluster["gpus_per_node"] = args.nproc_per_node;
    per_node = args.nproc_per_node;
  }
  int nodes = options.nodes > 0 ? options.nodes : args.nnodes;
  if (nodes == 0) {
    if (cluster.contains("nodes") && cluster["nodes"].is_number_integer()) {
      nodes = cluster["nodes"].get<int>();
    } else {
      throw Error(
          "invalid_request", "--nnodes",
          "the number of nodes is not in the arguments (no torchrun --nnodes or #SBATCH --nodes): give it "
          "(proteus import megatron FILE --nodes N)");
    }
  } else if (options.nodes == 0) {
    assumed.push_back("nodes " + std::to_string(nodes) + " from " + args.nnodes_source);
  }
  cluster["nodes"] = nodes;
  gpus = nodes * per_node;
  return cluster;
}

// Pipeline layout: "Et|(tt|)*30L" (Megatron-Core's --pipeline-model-parallel-layout) -> the
// transformer layers of each (virtual) stage in model order.
std::vector<int64_t> parse_layout(const std::string& text) {
  const std::string arg = "--pipeline-model-parallel-layout";
  std::string s;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') {
      const size_t close = text.find(')', i);
      if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != '*')
        throw Error("invalid_config", arg, arg + " \"" + text + "\": '(' needs a matching ')*N'");
      size_t k = close + 2;
      int64_t n = 0;
      while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])))
        n = n * 10 + (text[k++] - '0');
      const std::string body = text.substr(i + 1, close - i - 1);
      for (int64_t r = 0; r < n; ++r) s += body;
      i = k - 1;
    } else if (text[i] == '*' && !s.empty()) {
      size_t k = i + 1;
      int64_t n = 0;
      while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])))
        n = n * 10 + (text[k++] - '0');
      const char c = s.back();
      for (int64_t r = 1; r < n; ++r) s += c;
      i = k - 1;
    } else if (text[i] != ' ' && text[i] != ',' && text[i] != '"' && text[i] != '\'') {
      s += text[i];
    }
  }
  std::vector<int64_t> stages(1, 0);
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '|') {
      stages.push_back(0);
    } else if (c == 't') {
      ++stages.back();
    } else if (c == 'E') {
      if (stages.size() != 1)
        throw Error("invalid_config", arg,
                    "the embedding (E) must be in the first stage: Proteus places it there");
    } else if (c == 'L') {
      if (s.find('|', i) != std::string::npos)
        throw Error("invalid_config", arg, "the loss (L) must be in the last stage: Proteus places it there");
    } else {
      throw Error("invalid_config", arg,
                  arg + ": layer type '" + std::string(1, c) + "' is not simulated (t, E, L are)");
    }
  }
  return stages;
}

Json strategy_part(ArgReader& in, int64_t layers, int gpus, int64_t& tp_out,
                   std::vector<std::string>& ignored, std::vector<std::string>& assumed, Json& training,
                   Json& model) {
  Json st;
  const int64_t tp = in.has("--tensor-model-parallel-size")
                         ? in.integer("--tensor-model-parallel-size", 1, 1, 1 << 20)
                         : in.integer("--model-parallel-size", 1, 1, 1 << 20);
  const int64_t pp = in.integer("--pipeline-model-parallel-size", 1, 1, 1 << 20);
  const int64_t cp = in.integer("--context-parallel-size", 1, 1, 1 << 20);
  const int64_t ep = in.integer("--expert-model-parallel-size", 1, 1, 1 << 20);
  tp_out = tp;
  if (gpus % (tp * pp * cp) != 0) {
    throw Error("invalid_config", "--tensor-model-parallel-size",
                std::to_string(gpus) + " GPUs are not divisible by tensor x pipeline x context parallel = " +
                    std::to_string(tp * pp * cp));
  }
  const int64_t dp = gpus / (tp * pp * cp);
  st["dp"] = dp;
  st["tp"] = tp;
  st["pp"] = pp;
  st["cp"] = cp;
  st["ep"] = ep;
  moe_strategy_part(in, model, tp, st, assumed);
  const int64_t micro = in.has("--micro-batch-size") ? in.integer("--micro-batch-size", 1, 1, kBig - 1)
                                                     : in.integer("--batch-size", 0, 1, kBig - 1);
  if (micro == 0) throw Error("invalid_config", "--micro-batch-size", "missing --micro-batch-size");
  st["micro_batch"] = micro;
  training["global_batch"] = in.integer("--global-batch-size", micro * dp, 1, kBig - 1);
  if (in.has("--rampup-batch-size"))
    ignored.push_back("--rampup-batch-size: the iteration simulated has the full --global-batch-size");

  // Virtual pipeline stages.
  int64_t vp = 1;
  if (in.has("--virtual-pipeline-model-parallel-size"))
    vp = in.integer("--virtual-pipeline-model-parallel-size", 1, 1, 10000);
  if (in.has("--num-layers-per-virtual-pipeline-stage")) {
    const int64_t per = in.integer("--num-layers-per-virtual-pipeline-stage", 1, 1, 10000);
    if (layers % (per * pp) != 0) {
      throw Error(
          "invalid_config", "--num-layers-per-virtual-pipeline-stage",
          "--num-layers " + std::to_string(layers) +
              " is not divisible by pipeline size x layers per virtual stage = " + std::to_string(per * pp));
    }
    const int64_t v = layers / (per * pp);
    if (in.has("--virtual-pipeline-model-parallel-size") && v != vp) {
      throw Error("invalid_config", "--num-layers-per-virtual-pipeline-stage",
                  "contradicts --virtual-pipeline-model-parallel-size " + std::to_string(vp));
    }
    vp = v;
  }
  st["schedule"] = vp > 1 ? "interleaved-1f1b" : "1f1b";
  st["virtual_stages"] = vp;

  // Uneven pipelines.
  std::vector<int64_t> stage_layers;
  if (in.has("--pipeline-model-parallel-layout")) {
    stage_layers = parse_layout(in.text("--pipeline-model-parallel-layout"));
    if (static_cast<int64_t>(stage_layers.size()) != pp * vp) {
      throw Error("invalid_config", "--pipeline-model-parallel-layout",
                  "the layout has " + std::to_string(stage_layers.size()) +
                      " stages; pipeline x virtual size is " + std::to_string(pp * vp));
    }
  } else if (in.has("--decoder-first-pipeline-num-layers") || in.has("--decoder-last-pipeline-num-layers")) {
    const std::string arg = in.has("--decoder-first-pipeline-num-layers")
                                ? "--decoder-first-pipeline-num-layers"
                                : "--decoder-last-pipeline-num-layers";
    if (vp > 1 || pp < 2)
      throw Error("invalid_config", arg,
                  arg + " needs pp >= 2 and no virtual pipeline here (use --pipeline-model-parallel-layout)");
    const int64_t even = layers / pp;
    const int64_t first = in.integer("--decoder-first-pipeline-num-layers", -1, 0, layers);
    const int64_t last = in.integer("--decoder-last-pipeline-num-layers", -1, 0, layers);
    const int64_t middle_stages = pp - (first >= 0) - (last >= 0);
    const int64_t rest = layers - std::max<int64_t>(first, 0) - std::max<int64_t>(last, 0);
    if (middle_stages <= 0 || rest < 0 || rest % middle_stages != 0) {
      throw Error("invalid_config", arg,
                  "the remaining " + std::to_string(rest) + " layers do not divide evenly over the other " +
                      std::to_string(middle_stages) + " pipeline stages (Megatron requires it)");
    }
    (void)even;
    for (int64_t s = 0; s < pp; ++s) stage_layers.push_back(rest / middle_stages);
    if (first >= 0) stage_layers.front() = first;
    if (last >= 0) stage_layers.back() = last;
  }
  if (!stage_layers.empty()) st["stage_layers"] = stage_layers;

  st["sequence_parallel"] = in.flag("--sequence-parallel");

  // Optimizer state sharding.
  int zero = in.flag("--use-distributed-optimizer") ? 1 : 0;
  const bool mfsdp = in.flag("--use-megatron-fsdp");
  if (in.has("--data-parallel-sharding-strategy")) {
    const std::string s = in.choice("--data-parallel-sharding-strategy", "no_shard",
                                    {"no_shard", "optim", "optim_grads", "optim_grads_params"});
    if (!mfsdp)
      ignored.push_back("--data-parallel-sharding-strategy: used by Megatron only with --use-megatron-fsdp");
    else
      zero = s == "no_shard" ? 0 : s == "optim" ? 1 : s == "optim_grads" ? 2 : 3;
  }
  if (in.flag("--use-torch-fsdp2")) {
    if (mfsdp) throw Error("invalid_config", "--use-torch-fsdp2", "contradicts --use-megatron-fsdp");
    zero = 3;
  }
  st["zero"] = zero;

  // Activation recomputation.
  std::string recompute = "none";
  if (in.flag("--recompute-activations")) recompute = "selective";
  if (in.flag("--checkpoint-activations"))
    recompute = "full";  // Megatron-LM before 2022: full, uniform, 1 layer
  if (in.has("--recompute-granularity")) {
    const std::string g = in.choice("--recompute-granularity", "", {"full", "selective"});
    if (recompute != "none" && g != recompute) {
      throw Error("invalid_config", "--recompute-granularity",
                  "contradicts --recompute-activations/--checkpoint-activations");
    }
    recompute = g;
  }
  if (recompute == "full") {
    const std::string method = in.choice("--recompute-method", "uniform", {"uniform", "block"});
    const int64_t n = in.integer("--recompute-num-layers", 1, 0, layers);
    const int64_t per_chunk = layers / (pp * vp);
    if (method == "uniform" && n != 1) {
      ignored.push_back("--recompute-num-layers " + std::to_string(n) +
                        " (uniform): each layer is checkpointed on its own");
    }
    if (method == "block" && n < per_chunk) {
      // The first n layers of each chunk are recomputed, the others keep their activations.
      if (!stage_layers.empty() || layers % (pp * vp) != 0) {
        throw Error(
            "invalid_config", "--recompute-num-layers",
            "block recomputation of part of each stage needs layers divisible by pp x virtual stages");
      }
      Json overrides = Json::array();
      for (int64_t l = 0; l < layers; ++l)
        if (l % per_chunk < n)
          overrides.push_back(Json{{"path", "layers." + std::to_string(l)}, {"recompute", "full"}});
      st["overrides"] = overrides;
      recompute = "none";
    }
  } else if (in.has("--recompute-method") || in.has("--recompute-num-layers")) {
    ignored.push_back(
        "--recompute-method/--recompute-num-layers: used only with --recompute-granularity full");
  }
  if (recompute == "selective" && in.has("--recompute-modules")) {
    const auto& mods = in.args().values.at("--recompute-modules");
    if (!(mods.size() == 1 && mods[0] == "core_attn"))
      ignored.push_back("--recompute-modules: selective recompute covers the attention core only");
  }
  st["recompute"] = recompute;

  st["overlap_grad_reduce"] = in.flag("--overlap-grad-reduce");
  const bool overlap_param = in.flag("--overlap-param-gather");
  if (zero >= 1) st["overlap_param_gather"] = overlap_param;
  // Megatron's DDP bucket is counted in parameters of fp32 main gradients (4 bytes; halved by
  // gradient_dtype_part when they are 16-bit). Its
  // default, max(40M, 1M x dp) parameters, applies when gradient reduction overlaps; without
  // overlap all gradients go in one bucket after the backward.
  if (in.has("--ddp-bucket-size")) {
    st["grad_bucket_MB"] =
        static_cast<double>(in.integer("--ddp-bucket-size", 0, 1, int64_t{1} << 40)) * kFp32GradBytes / 1e6;
  } else if (st["overlap_grad_reduce"].get<bool>()) {
    st["grad_bucket_MB"] =
        static_cast<double>(std::max<int64_t>(40'000'000, 1'000'000 * dp)) * kFp32GradBytes / 1e6;
    assumed.push_back("gradient buckets of Megatron's default max(40M, 1M x dp) parameters");
  }
  (void)model;
  return st;
}

Json training_part(ArgReader& in, Json& training) {
  const bool fp16 = in.flag("--fp16"), bf16 = in.flag("--bf16");
  if (fp16 && bf16) throw Error("invalid_config", "--bf16", "--bf16 contradicts --fp16");
  std::string precision = fp16 ? "fp16" : bf16 ? "bf16" : "fp32";
  if (in.has("--fp8-format") || in.has("--fp8")) {
    const std::string arg = in.has("--fp8-format") ? "--fp8-format" : "--fp8";
    in.choice(arg, "hybrid", {"e4m3", "hybrid"});
    if (precision == "fp32")
      throw Error("invalid_config", arg,
                  arg + " needs --bf16 or --fp16 (Transformer Engine's FP8 runs inside mixed precision)");
    precision = "fp8";
  }
  training["precision"] = precision;
  training["optimizer"] = in.choice("--optimizer", "adam", {"adam", "sgd"});
  return training;
}

// The dtype of the main gradients and their reduction (megatron/training/arguments.py): bf16
// training accumulates and reduces in fp32 unless --grad-reduce-in-bf16 (Megatron-Core's
// DistributedDataParallelConfig.grad_reduce_in_fp32 takes it). fp16 training keeps fp16 main
// gradients unless --accumulate-allreduce-grads-in-fp32; Proteus keeps fp32 there and says so,
// since the published fp16 Megatron runs' memory (Korthikanti et al.: 18 bytes per parameter,
// tests/validation) counts fp32 gradients. With 16-bit gradients a bucket of the same parameter
// count holds half the bytes.
void gradient_dtype_part(ArgReader& in, Json& st, const Json& training, std::vector<std::string>& assumed) {
  const std::string precision = training["precision"].get<std::string>();
  const bool bf16_grads = in.flag("--grad-reduce-in-bf16");
  const bool fp32_grads = in.flag("--accumulate-allreduce-grads-in-fp32");
  if (bf16_grads && fp32_grads)
    throw Error("invalid_config", "--grad-reduce-in-bf16",
                "--grad-reduce-in-bf16 contradicts --accumulate-allreduce-grads-in-fp32");
  if (bf16_grads && precision == "fp32")
    throw Error("invalid_config", "--grad-reduce-in-bf16", "--grad-reduce-in-bf16 needs --bf16");
  if (in.flag("--fp16") && !fp32_grads)
    assumed.push_back(
        "fp32 main gradients under --fp16 (Megatron's default there is fp16; add "
        "--accumulate-allreduce-grads-in-fp32 to say so, or set strategy.grad_reduce_in_fp32 false)");
  if (!bf16_grads) return;
  st["grad_reduce_in_fp32"] = false;
  if (st.contains("grad_bucket_MB"))
    st["grad_bucket_MB"] =
        st["grad_bucket_MB"].get<double>() * grad_bytes_per_element(false) / kFp32GradBytes;
}

// Megatron-Core's --use-precision-aware-optimizer (megatron/core/optimizer/__init__.py): Transformer
// Engine's FusedAdam holds the master weights and moments in the dtypes the --main-params-dtype,
// --exp-avg-dtype and --exp-avg-sq-dtype arguments name, and from TE 2.1 Megatron passes it
// store_param_remainders (OptimizerConfig default true), which under bf16 weights and fp32
// masters keeps only the masters' low 16 bits. Other state dtypes are reported, not simulated.
void precision_aware_optimizer_part(ArgReader& in, Json& st, const Json& training,
                                    std::vector<std::string>& ignored) {
  const bool aware = in.flag("--use-precision-aware-optimizer");
  const std::string main_params = in.choice("--main-params-dtype", "fp32", {"fp32", "fp16"});
  const std::string exp_avg = in.choice("--exp-avg-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
  const std::string exp_avg_sq = in.choice("--exp-avg-sq-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
  const std::string main_grads = in.choice("--main-grads-dtype", "fp32", {"fp32", "bf16"});
  const bool dtypes_given = in.has("--main-params-dtype") || in.has("--exp-avg-dtype") ||
                            in.has("--exp-avg-sq-dtype") || in.has("--main-grads-dtype");
  if (!aware) {
    if (dtypes_given)
      ignored.push_back(
          "optimizer state dtypes: Megatron reads them under --use-precision-aware-optimizer only");
    return;
  }
  if (exp_avg != "fp32" || exp_avg_sq != "fp32")
    ignored.push_back("--exp-avg-dtype/--exp-avg-sq-dtype " + exp_avg + "/" + exp_avg_sq +
                      ": 16- and 8-bit Adam moments are not simulated; fp32 moments assumed");
  if (main_grads != "fp32")
    ignored.push_back(
        "--main-grads-dtype bf16: the gradient buffer's dtype follows --grad-reduce-in-bf16 here");
  const bool bf16_weights = in.flag("--bf16") && !st.value("fp8_param_gather", false);
  if (main_params != "fp32") {
    ignored.push_back(
        "--main-params-dtype fp16: fp16 master weights are not simulated; fp32 masters assumed");
  } else if (bf16_weights && training.value("optimizer", "adam") == "adam") {
    st["store_param_remainders"] = true;
  } else {
    ignored.push_back(
        "--use-precision-aware-optimizer: without bf16 weights (--bf16, no --fp8-param-gather) "
        "the master weights stay whole, as without it");
  }
}

// Transformer Engine's knobs that Megatron-LM passes through (megatron/training/arguments.py):
// the FP8 recipe and its amax group, FP8 parameter gathers, TP communication overlap and the
// context-parallel communication type. Read after the strategy and the precision are known.
void transformer_engine_part(ArgReader& in, Json& st, Json& training, std::vector<std::string>& ignored) {
  const bool fp8 = training["precision"] == "fp8";
  if (in.has("--fp8-recipe")) {
    // Megatron's "tensorwise" is TE's Float8CurrentScaling (docs/frameworks.md).
    const std::string recipe =
        in.choice("--fp8-recipe", "delayed", {"delayed", "tensorwise", "mxfp8", "blockwise"});
    if (!fp8) {
      ignored.push_back("--fp8-recipe: without --fp8-format the run is not FP8");
    } else if (recipe == "blockwise") {
      ignored.push_back(
          "--fp8-recipe blockwise: TE's Float8BlockScaling is not modelled; simulated with delayed scaling");
    } else {
      training["fp8_recipe"] = recipe == "tensorwise" ? "current" : recipe;
    }
  }
  if (in.flag("--fp8-param-gather")) {
    if (!fp8) {
      ignored.push_back("--fp8-param-gather: without --fp8-format there are no FP8 weights to gather");
    } else if (st["zero"].get<int>() < 1) {
      // Megatron asserts it: the FP8 copy lives in the distributed optimizer's parameter buffer.
      throw Error(
          "invalid_config", "--fp8-param-gather",
          "--fp8-param-gather needs --use-distributed-optimizer or Megatron FSDP (Megatron asserts this)");
    } else {
      st["fp8_param_gather"] = true;
    }
  }
  if (in.flag("--tp-only-amax-red")) {
    if (fp8)
      st["tp_only_amax_red"] = true;
    else
      ignored.push_back("--tp-only-amax-red: without --fp8-format there is no amax to reduce");
  }
  if (in.flag("--tp-comm-overlap")) {
    if (!st["sequence_parallel"].get<bool>()) {
      throw Error("invalid_config", "--tp-comm-overlap",
                  "--tp-comm-overlap needs --sequence-parallel (Megatron asserts this)");
    }
    if (st["tp"].get<int64_t>() > 1)
      st["tp_comm_overlap"] = true;
    else
      ignored.push_back("--tp-comm-overlap: one tensor-parallel rank has no TP communication to overlap");
  }
  if (in.has("--cp-comm-type")) {
    // nargs='+': one type for every layer, or one per layer. Per-layer types are not modelled.
    const std::vector<std::string>& types = in.values("--cp-comm-type");
    if (types.empty()) throw Error("invalid_config", "--cp-comm-type", "--cp-comm-type needs a value");
    for (const std::string& t : types) {
      if (t != "p2p" && t != "all_gather" && t != "a2a" && t != "a2a+p2p") {
        throw Error("invalid_config", "--cp-comm-type",
                    "--cp-comm-type \"" + t + "\" is not one of: p2p, all_gather, a2a, a2a+p2p");
      }
    }
    const bool same =
        std::all_of(types.begin(), types.end(), [&](const std::string& t) { return t == types[0]; });
    if (!same) {
      ignored.push_back("--cp-comm-type: one type per layer is not modelled; the default p2p is simulated");
    } else if (st["cp"].get<int64_t>() > 1) {
      st["cp_comm_type"] = types[0];
      if (types[0] == "a2a+p2p" && in.has("--hierarchical-context-parallel-sizes")) {
        // [a2a, p2p]: the inner all-to-all group's ranks first.
        const std::vector<std::string>& sizes = in.values("--hierarchical-context-parallel-sizes");
        char* end = nullptr;
        const long long a2a = sizes.empty() ? 0 : std::strtoll(sizes[0].c_str(), &end, 10);
        if (sizes.size() != 2 || *end || a2a < 1) {
          throw Error("invalid_config", "--hierarchical-context-parallel-sizes",
                      "--hierarchical-context-parallel-sizes takes two positive integers: a2a p2p");
        }
        st["cp_a2a_size"] = a2a;
      }
    } else {
      ignored.push_back("--cp-comm-type: without context parallelism there is no CP communication");
    }
  }
}

}  // namespace

// Pipeline point-to-point (docs/frameworks.md, "Pipeline point-to-point"). Megatron's
// non-interleaved 1F1B always waits on its sends and receives; the interleaved one does unless
// overlap_p2p_comm, Megatron-LM's default since --no-overlap-p2p-communication replaced
// --overlap-p2p-communication. Megatron-Core sends pipeline tensors whole; the legacy
// scatter/gather over tp (--no-scatter-gather-tensors-in-pipeline turned it off) is not in its
// p2p, and the script cannot say which code ran it.
void pipeline_p2p_part(ArgReader& in, Json& st, std::vector<std::string>& ignored,
                       std::vector<std::string>& assumed) {
  const bool pipelined = st.value("pp", 1) > 1;
  const bool interleaved = st.value("schedule", std::string()) == "interleaved-1f1b";
  const bool overlap_on = in.flag("--overlap-p2p-communication");
  const bool overlap_off = in.flag("--no-overlap-p2p-communication");
  if (overlap_on && overlap_off)
    throw Error("invalid_config", "--no-overlap-p2p-communication",
                "contradicts --overlap-p2p-communication");
  if ((overlap_on || overlap_off) && !(pipelined && interleaved)) {
    ignored.push_back(
        std::string(overlap_on ? "--overlap-p2p-communication" : "--no-overlap-p2p-communication") +
        ": only Megatron's interleaved schedule overlaps its p2p (validate_args turns it off "
        "otherwise; 1F1B always waits)");
  } else if (overlap_on || overlap_off) {
    st["overlap_p2p_comm"] = overlap_on;
  } else if (pipelined && interleaved) {
    assumed.push_back(
        "overlap_p2p_comm true: Megatron-LM's default since --no-overlap-p2p-communication; "
        "older Megatron-LM waited on the interleaved schedule's p2p (set it false)");
  }
  if (in.flag("--no-scatter-gather-tensors-in-pipeline"))
    ignored.push_back(
        "--no-scatter-gather-tensors-in-pipeline: Megatron-Core's p2p sends pipeline tensors whole "
        "already (strategy.scatter_gather_p2p false)");
  else if (pipelined && st.value("tp", 1) > 1 && !st.value("sequence_parallel", false))
    assumed.push_back(
        "pipeline tensors sent whole, as Megatron-Core's p2p; Megatron-LM before it (2021-2023) "
        "scattered them over tp and all-gathered them after the receive: "
        "set strategy.scatter_gather_p2p");
}

// Megatron's --no-*-fusion flags (megatron/training/arguments.py; core_transformer_config_from_args
// takes bias_activation_fusion from --no-bias-swiglu-fusion under --swiglu, else from
// --no-bias-gelu-fusion). docs/frameworks.md, "Megatron's fused kernels".
void kernel_fusion_part(ArgReader& in, const Json& model, Json& st, std::vector<std::string>& ignored) {
  const bool swiglu = model.value("mlp", "gelu") == "swiglu";
  if (in.flag("--no-bias-dropout-fusion")) st["bias_dropout_fusion"] = false;
  const char* activation_flag = swiglu ? "--no-bias-swiglu-fusion" : "--no-bias-gelu-fusion";
  const char* other_flag = swiglu ? "--no-bias-gelu-fusion" : "--no-bias-swiglu-fusion";
  if (in.flag(activation_flag)) st["bias_activation_fusion"] = false;
  if (in.flag(other_flag))
    ignored.push_back(std::string(other_flag) + ": the model's activation is " +
                      (swiglu ? "SwiGLU" : "GELU"));
  if (in.flag("--no-masked-softmax-fusion")) {
    st["masked_softmax_fusion"] = false;
    if (model.value("flash_attention", false))
      ignored.push_back("--no-masked-softmax-fusion: flash attention has no separate softmax");
  }
  if (in.flag("--no-rope-fusion")) {
    st["apply_rope_fusion"] = false;
    if (model.value("learned_positions", true))
      ignored.push_back("--no-rope-fusion: the model has no rotary embedding");
  }
  if (in.flag("--no-gradient-accumulation-fusion"))
    ignored.push_back(
        "--no-gradient-accumulation-fusion: the weight gradient is written in 16 bits and added to the "
        "fp32 main_grad by a second kernel, 4 bytes more per parameter and micro-batch than the fused "
        "GEMM's read and write of main_grad (not simulated)");
  if (in.flag("--no-persist-layer-norm"))
    ignored.push_back("--no-persist-layer-norm: another fused LayerNorm kernel, costed the same");
}

// --attention-backend names the kernel Transformer Engine may use (Megatron-Core's AttnBackend
// sets NVTE_FUSED_ATTN / NVTE_FLASH_ATTN): fused -> cuDNN, flash -> flash-attn (FlashAttention-2;
// TE takes FlashAttention-3 instead where it is installed on Hopper). auto is what TE picks
// itself, the framework's default (strategy.attention_kernel "auto"); unfused / local are not a
// fused kernel (model.flash_attention false, model_part). docs/frameworks.md, "Attention kernels".
void attention_kernel_part(ArgReader& in, Json& st, std::vector<std::string>& assumed) {
  if (!in.has("--attention-backend")) return;
  const std::string b =
      in.choice("--attention-backend", "auto", {"auto", "flash", "fused", "unfused", "local"});
  if (b == "fused") st["attention_kernel"] = "cudnn";
  if (b == "flash") {
    st["attention_kernel"] = "fa2";
    assumed.push_back(
        "--attention-backend flash: FlashAttention-2 (Transformer Engine runs FlashAttention-3 where it is "
        "installed on Hopper: set strategy.attention_kernel \"fa3\")");
  }
}

ImportResult import_megatron(const std::string& text, const MegatronImportOptions& options) {
  const MegatronArgs args = import_detail::parse_megatron_command(text);
  ArgReader in(args);
  ImportResult result;
  const Family family = script_family(args.script, result.assumed);
  int gpus = 0;
  Json cluster = cluster_part(options, args, gpus, result.assumed);
  Json training = Json::object();
  // tp first: the vocabulary padding depends on it.
  const int64_t tp = in.has("--tensor-model-parallel-size")
                         ? in.integer("--tensor-model-parallel-size", 1, 1, 1 << 20)
                         : in.integer("--model-parallel-size", 1, 1, 1 << 20);
  Json model = model_part(in, family, tp, result.ignored, result.assumed);
  moe_part(in, model, result.ignored, result.assumed);
  int64_t tp_unused = 0;
  Json strategy = strategy_part(in, model["layers"].get<int64_t>(), gpus, tp_unused, result.ignored,
                                result.assumed, training, model);
  training["seq_len"] = in.has("--seq-length") ? in.integer("--seq-length", 0, 1, 16777216)
                                               : in.integer("--encoder-seq-length", 0, 1, 16777216);
  training_part(in, training);
  gradient_dtype_part(in, strategy, training, result.assumed);
  transformer_engine_part(in, strategy, training, result.ignored);
  precision_aware_optimizer_part(in, strategy, training, result.ignored);
  attention_kernel_part(in, strategy, result.assumed);
  kernel_fusion_part(in, model, strategy, result.ignored);
  pipeline_p2p_part(in, strategy, result.ignored, result.assumed);
  for (const std::string& name : args.repeated)
    result.ignored.push_back(name + " is given more than once: the last value is used (as argparse does)");
  for (const std::string& name : in.unread()) result.ignored.push_back(name);
  Json config = Json::object();
  config["schema"] = 1;
  config["model"] = model;
  config["cluster"] = cluster;
  config["training"] = training;
  config["strategy"] = strategy;
  result.config_json = config.dump(2);
  return result;
}

}  // namespace proteus
