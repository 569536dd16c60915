// torchvision.models.inception_v3 (Szegedy et al. 2016): BasicConv2d = conv (no bias) +
// BatchNorm + ReLU. Stem Conv2d_1a_3x3 .. Conv2d_4a_3x3 with two 3x3/2 max pools; Mixed_5b-d
// (InceptionA), Mixed_6a (InceptionB), Mixed_6b-e (InceptionC), Mixed_7a (InceptionD),
// Mixed_7b-c (InceptionE); adaptive average pool, dropout, fc 2048 -> 1000. The parallel
// branches of a block read the block input and are concatenated along channels.
// 23,834,568 parameters without the auxiliary head, 27,161,264 with it (model.aux_logits,
// module "aux_logits" after Mixed_6e, in the same pipeline block).
// Modules: features.<torchvision name>, one block each (16 blocks).
#include <string>
#include <vector>

#include "cnn_builder.h"
#include "layers.h"
#include "model_builders.h"

namespace proteus::model {

namespace {

class InceptionBuilder {
 public:
  InceptionBuilder(OpGraphBuilder& g, int features) : g_(g), features_(features) {}

  int next_block(const std::string& name) { return last_ = g_.module(features_, name, "block", blocks_++); }
  int blocks() const { return blocks_; }
  int last() const { return last_; }

  FeatureMap conv(int mod, const std::string& name, const FeatureMap& x, int64_t cout, int64_t kh, int64_t kw,
                  int64_t stride = 1, int64_t ph = 0, int64_t pw = 0) {
    return conv_bn_relu(g_, mod, name, x, cout, kh, kw, stride, ph, pw);
  }

  FeatureMap block_a(const std::string& name, const FeatureMap& x, int64_t pool_features) {
    const int m = next_block(name);
    const FeatureMap b1 = conv(m, "branch1x1", x, 64, 1, 1);
    const FeatureMap b5 = conv(m, "branch5x5_2", conv(m, "branch5x5_1", x, 48, 1, 1), 64, 5, 5, 1, 2, 2);
    FeatureMap b3 = conv(m, "branch3x3dbl_1", x, 64, 1, 1);
    b3 = conv(m, "branch3x3dbl_2", b3, 96, 3, 3, 1, 1, 1);
    b3 = conv(m, "branch3x3dbl_3", b3, 96, 3, 3, 1, 1, 1);
    const FeatureMap bp =
        conv(m, "branch_pool", avg_pool(g_, m, "branch_pool_avg", x, 3, 1, 1), pool_features, 1, 1);
    return concat_channels(g_, m, "concat", {b1, b5, b3, bp});
  }

  FeatureMap block_b(const std::string& name, const FeatureMap& x) {
    const int m = next_block(name);
    const FeatureMap b3 = conv(m, "branch3x3", x, 384, 3, 3, 2);
    FeatureMap bd = conv(m, "branch3x3dbl_1", x, 64, 1, 1);
    bd = conv(m, "branch3x3dbl_2", bd, 96, 3, 3, 1, 1, 1);
    bd = conv(m, "branch3x3dbl_3", bd, 96, 3, 3, 2);
    const FeatureMap bp = max_pool(g_, m, "branch_pool", x, 3, 2, 0);
    return concat_channels(g_, m, "concat", {b3, bd, bp});
  }

  FeatureMap block_c(const std::string& name, const FeatureMap& x, int64_t c7) {
    const int m = next_block(name);
    const FeatureMap b1 = conv(m, "branch1x1", x, 192, 1, 1);
    FeatureMap b7 = conv(m, "branch7x7_1", x, c7, 1, 1);
    b7 = conv(m, "branch7x7_2", b7, c7, 1, 7, 1, 0, 3);
    b7 = conv(m, "branch7x7_3", b7, 192, 7, 1, 1, 3, 0);
    FeatureMap bd = conv(m, "branch7x7dbl_1", x, c7, 1, 1);
    bd = conv(m, "branch7x7dbl_2", bd, c7, 7, 1, 1, 3, 0);
    bd = conv(m, "branch7x7dbl_3", bd, c7, 1, 7, 1, 0, 3);
    bd = conv(m, "branch7x7dbl_4", bd, c7, 7, 1, 1, 3, 0);
    bd = conv(m, "branch7x7dbl_5", bd, 192, 1, 7, 1, 0, 3);
    const FeatureMap bp = conv(m, "branch_pool", avg_pool(g_, m, "branch_pool_avg", x, 3, 1, 1), 192, 1, 1);
    return concat_channels(g_, m, "concat", {b1, b7, bd, bp});
  }

