#include "cnn_layers.h"

#include "layers.h"
#include "proteus/error.h"

namespace proteus::model {

namespace {

int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, const std::string& name) {
  const int64_t span = in + 2 * pad - kernel;
  if (span < 0)
    throw invalid_config("model.image_size", "the image is too small: layer '" + name + "' gets " +
                                                 std::to_string(in) + " pixels for a kernel of " +
                                                 std::to_string(kernel));
  return span / stride + 1;
}

std::vector<Dim> map_dims(int64_t b, const FeatureMap& x) {
  return {{"batch", b}, {"cout", x.c}, {"h", x.h}, {"w", x.w}};
}

}  // namespace

FeatureMap conv2d(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x, int64_t cout,
                  int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w, bool bias) {
  const int64_t b = g.batch();
  FeatureMap y{-1, cout, out_size(x.h, kh, stride, pad_h, name), out_size(x.w, kw, stride, pad_w, name)};
  const int op =
      g.op(module, name, OpKind::Conv2d,
           {{"batch", b}, {"cout", cout}, {"h", y.h}, {"w", y.w}, {"cin", x.c}, {"kh", kh}, {"kw", kw}});
  g.read(op, x.tensor, {"batch", "cin", "h", "w"});
  g.read_weight(op, g.weight(module, name + ".weight", {cout, x.c, kh, kw}), {"cout", "cin", "kh", "kw"});
  if (bias) g.read_weight(op, g.weight(module, name + ".bias", {cout}), {"cout"});
  y.tensor = g.write(op, {b, cout, y.h, y.w}, {"batch", "cout", "h", "w"});
  g.gemm(op, {"batch", "h", "w"}, {"cout"}, {"cin", "kh", "kw"});
  set_gemm_costs(g, op, bias ? static_cast<double>(b * cout * y.h * y.w) : 0);
  return y;
}

FeatureMap batch_norm(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x) {
  const int64_t b = g.batch();
  const int op = g.op(module, name, OpKind::Norm, map_dims(b, x));
  g.read(op, x.tensor, {"batch", "cout", "h", "w"});
  g.read_weight(op, g.weight(module, name + ".weight", {x.c}), {"cout"});
  g.read_weight(op, g.weight(module, name + ".bias", {x.c}), {"cout"});
  FeatureMap y = x;
  y.tensor = g.write(op, {b, x.c, x.h, x.w}, {"batch", "cout", "h", "w"});
  const double n = static_cast<double>(b * x.c * x.h * x.w);
  g.set_costs(op, kBatchNormFlops * n, 2 * kBatchNormFlops * n, kNormWeightGradFlops * n);
  return y;
}

FeatureMap relu(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x) {
  FeatureMap y = x;
  y.tensor =
      unary(g, module, name, x.tensor, {"batch", "cout", "h", "w"}, kReluFlops, kReluFlops, Saves::Output);
  return y;
}

FeatureMap conv_bn_relu(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x,
                        int64_t cout, int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w) {
  const FeatureMap c = conv2d(g, module, name, x, cout, kh, kw, stride, pad_h, pad_w, false);
  return relu(g, module, name + "_relu", batch_norm(g, module, name + "_bn", c));
}

namespace {
// Pools: dims (batch, cout, h, w, kh, kw) over the output; the input is bound like a conv's.
int pool_op(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x, int64_t kernel,
            int64_t stride, int64_t pad, FeatureMap* y) {
  const int64_t b = g.batch();
  *y = {-1, x.c, out_size(x.h, kernel, stride, pad, name), out_size(x.w, kernel, stride, pad, name)};
  const int op =
      g.op(module, name, OpKind::Pool,
           {{"batch", b}, {"cout", x.c}, {"h", y->h}, {"w", y->w}, {"kh", kernel}, {"kw", kernel}});
  g.read(op, x.tensor, {"batch", "cout", "h", "w"});
  y->tensor = g.write(op, {b, x.c, y->h, y->w}, {"batch", "cout", "h", "w"});
  return op;
}
}  // namespace

FeatureMap max_pool(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x,
                    int64_t kernel, int64_t stride, int64_t pad) {
  FeatureMap y;
  const int op = pool_op(g, module, name, x, kernel, stride, pad, &y);
  // PyTorch's max_pool2d_with_indices saves its input and the int64 argmax indices.
  g.save_new(op, "indices", {g.batch(), y.c, y.h, y.w}, {"batch", "cout", "h", "w"}, kIndexBytes);
  const double outputs = static_cast<double>(g.tensor(y.tensor).elements());
  g.set_costs(op, outputs * static_cast<double>(kernel * kernel), outputs, 0);  // compares; scatter
  return y;
}

FeatureMap avg_pool(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x,
                    int64_t kernel, int64_t stride, int64_t pad) {
  FeatureMap y;
  const int op = pool_op(g, module, name, x, kernel, stride, pad, &y);
  g.at(op).saves_inputs = false;  // the backward spreads gradients by shape alone
  const double work = static_cast<double>(g.tensor(y.tensor).elements() * kernel * kernel);
  g.set_costs(op, work, work, 0);
  return y;
}

FeatureMap add_maps(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& a,
                    const FeatureMap& b) {
  FeatureMap y = a;
  y.tensor = add(g, module, name, {a.tensor, b.tensor}, {"batch", "cout", "h", "w"});
  return y;
}

FeatureMap concat_channels(OpGraphBuilder& g, int module, const std::string& name,
                           const std::vector<FeatureMap>& parts) {
  const int64_t b = g.batch();
  FeatureMap y = parts.front();
  y.c = 0;
  for (const FeatureMap& p : parts) y.c += p.c;
  const int op = g.op(module, name, OpKind::Elementwise, map_dims(b, y));
  for (const FeatureMap& p : parts) g.read(op, p.tensor, {"batch", "cout", "h", "w"});
  y.tensor = g.write(op, {b, y.c, y.h, y.w}, {"batch", "cout", "h", "w"});
  g.at(op).saves_inputs = false;
  g.set_costs(op, 0, 0, 0);  // a copy: bytes only
  return y;
}

int flatten_pool(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x, int64_t oh,
                 int64_t ow) {
  const int64_t b = g.batch();
  const int op = g.op(module, name, OpKind::Pool, map_dims(b, x));
  g.read(op, x.tensor, {"batch", "cout", "h", "w"});
  const int y = g.write(op, {b, x.c * oh * ow}, {"batch", "cout"});
  g.at(op).saves_inputs = false;
  const double n = static_cast<double>(b * x.c * x.h * x.w);
  g.set_costs(op, n, n, 0);
  return y;
}

}  // namespace proteus::model
