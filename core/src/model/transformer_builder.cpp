// Decoder and encoder transformers (GPT-2/3, Llama 2/3 with GQA, SwiGLU, RMSNorm, rotary,
// Mixtral-style MoE, BERT with Megatron's pre-LN layout): the OpGraph of one micro-batch.
//
// Module tree (paths are what strategy overrides name):
//   embedding                 word (+ position, + token-type) embeddings, add, dropout
//   layers                    kind "layers"
//     layers.<i>              kind "layer", Module::layer = i
//       layers.<i>.attention  ln1, q_proj, kv_proj, [q_norm, k_norm], [rotary_q, rotary_k], attn, o_proj,
//                             (MLA: q_down_proj, q_norm, q_up_proj, kv_down_proj, kv_norm, kv_up_proj)
//                             [attn_dropout], attn_residual
//       layers.<i>.mlp        ln2, fc1, act, fc2, [mlp_dropout], mlp_residual
//    or layers.<i>.moe        ln2, router, dispatch, combine, [moe_dropout], moe_residual
//       layers.<i>.moe.experts  expert_fc1, expert_act, expert_fc2 (the ops holding experts)
//       layers.<i>.moe.shared_experts  shared_fc1, shared_act, shared_fc2 (moe.shared_expert_ffn_hidden)
//     (layers before moe.first_dense_layers have a dense mlp)
//   final_norm                final LayerNorm / RMSNorm
//   head                      [mlm_transform, mlm_act, mlm_norm (encoders)], lm_head, loss
//   mtp.<k>                   (model.mtp_layers) embedding (shared table), enorm, hnorm, concat,
//                             eh_proj, one block (attention + moe/mlp), norm, lm_head (shared), loss
//   pooler                    (BERT, model.pooler) cls_select, pooler_dense, pooler_tanh,
//                             nsp_head, nsp_loss
//
// Dim bindings the compiler relies on (a = heads, k = kv heads, d = head_dim):
//  * q_proj  dims (batch, seq, heads[a*d], hidden): q[b, s, a*d] is bound (batch, seq, heads).
//  * kv_proj dims (batch, seq, kv_heads[2*k*d], hidden): kv[b, s, 2*k*d] = [K | V] is bound
//    (batch, seq, kv_heads).
//  * attn    dims (batch, heads[a], seq, seq_kv, head_dim[d]). It reads q as (batch, seq,
//    heads) and kv as (batch, seq_kv, heads): the kv tensor's head axis is bound to "heads",
//    the attention has no "kv_heads" dim, so tensor parallelism (heads at attn, kv_heads at
//    kv_proj) shards K/V by the same factor on both sides and FLOPs are divided once. Context
//    parallelism splits "seq": q and the output are sharded, kv is bound to seq_kv and so is
//    required whole: an all-gather of K/V over cp, as in Megatron's context parallelism.
//    The output o[b, s, a*d] is bound (batch, seq, heads). GEMM: batch = (batch, heads),
//    M = seq, N = seq_kv, K = head_dim. FLOPs 4*b*s*s_kv*a*d (full square, as Megatron).
//  * o_proj  dims (batch, seq, hidden, heads[a*d]); "heads" is its reduction dim (row parallel).
//  * fc1     dims (batch, seq, ffn, hidden); out width ffn, or 2*ffn for SwiGLU (gate and up
//    fused, still named "ffn"); act dims (batch, seq, ffn[ffn]); fc2 dims (batch, seq, hidden, ffn).
//  * Dropout masks (1 byte) are saved_extra of the dropout ops; residual adds save nothing.
//  * attn saves its inputs (Q, K, V) and, without flash attention, saved_extra = softmax
//    probabilities (2 bytes), dropout mask (1 byte), dropped probabilities (2 bytes), each
//    [b, a, s, s_kv]: what Megatron's selective recompute drops (core_attn).
//    With flash attention the backward needs its output O, which o_proj saves as its input,
//    and saved_extra is the fp32 logsumexp [b, a, s]. saved_extra never repeats a tensor an op
//    saves as an input (OpGraphBuilder::finish), so summing saved inputs (each tensor once)
//    and saved_extra per layer gives Korthikanti's s*b*h*(34 + 5*a*s/h) bytes at 16 bits.
//
// MoE (tokens per expert = capacity_factor * tokens * top_k / experts, kept per sample as
// c = ceil(capacity_factor * s * top_k / experts) slots):
//  * router   dims (batch, seq, route[E], hidden), weight [E, h] bound (route, hidden),
//    probs [b, s, E] bound (batch, seq, route).
//  * dispatch (Dispatch) dims (batch, seq, route[E], hidden): reads x (batch, seq, hidden) and
//    probs (batch, seq, route), writes the routed tokens [E, b, c, h] bound (route, batch,
//    seq, hidden): one bucket of c slots per sample per expert; its slot axis is bound to "seq"
//    (the slots of a sample come from its tokens; its size is c, not s).
//  * expert_fc1 / expert_act / expert_fc2 dims (expert, batch, seq[c], ffn, hidden): the routed
//    tensor is bound (expert, batch, seq, hidden), weights [E, ffn, h] / [E, h, ffn].
//  * combine (Dispatch) dims (batch, seq, route, hidden): reads expert outputs bound (route,
//    batch, seq, hidden) and probs, writes [b, s, h].
//  "route" is the expert index on the token side, so the token-side ops (router, dispatch,
//  combine) have no "expert" dim and ep falls back to "batch" there; only the ops holding
//  expert weights have "expert". With ep on "batch" at dispatch and on "expert" at the expert
//  GEMMs, the routed tensor goes Shard(1) -> Shard(0) over ep: the all-to-all; combine brings
//  it back Shard(0) -> Shard(1). dp (batch) and cp (seq) keep the same axes on both sides,
//  so they add no communication.
#include <cmath>
#include <string>

