// OpGraph queries and the entry point that picks a model family's builder.
#include "proteus/op_graph.h"

#include "model_builders.h"
#include "proteus/error.h"
#include "proteus/model_spec.h"
#include "proteus/training_spec.h"

namespace proteus {

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int Op::find_dim(const std::string& dim_name) const {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name == dim_name) return static_cast<int>(i);
  return -1;
}

// Each weight tensor once: a tied weight is one tensor read by two ops.
int64_t OpGraph::parameter_count() const {
  int64_t n = 0;
  for (const Tensor& t : tensors)
    if (t.is_weight) n += t.elements();
  return n;
}

double OpGraph::forward_flops() const {
  double f = 0;
  for (const Op& op : ops) f += op.fwd_flops;
  return f;
}

double OpGraph::training_flops() const {
  double f = 0;
  for (const Op& op : ops) f += op.fwd_flops + op.bwd_input_flops + op.bwd_weight_flops;
  return f;
}

OpGraph build_op_graph(const ModelSpec& model, const TrainingSpec& training, int64_t batch) {
  if (batch <= 0)
    throw invalid_config("strategy.micro_batch",
                         "the batch to build the model for must be positive, got " + std::to_string(batch));
  switch (model.kind) {
    case ModelKind::Transformer:
      return model::build_transformer(model, training, batch);
    case ModelKind::Cnn:
      switch (model.arch) {
        case CnnArch::AlexNet:
          return model::build_alexnet(model, training, batch);
        case CnnArch::Vgg19:
          return model::build_vgg19(model, training, batch);
        case CnnArch::ResNet50:
          return model::build_resnet50(model, training, batch);
        case CnnArch::InceptionV3:
          return model::build_inception_v3(model, training, batch);
      }
      break;
    case ModelKind::Dlrm:
      return model::build_dlrm(model, training, batch);
    case ModelKind::Graph:
      return model::build_explicit_graph(model, training, batch);
  }
  throw invalid_config("model.kind", "unknown model kind");
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::Matmul:
      return "matmul";
    case OpKind::Attention:
      return "attention";
    case OpKind::Conv2d:
      return "conv2d";
    case OpKind::Embedding:
      return "embedding";
    case OpKind::Norm:
      return "norm";
    case OpKind::Elementwise:
      return "elementwise";
    case OpKind::Softmax:
      return "softmax";
    case OpKind::Pool:
      return "pool";
    case OpKind::Router:
      return "router";
    case OpKind::Dispatch:
      return "dispatch";
    case OpKind::Loss:
      return "loss";
    case OpKind::Interaction:
      return "interaction";
    case OpKind::Custom:
      return "custom";
  }
  return "?";
}

}  // namespace proteus