  FeatureMap block_d(const std::string& name, const FeatureMap& x) {
    const int m = next_block(name);
    const FeatureMap b3 = conv(m, "branch3x3_2", conv(m, "branch3x3_1", x, 192, 1, 1), 320, 3, 3, 2);
    FeatureMap b7 = conv(m, "branch7x7x3_1", x, 192, 1, 1);
    b7 = conv(m, "branch7x7x3_2", b7, 192, 1, 7, 1, 0, 3);
    b7 = conv(m, "branch7x7x3_3", b7, 192, 7, 1, 1, 3, 0);
    b7 = conv(m, "branch7x7x3_4", b7, 192, 3, 3, 2);
    const FeatureMap bp = max_pool(g_, m, "branch_pool", x, 3, 2, 0);
    return concat_channels(g_, m, "concat", {b3, b7, bp});
  }

  FeatureMap block_e(const std::string& name, const FeatureMap& x) {
    const int m = next_block(name);
    const FeatureMap b1 = conv(m, "branch1x1", x, 320, 1, 1);
    const FeatureMap b3 = conv(m, "branch3x3_1", x, 384, 1, 1);
    const FeatureMap b3a = conv(m, "branch3x3_2a", b3, 384, 1, 3, 1, 0, 1);
    const FeatureMap b3b = conv(m, "branch3x3_2b", b3, 384, 3, 1, 1, 1, 0);
    FeatureMap bd = conv(m, "branch3x3dbl_1", x, 448, 1, 1);
    bd = conv(m, "branch3x3dbl_2", bd, 384, 3, 3, 1, 1, 1);
    const FeatureMap bda = conv(m, "branch3x3dbl_3a", bd, 384, 1, 3, 1, 0, 1);
    const FeatureMap bdb = conv(m, "branch3x3dbl_3b", bd, 384, 3, 1, 1, 1, 0);
    const FeatureMap bp = conv(m, "branch_pool", avg_pool(g_, m, "branch_pool_avg", x, 3, 1, 1), 192, 1, 1);
    return concat_channels(g_, m, "concat", {b1, b3a, b3b, bda, bdb, bp});
  }

  // InceptionAux on Mixed_6e's output: 5x5/3 average pool, 1x1 conv 128, 5x5 conv 768,
  // global average pool, fc, its own loss; in the block of Mixed_6e.
  void aux(const FeatureMap& x, int64_t classes) {
    const int m = g_.module(OpGraphBuilder::kRoot, "aux_logits", "classifier", blocks_ - 1);
    FeatureMap y = avg_pool(g_, m, "avgpool0", x, 5, 3, 0);
    y = conv(m, "conv0", y, 128, 1, 1);
    y = conv(m, "conv1", y, 768, 5, 5);
    int z = flatten_pool(g_, m, "avgpool1", y, 1, 1);
    z = linear(g_, m, "fc", z, 768, classes, true);
    classification_loss(g_, m, "aux_loss", z);
  }

 private:
  OpGraphBuilder& g_;
  int features_;
  int blocks_ = 0;
  int last_ = -1;
};

}  // namespace

OpGraph build_inception_v3(const ModelSpec& model, const TrainingSpec& training, int64_t batch) {
  OpGraphBuilder g = cnn_graph(model, training, batch, 420);
  const int features = g.module(OpGraphBuilder::kRoot, "features", "features", -1);
  InceptionBuilder ib(g, features);
  FeatureMap x = cnn_image(g, model);
  x = ib.conv(ib.next_block("Conv2d_1a_3x3"), "conv", x, 32, 3, 3, 2);
  x = ib.conv(ib.next_block("Conv2d_2a_3x3"), "conv", x, 32, 3, 3);
  int m = ib.next_block("Conv2d_2b_3x3");
  x = max_pool(g, m, "maxpool1", ib.conv(m, "conv", x, 64, 3, 3, 1, 1, 1), 3, 2, 0);
  x = ib.conv(ib.next_block("Conv2d_3b_1x1"), "conv", x, 80, 1, 1);
  m = ib.next_block("Conv2d_4a_3x3");
  x = max_pool(g, m, "maxpool2", ib.conv(m, "conv", x, 192, 3, 3), 3, 2, 0);
  x = ib.block_a("Mixed_5b", x, 32);
  x = ib.block_a("Mixed_5c", x, 64);
  x = ib.block_a("Mixed_5d", x, 64);
  x = ib.block_b("Mixed_6a", x);
  x = ib.block_c("Mixed_6b", x, 128);
  x = ib.block_c("Mixed_6c", x, 160);
  x = ib.block_c("Mixed_6d", x, 160);
  x = ib.block_c("Mixed_6e", x, 192);
  if (model.aux_logits) ib.aux(x, model.classes);
  x = ib.block_d("Mixed_7a", x);
  x = ib.block_e("Mixed_7b", x);
  x = ib.block_e("Mixed_7c", x);
  int y = flatten_pool(g, ib.last(), "avgpool", x, 1, 1);
  const int cls = g.module(OpGraphBuilder::kRoot, "classifier", "classifier", -1);
  y = dropout(g, cls, "dropout", y, {"batch", "in"});
  y = linear(g, cls, "fc", y, x.c, model.classes, true);
  classification_loss(g, cls, "loss", y);
  g.set_num_layers(ib.blocks());
  return g.finish();
}

}  // namespace proteus::model