#include "layers.h"
#include "model_builders.h"
#include "op_graph_builder.h"
#include "proteus/error.h"

namespace proteus::model {
namespace {

struct Sizes {
  int64_t b = 0, s = 0, h = 0, a = 0, kvh = 0, d = 0, ffn = 0, vocab = 0;
  int layers = 0;
  int64_t experts = 0, top_k = 0, expert_ffn = 0, slots = 0;  // MoE; slots per sample per expert
  int64_t qk_d = 0, v_d = 0;  // MLA: query/key and value head widths (else both d)
};

std::string num(int64_t v) { return std::to_string(v); }

Sizes validate(const ModelSpec& m, const TrainingSpec& t, int64_t batch) {
  Sizes z;
  if (m.layers < 1) throw invalid_config("model.layers", "a transformer needs at least one layer");
  if (m.hidden < 1) throw invalid_config("model.hidden", "hidden must be positive");
  if (m.heads < 1) throw invalid_config("model.heads", "heads must be positive");
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    throw invalid_config("model.heads",
                         "hidden=" + num(m.hidden) + " is not divisible by heads=" + num(m.heads));
  const int kvh = m.kv_heads == 0 ? m.heads : m.kv_heads;
  if (kvh < 1 || kvh > m.heads || m.heads % kvh != 0)
    throw invalid_config("model.kv_heads",
                         "kv_heads=" + num(kvh) + " must divide heads=" + num(m.heads) + " (0 = heads)");
  if (m.vocab < 1) throw invalid_config("model.vocab", "vocab must be positive");
  if (m.type_vocab < 0) throw invalid_config("model.type_vocab", "type_vocab must not be negative");
  const int64_t s = t.seq_len > 0 ? t.seq_len : m.seq_len;
  if (s < 1) throw invalid_config("training.seq_len", "the sequence length must be positive");
  if (m.learned_positions && s > m.seq_len)
    throw invalid_config("training.seq_len", "seq_len=" + num(s) + " exceeds the " + num(m.seq_len) +
                                                 " learned positions of " + m.name);
  z.b = batch;
  z.s = s;
  z.h = m.hidden;
  z.a = m.heads;
  z.kvh = kvh;
  z.d = m.head_dim > 0 ? m.head_dim : m.hidden / m.heads;
  z.qk_d = m.mla.enabled() ? m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim : z.d;
  z.v_d = m.mla.enabled() ? m.mla.v_head_dim : z.d;
  z.ffn = m.ffn_hidden;
  z.vocab = m.vocab;
  z.layers = m.layers;
  if (m.moe.experts < 0) throw invalid_config("model.moe.experts", "experts must not be negative");
  if (m.moe.experts > 0) {
    if (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts)
      throw invalid_config("model.moe.top_k",
                           "top_k=" + num(m.moe.top_k) + " must be in 1.." + num(m.moe.experts));
    if (!(m.moe.load_factor() > 0))
      throw invalid_config("model.moe.capacity_factor", "capacity_factor and imbalance must be positive");
    if (m.moe.expert_ffn_hidden < 0)
      throw invalid_config("model.moe.expert_ffn_hidden", "expert_ffn_hidden must not be negative");
    z.experts = m.moe.experts;
    z.top_k = m.moe.top_k;
    z.expert_ffn = m.moe.expert_ffn_hidden > 0 ? m.moe.expert_ffn_hidden : m.ffn_hidden;
    if (z.expert_ffn < 1) throw invalid_config("model.ffn_hidden", "ffn_hidden must be positive");
    const double slots =
        m.moe.load_factor() * static_cast<double>(s * z.top_k) / static_cast<double>(z.experts);
    z.slots = static_cast<int64_t>(std::ceil(slots - 1e-9));
    if (z.slots < 1) z.slots = 1;
  } else if (m.ffn_hidden < 1) {
    throw invalid_config("model.ffn_hidden", "ffn_hidden must be positive");
  }
  return z;
}

class TransformerBuilder {
 public:
  TransformerBuilder(const ModelSpec& m, const Sizes& z, double act_bytes)
      : m_(m), z_(z), g_(m.name, z.b, z.s, act_bytes, static_cast<size_t>(z.layers) * 20 + 32) {}

  OpGraph build() {
    int x = embedding();
    const int layers = g_.module(OpGraphBuilder::kRoot, "layers", "layers", -1);
    for (int i = 0; i < z_.layers; ++i) {
      const int layer = g_.module(layers, num(i), "layer", i);
      x = block(layer, i, x, i);
    }
    const int final_norm = g_.module(OpGraphBuilder::kRoot, "final_norm", "norm", -1);
    int main_hidden = x;
    x = norm(final_norm, "final_norm", x);
    const int head_weight = head(x);
    for (int k = 0; k < m_.mtp_layers; ++k) mtp_module(k, main_hidden, head_weight);
    if (m_.pooler) pooler(x);
    g_.set_num_layers(z_.layers);
    return g_.finish();
  }

 private:
  bool encoder() const { return !m_.causal; }

  // One transformer block in module `parent`: attention, then an MoE or a dense MLP (the
  // first moe.first_dense_layers layers are dense). `index` is the layer's position for
  // per-layer patterns (sliding windows, dense-then-MoE); MTP blocks pass the next index.
  int block(int parent, int layer, int x, int index) {
    x = attention_block(g_.module(parent, "attention", "attention", layer), x, index);
    const bool moe = z_.experts > 0 && index >= m_.moe.first_dense_layers;
    return moe ? moe_block(g_.module(parent, "moe", "moe", layer), layer, x)
               : mlp_block(g_.module(parent, "mlp", "mlp", layer), x);
  }

