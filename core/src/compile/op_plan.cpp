#include "op_plan.h"

#include <algorithm>
#include <cmath>

#include "proteus/error.h"

namespace proteus {

double tensor_bytes_per_rank(const Tensor& t, const Layout& l, const Mesh& mesh) {
  return t.bytes() / l.shard_factor(mesh);
}

Layout layout_of_use(const TensorUse& use, const std::array<int, kNumMeshAxes>& axis_dim, const Mesh& mesh,
                     bool produced_here) {
  Layout l;
  for (int a = 0; a < kNumMeshAxes; ++a) {
    if (a == kAxisPp || mesh.size[a] <= 1 || axis_dim[a] < 0) continue;
    auto it = std::find(use.dims.begin(), use.dims.end(), axis_dim[a]);
    if (it != use.dims.end())
      l.placement[a] = static_cast<int>(it - use.dims.begin());
    else
      l.placement[a] = produced_here ? kPartial : kReplicate;
  }
  return l;
}

namespace {

double shards_of_dim(int d, const std::array<int, kNumMeshAxes>& axis_dim, const Mesh& mesh) {
  double f = 1;
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (axis_dim[a] == d) f *= mesh.size[a];
  return f;
}

int64_t local_product(const Op& op, const std::vector<int>& dims,
                      const std::array<int, kNumMeshAxes>& axis_dim, const Mesh& mesh) {
  if (dims.empty()) return 0;
  double p = 1;
  for (int d : dims) p *= std::ceil(static_cast<double>(op.dims[d].size) / shards_of_dim(d, axis_dim, mesh));
  return static_cast<int64_t>(p);
}

ComputeWork make_work(const Op& op, double flops, double bytes_global, double traffic_ratio,
                      double work_shards, const std::array<int, kNumMeshAxes>& axis_dim, const Mesh& mesh) {
  ComputeWork w;
  w.op_kind = op.kind;
  w.flops = flops / work_shards;
  w.bytes = bytes_global * traffic_ratio;
  w.gemm_m = local_product(op, op.gemm_m_dims, axis_dim, mesh);
  w.gemm_n = local_product(op, op.gemm_n_dims, axis_dim, mesh);
  w.gemm_k = local_product(op, op.gemm_k_dims, axis_dim, mesh);
  w.gemm_batch = op.gemm_batch_dims.empty() ? 1 : local_product(op, op.gemm_batch_dims, axis_dim, mesh);
  w.kernels = 1;
  return w;
}

// The layout an input is kept in for the backward: where the forward all-gathered it (the
// producer had it sharded, the op needs it whole), the shard is kept and gathered again later.
Layout saved_layout(const OpGraph& g, const std::vector<OpPlan>& plans, int tensor, const Layout& required,
                    const Mesh& mesh) {
  const int prod = g.tensors[tensor].producer;
  if (prod < 0) return required;
  const Layout& made = plans[prod].output;
  Layout saved = required;
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (mesh.size[a] > 1 && required.placement[a] == kReplicate && made.placement[a] >= 0)
      saved.placement[a] = made.placement[a];
  return saved;
}

}  // namespace

std::vector<OpPlan> plan_ops(const PlanContext& ctx) {
  const OpGraph& g = ctx.graph;
  const Mesh& mesh = ctx.tree.mesh;
  std::vector<OpPlan> plans(g.ops.size());
  // (tensor, chunk) pairs already saved: a tensor that crosses a pipeline boundary is kept by
  // both stages that read it.
  std::vector<std::vector<int>> saved_in_chunks(g.tensors.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const ParallelConfig& cfg = ctx.tree.nodes[op.module].config;
    OpPlan& p = plans[i];
    p.op = static_cast<int>(i);
    p.chunk = cfg.chunk;
    p.recompute = cfg.recompute;
    p.axis_dim = resolve_op_axis_dims(op, cfg, mesh);

    double work_shards = 1;
    for (int a = 0; a < kNumMeshAxes; ++a)
      if (p.axis_dim[a] >= 0) work_shards *= mesh.size[a];

    // Layouts
    double global_traffic = 0, local_traffic = 0;
    auto account = [&](const Tensor& t, const Layout& l) {
      global_traffic += t.bytes();
      local_traffic += tensor_bytes_per_rank(t, l, mesh);
    };
    for (const TensorUse& in : op.inputs) {
      Layout req = layout_of_use(in, p.axis_dim, mesh, false);
      p.input_required.push_back(req);
      p.input_saved.push_back(saved_layout(g, plans, in.tensor, req, mesh));
      p.input_grad.push_back(layout_of_use(in, p.axis_dim, mesh, true));
      account(g.tensors[in.tensor], req);
    }
    p.output = layout_of_use(op.output, p.axis_dim, mesh, true);
    p.output_grad_required = layout_of_use(op.output, p.axis_dim, mesh, false);
    if (op.output.tensor >= 0) account(g.tensors[op.output.tensor], p.output_grad_required);

    const int zero = cfg.zero;
    for (const TensorUse& wu : op.weights) {
      WeightPlan w;
      w.zero = zero;
      w.tensor = wu.tensor;
      w.use = layout_of_use(wu, p.axis_dim, mesh, false);
      w.grad = layout_of_use(wu, p.axis_dim, mesh, true);
      w.storage = w.use;
      w.grad_target = w.use;
      for (int a = 0; a < kNumMeshAxes; ++a) {
        if (!(kDataAxes & (1u << a)) || mesh.size[a] <= 1) continue;
        if (w.use.placement[a] != kReplicate) continue;
        w.data_axes_replicated |= static_cast<AxisMask>(1u << a);
        // ZeRO shards what data parallelism replicates: grads from stage 2, weights at stage 3.
        // A flat shard is modelled as Shard(0) of the tensor.
        if (zero >= 2) w.grad_target.placement[a] = 0;
        if (zero >= 3) w.storage.placement[a] = 0;
      }
      const Tensor& t = g.tensors[wu.tensor];
      w.local_params = static_cast<double>(t.elements()) / w.use.shard_factor(mesh);
      account(t, w.use);
      p.weights.push_back(w);
    }
    const double ratio = global_traffic > 0 ? local_traffic / global_traffic : 1.0 / work_shards;
    p.fwd = make_work(op, op.fwd_flops, op.fwd_bytes, ratio, work_shards, p.axis_dim, mesh);
    p.bwd_input = make_work(op, op.bwd_input_flops, op.bwd_input_bytes, ratio, work_shards, p.axis_dim, mesh);
    p.bwd_weight =
        make_work(op, op.bwd_weight_flops, op.bwd_weight_bytes, ratio, work_shards, p.axis_dim, mesh);

    // Saved activations: each input tensor is stored once per chunk, by the first op that saves it.
    if (op.saves_inputs) {
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const int t = op.inputs[k].tensor;
        auto& chunks = saved_in_chunks[t];
        if (std::find(chunks.begin(), chunks.end(), p.chunk) != chunks.end()) continue;
        chunks.push_back(p.chunk);
        p.saved_input_bytes += tensor_bytes_per_rank(g.tensors[t], p.input_saved[k], mesh);
      }
    }
    for (const TensorUse& ex : op.saved_extra)
      p.saved_extra_bytes +=
          tensor_bytes_per_rank(g.tensors[ex.tensor], layout_of_use(ex, p.axis_dim, mesh, false), mesh);
  }
  return plans;
}

}  // namespace proteus
