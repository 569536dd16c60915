// DLRM (Naumov et al. 2019, facebookresearch/dlrm dlrm_s_pytorch.py) with dot interaction.
//   bottom_mlp    kind "mlp", layer 0: Linear + ReLU per layer; widths model.bottom_mlp with
//                 the first entry the dense input width (= model.dense_features)
//   embeddings    kind "embedding", layer 1: one Embedding op over all tables (sum pooling)
//   interaction   kind "interaction", layer 2: pairwise dots of the tables+1 vectors
//   top_mlp       kind "mlp", layer 3: Linear + ReLU, the last Linear + sigmoid, BCE loss;
//                 model.top_mlp lists the layers' output widths; the input is the
//                 interaction's width, embedding_dim + (tables+1)*tables/2 (100 for 8 x 64)
// The embedding op has dims (table, batch, lookups, rows, dim): indices [B, T, L] bound
// (batch, table, lookups), weight [T, R, D] bound (table, rows, dim), output [B, T, D] bound
// (batch, table, dim). Mapping dp to "table" in "embeddings" gives table-wise model
// parallelism; the interaction, dims (batch, features, table, dim), requires the output
// sharded by batch: Shard(table) -> Shard(batch) is the all-to-all before the interaction.
// Splitting "rows" (a dim that indexes no output) gives row-wise sharding with partial sums.
#include <string>

#include "layers.h"
#include "model_builders.h"
#include "op_graph_builder.h"
#include "proteus/error.h"

namespace proteus::model {

namespace {

int mlp(OpGraphBuilder& g, int mod, int x, const std::vector<int64_t>& widths, bool sigmoid_last) {
  for (size_t i = 1; i < widths.size(); ++i) {
    const std::string n = std::to_string(i);
    x = linear(g, mod, "fc" + n, x, widths[i - 1], widths[i], true);
    const bool last = i + 1 == widths.size();
    // The reference uses ReLU after every layer but the top MLP's last, which gets a sigmoid.
    if (last && sigmoid_last)
      x = unary(g, mod, "sigmoid", x, {"batch", "out"}, kTanhFlops, kTanhFlops / 2, Saves::Output);
    else
      x = unary(g, mod, "relu" + n, x, {"batch", "out"}, kReluFlops, kReluFlops, Saves::Output);
  }
  return x;
}

// The interaction's output per sample: the bottom MLP's vector and the pairwise dots of the
// tables + 1 vectors (the reference's dot interaction without self-interaction).
int64_t interaction_width(const ModelSpec& m) {
  const int64_t vectors = m.tables + 1;
  return m.embedding_dim + vectors * (vectors - 1) / 2;
}

void validate(const ModelSpec& m) {
  if (m.bottom_mlp.size() < 2)
    throw invalid_config("model.bottom_mlp",
                         "needs the input width and at least one layer, e.g. 13-512-256-64");
  if (m.top_mlp.empty()) throw invalid_config("model.top_mlp", "needs at least one layer, e.g. 1024-1024-1");
  for (int64_t w : m.bottom_mlp)
    if (w < 1) throw invalid_config("model.bottom_mlp", "widths must be positive");
  for (int64_t w : m.top_mlp)
    if (w < 1) throw invalid_config("model.top_mlp", "widths must be positive");
  if (m.dense_features != m.bottom_mlp.front())
    throw invalid_config("model.dense_features",
                         "dense_features (" + std::to_string(m.dense_features) +
                             ") must equal the bottom MLP's input width bottom_mlp[0] (" +
                             std::to_string(m.bottom_mlp.front()) + ")");
  if (m.tables < 1) throw invalid_config("model.tables", "DLRM needs at least one embedding table");
  if (m.table_rows < 1) throw invalid_config("model.table_rows", "table_rows must be positive");
  if (m.lookups_per_table < 1)
    throw invalid_config("model.lookups_per_table", "lookups_per_table must be positive");
  if (m.embedding_dim != m.bottom_mlp.back())
    throw invalid_config("model.embedding_dim", "the dot interaction needs embedding_dim (" +
                                                    std::to_string(m.embedding_dim) +
                                                    ") equal to the bottom MLP's output width (" +
                                                    std::to_string(m.bottom_mlp.back()) + ")");
}

}  // namespace

OpGraph build_dlrm(const ModelSpec& m, const TrainingSpec& training, int64_t batch) {
  validate(m);
  const int64_t b = batch, t = m.tables, l = m.lookups_per_table, r = m.table_rows, d = m.embedding_dim;
  OpGraphBuilder g(m.name, batch, 1, activation_bytes(training.precision),
                   2 * (m.bottom_mlp.size() + m.top_mlp.size()) + 8);
  const double ab = g.act_bytes();

  const int bottom = g.module(OpGraphBuilder::kRoot, "bottom_mlp", "mlp", 0);
  const int dense = g.input("dense_features", {b, m.bottom_mlp.front()}, ab);
  const int z = mlp(g, bottom, dense, m.bottom_mlp, false);

  const int emb = g.module(OpGraphBuilder::kRoot, "embeddings", "embedding", 1);
  const int indices = g.input("sparse_indices", {b, t, l}, kIndexBytes);
  const int lookup = g.op(emb, "tables", OpKind::Embedding,
                          {{"table", t}, {"batch", b}, {"lookups", l}, {"rows", r}, {"dim", d}});
  g.read(lookup, indices, {"batch", "table", "lookups"});
  g.read_weight(lookup, g.weight(emb, "tables", {t, r, d}), {"table", "rows", "dim"});
  const int pooled = g.write(lookup, {b, t, d}, {"batch", "table", "dim"});
  {
    // Sum pooling of L rows per table and sample; the backward is a sparse gradient into
    // the same rows, so forward and weight-gradient bytes count the rows touched, not the table.
    const double rows_bytes = static_cast<double>(b * t * l * d) * ab;
    const double idx = g.tensor(indices).bytes(), out = g.tensor(pooled).bytes();
    g.set_costs(lookup, static_cast<double>(b * t * l * d), 0, static_cast<double>(b * t * l * d));
    Op& o = g.at(lookup);
    o.fwd_bytes = idx + rows_bytes + out;
    o.bwd_weight_bytes = out + idx + rows_bytes;
  }

  const int inter = g.module(OpGraphBuilder::kRoot, "interaction", "interaction", 2);
  const int64_t features = interaction_width(m);
  const int dot = g.op(inter, "interaction", OpKind::Interaction,
                       {{"batch", b}, {"features", features}, {"table", t}, {"dim", d}});
  g.read(dot, z, {"batch", "dim"});
  g.read(dot, pooled, {"batch", "table", "dim"});
  const int zi = g.write(dot, {b, features}, {"batch", "features"});
  // The reference computes all (T+1)^2 dots with one batched GEMM and keeps the lower
  // triangle: 2*B*(T+1)^2*D forward, twice that for the gradients of both operands.
  const double dot_flops = 2.0 * static_cast<double>(b * (t + 1) * (t + 1) * d);
  g.set_costs(dot, dot_flops, 2 * dot_flops, 0);

  const int top = g.module(OpGraphBuilder::kRoot, "top_mlp", "mlp", 3);
  std::vector<int64_t> top_widths = {features};
  top_widths.insert(top_widths.end(), m.top_mlp.begin(), m.top_mlp.end());
  const int y = mlp(g, top, zi, top_widths, true);
  classification_loss(g, top, "loss", y);
  g.set_num_layers(4);
  return g.finish();
}

}  // namespace proteus::model