  // Multi-token prediction module k (DeepSeek-V3 §2.2): the embedding of the tokens k+1 ahead
  // (shared table) and the previous depth's hidden state, each RMS-normalised, concatenated
  // and projected 2h -> h, one transformer block, a norm, the shared output head and its loss.
  void mtp_module(int k, int& previous, int head_weight) {
    const int mod = g_.module(g_.module(OpGraphBuilder::kRoot, "mtp", "mtp", -1), num(k), "mtp", -1);
    const int64_t b = z_.b, s = z_.s, h = z_.h;
    const int tokens = g_.input("mtp_tokens_" + num(k), {b, s}, kIndexBytes);
    const int lookup = g_.op(mod, "embedding", OpKind::Embedding,
                             {{"batch", b}, {"seq", s}, {"vocab", z_.vocab}, {"hidden", h}});
    g_.read(lookup, tokens, {"batch", "seq"});
    g_.read_weight(lookup, word_embedding_, {"vocab", "hidden"});
    const int emb = g_.write(lookup, {b, s, h}, {"batch", "seq", "hidden"});
    embedding_costs(lookup, static_cast<double>(b * s), static_cast<double>(h));
    const int e = norm(mod, "enorm", emb);
    const int hn = norm(mod, "hnorm", previous);
    const int cat = g_.op(mod, "concat", OpKind::Elementwise,
                          {{"batch", b}, {"seq", s}, {"hidden", h}, {"hidden2", 2 * h}});
    g_.read(cat, e, {"batch", "seq", "hidden"});
    g_.read(cat, hn, {"batch", "seq", "hidden"});
    const int joined = g_.write(cat, {b, s, 2 * h}, {"batch", "seq", "hidden2"});
    g_.at(cat).saves_inputs = false;
    g_.set_costs(cat, 0, 0, 0);
    const int x = token_linear(mod, "eh_proj", joined, "hidden", h, "hidden2", 2 * h, false);
    previous = block(mod, -1, x, z_.layers + k);
    const int y = norm(mod, "norm", previous);
    loss_head(mod, y, head_weight);
  }

  // Sparse table lookups: the forward reads `rows` rows of `width` (not the whole table),
  // the weight gradient is a scatter-add into the same rows.
  void embedding_costs(int op, double rows, double width) {
    g_.set_costs(op, 0, 0, rows * width);
    Op& o = g_.at(op);
    const double ab = g_.act_bytes();
    const double ids = uses_bytes_of_inputs(op);
    const double out = g_.tensor(o.output.tensor).bytes();
    o.fwd_bytes = ids + rows * width * ab + out;
    o.bwd_weight_bytes = out + ids + rows * width * ab;
  }

  double uses_bytes_of_inputs(int op) {
    double b = 0;
    for (const TensorUse& u : g_.at(op).inputs) b += g_.tensor(u.tensor).bytes();
    return b;
  }

  int embedding() {
    const int mod = g_.module(OpGraphBuilder::kRoot, "embedding", "embedding", -1);
    const int64_t b = z_.b, s = z_.s, h = z_.h;
    std::vector<int> parts;

    const int tokens = g_.input("tokens", {b, s}, kIndexBytes);
    word_embedding_ = g_.weight(mod, "word_embeddings", {z_.vocab, h});
    const int word = g_.op(mod, "word_embedding", OpKind::Embedding,
                           {{"batch", b}, {"seq", s}, {"vocab", z_.vocab}, {"hidden", h}});
    g_.read(word, tokens, {"batch", "seq"});
    g_.read_weight(word, word_embedding_, {"vocab", "hidden"});
    parts.push_back(g_.write(word, {b, s, h}, {"batch", "seq", "hidden"}));
    embedding_costs(word, static_cast<double>(b * s), static_cast<double>(h));

    if (m_.learned_positions) {
      // Position ids [b, s] as Megatron feeds them: the lookup is per sample, so a split batch
      // leaves partial weight gradients that the data-parallel reduction sums.
      const int ids = g_.input("position_ids", {b, s}, kIndexBytes);
      const int pos = g_.op(mod, "position_embedding", OpKind::Embedding,
                            {{"batch", b}, {"seq", s}, {"positions", m_.seq_len}, {"hidden", h}});
      g_.read(pos, ids, {"batch", "seq"});
      g_.read_weight(pos, g_.weight(mod, "position_embeddings", {m_.seq_len, h}), {"positions", "hidden"});
      parts.push_back(g_.write(pos, {b, s, h}, {"batch", "seq", "hidden"}));
      embedding_costs(pos, static_cast<double>(b * s), static_cast<double>(h));
    }
    if (m_.type_vocab > 0) {
      const int types = g_.input("token_types", {b, s}, kIndexBytes);
      const int type = g_.op(mod, "token_type_embedding", OpKind::Embedding,
                             {{"batch", b}, {"seq", s}, {"token_types", m_.type_vocab}, {"hidden", h}});
      g_.read(type, types, {"batch", "seq"});
      g_.read_weight(type, g_.weight(mod, "token_type_embeddings", {m_.type_vocab, h}),
                     {"token_types", "hidden"});
      parts.push_back(g_.write(type, {b, s, h}, {"batch", "seq", "hidden"}));
      embedding_costs(type, static_cast<double>(b * s), static_cast<double>(h));
    }
    int x =
        parts.size() > 1 ? add(g_, mod, "embedding_add", parts, {"batch", "seq", "hidden"}) : parts.front();
    if (m_.dropout) x = dropout(g_, mod, "embedding_dropout", x, {"batch", "seq", "hidden"});
    return x;
  }

