// AlexNet and VGG-19 as torchvision builds them, and what all CNN builders share.
#include "cnn_builder.h"

#include <string>

#include "layers.h"
#include "model_builders.h"
#include "proteus/error.h"

namespace proteus::model {

OpGraphBuilder cnn_graph(const ModelSpec& model, const TrainingSpec& training, int64_t batch,
                         size_t ops_hint) {
  if (model.image_size < 1) throw invalid_config("model.image_size", "image_size must be positive");
  if (model.channels < 1) throw invalid_config("model.channels", "channels must be positive");
  if (model.classes < 1) throw invalid_config("model.classes", "classes must be positive");
  return OpGraphBuilder(model.name, batch, 1, activation_bytes(training.precision), ops_hint);
}

FeatureMap cnn_image(OpGraphBuilder& g, const ModelSpec& model) {
  const int64_t s = model.image_size;
  return {g.input("image", {g.batch(), model.channels, s, s}, g.act_bytes()), model.channels, s, s};
}

// torchvision.models.alexnet (the one-GPU variant of Krizhevsky 2014): features 64-192-384-
// 256-256 with 11x11/4, 5x5, 3x3 kernels and three 3x3/2 max pools, adaptive average pool to
// 6x6, classifier dropout-9216-4096-dropout-4096-1000. 61,100,840 parameters.
OpGraph build_alexnet(const ModelSpec& model, const TrainingSpec& training, int64_t batch) {
  OpGraphBuilder g = cnn_graph(model, training, batch, 40);
  const int features = g.module(OpGraphBuilder::kRoot, "features", "features", -1);
  FeatureMap x = cnn_image(g, model);
  struct Conv {
    int64_t cout, kernel, stride, pad;
    bool pool;
  };
  const Conv convs[] = {{64, 11, 4, 2, true},
                        {192, 5, 1, 2, true},
                        {384, 3, 1, 1, false},
                        {256, 3, 1, 1, false},
                        {256, 3, 1, 1, true}};
  int block = 0;
  int last = -1;
  for (const Conv& c : convs) {
    const std::string name = "conv" + std::to_string(block + 1);
    last = g.module(features, name, "block", block);
    x = conv2d(g, last, name, x, c.cout, c.kernel, c.kernel, c.stride, c.pad, c.pad, true);
    x = relu(g, last, name + "_relu", x);
    if (c.pool) x = max_pool(g, last, name + "_pool", x, 3, 2, 0);
    ++block;
  }
  int y = flatten_pool(g, last, "avgpool", x, 6, 6);
  const int cls = g.module(OpGraphBuilder::kRoot, "classifier", "classifier", -1);
  y = dropout(g, cls, "dropout1", y, {"batch", "in"});
  y = linear(g, cls, "fc1", y, x.c * 36, 4096, true);
  y = unary(g, cls, "relu1", y, {"batch", "out"}, kReluFlops, kReluFlops, Saves::Output);
  y = dropout(g, cls, "dropout2", y, {"batch", "out"});
  y = linear(g, cls, "fc2", y, 4096, 4096, true);
  y = unary(g, cls, "relu2", y, {"batch", "out"}, kReluFlops, kReluFlops, Saves::Output);
  y = linear(g, cls, "fc3", y, 4096, model.classes, true);
  classification_loss(g, cls, "loss", y);
  g.set_num_layers(block);
  return g.finish();
}

// torchvision.models.vgg19 (Simonyan & Zisserman 2015, configuration E): sixteen 3x3
// convolutions with ReLU in five groups closed by 2x2/2 max pools, adaptive average pool to
// 7x7, classifier 25088-4096-dropout-4096-dropout-1000. 143,667,240 parameters. One block
// per convolution: conv<group>_<index>.
OpGraph build_vgg19(const ModelSpec& model, const TrainingSpec& training, int64_t batch) {
  OpGraphBuilder g = cnn_graph(model, training, batch, 64);
  const int features = g.module(OpGraphBuilder::kRoot, "features", "features", -1);
  FeatureMap x = cnn_image(g, model);
  const int64_t widths[] = {64, 128, 256, 512, 512};
  const int convs_per_group[] = {2, 2, 4, 4, 4};
  int block = 0;
  int last = -1;
  for (int group = 0; group < 5; ++group) {
    for (int i = 0; i < convs_per_group[group]; ++i) {
      const std::string name = "conv" + std::to_string(group + 1) + "_" + std::to_string(i + 1);
      last = g.module(features, name, "block", block++);
      x = conv2d(g, last, name, x, widths[group], 3, 3, 1, 1, 1, true);
      x = relu(g, last, name + "_relu", x);
    }
    x = max_pool(g, last, "pool" + std::to_string(group + 1), x, 2, 2, 0);
  }
  int y = flatten_pool(g, last, "avgpool", x, 7, 7);
  const int cls = g.module(OpGraphBuilder::kRoot, "classifier", "classifier", -1);
  y = linear(g, cls, "fc1", y, x.c * 49, 4096, true);
  y = unary(g, cls, "relu1", y, {"batch", "out"}, kReluFlops, kReluFlops, Saves::Output);
  y = dropout(g, cls, "dropout1", y, {"batch", "out"});
  y = linear(g, cls, "fc2", y, 4096, 4096, true);
  y = unary(g, cls, "relu2", y, {"batch", "out"}, kReluFlops, kReluFlops, Saves::Output);
  y = dropout(g, cls, "dropout2", y, {"batch", "out"});
  y = linear(g, cls, "fc3", y, 4096, model.classes, true);
  classification_loss(g, cls, "loss", y);
  g.set_num_layers(block);
  return g.finish();
}

}  // namespace proteus::model
