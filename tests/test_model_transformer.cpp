// Transformer builder: parameter counts against published figures, Megatron's FLOPs
// formula, Korthikanti's activation memory, the module tree and the dim bindings that the
// compiler relies on.
#include <doctest/doctest.h>

#include <cmath>
#include <ctime>

#include "proteus/error.h"
#include "proteus/op_graph.h"
#include "relative_approx.h"
#include "test_model_helpers.h"

using namespace proteus;
using namespace proteus::test_model;

TEST_CASE("model: GPT-3 175B has Megatron's 174.6B parameters") {
  // Per layer 12h^2 + 13h: QKV 3h^2+3h, proj h^2+h, fc1 4h^2+4h, fc2 4h^2+h, two LayerNorms 4h.
  // h = 12288: 1,812,099,072 x 96 = 173,961,510,912; word embeddings 51200*12288 =
  // 629,145,600 (shared with the head); positions 2048*12288 = 25,165,824; final LN 24,576.
  const OpGraph g = build_op_graph(gpt3_175b(), training(2048), 1);
  CHECK(g.parameter_count() == 174'615'846'912LL);
  CHECK(g.num_layers == 96);
  CHECK(check_graph(g) == "");
}

TEST_CASE("model: Llama 3 8B / 70B / 405B parameter counts") {
  // 8B: per layer q 4096^2 + kv 2*1024*4096 + o 4096^2 + SwiGLU 3*4096*14336 + 2 RMSNorms
  // 2*4096 = 218,112,000; x32 = 6,979,584,000; untied embeddings 2*128256*4096 =
  // 1,050,673,152; final norm 4096 -> 8,030,261,248 (Meta: 8.03B).
  CHECK(build_op_graph(llama3_8b(), training(8192), 1).parameter_count() == 8'030'261'248LL);
  // 70B: per layer 67,108,864 + 16,777,216 + 67,108,864 + 704,643,072 + 16,384 = 855,654,400;
  // x80 = 68,452,352,000; embeddings 2*128256*8192 = 2,101,346,304; final 8192 -> 70.55B.
  CHECK(build_op_graph(llama3_70b(), training(8192), 1).parameter_count() == 70'553'706'496LL);
  // 405B: per layer 268,435,456 + 33,554,432 + 268,435,456 + 2,617,245,696 + 32,768 =
  // 3,187,703,808; x126 = 401,650,679,808; embeddings 4,202,692,608; final 16,384 -> 405.85B.
  CHECK(build_op_graph(llama3_405b(), training(8192), 1).parameter_count() == 405'853'388'800LL);
}

TEST_CASE("model: Mixtral 8x7B has 46.7B parameters") {
  // Per layer attention 41,943,040 + router 8*4096 + experts 8*3*4096*14336 = 1,409,286,144
  // + norms 8192 = 1,451,270,144; x32 = 46,440,644,608; embeddings 2*32000*4096 =
  // 262,144,000; final norm 4096 -> 46,702,792,704 (Mistral AI: 46.7B).
  const OpGraph g = build_op_graph(mixtral_8x7b(), training(4096), 1);
  CHECK(g.parameter_count() == 46'702'792'704LL);
  CHECK(check_graph(g) == "");
}

TEST_CASE("model: BERT-large parameter counts") {
  // Embeddings 30522*1024 + 512*1024 + 2*1024 = 31,780,864; 24 layers of 12h^2+13h =
  // 302,309,376; final LN 2048; MLM head: transform 1,049,600 + LN 2048 + decoder bias 30,522
  // (decoder weight tied) -> 335,174,458 (HuggingFace BertForMaskedLM: 335M).
  const OpGraph mlm = build_op_graph(bert_large(false), training(512), 1);
  CHECK(mlm.parameter_count() == 335'174'458LL);
  // + pooler 1,049,600 + next-sentence head 2*1024+2 -> 336,226,108 (Megatron-LM: 336M).
  const OpGraph full = build_op_graph(bert_large(true), training(512), 1);
  CHECK(full.parameter_count() == 336'226'108LL);
  CHECK(check_graph(full) == "");
  CHECK(find_module(full, "pooler") >= 0);
  CHECK(find_op(full, "head", "mlm_transform") != nullptr);
}

TEST_CASE("model: a tied LM head reads the embedding's weight tensor and counts it once") {
  ModelSpec m = gpt(2, 256, 4, 128, 1000);
  const OpGraph tied = build_op_graph(m, training(128), 1);
  const Op* emb = find_op(tied, "embedding", "word_embedding");
  const Op* head = find_op(tied, "head", "lm_head");
  REQUIRE(emb != nullptr);
  REQUIRE(head != nullptr);
  CHECK(emb->weights[0].tensor == head->weights[0].tensor);
  m.tied_embeddings = false;
  const OpGraph untied = build_op_graph(m, training(128), 1);
  CHECK(find_op(untied, "head", "lm_head")->weights[0].tensor !=
        find_op(untied, "embedding", "word_embedding")->weights[0].tensor);
  CHECK(untied.parameter_count() - tied.parameter_count() == 1000 * 256);
}

TEST_CASE("model: training FLOPs follow Megatron's 72Bslh^2(1 + s/6h + V/12lh)") {
  auto megatron = [](double B, double s, double l, double h, double V) {
    return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  };
  const OpGraph g3 = build_op_graph(gpt3_175b(), training(2048), 4);
  CHECK(g3.training_flops() == proteus::test::approx(megatron(4, 2048, 96, 12288, 51200)).epsilon(0.01));
  const OpGraph g2 = build_op_graph(gpt2_1_5b(), training(1024), 8);
  CHECK(g2.training_flops() == proteus::test::approx(megatron(8, 1024, 48, 1600, 50257)).epsilon(0.01));
}

TEST_CASE("model: a layer's GEMM and attention FLOPs are exactly 24bsh^2 + 4bs^2h forward") {
  // q 2bsh^2, kv 4bsh^2, o 2bsh^2, fc1 8bsh^2, fc2 8bsh^2; QK^T and AV 2*2*b*s*s*h.
  const double b = 2, s = 512, h = 1024;
  ModelSpec m = gpt(2, 1024, 16, 512, 1000);
  m.bias = false;
  const OpGraph g = build_op_graph(m, training(512), 2);
  double fwd = 0, bwd_in = 0, bwd_w = 0;
  for (const Op& op : g.ops) {
    if (g.modules[op.module].layer != 1) continue;
    if (op.kind != OpKind::Matmul && op.kind != OpKind::Attention) continue;
    fwd += op.fwd_flops;
    bwd_in += op.bwd_input_flops;
    bwd_w += op.bwd_weight_flops;
  }
  CHECK(fwd == 24 * b * s * h * h + 4 * b * s * s * h);
  // Backward: input gradients of every GEMM and 2x the attention; weight gradients of the GEMMs.
  CHECK(bwd_in == 24 * b * s * h * h + 8 * b * s * s * h);
  CHECK(bwd_w == 24 * b * s * h * h);
}

TEST_CASE("model: saved activations per GPT layer are Korthikanti's sbh(34 + 5as/h) bytes") {
  // 16-bit, dropout, no flash attention (Korthikanti et al. 2022, Eq. 1): LN1 input 2sbh,
  // QKV input 2sbh, Q K V 6sbh, softmax 2as^2b, its dropout mask as^2b and output 2as^2b,
  // proj input 2sbh, attention dropout mask sbh, LN2 input 2sbh, fc1 input 2sbh, GELU
  // input 8sbh, fc2 input 8sbh, MLP dropout mask sbh.
  for (int64_t b : {1, 2}) {
    const double s = 2048, h = 12288, a = 96;
    ModelSpec m = gpt(3, 12288, 96, 2048, 51200);
    const OpGraph g = build_op_graph(m, training(2048), b);
    for (int layer = 0; layer < 3; ++layer)
      CHECK(saved_bytes_of_layer(g, layer) == s * b * h * (34 + 5 * a * s / h));
    // Selective recompute drops exactly the s^2 terms: 34sbh remain.
    double s2 = 0;
    for (const Op& op : g.ops)
      if (g.modules[op.module].layer == 0 &&
          (op.recompute_modules & recompute_bit(RecomputeModule::CoreAttn)))
        for (const TensorUse& u : op.saved_extra) s2 += g.tensors[u.tensor].bytes();
    CHECK(s2 == 5 * a * s * s * b);
  }
}

TEST_CASE("model: flash attention saves O and an fp32 logsumexp instead of the s^2 tensors") {
  // O is the tensor o_proj saves anyway; the logsumexp adds 4 bytes per (batch, head, token):
  // 34sbh + 4abs.
  const double s = 1024, b = 2, h = 2048, a = 16;
  ModelSpec m = gpt(2, 2048, 16, 1024, 1000);
  m.flash_attention = true;
  const OpGraph g = build_op_graph(m, training(1024), 2);
  CHECK(saved_bytes_of_layer(g, 0) == 34 * s * b * h + 4 * a * s * b);
  const Op* attn = find_op(g, "layers.0.attention", "attn");
  REQUIRE(attn != nullptr);
  REQUIRE(attn->saved_extra.size() == 1);  // O is saved once, as o_proj's input
  CHECK(g.tensors[attn->saved_extra[0].tensor].bytes() == 4 * a * s * b);
  CHECK(check_graph(g) == "");
}

TEST_CASE("model: saved activations of a Llama 3 8B layer (GQA, SwiGLU, no dropout)") {
  // Flash attention, no dropout, bf16, rotary: RMSNorm1 input 2sbh, its output 2sbh,
  // rotated Q 2sbh, rotated [K|V] 2*2*kvh*d*sb = sbh (kvh/a = 1/4), O 2sbh (shared with
  // o_proj), logsumexp 4asb, RMSNorm2 input 2sbh, fc1 input 2sbh, SwiGLU input 2*2F*sb,
  // fc2 input 2F*sb: 13sbh + 6Fsb + 4asb.
  const double s = 8192, b = 1, h = 4096, a = 32, F = 14336;
  const OpGraph g = build_op_graph(llama3_8b(), training(8192), 1);
  CHECK(saved_bytes_of_layer(g, 5) == 13 * s * b * h + 6 * F * s * b + 4 * a * s * b);
  CHECK(check_graph(g) == "");
}

TEST_CASE("model: transformer module tree") {
  const OpGraph g = build_op_graph(gpt(2, 256, 4, 128, 1000), training(128), 3);
  CHECK(g.modules[0].path == "");
  CHECK(g.modules[0].kind == "model");
  std::vector<std::string> top;
  for (int c : g.modules[0].children) top.push_back(g.modules[c].path);
  CHECK(top == std::vector<std::string>{"embedding", "layers", "final_norm", "head"});
  CHECK(g.num_layers == 2);
  CHECK(g.batch == 3);
  CHECK(g.samples_per_batch_unit == 128);
  for (const char* p : {"layers.0", "layers.1.attention", "layers.1.mlp"}) CHECK(find_module(g, p) >= 0);
  CHECK(g.modules[find_module(g, "layers.1")].kind == "layer");
  CHECK(g.modules[find_module(g, "layers.1")].layer == 1);
  CHECK(g.modules[find_module(g, "layers.1.attention")].kind == "attention");
  CHECK(g.modules[find_module(g, "layers.1.mlp")].layer == 1);
  CHECK(g.modules[find_module(g, "embedding")].layer == -1);
  CHECK(g.modules[find_module(g, "head")].kind == "head");

  std::vector<std::string> attn_ops, mlp_ops;
  for (int o : g.modules[find_module(g, "layers.0.attention")].ops) attn_ops.push_back(g.ops[o].name);
  for (int o : g.modules[find_module(g, "layers.0.mlp")].ops) mlp_ops.push_back(g.ops[o].name);
  CHECK(attn_ops == std::vector<std::string>{"ln1", "q_proj", "kv_proj", "attn", "o_proj", "attn_dropout",
                                             "attn_residual"});
  CHECK(mlp_ops == std::vector<std::string>{"ln2", "fc1", "act", "fc2", "mlp_dropout", "mlp_residual"});
  std::vector<std::string> emb_ops;
  for (int o : g.modules[find_module(g, "embedding")].ops) emb_ops.push_back(g.ops[o].name);
  CHECK(emb_ops == std::vector<std::string>{"word_embedding", "position_embedding", "embedding_add",
                                            "embedding_dropout"});
  CHECK(check_graph(g) == "");
}

TEST_CASE("model: dims and bindings of the attention and MLP ops") {
  const OpGraph g = build_op_graph(llama3_8b(), training(4096), 2);
  const std::string L = "layers.0.attention";
  const Op* q = find_op(g, L, "q_proj");
  const Op* kv = find_op(g, L, "kv_proj");
  const Op* attn = find_op(g, L, "attn");
  const Op* o = find_op(g, L, "o_proj");
  REQUIRE((q && kv && attn && o));
  CHECK(find_op(g, L, "rotary_q") != nullptr);
  CHECK(dim_names(*q) == "batch,seq,heads,hidden");
  CHECK(q->dims[q->find_dim("heads")].size == 4096);
  CHECK(use_names(*q, q->weights[0]) == "heads,hidden");
  CHECK(dim_names(*kv) == "batch,seq,kv_heads,hidden");
  CHECK(kv->dims[kv->find_dim("kv_heads")].size == 2 * 8 * 128);
  CHECK(dim_names(*attn) == "batch,heads,seq,seq_kv,head_dim");
  CHECK(attn->dims[attn->find_dim("heads")].size == 32);
  CHECK(attn->dims[attn->find_dim("head_dim")].size == 128);
  CHECK(use_names(*attn, attn->inputs[0]) == "batch,seq,heads");
  CHECK(use_names(*attn, attn->inputs[1]) == "batch,seq_kv,heads");
  CHECK(use_names(*attn, attn->output) == "batch,seq,heads");
  CHECK(attn->fwd_flops == 4.0 * 2 * 4096 * 4096 * 4096);
  CHECK(attn->bwd_input_flops == 2 * attn->fwd_flops);
  CHECK(attn->gemm_batch_dims == std::vector<int>{attn->find_dim("batch"), attn->find_dim("heads")});
  CHECK(attn->gemm_m_dims == std::vector<int>{attn->find_dim("seq")});
  CHECK(attn->gemm_n_dims == std::vector<int>{attn->find_dim("seq_kv")});
  CHECK(attn->gemm_k_dims == std::vector<int>{attn->find_dim("head_dim")});
  CHECK(dim_names(*o) == "batch,seq,hidden,heads");
  CHECK(use_names(*o, o->inputs[0]) == "batch,seq,heads");
  CHECK(q->gemm_m_dims == std::vector<int>{0, 1});
  CHECK(q->gemm_n_dims == std::vector<int>{2});
  CHECK(q->gemm_k_dims == std::vector<int>{3});

  const Op* fc1 = find_op(g, "layers.0.mlp", "fc1");
  const Op* fc2 = find_op(g, "layers.0.mlp", "fc2");
  REQUIRE((fc1 && fc2));
  CHECK(dim_names(*fc1) == "batch,seq,ffn,hidden");
  CHECK(fc1->dims[2].size == 2 * 14336);  // SwiGLU gate and up fused
  CHECK(dim_names(*fc2) == "batch,seq,hidden,ffn");
  CHECK(fc2->dims[3].size == 14336);
  // Matmul: 2MNK forward, the same for each backward half; HBM bytes = in + weight + out.
  CHECK(fc2->fwd_flops == 2.0 * 2 * 4096 * 4096 * 14336);
  CHECK(fc2->bwd_weight_flops == fc2->fwd_flops);
  CHECK(fc2->fwd_bytes == 2.0 * (2 * 4096 * 14336 + 4096.0 * 14336 + 2 * 4096 * 4096));

  const Op* emb = find_op(g, "embedding", "word_embedding");
  REQUIRE(emb != nullptr);
  CHECK(dim_names(*emb) == "batch,seq,vocab,hidden");
  CHECK(use_names(*emb, emb->weights[0]) == "vocab,hidden");
  CHECK(use_names(*emb, emb->output) == "batch,seq,hidden");
  const Op* loss = find_op(g, "head", "loss");
  REQUIRE(loss != nullptr);
  CHECK(dim_names(*loss) == "batch,seq,vocab");
  // Megatron's fp32 vocab-parallel cross-entropy over bf16 logits, per logit: .float() 2 + 4,
  // max 4, -= max 4 + 4, exp 4 + 4, sum 4, div_ 4 + 4 = 38 bytes forward; mul_ 4 + 4 and the
  // cast of the gradient back to bf16 4 + 2 = 14 backward. Micro-batch 2 x 4096 tokens x
  // 128,256 logits = 1,050,673,152 logits: 39.9 GB forward, 14.7 GB backward.
  const double logits = 2.0 * 4096 * 128256;
  CHECK(loss->fwd_bytes == 38 * logits);
  CHECK(loss->bwd_input_bytes == 14 * logits);
}

TEST_CASE("model: fp32 logits are not copied by the cross-entropy's cast") {
  // Training in fp32: .float() returns the logits themselves and autograd casts nothing back,
  // so 38 - 6 = 32 bytes forward and 14 - 6 = 8 backward per logit.
  const OpGraph g = build_op_graph(llama3_8b(), training(4096, Precision::Fp32), 1);
  const Op* loss = find_op(g, "head", "loss");
  REQUIRE(loss != nullptr);
  const double logits = 4096.0 * 128256;
  CHECK(loss->fwd_bytes == 32 * logits);
  CHECK(loss->bwd_input_bytes == 8 * logits);
}

TEST_CASE("model: MoE routing tensors, expert dims and the experts module") {
  // Mixtral, s = 4096, b = 2, top-2 of 8, capacity 1: each sample sends
  // 4096*2/8 = 1024 tokens to each expert; tokens per expert = 2*1024 = 2048.
  const OpGraph g = build_op_graph(mixtral_8x7b(), training(4096), 2);
  const std::string L = "layers.3.moe";
  CHECK(g.modules[find_module(g, L)].kind == "moe");
  CHECK(g.modules[find_module(g, L + ".experts")].kind == "experts");
  CHECK(g.modules[find_module(g, L + ".experts")].layer == 3);
  const Op* router = find_op(g, L, "router");
  const Op* dispatch = find_op(g, L, "dispatch");
  const Op* combine = find_op(g, L, "combine");
  const Op* fc1 = find_op(g, L + ".experts", "expert_fc1");
  const Op* fc2 = find_op(g, L + ".experts", "expert_fc2");
  REQUIRE((router && dispatch && combine && fc1 && fc2));
  CHECK(router->kind == OpKind::Router);
  CHECK(dispatch->kind == OpKind::Dispatch);
  CHECK(combine->kind == OpKind::Dispatch);
  // Token-side ops have no "expert" dim (ep stays on batch there).
  CHECK(router->find_dim("expert") < 0);
  CHECK(dispatch->find_dim("expert") < 0);
  CHECK(combine->find_dim("expert") < 0);
  const Tensor& routed = g.tensors[dispatch->output.tensor];
  CHECK(routed.shape == std::vector<int64_t>{8, 2, 1024, 4096});
  CHECK(routed.elements() / 4096 / 8 == 2048);  // tokens per expert
  CHECK(use_names(*dispatch, dispatch->output) == "route,batch,seq,hidden");
  CHECK(use_names(*dispatch, dispatch->inputs[0]) == "batch,seq,hidden");
  CHECK(dim_names(*fc1) == "expert,batch,seq,ffn,hidden");
  CHECK(use_names(*fc1, fc1->inputs[0]) == "expert,batch,seq,hidden");
  CHECK(use_names(*fc1, fc1->weights[0]) == "expert,ffn,hidden");
  CHECK(g.tensors[fc1->weights[0].tensor].shape == std::vector<int64_t>{8, 2 * 14336, 4096});
  CHECK(g.tensors[fc2->weights[0].tensor].shape == std::vector<int64_t>{8, 4096, 14336});
  CHECK(use_names(*combine, combine->inputs[0]) == "route,batch,seq,hidden");
  CHECK(g.tensors[combine->output.tensor].shape == std::vector<int64_t>{2, 4096, 4096});
  // Expert GEMM FLOPs: every routed token through one expert's ffn: 2 * (E*b*c) * 2F * h.
  CHECK(fc1->fwd_flops == 2.0 * 8 * 2 * 1024 * 2 * 14336 * 4096);
  CHECK(fc1->gemm_batch_dims == std::vector<int>{0});
}

TEST_CASE("model: MoE capacity factor scales the routed tokens") {
  ModelSpec m = mixtral_8x7b();
  m.layers = 1;
  m.moe.capacity_factor = 1.25;
  // 1.25 * 1000 tokens * 2 / 8 = 312.5 -> 313 slots per sample per expert.
  const OpGraph g = build_op_graph(m, training(1000), 1);
  CHECK(g.tensors[find_op(g, "layers.0.moe", "dispatch")->output.tensor].shape[2] == 313);
}

TEST_CASE("model: invalid transformer specs are rejected with the field's path") {
  auto path_of = [](ModelSpec m, int64_t seq) -> std::string {
    try {
      build_op_graph(m, training(seq), 1);
    } catch (const Error& e) {
      CHECK(e.code == "invalid_config");
      return e.path;
    }
    return "";
  };
  ModelSpec m = gpt(2, 1000, 16, 128, 1000);
  CHECK(path_of(m, 128) == "model.heads");
  m = gpt(2, 1024, 16, 128, 1000);
  m.kv_heads = 5;
  CHECK(path_of(m, 128) == "model.kv_heads");
  CHECK(path_of(gpt(2, 1024, 16, 128, 1000), 256) == "training.seq_len");
  m = mixtral_8x7b();
  m.moe.top_k = 9;
  CHECK(path_of(m, 128) == "model.moe.top_k");
  m = gpt(0, 1024, 16, 128, 1000);
  CHECK(path_of(m, 128) == "model.layers");
}

TEST_CASE("model: GPT-3 96 layers builds in well under 10 ms, deterministically") {
  const ModelSpec m = gpt3_175b();
  // Processor time, not wall time: the check is against a blow-up, and must not fail because
  // other work shares the machine.
  const std::clock_t t0 = std::clock();
  const OpGraph a = build_op_graph(m, training(2048), 8);
  const double ms = 1000.0 * static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
  CHECK(ms < 200);
#else
  CHECK(ms < 10);
#endif
  const OpGraph b = build_op_graph(m, training(2048), 8);
  REQUIRE(a.ops.size() == b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].name == b.ops[i].name);
    CHECK(a.ops[i].fwd_bytes == b.ops[i].fwd_bytes);
  }
  CHECK(a.training_flops() == b.training_flops());
}