  int norm(int mod, const std::string& name, int x) {
    const int64_t b = z_.b, s = z_.s, h = z_.h;
    const bool layer_norm = m_.norm == NormKind::LayerNorm;
    const int op = g_.op(mod, name, OpKind::Norm, {{"batch", b}, {"seq", s}, {"hidden", h}});
    g_.read(op, x, {"batch", "seq", "hidden"});
    g_.read_weight(op, g_.weight(mod, name + ".weight", {h}), {"hidden"});
    if (layer_norm) g_.read_weight(op, g_.weight(mod, name + ".bias", {h}), {"hidden"});
    const int y = g_.write(op, {b, s, h}, {"batch", "seq", "hidden"});
    const double n = static_cast<double>(b * s * h);
    const double f = layer_norm ? kLayerNormFlops : kRmsNormFlops;
    g_.set_costs(op, f * n, 2 * f * n, kNormWeightGradFlops * n);
    if (!layer_norm) set_unfused_norm(g_.at(op));  // nn.LayerNorm: one kernel
    return y;
  }

  // y[b, s, out] = x[b, s, in] W[out, in]^T (+ bias): dims (batch, seq, out_dim, in_dim).
  int token_linear(int mod, const std::string& name, int x, const char* out_dim, int64_t out,
                   const char* in_dim, int64_t in, bool bias, int shared_weight = -1) {
    const int64_t b = z_.b, s = z_.s;
    const int op = g_.op(mod, name, OpKind::Matmul, {{"batch", b}, {"seq", s}, {out_dim, out}, {in_dim, in}});
    g_.read(op, x, {"batch", "seq", in_dim});
    const int w = shared_weight >= 0 ? shared_weight : g_.weight(mod, name + ".weight", {out, in});
    g_.read_weight(op, w, {out_dim, in_dim});
    if (bias) g_.read_weight(op, g_.weight(mod, name + ".bias", {out}), {out_dim});
    const int y = g_.write(op, {b, s, out}, {"batch", "seq", out_dim});
    g_.gemm(op, {"batch", "seq"}, {out_dim}, {in_dim});
    set_gemm_costs(g_, op, bias ? static_cast<double>(b * s * out) : 0);
    return y;
  }

  int attention_block(int mod, int x, int index) {
    const int ln1 = g_.num_ops();
    const int n1 = norm(mod, "ln1", x);
    // Megatron-Core's TE layer spec fuses the input norm into linear_qkv (IdentityOp
    // input_layernorm) except under MLA, whose input_layernorm is a TENorm: only that one is
    // the "layernorm" recompute module's (transformer_layer.py, gpt_layer_specs.py).
    if (m_.mla.enabled()) g_.tag_recompute(ln1, RecomputeModule::Layernorm);
    int q = -1, kv = -1;
    if (m_.mla.enabled())
      mla_projections(mod, n1, q, kv);
    else
      gqa_projections(mod, n1, q, kv);
    const int o = attention_core(mod, q, kv, index);
    int y = token_linear(mod, "o_proj", o, "hidden", z_.h, "heads", z_.a * z_.v_d, m_.bias);
    if (m_.dropout)
      return dropout_residual(g_, mod, "attn_dropout", "attn_residual", x, y, {"batch", "seq", "hidden"},
                              m_.bias);
    return add(g_, mod, "attn_residual", {x, y}, {"batch", "seq", "hidden"});
  }

  // Queries and [K | V] of (grouped-query) attention, with Qwen3's per-head RMSNorm and rotary.
  void gqa_projections(int mod, int n1, int& q, int& kv) {
    const int64_t h = z_.h, a = z_.a, d = z_.d, kvh = z_.kvh;
    q = token_linear(mod, "q_proj", n1, "heads", a * d, "hidden", h, m_.bias);
    g_.at(g_.num_ops() - 1).fused_qkv_n_scale = static_cast<double>(a + 2 * kvh) / static_cast<double>(a);
    kv = token_linear(mod, "kv_proj", n1, "kv_heads", 2 * kvh * d, "hidden", h, m_.bias);
    Op& kv_op = g_.at(g_.num_ops() - 1);
    kv_op.torch_linears = 2;  // wk, wv
    kv_op.fused_qkv_n_scale = static_cast<double>(a + 2 * kvh) / static_cast<double>(2 * kvh);
    kv_op.fused_qkv_second = true;
    if (m_.qk_norm) {
      q = head_norm(mod, "q_norm", q, "heads", a, 1.0);
      kv = head_norm(mod, "k_norm", kv, "kv_heads", 2 * kvh, 0.5);  // the K half of [K | V]
    }
    if (!m_.learned_positions) {
      q = unary(g_, mod, "rotary_q", q, {"batch", "seq", "heads"}, kRotaryFlops, kRotaryFlops,
                Saves::Nothing);
      // Rotates K only; the output stands for [K_rot | V] with V passed through, so only the
      // K half is read, computed and written.
      kv = unary(g_, mod, "rotary_k", kv, {"batch", "seq", "kv_heads"}, kRotaryFlops / 2, kRotaryFlops / 2,
                 Saves::Nothing);
      Op& rk = g_.at(static_cast<int>(g_.tensor(kv).producer));
      rk.fwd_bytes /= 2;
      rk.bwd_input_bytes /= 2;
      set_unfused_rope(rk);
      set_unfused_rope(g_.at(static_cast<int>(g_.tensor(q).producer)));
    }
  }

