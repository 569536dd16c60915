// "kind": "graph": a chain of generic layers given as a list (model.ops), so any DNN can be
// simulated from its layer sizes. Every activation is a [batch, features] tensor with the
// features of one sample flattened (channel-major for convolutions), so any layer can follow
// any other. One module per op (path = the op's name, kind = its type, Module::layer = its
// index; OpGraph::num_layers = the number of ops), then module "loss" (kind "head").
//   linear       Matmul (batch, out, in[reduce]) + bias: nn.Linear(in_features, out_features)
//   conv2d       Conv2d (batch, cout, h, w, cin, kh, kw) + bias over a square image of
//                `image` pixels, "same" padding kernel/2; input bound (batch, cin), output
//                (batch, cout)
//   elementwise  (batch, out) with `elements` per sample, one FLOP each, saves its input
//   custom       (batch, out, in[, params]) with the given FLOPs and bytes per sample and `params`
//                trainable parameters; output `elements` per sample (0 = same as its input);
//                backward = forward once for the input gradient and once for the weights
#include <cmath>
#include <set>
#include <string>

#include "layers.h"
#include "model_builders.h"
#include "op_graph_builder.h"
#include "proteus/error.h"

namespace proteus::model {

namespace {

std::string field(size_t i, const char* name) { return "model.ops[" + std::to_string(i) + "]." + name; }

int64_t square_side(int64_t elements, int64_t channels) {
  if (channels < 1 || elements % channels != 0) return 0;
  const int64_t area = elements / channels;
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(area))));
  return side * side == area ? side : 0;
}

}  // namespace

OpGraph build_explicit_graph(const ModelSpec& m, const TrainingSpec& training, int64_t batch) {
  if (m.ops.empty()) throw invalid_config("model.ops", "a graph model needs at least one op");
  if (m.input_elements < 1) throw invalid_config("model.input_elements", "input_elements must be positive");
  OpGraphBuilder g(m.name, batch, 1, activation_bytes(training.precision), m.ops.size() + 2);
  const int64_t b = batch;
  int x = g.input("input", {b, m.input_elements}, g.act_bytes());
  int64_t width = m.input_elements;
  std::set<std::string> names;

  for (size_t i = 0; i < m.ops.size(); ++i) {
    const GraphOpSpec& s = m.ops[i];
    const std::string name = s.name.empty() ? "op" + std::to_string(i) : s.name;
    if (name.find('.') != std::string::npos || name == "loss" || !names.insert(name).second)
      throw invalid_config(field(i, "name"),
                           "op names must be unique, without '.', and not 'loss': '" + name + "'");
    const int mod = g.module(OpGraphBuilder::kRoot, name, s.type, static_cast<int>(i));

    if (s.type == "linear") {
      const int64_t in = s.in_features > 0 ? s.in_features : width;
      if (in != width)
        throw invalid_config(field(i, "in_features"), "is " + std::to_string(in) +
                                                          " but the previous op produces " +
                                                          std::to_string(width) + " features per sample");
      if (s.out_features < 1) throw invalid_config(field(i, "out_features"), "out_features must be positive");
      x = linear(g, mod, name, x, in, s.out_features, true);
      width = s.out_features;
    } else if (s.type == "conv2d") {
      const int64_t cin = s.in_channels > 0 ? s.in_channels : width;
      const int64_t image = s.image > 0 ? s.image : square_side(width, cin);
      if (cin * image * image != width || image < 1)
        throw invalid_config(field(i, "image"), "in_channels*image^2 must equal the " +
                                                    std::to_string(width) +
                                                    " features per sample of the previous op");
      if (s.out_channels < 1) throw invalid_config(field(i, "out_channels"), "out_channels must be positive");
      if (s.kernel < 1 || s.kernel > image)
        throw invalid_config(field(i, "kernel"), "kernel must be in 1..image");
      if (s.stride < 1) throw invalid_config(field(i, "stride"), "stride must be positive");
      const int64_t pad = s.kernel / 2, k = s.kernel, cout = s.out_channels;
      const int64_t out = (image + 2 * pad - k) / s.stride + 1;
      const int op =
          g.op(mod, name, OpKind::Conv2d,
               {{"batch", b}, {"cout", cout}, {"h", out}, {"w", out}, {"cin", cin}, {"kh", k}, {"kw", k}});
      g.read(op, x, {"batch", "cin"});
      g.read_weight(op, g.weight(mod, "weight", {cout, cin, k, k}), {"cout", "cin", "kh", "kw"});
      g.read_weight(op, g.weight(mod, "bias", {cout}), {"cout"});
      x = g.write(op, {b, cout * out * out}, {"batch", "cout"});
      g.gemm(op, {"batch", "h", "w"}, {"cout"}, {"cin", "kh", "kw"});
      set_gemm_costs(g, op, static_cast<double>(b * cout * out * out));
      width = cout * out * out;
    } else if (s.type == "elementwise") {
      if (s.elements != 0 && s.elements != width)
        throw invalid_config(field(i, "elements"), "an elementwise op keeps the " + std::to_string(width) +
                                                       " features per sample of the previous op");
      x = unary(g, mod, name, x, {"batch", "out"}, 1, 1, Saves::Input);
    } else if (s.type == "custom") {
      if (s.elements < 0 || s.params < 0 || s.flops_per_sample < 0 || s.bytes_per_sample < 0)
        throw invalid_config(field(i, "type"), "a custom op's sizes must not be negative");
      const int64_t out = s.elements > 0 ? s.elements : width;
      std::vector<Dim> dims = {{"batch", b}, {"out", out}, {"in", width}};
      if (s.params > 0) dims.push_back({"params", s.params});
      const int op = g.op(mod, name, OpKind::Custom, std::move(dims));
      g.read(op, x, {"batch", "in"});
      if (s.params > 0) g.read_weight(op, g.weight(mod, "weight", {s.params}), {"params"});
      x = g.write(op, {b, out}, {"batch", "out"});
      const double flops = s.flops_per_sample * static_cast<double>(b);
      g.set_costs(op, flops, flops, s.params > 0 ? flops : 0);
      Op& o = g.at(op);
      const double weight_bytes = o.weights.empty() ? 0 : g.tensor(o.weights[0].tensor).bytes();
      o.fwd_bytes = s.bytes_per_sample * static_cast<double>(b) + weight_bytes;
      if (!g.inputs_are_model_inputs(op)) o.bwd_input_bytes = o.fwd_bytes;
      if (s.params > 0) o.bwd_weight_bytes = o.fwd_bytes;
      width = out;
    } else {
      throw invalid_config(field(i, "type"), "unknown op type '" + s.type +
                                                 "' (expected linear, conv2d, elementwise or custom)");
    }
  }
  const int loss = g.module(OpGraphBuilder::kRoot, "loss", "head", -1);
  classification_loss(g, loss, "loss", x);
  g.set_num_layers(static_cast<int>(m.ops.size()));
  return g.finish();
}

}  // namespace proteus::model
