// Shared by the model-builder tests: model specs written out from their publications, and
// checks that stand in for what the compiler does with an OpGraph.
#pragma once
#include <set>
#include <string>

#include "proteus/model_spec.h"
#include "proteus/op_graph.h"
#include "proteus/training_spec.h"

namespace proteus::test_model {

inline TrainingSpec training(int64_t seq_len, Precision p = Precision::Bf16) {
  TrainingSpec t;
  t.global_batch = 1;
  t.seq_len = seq_len;
  t.precision = p;
  return t;
}

// GPT-3 175B (Brown et al. 2020, Table 2.1) as Megatron trains it: vocab padded to 51200,
// 2048 learned positions, biases, LayerNorm, GELU, dropout, tied head.
inline ModelSpec gpt(int layers, int64_t hidden, int heads, int64_t seq, int64_t vocab) {
  ModelSpec m;
  m.kind = ModelKind::Transformer;
  m.name = "gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.seq_len = seq;
  m.vocab = vocab;
  return m;
}
inline ModelSpec gpt3_175b() { return gpt(96, 12288, 96, 2048, 51200); }
// GPT-2 1.5B (Radford et al. 2019): 48 layers, hidden 1600, 16 heads (REFERENCE.md §1).
inline ModelSpec gpt2_1_5b() { return gpt(48, 1600, 16, 1024, 50257); }

// Llama 3 (Meta, "The Llama 3 Herd of Models", Table 3): GQA with 8 KV heads, SwiGLU,
// RMSNorm, rotary, vocab 128256, untied, no biases, no dropout.
inline ModelSpec llama3(int layers, int64_t hidden, int heads, int64_t ffn) {
  ModelSpec m;
  m.kind = ModelKind::Transformer;
  m.name = "llama3";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.ffn_hidden = ffn;
  m.seq_len = 8192;
  m.vocab = 128256;
  m.mlp = MlpKind::Swiglu;
  m.norm = NormKind::RmsNorm;
  m.tied_embeddings = false;
  m.bias = false;
  m.dropout = false;
  m.flash_attention = true;
  m.learned_positions = false;
  return m;
}
inline ModelSpec llama3_8b() { return llama3(32, 4096, 32, 14336); }
inline ModelSpec llama3_70b() { return llama3(80, 8192, 64, 28672); }
inline ModelSpec llama3_405b() { return llama3(126, 16384, 128, 53248); }

// Mixtral 8x7B (Jiang et al. 2024): Mistral-7B attention, 8 experts of ffn 14336, top-2,
// vocab 32000.
inline ModelSpec mixtral_8x7b() {
  ModelSpec m = llama3(32, 4096, 32, 14336);
  m.name = "mixtral";
  m.vocab = 32000;
  m.seq_len = 32768;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  return m;
}

// BERT-large (Devlin et al. 2019) in Megatron's pre-LN layout: 24 layers, hidden 1024, 16
// heads, vocab 30522, 512 positions, 2 token types.
inline ModelSpec bert_large(bool pooler) {
  ModelSpec m = gpt(24, 1024, 16, 512, 30522);
  m.name = "bert";
  m.causal = false;
  m.type_vocab = 2;
  m.pooler = pooler;
  return m;
}

// What the compiler stores for the backward of one micro-batch in the ops of `layer`:
// the inputs of ops that save inputs, and saved_extra, each tensor once.
inline double saved_bytes_of_layer(const OpGraph& g, int layer) {
  std::set<int> saved;
  for (const Op& op : g.ops) {
    if (g.modules[op.module].layer != layer) continue;
    if (op.saves_inputs)
      for (const TensorUse& u : op.inputs) saved.insert(u.tensor);
    for (const TensorUse& u : op.saved_extra) saved.insert(u.tensor);
  }
  double bytes = 0;
  for (int t : saved) bytes += g.tensors[t].bytes();
  return bytes;
}

// Every op input is a model input or produced by an earlier op; every tensor use binds each
// tensor axis to a dim of the op; modules list parents before children.
inline std::string check_graph(const OpGraph& g) {
  std::vector<char> produced(g.tensors.size(), 0);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    auto check_use = [&](const TensorUse& u, const char* what) -> std::string {
      if (u.tensor < 0 || u.tensor >= static_cast<int>(g.tensors.size())) return op.name + ": bad tensor";
      if (u.dims.size() != g.tensors[u.tensor].shape.size()) return op.name + ": rank mismatch " + what;
      for (int d : u.dims)
        if (d < 0 || d >= static_cast<int>(op.dims.size())) return op.name + ": bad dim";
      return "";
    };
    for (const TensorUse& u : op.inputs) {
      if (auto e = check_use(u, "input"); !e.empty()) return e;
      const Tensor& t = g.tensors[u.tensor];
      if (t.is_weight) return op.name + " reads a weight as an input";
      if (t.producer >= 0 && !produced[u.tensor])
        return op.name + " reads " + t.name + " before it is produced";
    }
    for (const TensorUse& u : op.weights) {
      if (auto e = check_use(u, "weight"); !e.empty()) return e;
      if (!g.tensors[u.tensor].is_weight) return op.name + " weight is not a weight";
    }
    for (const TensorUse& u : op.saved_extra)
      if (auto e = check_use(u, "saved"); !e.empty()) return e;
    if (auto e = check_use(op.output, "output"); !e.empty()) return e;
    if (g.tensors[op.output.tensor].producer != static_cast<int>(i)) return op.name + ": output producer";
    produced[op.output.tensor] = 1;
    for (const TensorUse& u : op.saved_extra)
      if (g.tensors[u.tensor].producer == static_cast<int>(i)) produced[u.tensor] = 1;
    if (op.module < 0 || op.module >= static_cast<int>(g.modules.size())) return op.name + ": module";
  }
  // saved_extra never repeats a tensor that an op saves as an input (no double counting).
  std::vector<char> saved_as_input(g.tensors.size(), 0);
  for (const Op& op : g.ops)
    if (op.saves_inputs)
      for (const TensorUse& u : op.inputs) saved_as_input[u.tensor] = 1;
  for (const Op& op : g.ops)
    for (const TensorUse& u : op.saved_extra)
      if (saved_as_input[u.tensor])
        return op.name + " lists " + g.tensors[u.tensor].name + " in saved_extra again";
  for (size_t m = 1; m < g.modules.size(); ++m)
    if (g.modules[m].parent < 0 || g.modules[m].parent >= static_cast<int>(m))
      return g.modules[m].path + ": parent";
  return "";
}

inline int find_module(const OpGraph& g, const std::string& path) {
  for (size_t i = 0; i < g.modules.size(); ++i)
    if (g.modules[i].path == path) return static_cast<int>(i);
  return -1;
}

// The op named `name` in module `path`.
inline const Op* find_op(const OpGraph& g, const std::string& path, const std::string& name) {
  const int m = find_module(g, path);
  if (m < 0) return nullptr;
  for (int o : g.modules[m].ops)
    if (g.ops[o].name == name) return &g.ops[o];
  return nullptr;
}

inline std::string dim_names(const Op& op) {
  std::string s;
  for (const Dim& d : op.dims) s += (s.empty() ? "" : ",") + d.name;
  return s;
}

inline std::string use_names(const Op& op, const TensorUse& u) {
  std::string s;
  for (int d : u.dims) s += (s.empty() ? "" : ",") + op.dims[d].name;
  return s;
}

}  // namespace proteus::test_model