  // Multi-head latent attention (DeepSeek-V2 §2.1, Megatron-Core MLASelfAttention): the
  // hidden state goes down to a query latent (q_lora_rank) and a key/value latent
  // (kv_lora_rank, plus the shared rotary key of qk_rope_head_dim), each RMS-normalised, then
  // up to per-head queries [nope | rope] and per-head [K_nope | V]. The down projections are
  // replicated across tensor parallelism (no head dim), the up projections split by head.
  void mla_projections(int mod, int n1, int& q, int& kv) {
    const MlaSpec& l = m_.mla;
    const int64_t h = z_.h, a = z_.a;
    // The "mla_up_proj" recompute module (multi_latent_attention.py, qkv_up_checkpoint) runs
    // the latent norms (TE fuses them into the up projections' LayerNormColumnParallelLinear),
    // the up projections and the rotary embedding; the down projections stay outside.
    if (l.q_lora_rank > 0) {
      int latent = token_linear(mod, "q_down_proj", n1, "q_lora", l.q_lora_rank, "hidden", h, false);
      const int up = g_.num_ops();
      latent = latent_norm(mod, "q_norm", latent, "q_lora", l.q_lora_rank, l.q_lora_rank);
      q = token_linear(mod, "q_up_proj", latent, "heads", a * z_.qk_d, "q_lora", l.q_lora_rank, false);
      g_.tag_recompute(up, RecomputeModule::MlaUpProj);
    } else {
      const int up = g_.num_ops();
      q = token_linear(mod, "q_proj", n1, "heads", a * z_.qk_d, "hidden", h, false);
      g_.tag_recompute(up, RecomputeModule::MlaUpProj);
    }
    const int64_t kv_width = l.kv_lora_rank + l.qk_rope_head_dim;
    int latent = token_linear(mod, "kv_down_proj", n1, "kv_lora", kv_width, "hidden", h, false);
    const int up = g_.num_ops();
    // The norm's weight covers the latent, not the rotary key riding along with it.
    latent = latent_norm(mod, "kv_norm", latent, "kv_lora", kv_width, l.kv_lora_rank);
    // The up projection reads the kv_lora_rank latent (its weight is [a(nope+v), kv_lora]).
    kv = token_linear(mod, "kv_up_proj", latent, "kv_heads", a * (l.qk_nope_head_dim + l.v_head_dim),
                      "kv_lora", l.kv_lora_rank, false);
    if (!m_.learned_positions) {
      q = unary(g_, mod, "rotary_q", q, {"batch", "seq", "heads"}, kRotaryFlops, kRotaryFlops,
                Saves::Nothing);
      set_unfused_rope(g_.at(static_cast<int>(g_.tensor(q).producer)));
    }
    g_.tag_recompute(up, RecomputeModule::MlaUpProj);
  }

  // RMSNorm over a [b, s, width] latent with a weight of weight_width (MLA's q/kv norms).
  int latent_norm(int mod, const std::string& name, int x, const char* dim, int64_t width,
                  int64_t weight_width) {
    const int64_t b = z_.b, s = z_.s;
    const int op = g_.op(mod, name, OpKind::Norm, {{"batch", b}, {"seq", s}, {dim, width}});
    g_.read(op, x, {"batch", "seq", dim});
    g_.read_weight(op, g_.weight(mod, name + ".weight", {weight_width}), {dim});
    const int y = g_.write(op, {b, s, width}, {"batch", "seq", dim});
    const double n = static_cast<double>(b * s * width);
    g_.set_costs(op, kRmsNormFlops * n, 2 * kRmsNormFlops * n, kNormWeightGradFlops * n);
    set_unfused_norm(g_.at(op));
    return y;
  }

  // RMSNorm of each head (weight [head_dim] shared by the heads), over `fraction` of x
  // (1: queries; 0.5: the K half of [K | V]). Qwen3 and OLMo 2's QK-norm.
  int head_norm(int mod, const std::string& name, int x, const char* dim, int64_t heads, double fraction) {
    const int64_t b = z_.b, s = z_.s, d = z_.d;
    const int op = g_.op(mod, name, OpKind::Norm, {{"batch", b}, {"seq", s}, {dim, heads}, {"head_dim", d}});
    g_.read(op, x, {"batch", "seq", dim});
    g_.read_weight(op, g_.weight(mod, name + ".weight", {d}), {"head_dim"});
    const int y = g_.write(op, g_.tensor(x).shape, {"batch", "seq", dim});
    const double n = static_cast<double>(g_.tensor(x).elements()) * fraction;
    g_.set_costs(op, kRmsNormFlops * n, 2 * kRmsNormFlops * n, kNormWeightGradFlops * n);
    Op& o = g_.at(op);
    set_unfused_norm(o);
    o.fwd_bytes *= fraction;
    o.bwd_input_bytes *= fraction;
    o.bwd_weight_bytes *= fraction;
    return y;
  }

  // Keys each query attends to, in the full-square convention the FLOPs use (causal
  // attention counts s keys per query, as Megatron does): with a window w < s, query i sees
  // min(i+1, w) keys, sum w(w+1)/2 + (s-w)w, doubled over s as causal attention is.
  double attended_keys(int index) const {
    const double s = static_cast<double>(z_.s);
    const int every = m_.full_attention_every;
    const bool windowed = m_.sliding_window > 0 && !(every > 0 && index % every == every - 1);
    const double w = static_cast<double>(m_.sliding_window);
    if (!windowed || w >= s) return s;
    return w * (2 * s - w + 1) / s;
  }

