// What model is trained: the typed form of the config's "model" object (DESIGN.md §4).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace proteus {

enum class ModelKind { Transformer, Cnn, Dlrm, Graph };
enum class MlpKind { Gelu, Swiglu };
enum class NormKind { LayerNorm, RmsNorm };
enum class CnnArch { AlexNet, Vgg19, ResNet50, InceptionV3 };

// How tokens reach experts. Capacity: each expert takes at most capacity_factor x its
// balanced share and pads to it (GShard; Megatron with --moe-expert-capacity-factor and
// --moe-pad-expert-input-to-capacity); tokens beyond are dropped. Dropless (Megatron's
// default): every token is kept, so the busiest expert sets the step: it receives
// imbalance x the balanced share, and every expert's work is costed at that load.
enum class MoeRouting { Capacity, Dropless };

struct MoeSpec {
  int experts = 0;  // 0 = dense model
  int top_k = 0;
  int64_t expert_ffn_hidden = 0;  // 0 = same as ffn_hidden
  double capacity_factor = 1.0;   // capacity routing: slots per expert = factor * tokens * top_k / experts
  MoeRouting routing = MoeRouting::Capacity;
  double imbalance = 1.0;                // dropless: busiest expert's tokens / balanced share (>= 1)
  int64_t shared_expert_ffn_hidden = 0;  // width of the always-on shared expert(s), 0 = none (DeepSeek)
  int first_dense_layers = 0;            // leading layers with a dense MLP of ffn_hidden (DeepSeek-V3: 3)
  bool router_bias = false;  // the router has a bias per expert (GPT-OSS, DeepSeek-V3's score bias)
  // The expert load factor the op graph sizes expert buckets by (capacity_factor or imbalance).
  double load_factor() const { return routing == MoeRouting::Capacity ? capacity_factor : imbalance; }
};

// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values go through low-rank
// latents; each head's query/key has a non-rotary and a rotary part. kv_lora_rank 0 = off.
struct MlaSpec {
  int64_t q_lora_rank = 0;  // 0: queries are projected from the hidden state directly
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

// One op of a "kind":"graph" model: a chain of generic layers given by the user.
struct GraphOpSpec {
  std::string name;
  std::string type;                           // "linear" | "conv2d" | "elementwise" | "custom"
  int64_t in_features = 0, out_features = 0;  // linear
  int64_t in_channels = 0, out_channels = 0, kernel = 0, stride = 1, image = 0;  // conv2d
  int64_t elements = 0;                                                          // elementwise: per sample
  double flops_per_sample = 0, bytes_per_sample = 0;                             // custom
  int64_t params = 0;                                                            // custom
};

struct ModelSpec {
  ModelKind kind = ModelKind::Transformer;
  std::string name;

  // transformer
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // 0 = heads (multi-head attention); < heads = GQA
  int64_t ffn_hidden = 0;
  int64_t seq_len = 0;
  int64_t vocab = 0;
  MlpKind mlp = MlpKind::Gelu;
  NormKind norm = NormKind::LayerNorm;
  bool tied_embeddings = true;
  bool bias = true;               // GPT/BERT linear layers have biases, Llama's do not
  bool dropout = true;            // GPT/BERT train with dropout (masks are saved activations)
  bool flash_attention = false;   // fused attention: no s^2 tensors are saved
  bool causal = true;             // decoder (GPT, Llama) vs encoder (BERT)
  bool learned_positions = true;  // GPT/BERT position-embedding table; Llama uses rotary
  int64_t type_vocab = 0;         // BERT token-type embeddings
  bool pooler = false;            // BERT pooler + heads
  MoeSpec moe;
  int64_t head_dim = 0;          // 0 = hidden / heads (Qwen3, Gemma, GPT-OSS give their own)
  bool qk_norm = false;          // RMSNorm over each query and key head (Qwen3, OLMo 2)
  bool attention_sinks = false;  // a learned logit per head added to the softmax (GPT-OSS)
  int64_t sliding_window = 0;    // > 0: attention sees the last sliding_window tokens ...
  int full_attention_every = 0;  // ... except every Nth layer (i % N == N-1), which sees all
  int mtp_layers = 0;            // multi-token prediction depth (DeepSeek-V3: 1)
  MlaSpec mla;

  // cnn
  CnnArch arch = CnnArch::ResNet50;
  int64_t image_size = 224;
  int64_t channels = 3;
  int64_t classes = 1000;
  bool aux_logits = false;  // Inception-v3 auxiliary head

  // dlrm
  int64_t dense_features = 13;
  std::vector<int64_t> bottom_mlp;  // layer widths, e.g. 128-512-512-512-64 (first = input)
  std::vector<int64_t> top_mlp;     // widths after the interaction, last = 1
  int tables = 0;
  int64_t table_rows = 0;
  int64_t embedding_dim = 0;
  int64_t lookups_per_table = 1;  // pooling factor

  // graph
  int64_t input_elements = 0;  // per sample
  std::vector<GraphOpSpec> ops;
};

const char* to_string(ModelKind);
const char* to_string(MlpKind);
const char* to_string(NormKind);
const char* to_string(CnnArch);
const char* to_string(MoeRouting);

}  // namespace proteus
