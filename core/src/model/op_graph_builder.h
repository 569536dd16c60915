// A small helper that the model builders share to assemble an OpGraph: modules with dotted
// paths, tensors, ops whose tensor uses are bound by dim *name*, and the generic byte
// accounting of forward and backward passes. Private to core/src/model.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "proteus/op_graph.h"

namespace proteus::model {

using Shape = std::vector<int64_t>;
using DimNames = std::initializer_list<const char*>;

constexpr double kMaskBytes = 1;   // dropout masks: one byte per element (PyTorch bool / uint8)
constexpr double kIndexBytes = 8;  // token ids, embedding indices, max-pool indices: int64
constexpr double kFp32Bytes = 4;   // logsumexp, losses

class OpGraphBuilder {
 public:
  // Creates the root module (path "", kind "model"). act_bytes: bytes per element of
  // activations and weights in the training precision.
  OpGraphBuilder(const std::string& model_name, int64_t batch, int64_t samples_per_batch_unit,
                 double act_bytes, size_t ops_hint);

  double act_bytes() const { return act_bytes_; }
  int64_t batch() const { return g_.batch; }
  static constexpr int kRoot = 0;

  int module(int parent, const std::string& name, const std::string& kind, int layer);
  const std::string& module_path(int module) const { return g_.modules[module].path; }

  // A model input (token ids, images, dense features): no producer, not trainable.
  int input(const std::string& name, Shape shape, double bytes_per_element);
  // A trainable parameter, stored at the activation precision (the compiler adds the
  // optimizer's copies). Named "<module path>.<name>".
  int weight(int module, const std::string& name, Shape shape);

  int op(int module, const std::string& name, OpKind kind, std::vector<Dim> dims);
  void read(int op, int tensor, DimNames dims);
  void read_weight(int op, int tensor, DimNames dims);
  // Creates the op's output tensor (named after the op); bytes_per_element < 0: activations.
  int write(int op, Shape shape, DimNames dims, double bytes_per_element = -1);
  // Creates a tensor the op produces only for its backward (masks, softmax, logsumexp).
  int save_new(int op, const std::string& suffix, Shape shape, DimNames dims, double bytes_per_element);
  // Marks an existing tensor (e.g. the op's own output) as needed by the op's backward.
  void save(int op, int tensor, DimNames dims);
  void gemm(int op, DimNames m, DimNames n, DimNames k, DimNames batch = {});

  // Sets the FLOPs and derives HBM bytes from the tensors the op touches:
  //   forward          reads inputs and weights, writes the output and new saved tensors;
  //   backward (input) reads d(output), the weights, the saved tensors (inputs if it saves
  //                    them, saved_extra), writes d(inputs);
  //   backward (weight) reads d(output) and the inputs, writes d(weights).
  // When every input is a model input (token ids, images) there is no input gradient.
  void set_costs(int op, double fwd_flops, double bwd_input_flops, double bwd_weight_flops);

  Op& at(int op) { return g_.ops[op]; }
  int num_ops() const { return static_cast<int>(g_.ops.size()); }
  // The ops made since `first_op` belong to Megatron-Core's selective recompute module m.
  void tag_recompute(int first_op, RecomputeModule m) {
    for (size_t i = static_cast<size_t>(first_op); i < g_.ops.size(); ++i)
      g_.ops[i].recompute_modules |= recompute_bit(m);
  }
  const Tensor& tensor(int t) const { return g_.tensors[t]; }
  // Product of the sizes of all iteration dims (2x this = the FLOPs of a GEMM op).
  double dims_product(int op) const;
  bool inputs_are_model_inputs(int op) const;

  void set_num_layers(int n) { g_.num_layers = n; }
  // Hands the graph over. A backward that needs a tensor which some op already saves as an
  // input (flash attention's output O, which o_proj saves; a ReLU's output, which the next
  // conv saves) does not list it again in saved_extra, so that the activation memory is the
  // inputs saved (each tensor once) plus saved_extra, with nothing counted twice.
  OpGraph finish();

 private:
  TensorUse bind(const Op& op, int tensor, DimNames dims) const;
  int add_tensor(std::string name, Shape shape, double bytes_per_element, bool is_weight, int producer);

  OpGraph g_;
  double act_bytes_;
};

// Bytes of the tensors of a list of uses.
double uses_bytes(const OpGraph& g, const std::vector<TensorUse>& uses);

}  // namespace proteus::model