  // softmax(Q K^T) V over all heads; GPT-OSS adds a learned sink logit per head.
  int attention_core(int mod, int q, int kv, int index) {
    const int64_t b = z_.b, s = z_.s, a = z_.a;
    const double ab = g_.act_bytes();
    // The GEMM's K dim is the mean of the query/key and value head widths (equal unless MLA),
    // so that 4 * dims = 2*b*a*s*s_kv*(qk_d + v_d).
    const int attn =
        g_.op(mod, "attn", OpKind::Attention,
              {{"batch", b}, {"heads", a}, {"seq", s}, {"seq_kv", s}, {"head_dim", (z_.qk_d + z_.v_d) / 2}});
    g_.read(attn, q, {"batch", "seq", "heads"});
    g_.read(attn, kv, {"batch", "seq_kv", "heads"});
    if (m_.attention_sinks) g_.read_weight(attn, g_.weight(mod, "sinks", {a}), {"heads"});
    const int o = g_.write(attn, {b, s, a * z_.v_d}, {"batch", "seq", "heads"});
    const double n2 = static_cast<double>(b * a * s * s);
    if (m_.flash_attention) {
      g_.save(attn, o, {"batch", "seq", "heads"});
      g_.at(attn).backward_reads_output = true;
      g_.save_new(attn, "logsumexp", {b, a, s}, {"batch", "heads", "seq"}, kFp32Bytes);
    } else {
      g_.save_new(attn, "probs", {b, a, s, s}, {"batch", "heads", "seq", "seq_kv"}, ab);
      if (m_.dropout) {
        g_.save_new(attn, "dropout_mask", {b, a, s, s}, {"batch", "heads", "seq", "seq_kv"}, kMaskBytes);
        g_.save_new(attn, "dropped_probs", {b, a, s, s}, {"batch", "heads", "seq", "seq_kv"}, ab);
      }
    }
    g_.tag_recompute(attn, RecomputeModule::CoreAttn);
    g_.gemm(attn, {"seq"}, {"seq_kv"}, {"head_dim"}, {"batch", "heads"});
    // QK^T and AV: 2*b*a*s*s_kv*qk_d + 2*b*a*s*s_kv*v_d, s_kv the keys each query attends.
    const double attn_flops =
        2 * static_cast<double>(b * a * s) * attended_keys(index) * static_cast<double>(z_.qk_d + z_.v_d);
    g_.set_costs(attn, attn_flops, 2 * attn_flops, 0);
    {
      Op& op = g_.at(attn);
      // Q, K, V read and O written; the backward reads dO, V, K and Q and writes dQ, dK, dV,
      // and flash attention's backward recomputes the scores in on-chip memory: twice.
      op.bwd_input_bytes = 2 * op.fwd_bytes;
      if (m_.flash_attention && !m_.mla.enabled()) {
        const SplitQkvCopyBytes copies = split_qkv_copy_bytes(
            g_.tensor(q).bytes(), g_.tensor(kv).bytes(), z_.kvh < a, !m_.learned_positions || m_.qk_norm);
        op.split_qkv_fwd_bytes = copies.forward;
        op.split_qkv_bwd_bytes = copies.backward;
        const RepeatKvBytes repeat = repeat_kv_bytes(g_.tensor(kv).bytes(), a / z_.kvh);
        op.repeat_kv_fwd_bytes = repeat.forward;
        op.repeat_kv_bwd_bytes = repeat.backward;
        op.repeat_kv_saved_bytes = repeat.saved;
        op.kv_repeats = a / z_.kvh;
      }
      if (!m_.flash_attention) {
        const UnfusedAttentionScoreBytes per = unfused_attention_score_bytes(ab, m_.dropout);
        const double tensors = op.fwd_bytes - n2 * per.saved;
        op.fwd_bytes = tensors + n2 * per.forward;
        op.bwd_input_bytes = 2 * tensors + n2 * per.backward;
        set_unfused_masked_softmax(op, n2, ab, s);
      }
    }
    return o;
  }

  int mlp_block(int mod, int x) {
    const int64_t h = z_.h, f = z_.ffn;
    const bool swiglu = m_.mlp == MlpKind::Swiglu;
    // The "mlp" recompute module checkpoints self.mlp, into whose linear_fc1 TE fuses the
    // pre-MLP norm (TELayerNormColumnParallelLinear): ln2 to fc2; the residual stays outside.
    const int first = g_.num_ops();
    const int n2 = norm(mod, "ln2", x);
    const int up = token_linear(mod, "fc1", n2, "ffn", swiglu ? 2 * f : f, "hidden", h, m_.bias);
    if (swiglu) g_.at(g_.num_ops() - 1).torch_linears = 2;  // w1, w3
    const int act = activation(mod, "act", up, {"batch", "seq", "ffn"}, {z_.b, z_.s, f});
    int y = token_linear(mod, "fc2", act, "hidden", h, "ffn", f, m_.bias);
    g_.tag_recompute(first, RecomputeModule::Mlp);
    if (m_.dropout)
      return dropout_residual(g_, mod, "mlp_dropout", "mlp_residual", x, y, {"batch", "seq", "hidden"},
                              m_.bias);
    return add(g_, mod, "mlp_residual", {x, y}, {"batch", "seq", "hidden"});
  }

