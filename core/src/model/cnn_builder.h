// What the CNN builders share: spec validation, the image input and the module layout
//   features                  kind "features"; one child module per block, Module::layer =
//                             block index (OpGraph::num_layers = blocks), so pipeline stages
//                             split between blocks; the last block ends with the flattening
//                             average pool
//   classifier                kind "classifier": the fully connected layers, dims (batch, out,
//                             in[reduce]), their ReLU/dropout (dims named after the feature axis
//                             they act on), and the loss. Mapping a mesh axis to "out" here
//                             makes the classifier model parallel ("one weird trick").
// Private to core/src/model.
#pragma once
#include "cnn_layers.h"
#include "op_graph_builder.h"
#include "proteus/model_spec.h"
#include "proteus/training_spec.h"

namespace proteus::model {

OpGraphBuilder cnn_graph(const ModelSpec& model, const TrainingSpec& training, int64_t batch,
                         size_t ops_hint);
// The [B, channels, image, image] input.
FeatureMap cnn_image(OpGraphBuilder& g, const ModelSpec& model);

}  // namespace proteus::model
