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

struct MoeSpec {
  int experts = 0;  // 0 = dense model
  int top_k = 0;
  int64_t expert_ffn_hidden = 0;  // 0 = same as ffn_hidden
  double capacity_factor = 1.0;   // tokens per expert = capacity_factor * tokens * top_k / experts
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

}  // namespace proteus
