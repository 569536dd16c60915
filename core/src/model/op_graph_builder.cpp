#include "op_graph_builder.h"

#include <algorithm>
#include <utility>

#include "proteus/error.h"

namespace proteus::model {

double uses_bytes(const OpGraph& g, const std::vector<TensorUse>& uses) {
  double bytes = 0;
  for (const TensorUse& u : uses) bytes += g.tensors[u.tensor].bytes();
  return bytes;
}

OpGraphBuilder::OpGraphBuilder(const std::string& model_name, int64_t batch, int64_t samples_per_batch_unit,
                               double act_bytes, size_t ops_hint)
    : act_bytes_(act_bytes) {
  g_.model_name = model_name;
  g_.batch = batch;
  g_.samples_per_batch_unit = samples_per_batch_unit;
  g_.ops.reserve(ops_hint);
  g_.tensors.reserve(ops_hint * 2 + 16);
  g_.modules.reserve(ops_hint / 2 + 16);
  Module root;
  root.kind = "model";
  g_.modules.push_back(std::move(root));
}

int OpGraphBuilder::module(int parent, const std::string& name, const std::string& kind, int layer) {
  Module m;
  m.name = name;
  m.path = parent == kRoot ? name : g_.modules[parent].path + "." + name;
  m.kind = kind;
  m.parent = parent;
  m.layer = layer;
  const int id = static_cast<int>(g_.modules.size());
  g_.modules[parent].children.push_back(id);
  g_.modules.push_back(std::move(m));
  return id;
}

int OpGraphBuilder::add_tensor(std::string name, Shape shape, double bytes_per_element, bool is_weight,
                               int producer) {
  Tensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.bytes_per_element = bytes_per_element;
  t.is_weight = is_weight;
  t.producer = producer;
  g_.tensors.push_back(std::move(t));
  return static_cast<int>(g_.tensors.size()) - 1;
}

int OpGraphBuilder::input(const std::string& name, Shape shape, double bytes_per_element) {
  return add_tensor(name, std::move(shape), bytes_per_element, false, -1);
}

int OpGraphBuilder::weight(int module, const std::string& name, Shape shape) {
  const std::string& path = g_.modules[module].path;
  return add_tensor(path.empty() ? name : path + "." + name, std::move(shape), act_bytes_, true, -1);
}

int OpGraphBuilder::op(int module, const std::string& name, OpKind kind, std::vector<Dim> dims) {
  Op o;
  o.name = name;
  o.kind = kind;
  o.module = module;
  o.dims = std::move(dims);
  const int id = static_cast<int>(g_.ops.size());
  g_.ops.push_back(std::move(o));
  g_.modules[module].ops.push_back(id);
  return id;
}

TensorUse OpGraphBuilder::bind(const Op& op, int tensor, DimNames dims) const {
  TensorUse use;
  use.tensor = tensor;
  use.dims.reserve(dims.size());
  for (const char* name : dims) {
    const int d = op.find_dim(name);
    if (d < 0) throw Error("internal", "", "model builder: op '" + op.name + "' has no dim '" + name + "'");
    use.dims.push_back(d);
  }
  if (use.dims.size() != g_.tensors[tensor].shape.size())
    throw Error("internal", "",
                "model builder: op '" + op.name + "' binds " + std::to_string(use.dims.size()) +
                    " dims to tensor '" + g_.tensors[tensor].name + "' of rank " +
                    std::to_string(g_.tensors[tensor].shape.size()));
  return use;
}

void OpGraphBuilder::read(int op, int tensor, DimNames dims) {
  g_.ops[op].inputs.push_back(bind(g_.ops[op], tensor, dims));
}

void OpGraphBuilder::read_weight(int op, int tensor, DimNames dims) {
  g_.ops[op].weights.push_back(bind(g_.ops[op], tensor, dims));
}

int OpGraphBuilder::write(int op, Shape shape, DimNames dims, double bytes_per_element) {
  const int t = add_tensor(g_.ops[op].name, std::move(shape),
                           bytes_per_element < 0 ? act_bytes_ : bytes_per_element, false, op);
  g_.ops[op].output = bind(g_.ops[op], t, dims);
  return t;
}

int OpGraphBuilder::save_new(int op, const std::string& suffix, Shape shape, DimNames dims,
                             double bytes_per_element) {
  const int t = add_tensor(g_.ops[op].name + "." + suffix, std::move(shape), bytes_per_element, false, op);
  g_.ops[op].saved_extra.push_back(bind(g_.ops[op], t, dims));
  return t;
}

void OpGraphBuilder::save(int op, int tensor, DimNames dims) {
  g_.ops[op].saved_extra.push_back(bind(g_.ops[op], tensor, dims));
}

void OpGraphBuilder::gemm(int op, DimNames m, DimNames n, DimNames k, DimNames batch) {
  Op& o = g_.ops[op];
  auto indices = [&](DimNames names) {
    std::vector<int> out;
    for (const char* name : names) {
      const int d = o.find_dim(name);
      if (d < 0)
        throw Error("internal", "", "model builder: op '" + o.name + "' has no GEMM dim '" + name + "'");
      out.push_back(d);
    }
    return out;
  };
  o.gemm_m_dims = indices(m);
  o.gemm_n_dims = indices(n);
  o.gemm_k_dims = indices(k);
  o.gemm_batch_dims = indices(batch);
}

double OpGraphBuilder::dims_product(int op) const {
  double p = 1;
  for (const Dim& d : g_.ops[op].dims) p *= static_cast<double>(d.size);
  return p;
}

bool OpGraphBuilder::inputs_are_model_inputs(int op) const {
  for (const TensorUse& u : g_.ops[op].inputs)
    if (g_.tensors[u.tensor].producer >= 0) return false;
  return true;
}

void OpGraphBuilder::set_costs(int op, double fwd_flops, double bwd_input_flops, double bwd_weight_flops) {
  Op& o = g_.ops[op];
  const double in = uses_bytes(g_, o.inputs);
  const double w = uses_bytes(g_, o.weights);
  const double out = o.output.tensor >= 0 ? g_.tensors[o.output.tensor].bytes() : 0;
  double extra_new = 0, extra_all = 0;
  for (const TensorUse& u : o.saved_extra) {
    const double b = g_.tensors[u.tensor].bytes();
    extra_all += b;
    if (u.tensor != o.output.tensor && g_.tensors[u.tensor].producer == op) extra_new += b;
  }
  o.fwd_flops = fwd_flops;
  o.fwd_bytes = in + w + out + extra_new;
  if (inputs_are_model_inputs(op)) {
    o.bwd_input_flops = 0;
    o.bwd_input_bytes = 0;
  } else {
    o.bwd_input_flops = bwd_input_flops;
    o.bwd_input_bytes = out + w + (o.saves_inputs ? in : 0) + extra_all + in;
  }
  if (o.weights.empty()) {
    o.bwd_weight_flops = 0;
    o.bwd_weight_bytes = 0;
  } else {
    o.bwd_weight_flops = bwd_weight_flops;
    o.bwd_weight_bytes = out + in + w;
  }
}

OpGraph OpGraphBuilder::finish() {
  std::vector<char> saved_as_input(g_.tensors.size(), 0);
  for (const Op& op : g_.ops)
    if (op.saves_inputs)
      for (const TensorUse& u : op.inputs) saved_as_input[u.tensor] = 1;
  for (Op& op : g_.ops) {
    auto& extra = op.saved_extra;
    extra.erase(std::remove_if(extra.begin(), extra.end(),
                               [&](const TensorUse& u) { return saved_as_input[u.tensor]; }),
                extra.end());
  }
  return std::move(g_);
}

}  // namespace proteus::model