  // GELU(x) or SwiGLU(gate, up) = silu(gate) * up; saves its input; output `out_shape`.
  int activation(int mod, const std::string& name, int x, DimNames dims, const Shape& out_shape) {
    const bool swiglu = m_.mlp == MlpKind::Swiglu;
    std::vector<Dim> op_dims;
    size_t i = 0;
    for (const char* n : dims) op_dims.push_back({n, out_shape[i++]});
    const int op = g_.op(mod, name, OpKind::Elementwise, std::move(op_dims));
    g_.read(op, x, dims);
    const int y = g_.write(op, out_shape, dims);
    const double n = static_cast<double>(g_.tensor(y).elements());
    const double f = swiglu ? kSwigluFlops : kGeluFlops;
    g_.set_costs(op, f * n, 2 * f * n, 0);
    set_unfused_activation(g_.at(op), swiglu, m_.bias ? g_.tensor(x).bytes() : 0, g_.tensor(y).bytes());
    return y;
  }

  int moe_block(int mod, int layer, int x) {
    const int64_t b = z_.b, s = z_.s, h = z_.h, e = z_.experts, c = z_.slots, f = z_.expert_ffn;
    const bool swiglu = m_.mlp == MlpKind::Swiglu;
    // An MoE layer's pre_mlp_layernorm is a TENorm of its own: the "layernorm" module's.
    const int ln2 = g_.num_ops();
    const int n2 = norm(mod, "ln2", x);
    g_.tag_recompute(ln2, RecomputeModule::Layernorm);

    const int router =
        g_.op(mod, "router", OpKind::Router, {{"batch", b}, {"seq", s}, {"route", e}, {"hidden", h}});
    g_.read(router, n2, {"batch", "seq", "hidden"});
    g_.read_weight(router, g_.weight(mod, "router.weight", {e, h}), {"route", "hidden"});
    if (m_.moe.router_bias) g_.read_weight(router, g_.weight(mod, "router.bias", {e}), {"route"});
    const int probs = g_.write(router, {b, s, e}, {"batch", "seq", "route"});
    g_.save(router, probs, {"batch", "seq", "route"});  // softmax backward needs its output
    g_.gemm(router, {"batch", "seq"}, {"route"}, {"hidden"});
    set_gemm_costs(g_, router, 0);

    const double routed_elements = static_cast<double>(e * b * c * h);
    const int dispatch =
        g_.op(mod, "dispatch", OpKind::Dispatch, {{"batch", b}, {"seq", s}, {"route", e}, {"hidden", h}});
    g_.read(dispatch, n2, {"batch", "seq", "hidden"});
    g_.read(dispatch, probs, {"batch", "seq", "route"});
    const int routed = g_.write(dispatch, {e, b, c, h}, {"route", "batch", "seq", "hidden"});
    g_.at(dispatch).saves_inputs = false;  // a permutation: its gradient is the inverse one
    // Forward copies; backward sums the top_k copies of each token's gradient.
    g_.set_costs(dispatch, 0, routed_elements, 0);

    const int experts = g_.module(mod, "experts", "experts", layer);
    const int up = expert_linear(experts, "expert_fc1", routed, "ffn", swiglu ? 2 * f : f, "hidden", h);
    const int act_op = g_.num_ops();
    const int act = activation(experts, "expert_act", up, {"expert", "batch", "seq", "ffn"}, {e, b, c, f});
    g_.tag_recompute(act_op, RecomputeModule::MoeAct);
    const int down = expert_linear(experts, "expert_fc2", act, "hidden", h, "ffn", f);

    const int combine =
        g_.op(mod, "combine", OpKind::Dispatch, {{"batch", b}, {"seq", s}, {"route", e}, {"hidden", h}});
    g_.read(combine, down, {"route", "batch", "seq", "hidden"});
    g_.read(combine, probs, {"batch", "seq", "route"});
    int y = g_.write(combine, {b, s, h}, {"batch", "seq", "hidden"});
    // Weighted sum of each token's expert outputs: a multiply-add per routed element; the
    // backward needs the expert outputs (for d probs) and the probabilities (for d outputs).
    g_.set_costs(combine, 2 * routed_elements, 4 * routed_elements, 0);

    if (m_.moe.shared_expert_ffn_hidden > 0) {
      // DeepSeek's shared expert(s): a dense MLP every token passes through, added to the
      // routed experts' output (Megatron-Core SharedExpertMLP, split by tp like an MLP).
      const int shared = g_.module(mod, "shared_experts", "mlp", layer);
      const int64_t fs = m_.moe.shared_expert_ffn_hidden;
      const int first_shared = g_.num_ops();
      const int up_s =
          token_linear(shared, "shared_fc1", n2, "ffn", swiglu ? 2 * fs : fs, "hidden", h, false);
      if (swiglu) g_.at(g_.num_ops() - 1).torch_linears = 2;
      const int act_s = activation(shared, "shared_act", up_s, {"batch", "seq", "ffn"}, {b, s, fs});
      const int down_s = token_linear(shared, "shared_fc2", act_s, "hidden", h, "ffn", fs, false);
      g_.tag_recompute(first_shared, RecomputeModule::SharedExperts);
      y = add(g_, mod, "shared_add", {y, down_s}, {"batch", "seq", "hidden"});
    }
    // The "moe" module checkpoints MoELayer.forward: router to combine and the shared experts.
    g_.tag_recompute(router, RecomputeModule::Moe);
    if (m_.dropout)
      return dropout_residual(g_, mod, "moe_dropout", "moe_residual", x, y, {"batch", "seq", "hidden"});
    return add(g_, mod, "moe_residual", {x, y}, {"batch", "seq", "hidden"});
  }

