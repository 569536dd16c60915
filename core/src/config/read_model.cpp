// The "model" object: a transformer, a CNN, a DLRM or an explicit op list ("graph").
#include <set>
#include <vector>
#include "limits.h"
#include "readers.h"

namespace proteus::config_detail {

namespace {

namespace L = config_limits;

#define PROTEUS_TRANSFORMER_KEYS                                                                            \
  "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab", "mlp", "norm",                 \
      "tied_embeddings", "bias", "dropout", "flash_attention", "causal", "learned_positions", "type_vocab", \
      "pooler", "moe", "head_dim", "qk_norm", "attention_sinks", "sliding_window", "full_attention_every",  \
      "mtp_layers", "mla"
#define PROTEUS_CNN_KEYS "arch", "image_size", "channels", "classes", "aux_logits"
#define PROTEUS_DLRM_KEYS \
  "dense_features", "bottom_mlp", "top_mlp", "tables", "table_rows", "embedding_dim", "lookups_per_table"
#define PROTEUS_GRAPH_KEYS "input_elements", "ops"

// A field of another model kind gets a message that says so, rather than "unknown field".
void reject_fields_of_other_kinds(const Json& value, const std::string& path, ModelKind kind) {
  struct KindKeys {
    ModelKind kind;
    std::vector<const char*> keys;
  };
  static const KindKeys table[] = {
      {ModelKind::Transformer, {PROTEUS_TRANSFORMER_KEYS}},
      {ModelKind::Cnn, {PROTEUS_CNN_KEYS}},
      {ModelKind::Dlrm, {PROTEUS_DLRM_KEYS}},
      {ModelKind::Graph, {PROTEUS_GRAPH_KEYS}},
  };
  for (const KindKeys& entry : table) {
    if (entry.kind == kind) continue;
    for (const char* key : entry.keys) {
      if (value.contains(key)) {
        throw invalid_config(join_path(path, key),
                             "\"" + std::string(key) + "\" is a field of " + to_string(entry.kind) +
                                 " models, but this model's kind is \"" + to_string(kind) + "\"");
      }
    }
  }
}

MoeSpec read_moe(const Json& value, const std::string& path, int64_t ffn_hidden, int layers) {
  ObjectReader in(value, path,
                  {"experts", "top_k", "expert_ffn_hidden", "capacity_factor", "routing", "imbalance",
                   "shared_expert_ffn_hidden", "first_dense_layers", "router_bias"});
  MoeSpec moe;
  moe.experts = static_cast<int>(in.required_integer("experts", 0, L::kMaxExperts, "0 for a dense model"));
  if (moe.experts == 0) {
    moe.top_k = static_cast<int>(in.integer("top_k", 0, 0, 0));
  } else {
    moe.top_k = static_cast<int>(in.required_integer("top_k", 1, L::kMaxExperts, "experts chosen per token"));
    if (moe.top_k > moe.experts) {
      throw invalid_config(in.path_of("top_k"), "top_k=" + std::to_string(moe.top_k) +
                                                    " is larger than experts=" + std::to_string(moe.experts));
    }
  }
  moe.expert_ffn_hidden = in.integer("expert_ffn_hidden", 0, 0, L::kMaxFfnHidden);
  if (moe.experts > 0 && moe.expert_ffn_hidden == 0) moe.expert_ffn_hidden = ffn_hidden;
  moe.capacity_factor = in.number("capacity_factor", 1.0, 0, L::kMaxCapacityFactor, true);
  moe.routing = in.enumeration("routing", MoeRouting::Capacity, {MoeRouting::Capacity, MoeRouting::Dropless});
  // The busiest expert can at most receive every token once: experts / top_k balanced shares.
  const double max_imbalance = moe.experts > 0 ? static_cast<double>(moe.experts) / moe.top_k : 1.0;
  moe.imbalance = in.number("imbalance", 1.0, 1.0, max_imbalance);
  moe.shared_expert_ffn_hidden = in.integer("shared_expert_ffn_hidden", 0, 0, L::kMaxFfnHidden);
  moe.first_dense_layers = static_cast<int>(in.integer("first_dense_layers", 0, 0, layers));
  moe.router_bias = in.boolean("router_bias", false);
  return moe;
}

MlaSpec read_mla(const Json& value, const std::string& path) {
  ObjectReader in(value, path,
                  {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  const std::string why = "multi-head latent attention needs it";
  MlaSpec mla;
  mla.q_lora_rank = in.integer("q_lora_rank", 0, 0, L::kMaxHidden);
  mla.kv_lora_rank = in.required_integer("kv_lora_rank", 1, L::kMaxHidden, why);
  mla.qk_nope_head_dim = in.required_integer("qk_nope_head_dim", 1, L::kMaxHidden, why);
  mla.qk_rope_head_dim = in.required_integer("qk_rope_head_dim", 1, L::kMaxHidden, why);
  mla.v_head_dim = in.required_integer("v_head_dim", 1, L::kMaxHidden, why);
  return mla;
}

void read_transformer(const ObjectReader& in, ModelSpec& model) {
  const std::string why = "transformer models need it";
  model.layers = static_cast<int>(in.required_integer("layers", 1, L::kMaxLayers, why));
  model.hidden = in.required_integer("hidden", 1, L::kMaxHidden, why);
  model.heads = static_cast<int>(in.required_integer("heads", 1, L::kMaxHeads, why));
  model.head_dim = in.integer("head_dim", 0, 0, L::kMaxHidden);
  if (model.head_dim == 0 && model.hidden % model.heads != 0) {
    throw invalid_config(in.path_of("heads"),
                         "hidden=" + std::to_string(model.hidden) + " is not divisible by heads=" +
                             std::to_string(model.heads) + " (give head_dim for heads of another width)");
  }
  model.kv_heads = static_cast<int>(in.integer("kv_heads", 0, 0, L::kMaxHeads));
  if (model.kv_heads == 0) model.kv_heads = model.heads;
  if (model.kv_heads > model.heads || model.heads % model.kv_heads != 0) {
    throw invalid_config(in.path_of("kv_heads"), "kv_heads=" + std::to_string(model.kv_heads) +
                                                     " must divide heads=" + std::to_string(model.heads) +
                                                     " (each key/value head serves a group of query heads)");
  }
  model.ffn_hidden = in.integer("ffn_hidden", 4 * model.hidden, 1, L::kMaxFfnHidden);
  model.seq_len = in.required_integer("seq_len", 1, L::kMaxSeqLen, why);
  model.vocab = in.required_integer("vocab", 1, L::kMaxVocab, why);
  model.mlp = in.enumeration("mlp", MlpKind::Gelu, {MlpKind::Gelu, MlpKind::Swiglu});
  model.norm = in.enumeration("norm", NormKind::LayerNorm, {NormKind::LayerNorm, NormKind::RmsNorm});
  model.tied_embeddings = in.boolean("tied_embeddings", true);
  model.bias = in.boolean("bias", true);
  model.dropout = in.boolean("dropout", true);
  model.flash_attention = in.boolean("flash_attention", false);
  model.causal = in.boolean("causal", true);
  model.learned_positions = in.boolean("learned_positions", true);
  model.type_vocab = in.integer("type_vocab", 0, 0, L::kMaxVocab);
  model.pooler = in.boolean("pooler", false);
  if (in.has("moe")) model.moe = read_moe(in.at("moe"), in.path_of("moe"), model.ffn_hidden, model.layers);
  model.qk_norm = in.boolean("qk_norm", false);
  model.attention_sinks = in.boolean("attention_sinks", false);
  model.sliding_window = in.integer("sliding_window", 0, 0, L::kMaxSeqLen);
  model.full_attention_every = static_cast<int>(in.integer("full_attention_every", 0, 0, L::kMaxLayers));
  if (model.full_attention_every > 0 && model.sliding_window == 0) {
    throw invalid_config(in.path_of("full_attention_every"),
                         "full_attention_every only applies with a sliding_window");
  }
  model.mtp_layers = static_cast<int>(in.integer("mtp_layers", 0, 0, 100));
  if (model.mtp_layers > 0 && !model.causal) {
    throw invalid_config(in.path_of("mtp_layers"), "multi-token prediction needs a causal (decoder) model");
  }
  if (in.has("mla")) {
    model.mla = read_mla(in.at("mla"), in.path_of("mla"));
    if (model.kv_heads != model.heads) {
      throw invalid_config(in.path_of("kv_heads"),
                           "multi-head latent attention has one key/value head per query head");
    }
    if (model.qk_norm)
      throw invalid_config(in.path_of("qk_norm"), "qk_norm does not apply to multi-head latent attention");
  }
}

// Smallest input for which every layer of the architecture keeps at least one pixel
// (torchvision's definitions): AlexNet 63 (conv 11/4, three 3/2 max-pools), VGG-19 32 and
// ResNet-50 32 (five halvings), Inception-v3 75 (torchvision's stated minimum).
int64_t min_image_size(CnnArch arch) {
  switch (arch) {
    case CnnArch::AlexNet:
      return 63;
    case CnnArch::Vgg19:
      return 32;
    case CnnArch::ResNet50:
      return 32;
    case CnnArch::InceptionV3:
      return 75;
  }
  return 1;
}

void read_cnn(const ObjectReader& in, ModelSpec& model) {
  model.arch = as_enum(in.required("arch", "cnn models need it"), in.path_of("arch"),
                       {CnnArch::AlexNet, CnnArch::Vgg19, CnnArch::ResNet50, CnnArch::InceptionV3});
  int64_t default_size = model.arch == CnnArch::InceptionV3 ? 299 : 224;
  model.image_size = in.integer("image_size", default_size, min_image_size(model.arch), L::kMaxImageSize);
  model.channels = in.integer("channels", 3, 1, L::kMaxChannels);
  model.classes = in.integer("classes", 1000, 1, L::kMaxClasses);
  model.aux_logits = in.boolean("aux_logits", false);
  if (model.aux_logits && model.arch != CnnArch::InceptionV3) {
    throw invalid_config(in.path_of("aux_logits"),
                         "aux_logits (the auxiliary classifier) exists only in inception-v3");
  }
}

void read_dlrm(const ObjectReader& in, ModelSpec& model) {
  const std::string why = "dlrm models need it";
  model.bottom_mlp = as_integer_array(in.required("bottom_mlp", why), in.path_of("bottom_mlp"),
                                      L::kMaxMlpLayers, 1, L::kMaxWidth);
  if (model.bottom_mlp.size() < 2) {
    throw invalid_config(
        in.path_of("bottom_mlp"),
        "bottom_mlp lists the input width then each layer's width, so it needs at least 2 entries");
  }
  model.dense_features = in.integer("dense_features", model.bottom_mlp.front(), 1, L::kMaxWidth);
  if (model.dense_features != model.bottom_mlp.front()) {
    throw invalid_config(in.path_of("dense_features"),
                         "dense_features=" + std::to_string(model.dense_features) +
                             " must equal the bottom MLP's input width bottom_mlp[0]=" +
                             std::to_string(model.bottom_mlp.front()));
  }
  model.top_mlp =
      as_integer_array(in.required("top_mlp", why), in.path_of("top_mlp"), L::kMaxMlpLayers, 1, L::kMaxWidth);
  if (model.top_mlp.empty() || model.top_mlp.back() != 1) {
    throw invalid_config(
        in.path_of("top_mlp"),
        "top_mlp lists the widths after the interaction and must end with 1 (the click logit)");
  }
  model.tables = static_cast<int>(in.required_integer("tables", 1, L::kMaxTables, why));
  model.table_rows = in.required_integer("table_rows", 1, L::kMaxTableRows, why);
  model.embedding_dim = in.required_integer("embedding_dim", 1, L::kMaxEmbeddingDim, why);
  model.lookups_per_table = in.integer("lookups_per_table", 1, 1, L::kMaxLookups);
  if (model.bottom_mlp.back() != model.embedding_dim) {
    throw invalid_config(in.path_of("bottom_mlp"),
                         "the bottom MLP's output width " + std::to_string(model.bottom_mlp.back()) +
                             " must equal embedding_dim=" + std::to_string(model.embedding_dim) +
                             " for the dot interaction");
  }
}

GraphOpSpec read_graph_op(const Json& value, const std::string& path) {
  if (!value.is_object()) throw invalid_config(path, "each op must be an object, got " + describe(value));
  const std::string type_path = join_path(path, "type");
  if (!value.contains("type")) {
    throw invalid_config(type_path,
                         "missing required field \"type\" (linear, conv2d, elementwise or custom)");
  }
  GraphOpSpec op;
  op.type = as_string(value.at("type"), type_path);
  const int64_t kDim = L::kMaxGraphDim;
  if (op.type == "linear") {
    ObjectReader in(value, path, {"name", "type", "in_features", "out_features"});
    op.in_features = in.required_integer("in_features", 1, kDim, "linear ops need it");
    op.out_features = in.required_integer("out_features", 1, kDim, "linear ops need it");
  } else if (op.type == "conv2d") {
    ObjectReader in(value, path,
                    {"name", "type", "in_channels", "out_channels", "kernel", "stride", "image"});
    op.in_channels = in.required_integer("in_channels", 1, kDim, "conv2d ops need it");
    op.out_channels = in.required_integer("out_channels", 1, kDim, "conv2d ops need it");
    op.kernel = in.required_integer("kernel", 1, L::kMaxImageSize, "conv2d ops need it");
    op.stride = in.integer("stride", 1, 1, L::kMaxImageSize);
    op.image = in.required_integer("image", 1, L::kMaxImageSize, "conv2d ops need the input image side");
    if (op.kernel > op.image) {
      throw invalid_config(in.path_of("kernel"), "kernel=" + std::to_string(op.kernel) +
                                                     " is larger than the input image side " +
                                                     std::to_string(op.image));
    }
  } else if (op.type == "elementwise") {
    ObjectReader in(value, path, {"name", "type", "elements"});
    op.elements = in.required_integer("elements", 1, kDim, "elementwise ops need the elements per sample");
  } else if (op.type == "custom") {
    ObjectReader in(value, path, {"name", "type", "flops_per_sample", "bytes_per_sample", "params"});
    op.flops_per_sample = as_number(in.required("flops_per_sample", "custom ops need it"),
                                    in.path_of("flops_per_sample"), 0, L::kMaxGraphAmount);
    op.bytes_per_sample = as_number(in.required("bytes_per_sample", "custom ops need it"),
                                    in.path_of("bytes_per_sample"), 0, L::kMaxGraphAmount);
    op.params = in.integer("params", 0, 0, L::kMaxExactInteger);
  } else {
    throw invalid_config(type_path,
                         "op type \"" + op.type + "\" is not one of: linear, conv2d, elementwise, custom");
  }
  const std::string name_path = join_path(path, "name");
  if (!value.contains("name")) throw invalid_config(name_path, "missing required field \"name\"");
  op.name = as_string(value.at("name"), name_path);
  if (op.name.empty()) throw invalid_config(name_path, "op names must not be empty");
  return op;
}

void read_graph(const ObjectReader& in, ModelSpec& model) {
  model.input_elements = in.required_integer("input_elements", 1, L::kMaxGraphDim, "graph models need it");
  const Json& ops = as_array(in.required("ops", "graph models list their ops"), in.path_of("ops"),
                             static_cast<size_t>(L::kMaxGraphOps));
  if (ops.empty()) throw invalid_config(in.path_of("ops"), "a graph model needs at least one op");
  std::set<std::string> names;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string op_path = index_path(in.path_of("ops"), i);
    GraphOpSpec op = read_graph_op(ops[i], op_path);
    if (!names.insert(op.name).second) {
      throw invalid_config(join_path(op_path, "name"), "op name \"" + op.name + "\" is used twice");
    }
    model.ops.push_back(std::move(op));
  }
}

}  // namespace

ModelSpec read_model(const Json& value, const std::string& path) {
  if (!value.is_object())
    throw invalid_config(path, "model must be a preset name or an object, got " + describe(value));
  ModelSpec model;
  const std::string kind_path = join_path(path, "kind");
  if (value.contains("kind")) {
    model.kind = as_enum(value.at("kind"), kind_path,
                         {ModelKind::Transformer, ModelKind::Cnn, ModelKind::Dlrm, ModelKind::Graph});
  }
  reject_fields_of_other_kinds(value, path, model.kind);
  switch (model.kind) {
    case ModelKind::Transformer: {
      ObjectReader in(value, path, {"kind", "name", PROTEUS_TRANSFORMER_KEYS});
      model.name = in.string("name", "");
      read_transformer(in, model);
      break;
    }
    case ModelKind::Cnn: {
      ObjectReader in(value, path, {"kind", "name", PROTEUS_CNN_KEYS});
      model.name = in.string("name", "");
      read_cnn(in, model);
      break;
    }
    case ModelKind::Dlrm: {
      ObjectReader in(value, path, {"kind", "name", PROTEUS_DLRM_KEYS});
      model.name = in.string("name", "");
      read_dlrm(in, model);
      break;
    }
    case ModelKind::Graph: {
      ObjectReader in(value, path, {"kind", "name", PROTEUS_GRAPH_KEYS});
      model.name = in.string("name", "");
      read_graph(in, model);
      break;
    }
  }
  return model;
}

}  // namespace proteus::config_detail
