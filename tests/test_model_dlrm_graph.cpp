// DLRM and explicit-graph builders: parameter counts derived by hand, the embedding and
// interaction dims that give table-wise model parallelism, sparse embedding traffic.
#include <doctest/doctest.h>

#include "proteus/error.h"
#include "proteus/op_graph.h"
#include "test_model_helpers.h"

using namespace proteus;
using namespace proteus::test_model;

namespace {

// The DLRM the Proteus paper evaluates (REFERENCE.md §1): bottom MLP 128-512-512-512-64,
// top MLP 100-1024-1024-1024-1024-1, 8 tables of 1M x 64, 100 lookups per table, dot
// interaction. model.top_mlp lists the layers after the interaction's 100 = 64 + 9*8/2.
ModelSpec dlrm() {
  ModelSpec m;
  m.kind = ModelKind::Dlrm;
  m.name = "dlrm";
  m.bottom_mlp = {128, 512, 512, 512, 64};
  m.dense_features = 128;
  m.top_mlp = {1024, 1024, 1024, 1024, 1};
  m.tables = 8;
  m.table_rows = 1'000'000;
  m.embedding_dim = 64;
  m.lookups_per_table = 100;
  return m;
}

}  // namespace

TEST_CASE("model: DLRM parameters, modules and embedding dims") {
  // Bottom: 128*512+512 + 2*(512*512+512) + 512*64+64 = 624,192. Tables 8*1,000,000*64 =
  // 512,000,000. Top: 100*1024+1024 + 3*(1024*1024+1024) + 1024+1 = 3,253,249.
  const OpGraph g = build_op_graph(dlrm(), training(0, Precision::Fp32), 128);
  CHECK(g.parameter_count() == 515'877'441);
  CHECK(check_graph(g) == "");
  std::vector<std::string> top;
  for (int c : g.modules[0].children) top.push_back(g.modules[c].path);
  CHECK(top == std::vector<std::string>{"bottom_mlp", "embeddings", "interaction", "top_mlp"});

  const Op* emb = find_op(g, "embeddings", "tables");
  REQUIRE(emb != nullptr);
  CHECK(emb->kind == OpKind::Embedding);
  CHECK(dim_names(*emb) == "table,batch,lookups,rows,dim");
  CHECK(use_names(*emb, emb->inputs[0]) == "batch,table,lookups");
  CHECK(use_names(*emb, emb->weights[0]) == "table,rows,dim");
  CHECK(use_names(*emb, emb->output) == "batch,table,dim");
  // Traffic: the rows looked up, not the tables: 128 samples * 8 tables * 100 rows * 64 * 4 B,
  // plus the int64 indices and the pooled output; the sparse gradient touches the same rows.
  const double rows = 128.0 * 8 * 100 * 64 * 4, idx = 128.0 * 8 * 100 * 8, out = 128.0 * 8 * 64 * 4;
  CHECK(emb->fwd_bytes == rows + idx + out);
  CHECK(emb->bwd_weight_bytes == rows + idx + out);
  CHECK(emb->bwd_input_flops == 0);  // indices have no gradient

  const Op* dot = find_op(g, "interaction", "interaction");
  REQUIRE(dot != nullptr);
  CHECK(dot->kind == OpKind::Interaction);
  CHECK(use_names(*dot, dot->inputs[1]) == "batch,table,dim");
  CHECK(g.tensors[dot->output.tensor].shape == std::vector<int64_t>{128, 100});
  CHECK(dot->fwd_flops == 2.0 * 128 * 9 * 9 * 64);  // one batched GEMM of the 9 vectors
  const Op* top1 = find_op(g, "top_mlp", "fc1");
  REQUIRE(top1 != nullptr);
  CHECK(top1->dims[top1->find_dim("in")].size == 100);
  const Op* loss = find_op(g, "top_mlp", "loss");
  REQUIRE(loss != nullptr);
  CHECK(find_op(g, "top_mlp", "sigmoid") != nullptr);
}

TEST_CASE("model: DLRM widths must fit the dot interaction") {
  ModelSpec m = dlrm();
  m.dense_features = 13;
  try {
    build_op_graph(m, training(0), 4);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.path == "model.dense_features");
  }
  m = dlrm();
  m.embedding_dim = 32;
  CHECK_THROWS_AS(build_op_graph(m, training(0), 4), Error);
}

TEST_CASE("model: an explicit op list becomes a chain with one module per op") {
  ModelSpec m;
  m.kind = ModelKind::Graph;
  m.name = "net";
  m.input_elements = 3 * 32 * 32;
  GraphOpSpec conv;
  conv.name = "conv";
  conv.type = "conv2d";
  conv.in_channels = 3;
  conv.out_channels = 16;
  conv.kernel = 3;
  GraphOpSpec act;
  act.name = "act";
  act.type = "elementwise";
  GraphOpSpec fc;
  fc.name = "fc";
  fc.type = "linear";
  fc.out_features = 10;
  GraphOpSpec custom;
  custom.name = "mix";
  custom.type = "custom";
  custom.flops_per_sample = 1000;
  custom.bytes_per_sample = 80;
  custom.params = 5;
  m.ops = {conv, act, fc, custom};
  const OpGraph g = build_op_graph(m, training(0), 4);
  // conv 16*3*3*3 + 16 = 448; "same" padding keeps 32x32 -> 16*32*32 = 16384 features;
  // fc 16384*10 + 10 = 163,850; custom 5.
  CHECK(g.parameter_count() == 448 + 163'850 + 5);
  CHECK(g.num_layers == 4);
  CHECK(check_graph(g) == "");
  CHECK(g.modules[find_module(g, "conv")].kind == "conv2d");
  CHECK(g.modules[find_module(g, "fc")].layer == 2);
  const Op* c = find_op(g, "conv", "conv");
  REQUIRE(c != nullptr);
  CHECK(c->fwd_flops == 2.0 * 4 * 16 * 32 * 32 * 3 * 9 + 4 * 16 * 32 * 32);  // GEMM + bias
  CHECK(c->bwd_input_flops == 0);                                            // reads only the model input
  const Op* f = find_op(g, "fc", "fc");
  CHECK(dim_names(*f) == "batch,out,in");
  CHECK(f->dims[2].size == 16384);
  CHECK(find_op(g, "mix", "mix")->fwd_flops == 4000);
  CHECK(find_op(g, "loss", "loss") != nullptr);

  m.ops[2].in_features = 100;  // does not match the 16384 features before it
  try {
    build_op_graph(m, training(0), 4);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.path == "model.ops[2].in_features");
  }
  m.ops[2].in_features = 0;
  m.ops[3].type = "lstm";
  CHECK_THROWS_AS(build_op_graph(m, training(0), 4), Error);
}

TEST_CASE("model: OpKind names") {
  CHECK(std::string(to_string(OpKind::Matmul)) == "matmul");
  CHECK(std::string(to_string(OpKind::Attention)) == "attention");
  CHECK(std::string(to_string(OpKind::Dispatch)) == "dispatch");
  CHECK(std::string(to_string(OpKind::Interaction)) == "interaction");
}