  // Per-expert GEMM over routed tokens: dims (expert, batch, seq[slots], out_dim, in_dim).
  int expert_linear(int mod, const std::string& name, int x, const char* out_dim, int64_t out,
                    const char* in_dim, int64_t in) {
    const int64_t e = z_.experts, b = z_.b, c = z_.slots;
    const int op = g_.op(mod, name, OpKind::Matmul,
                         {{"expert", e}, {"batch", b}, {"seq", c}, {out_dim, out}, {in_dim, in}});
    g_.read(op, x, {"expert", "batch", "seq", in_dim});
    g_.read_weight(op, g_.weight(mod, name + ".weight", {e, out, in}), {"expert", out_dim, in_dim});
    if (m_.bias) g_.read_weight(op, g_.weight(mod, name + ".bias", {e, out}), {"expert", out_dim});
    const int y = g_.write(op, {e, b, c, out}, {"expert", "batch", "seq", out_dim});
    g_.gemm(op, {"batch", "seq"}, {out_dim}, {in_dim}, {"expert"});
    set_gemm_costs(g_, op, m_.bias ? static_cast<double>(e * b * c * out) : 0);
    return y;
  }

  // The output head; returns its weight (shared by multi-token prediction modules).
  int head(int x) {
    const int mod = g_.module(OpGraphBuilder::kRoot, "head", "head", -1);
    const int64_t b = z_.b, s = z_.s, h = z_.h;
    if (encoder()) {
      // BERT's masked-LM transform: dense + GELU + LayerNorm before the decoder.
      const int t = token_linear(mod, "mlm_transform", x, "transform", h, "hidden", h, true);
      const int op = g_.op(mod, "mlm_act", OpKind::Elementwise, {{"batch", b}, {"seq", s}, {"transform", h}});
      g_.read(op, t, {"batch", "seq", "transform"});
      const int act = g_.write(op, {b, s, h}, {"batch", "seq", "transform"});
      const double n = static_cast<double>(b * s * h);
      g_.set_costs(op, kGeluFlops * n, 2 * kGeluFlops * n, 0);
      x = norm(mod, "mlm_norm", act);
    }
    return loss_head(mod, x, m_.tied_embeddings ? word_embedding_ : -1);
  }

  // Logits over the vocabulary and the cross-entropy loss; returns the head's weight.
  int loss_head(int mod, int x, int shared_weight) {
    const int64_t b = z_.b, s = z_.s, h = z_.h, v = z_.vocab;
    const int logits = token_linear(mod, "lm_head", x, "vocab", v, "hidden", h, encoder(), shared_weight);
    const int weight = g_.at(static_cast<int>(g_.tensor(logits).producer)).weights.front().tensor;
    const int loss = g_.op(mod, "loss", OpKind::Loss, {{"batch", b}, {"seq", s}, {"vocab", v}});
    g_.read(loss, logits, {"batch", "seq", "vocab"});
    g_.write(loss, {b, s}, {"batch", "seq"}, kFp32Bytes);
    const double n = static_cast<double>(b * s * v);
    g_.set_costs(loss, kSoftmaxLossFlops * n, kSoftmaxLossBwdFlops * n, 0);
    // The backward reads the fp32 softmax (Megatron) or log-softmax (PyTorch) of the logits, not
    // the logits: that is what stays from the forward to the backward.
    g_.save_new(loss, "softmax", {b, s, v}, {"batch", "seq", "vocab"}, kFp32Bytes);
    // Megatron's fp32 cross-entropy passes over the logits (layers.h), not one read of them.
    Op& op = g_.at(loss);
    op.saves_inputs = false;
    op.vocab_cross_entropy = true;
    op.fwd_bytes = cross_entropy_fwd_bytes_per_logit(g_.act_bytes()) * n;
    op.bwd_input_bytes = cross_entropy_bwd_bytes_per_logit(g_.act_bytes()) * n;
    return weight;
  }

  // BERT's pooler on the first token and the next-sentence head.
  void pooler(int x) {
    const int mod = g_.module(OpGraphBuilder::kRoot, "pooler", "pooler", -1);
    const int64_t b = z_.b, s = z_.s, h = z_.h;
    // Selecting token 0: "seq" indexes no output, so a split sequence yields partial
    // (zero-elsewhere) results that a reduction completes.
    const int sel = g_.op(mod, "cls_select", OpKind::Elementwise, {{"batch", b}, {"seq", s}, {"hidden", h}});
    g_.read(sel, x, {"batch", "seq", "hidden"});
    const int cls = g_.write(sel, {b, h}, {"batch", "hidden"});
    g_.at(sel).saves_inputs = false;
    g_.set_costs(sel, 0, 0, 0);
    g_.at(sel).fwd_bytes = 2 * g_.tensor(cls).bytes();
    g_.at(sel).bwd_input_bytes = g_.tensor(cls).bytes() + g_.tensor(x).bytes();
    const int pooled = linear(g_, mod, "pooler_dense", cls, h, h, true, "hidden", "pooled");
    const int t =
        unary(g_, mod, "pooler_tanh", pooled, {"batch", "pooled"}, kTanhFlops, kTanhFlops / 2, Saves::Output);
    const int nsp = linear(g_, mod, "nsp_head", t, h, 2, true, "pooled", "classes");
    classification_loss(g_, mod, "nsp_loss", nsp, "classes");
  }

  const ModelSpec& m_;
  Sizes z_;
  OpGraphBuilder g_;
  int word_embedding_ = -1;  // the word-embedding table, shared by a tied LM head
};

}  // namespace

OpGraph build_transformer(const ModelSpec& model, const TrainingSpec& training, int64_t batch) {
  const Sizes z = validate(model, training, batch);
  return TransformerBuilder(model, z, activation_bytes(training.precision)).build();
}

}  // namespace proteus::model
