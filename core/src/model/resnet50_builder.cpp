// torchvision.models.resnet50 (He et al. 2016, v1.5: stride on the 3x3 convolution):
// stem 7x7/2 conv + BatchNorm + ReLU + 3x3/2 max pool; four stages of [3, 4, 6, 3]
// bottlenecks (1x1 -> 3x3 -> 1x1 x4, BatchNorm after each conv, projection shortcut on the
// first block of a stage); global average pool; fc 2048 -> 1000. 25,557,032 parameters.
// Modules: features.stem (layer 0), features.layer<s>.<i> (one block each, layers 1..16).
#include <string>

#include "cnn_builder.h"
#include "layers.h"
#include "model_builders.h"

namespace proteus::model {

namespace {

FeatureMap bottleneck(OpGraphBuilder& g, int mod, const FeatureMap& x, int64_t width, int64_t stride) {
  const int64_t out = width * 4;
  FeatureMap y = conv_bn_relu(g, mod, "conv1", x, width, 1, 1, 1, 0, 0);
  y = conv_bn_relu(g, mod, "conv2", y, width, 3, 3, stride, 1, 1);
  y = batch_norm(g, mod, "bn3", conv2d(g, mod, "conv3", y, out, 1, 1, 1, 0, 0, false));
  FeatureMap shortcut = x;
  if (stride != 1 || x.c != out)
    shortcut =
        batch_norm(g, mod, "downsample_bn", conv2d(g, mod, "downsample", x, out, 1, 1, stride, 0, 0, false));
  return relu(g, mod, "relu", add_maps(g, mod, "residual", y, shortcut));
}

}  // namespace

OpGraph build_resnet50(const ModelSpec& model, const TrainingSpec& training, int64_t batch) {
  OpGraphBuilder g = cnn_graph(model, training, batch, 180);
  const int features = g.module(OpGraphBuilder::kRoot, "features", "features", -1);
  FeatureMap x = cnn_image(g, model);
  int block = 0;
  const int stem = g.module(features, "stem", "block", block++);
  x = conv_bn_relu(g, stem, "conv1", x, 64, 7, 7, 2, 3, 3);
  x = max_pool(g, stem, "maxpool", x, 3, 2, 1);

  const int blocks[] = {3, 4, 6, 3};
  const int64_t widths[] = {64, 128, 256, 512};
  int last = stem;
  for (int s = 0; s < 4; ++s) {
    const int stage = g.module(features, "layer" + std::to_string(s + 1), "stage", -1);
    for (int i = 0; i < blocks[s]; ++i) {
      last = g.module(stage, std::to_string(i), "block", block++);
      x = bottleneck(g, last, x, widths[s], (i == 0 && s > 0) ? 2 : 1);
    }
  }
  int y = flatten_pool(g, last, "avgpool", x, 1, 1);
  const int cls = g.module(OpGraphBuilder::kRoot, "classifier", "classifier", -1);
  y = linear(g, cls, "fc", y, x.c, model.classes, true);
  classification_loss(g, cls, "loss", y);
  g.set_num_layers(block);
  return g.finish();
}

}  // namespace proteus::model
