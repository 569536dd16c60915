// Convolutional building blocks shared by the CNN builders (torchvision layer semantics):
// Conv2d, BatchNorm, ReLU, pooling, residual add, channel concatenation, and the final
// adaptive average pool that flattens [B, C, H, W] into [B, C*oh*ow] for the classifier.
//
// Dims: Conv2d (batch, cout, h, w, cin, kh, kw) with h, w the output size; the input
// [B, cin, H, W] is bound (batch, cin, h, w), the weight [cout, cin, kh, kw] (cout, cin, kh, kw),
// the output (batch, cout, h, w). GEMM (implicit): M = batch,h,w; N = cout; K = cin,kh,kw;
// FLOPs 2*B*cout*h*w*cin*kh*kw. Every other op names the channel dim "cout" (channels as
// produced), so a layout sharded by output channel flows through BatchNorm, ReLU and pooling.
// The flattening pool binds its output [B, C*oh*ow] as (batch, cout): the features of one
// channel stay together, so a channel shard is a feature shard. Private to core/src/model.
#pragma once
#include <string>
#include <vector>

#include "op_graph_builder.h"

namespace proteus::model {

struct FeatureMap {
  int tensor = -1;
  int64_t c = 0, h = 0, w = 0;
};

// Throws invalid_config("model.image_size") when a layer's output would be empty.
FeatureMap conv2d(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x, int64_t cout,
                  int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w, bool bias);
FeatureMap batch_norm(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x);
FeatureMap relu(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x);
// conv (no bias) + BatchNorm + ReLU: torchvision's BasicConv2d and ResNet's conv-bn-relu.
FeatureMap conv_bn_relu(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x,
                        int64_t cout, int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w);
FeatureMap max_pool(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x,
                    int64_t kernel, int64_t stride, int64_t pad);
FeatureMap avg_pool(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x,
                    int64_t kernel, int64_t stride, int64_t pad);
FeatureMap add_maps(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& a,
                    const FeatureMap& b);
FeatureMap concat_channels(OpGraphBuilder& g, int module, const std::string& name,
                           const std::vector<FeatureMap>& parts);
// AdaptiveAvgPool2d((oh, ow)) + flatten: returns the [B, C*oh*ow] tensor.
int flatten_pool(OpGraphBuilder& g, int module, const std::string& name, const FeatureMap& x, int64_t oh,
                 int64_t ow);

}  // namespace proteus::model
