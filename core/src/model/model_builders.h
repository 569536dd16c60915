// The builders of each model family, called by build_op_graph (op_graph.cpp). Each one
// validates the part of ModelSpec it reads and throws proteus::Error("invalid_config",
// "model.<field>", ...) for a spec it cannot build. Private to core/src/model.
#pragma once
#include <cstdint>

#include "proteus/model_spec.h"
#include "proteus/op_graph.h"
#include "proteus/training_spec.h"

namespace proteus::model {

OpGraph build_transformer(const ModelSpec& model, const TrainingSpec& training, int64_t batch);
OpGraph build_alexnet(const ModelSpec& model, const TrainingSpec& training, int64_t batch);
OpGraph build_vgg19(const ModelSpec& model, const TrainingSpec& training, int64_t batch);
OpGraph build_resnet50(const ModelSpec& model, const TrainingSpec& training, int64_t batch);
OpGraph build_inception_v3(const ModelSpec& model, const TrainingSpec& training, int64_t batch);
OpGraph build_dlrm(const ModelSpec& model, const TrainingSpec& training, int64_t batch);
OpGraph build_explicit_graph(const ModelSpec& model, const TrainingSpec& training, int64_t batch);

}  // namespace proteus::model
