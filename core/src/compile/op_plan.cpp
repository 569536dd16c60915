#include "op_plan.h"

#include <algorithm>
#include <cmath>

#include "cross_entropy_memory.h"
#include "fp8_plan.h"
#include "linear_gemm_shapes.h"
#include "linear_kernels.h"
#include "proteus/error.h"
#include "torch_op_sac.h"
#include "userbuffers.h"

namespace proteus {

std::vector<size_t> kv_inputs(const Op& op) {
  std::vector<size_t> out;
  const int seq_kv = op.find_dim("seq_kv");
  if (seq_kv < 0) return out;
  for (size_t k = 0; k < op.inputs.size(); ++k)
    if (std::find(op.inputs[k].dims.begin(), op.inputs[k].dims.end(), seq_kv) != op.inputs[k].dims.end())
      out.push_back(k);
  return out;
}

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
                      double work_shards, const std::array<int, kNumMeshAxes>& axis_dim, const Mesh& mesh,
                      GemmPass pass) {
  ComputeWork w;
  w.op_kind = op.kind;
  w.flops = flops / work_shards;
  w.bytes = bytes_global * traffic_ratio;
  const int64_t m = local_product(op, op.gemm_m_dims, axis_dim, mesh);
  const int64_t n = local_product(op, op.gemm_n_dims, axis_dim, mesh);
  const int64_t k = local_product(op, op.gemm_k_dims, axis_dim, mesh);
  const GemmShape shape = linear_pass_shape(op, pass, {m, n, k});
  w.gemm_m = shape.m;
  w.gemm_n = shape.n;
  w.gemm_k = shape.k;
  w.gemm_batch = op.gemm_batch_dims.empty() ? 1 : local_product(op, op.gemm_batch_dims, axis_dim, mesh);
  w.kernels = 1;
  return w;
}

// The rank's share of an op's bytes: what its plan moves over what the whole op moves (0 for
// an op that moves none).
double per_rank_share(double op_bytes, double plan_bytes) { return op_bytes > 0 ? plan_bytes / op_bytes : 0; }

// An op whose kernel fusion the run has off (Op::fusion): the separate kernels' traffic, as a
// ratio to the fused kernel's so that the op's per-rank share is kept. Megatron's separate bias
// add and its GLU's chunk run only under Megatron (eager PyTorch's nn.Linear adds the bias inside
// the GEMM, and TorchTitan's SwiGLU has two linears).
void apply_unfused_kernels(const Op& op, bool eager, OpPlan* p) {
  const double fwd_share = per_rank_share(op.fwd_bytes, p->fwd.bytes);
  const double bwd_share = per_rank_share(op.bwd_input_bytes, p->bwd_input.bytes);
  const double bias_add = eager ? 0 : op.separate_bias_add_bytes * fwd_share;
  const double glu_chunk = eager ? 0 : op.glu_chunk_bwd_bytes * bwd_share;
  p->fwd.bytes += op.unfused_fwd_extra_bytes * fwd_share;
  p->bwd_input.bytes += op.unfused_bwd_extra_bytes * bwd_share;
  p->fwd.bytes *= op.eager_fwd_bytes_factor;
  p->bwd_input.bytes *= op.eager_bwd_input_bytes_factor;
  p->bwd_weight.bytes *= op.eager_bwd_weight_bytes_factor;
  p->fwd.bytes += bias_add;         // its own kernel: not one of the eager chain's
  p->bwd_input.bytes += glu_chunk;  // likewise
}

// Megatron-Core's Q/K/V views and TE's copies of them (Op::split_qkv_fwd_bytes): side kernels
// of the attention, at the op's per-rank share of its bytes.
void apply_split_qkv_copies(const Op& op, OpPlan* p) {
  const double share = per_rank_share(op.fwd_bytes, p->fwd.bytes);
  p->fwd.side_bytes += op.split_qkv_fwd_bytes * share;
  p->bwd_input.side_bytes += op.split_qkv_bwd_bytes * share;
}

// TorchTitan's repeat_kv (Op::repeat_kv_fwd_bytes): the copies and their gradients' sums as side
// kernels of the attention, and the repeated K/V SDPA saves, at the rank's share of K/V as the
// model code holds them, before any context-parallel gather (the layout the backward keeps).
void apply_repeat_kv(const OpGraph& g, const Op& op, const Mesh& mesh, OpPlan* p) {
  for (const size_t k : kv_inputs(op)) {
    const Tensor& kv = g.tensors[op.inputs[k].tensor];
    const double share = tensor_bytes_per_rank(kv, p->input_saved[k], mesh) / kv.bytes();
    p->repeat_kv_copy_bytes = op.repeat_kv_fwd_bytes * share;
    p->fwd.side_bytes += p->repeat_kv_copy_bytes;
    p->bwd_input.side_bytes += op.repeat_kv_bwd_bytes * share;
    p->repeat_kv_saved_bytes = op.repeat_kv_saved_bytes * share;
    p->kv_repeats = static_cast<double>(op.kv_repeats);
    return;
  }
}

// The language model's cross-entropy: the logits and the fp32 tensors the framework's code
// makes of them, held while the loss runs (cross_entropy_memory.h); its saved softmax is the
// op's saved tensor. Per rank, at the logits' shards (the vocabulary over tp, the sequence
// over cp).
void apply_cross_entropy_memory(const OpGraph& g, const Op& op, const Mesh& mesh, bool torch, OpPlan* p) {
  const Tensor& logits = g.tensors[op.inputs[0].tensor];
  const double per_rank =
      tensor_bytes_per_rank(logits, p->input_required[0], mesh) / logits.bytes_per_element;
  // TorchTitan's default under TP: the logits stay split over the vocabulary (loss_parallel).
  const bool loss_parallel = p->input_required[0].placement[kAxisTp] >= 0 && mesh.size[kAxisTp] > 1;
  const CrossEntropyMemory m = torch ? torch_cross_entropy_memory(logits.bytes_per_element, loss_parallel)
                                     : megatron_cross_entropy_memory(logits.bytes_per_element);
  p->fwd_transient_bytes = m.forward_peak * per_rank;
  p->bwd_transient_bytes = m.backward_extra * per_rank;
}

// Context parallelism with the K/V ring (cp_comm_type p2p, and a2a+p2p whose all-to-alls the
// attention runs inside itself, pass_cp_hierarchical.cpp): the attention core never holds
// the whole K/V; blocks pass around the cp ring while it computes (pass_derivation.cpp), and
// the ring returns dK/dV already summed for the local shard. So K/V stay in the layout their
// producer made along cp, forward and backward (TE AttnFuncWithCPAndKVP2P).
void keep_kv_local(const OpGraph& g, const std::vector<OpPlan>& plans, const Op& op, OpPlan* p) {
  for (const size_t k : kv_inputs(op)) {
    const int prod = g.tensors[op.inputs[k].tensor].producer;
    if (prod < 0) continue;
    const int along_cp = plans[prod].output.placement[kAxisCp];
    p->input_required[k].placement[kAxisCp] = along_cp;
    p->input_saved[k].placement[kAxisCp] = along_cp;
    p->input_grad[k].placement[kAxisCp] = along_cp;
  }
}

// A transformer layer (or a CNN stage) or a multi-token prediction module, at any depth.
bool in_repeated_block(const OpGraph& g, int module) {
  for (int m = module; m >= 0; m = m > 0 ? g.modules[m].parent : -1)
    if (g.modules[m].layer >= 0 || g.modules[m].kind == "mtp") return true;
  return false;
}

// tp_comm_overlap, TE's bulk overlaps (userbuffers.h): a linear in a transformer layer (TE's
// linears; not Megatron's output layer) whose input is kept as the
// sequence-parallel shard gathers it again during its data-gradient GEMM, and one whose input
// gradient is partial over tp reduce-scatters it during its weight-gradient GEMM; the
// communication kernels hold kUserbuffersCommSms SMs of those GEMMs.
void apply_bulk_overlap(const OpGraph& g, const Op& op, const Mesh& mesh, OpPlan* p) {
  const bool te_linear = op.kind == OpKind::Matmul && !p->weights.empty() && g.modules[op.module].layer >= 0;
  if (!te_linear || mesh.size[kAxisTp] <= 1) return;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    if (p->input_saved[k].placement[kAxisTp] != p->input_required[k].placement[kAxisTp])
      p->bwd_input.sm_reserved = kUserbuffersCommSms;
    if (p->input_grad[k].placement[kAxisTp] == kPartial) p->bwd_weight.sm_reserved = kUserbuffersCommSms;
  }
}

}  // namespace

// The layout an input is kept in for the backward: where the forward all-gathered it (the
// producer had it sharded, the op needs it whole), the shard is kept and gathered again later
// (Megatron's and TE's linears under sequence parallelism). DTensor's tensor parallelism
// (dtensor_tp) gathers in PrepareModuleInput and the linear saves the gathered tensor it ran on.
Layout saved_layout(const OpGraph& g, const std::vector<OpPlan>& plans, int tensor, const Layout& required,
                    const Mesh& mesh, bool dtensor_tp) {
  const int prod = g.tensors[tensor].producer;
  if (prod < 0) return required;
  const Layout& made = plans[prod].output;
  Layout saved = required;
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (mesh.size[a] > 1 && required.placement[a] == kReplicate && made.placement[a] >= 0 &&
        !(dtensor_tp && a == kAxisTp))
      saved.placement[a] = made.placement[a];
  return saved;
}

std::vector<OpPlan> plan_ops(const PlanContext& ctx) {
  const OpGraph& g = ctx.graph;
  const Mesh& mesh = ctx.tree.mesh;
  std::vector<OpPlan> plans(g.ops.size());
  // (tensor, chunk) pairs already saved: a tensor that crosses a pipeline boundary is kept by
  // both stages that read it.
  std::vector<std::vector<int>> saved_in_chunks(g.tensors.size());
  std::vector<char> fp8_cast(g.tensors.size(), 0);
  const bool fp8 = ctx.training.precision == Precision::Fp8;
  const std::vector<char> fp8_only = fp8 ? tensors_read_only_by_fp8_linears(g) : std::vector<char>{};
  const std::vector<double> sac_shares =
      ctx.tree.root().torch_op_sac ? torch_op_sac_saved_shares(g) : std::vector<double>(g.ops.size(), -1.0);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const ParallelConfig& cfg = ctx.tree.nodes[op.module].config;
    OpPlan& p = plans[i];
    p.op = static_cast<int>(i);
    p.chunk = cfg.chunk;
    p.recompute = cfg.recompute;
    // Full recompute checkpoints the repeated blocks only: Megatron-Core's
    // TransformerBlock._checkpointed_forward runs over its layers (the embedding, the final norm,
    // the output layer and the loss run once), as torch.utils.checkpoint around TorchTitan's
    // and Hugging Face's decoder layers.
    if (cfg.recompute == Recompute::Full && !in_repeated_block(g, op.module)) p.recompute = Recompute::None;
    if (cfg.recompute == Recompute::Selective && cfg.torch_op_sac) {
      // TorchTitan checkpoints each transformer block whole, keeping what its policy saves.
      const bool in_block = sac_shares[i] >= 0;
      p.recompute = in_block ? Recompute::Full : Recompute::None;
      p.sac_saved_share = in_block ? sac_shares[i] : 0;
      p.op_sac = in_block;
    } else if (cfg.recompute == Recompute::Selective) {
      p.recompute_modules = op.recompute_modules & cfg.recompute_modules;
    }
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
      p.input_saved.push_back(saved_layout(g, plans, in.tensor, req, mesh, cfg.dtensor_tp));
      p.input_grad.push_back(layout_of_use(in, p.axis_dim, mesh, true));
    }
    // PyTorch's all-gather rotater gathers inside the attention too (pass_torch_cp.cpp).
    if (op.kind == OpKind::Attention && mesh.size[kAxisCp] > 1 &&
        (cfg.cp_comm_type == CpCommType::P2p || cfg.cp_comm_type == CpCommType::A2aP2p ||
         (cfg.torch_cp && cfg.cp_comm_type == CpCommType::AllGather)))
      keep_kv_local(g, plans, op, &p);
    // A ring attention's traffic is that of its local K/V: each rank's share of the score
    // matrix (without flash attention) is its queries against all keys, 1/(tp*cp) of it, as under
    // Ulysses; counting the K/V as whole scaled the score traffic by their share instead.
    for (size_t k = 0; k < op.inputs.size(); ++k)
      account(g.tensors[op.inputs[k].tensor], p.input_required[k]);
    p.output = layout_of_use(op.output, p.axis_dim, mesh, true);
    p.output_grad_required = layout_of_use(op.output, p.axis_dim, mesh, false);
    if (op.output.tensor >= 0) account(g.tensors[op.output.tensor], p.output_grad_required);

    for (const TensorUse& wu : op.weights) {
      WeightPlan w;
      w.tensor = wu.tensor;
      w.use = layout_of_use(wu, p.axis_dim, mesh, false);
      const Tensor& t = g.tensors[wu.tensor];
      w.local_params = static_cast<double>(t.elements()) / w.use.shard_factor(mesh);
      // DeepSpeed keeps a parameter below its persistence threshold whole (ds_numel: the
      // parameter as the module holds it, a tensor-parallel slice): ZeRO-2 for it.
      const bool persistent = cfg.zero >= 3 && w.local_params < cfg.zero3_persistence_elements;
      const int zero = persistent ? 2 : cfg.zero;
      w.zero = zero;
      w.grad = layout_of_use(wu, p.axis_dim, mesh, true);
      w.storage = w.use;
      w.grad_target = w.use;
      for (int a = 0; a < kNumMeshAxes; ++a) {
        if (!(kDataAxes & (1u << a)) || mesh.size[a] <= 1) continue;
        if (w.use.placement[a] != kReplicate) continue;
        w.data_axes_replicated |= static_cast<AxisMask>(1u << a);
        // ZeRO shards what data parallelism replicates: optimizer states from stage 1, weights at
        // stage 3. A flat shard is modelled as Shard(0) of the tensor. ZeRO-1 is Megatron's distributed
        // optimizer: gradients reduce-scattered to the optimizer's shard
        // (docs/frameworks/data-parallelism.md), the full fp32 buffer kept (iteration_tail).
        // DeepSpeed's BF16_Optimizer all-reduces the whole buffer instead.
        if (zero >= 1 && !cfg.bf16_optimizer) w.grad_target.placement[a] = 0;
        if (zero >= 3) w.storage.placement[a] = 0;
      }
      account(t, w.use);
      p.weights.push_back(w);
    }
    const double ratio = global_traffic > 0 ? local_traffic / global_traffic : 1.0 / work_shards;
    p.fwd =
        make_work(op, op.fwd_flops, op.fwd_bytes, ratio, work_shards, p.axis_dim, mesh, GemmPass::Forward);
    p.bwd_input = make_work(op, op.bwd_input_flops, op.bwd_input_bytes, ratio, work_shards, p.axis_dim, mesh,
                            GemmPass::InputGrad);
    p.bwd_input.backward = true;
    p.bwd_weight = make_work(op, op.bwd_weight_flops, op.bwd_weight_bytes, ratio, work_shards, p.axis_dim,
                             mesh, GemmPass::WeightGrad);
    if (cfg.unfused(op.fusion)) apply_unfused_kernels(op, cfg.eager_elementwise, &p);
    if (cfg.megatron_split_qkv) apply_split_qkv_copies(op, &p);
    if (cfg.torch_repeat_kv) apply_repeat_kv(g, op, mesh, &p);
    if (op.vocab_cross_entropy) apply_cross_entropy_memory(g, op, mesh, cfg.torch_cross_entropy, &p);
    if (fp8) apply_fp8_recipe(ctx, i, fp8_only, &plans, &fp8_cast);
    // After the FP8 plan, which sizes the op's own output gradient from its forward shape.
    apply_linear_kernels(op, cfg, &p);
    apply_wgrad_accumulation(op, cfg, ctx.training.precision, &p);
    // PyTorch's async TP has no bulk kernels: those collectives stay NCCL's (userbuffers.h).
    if (cfg.tp_comm_overlap && !cfg.torch_async_tp) apply_bulk_overlap(g, op, mesh, &p);

    // Saved activations: each input tensor is stored once per chunk, by the first op that saves it.
    p.first_saves_input.assign(op.inputs.size(), 0);
    if (op.saves_inputs) {
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const int t = op.inputs[k].tensor;
        auto& chunks = saved_in_chunks[t];
        if (std::find(chunks.begin(), chunks.end(), p.chunk) != chunks.end()) continue;
        chunks.push_back(p.chunk);
        p.first_saves_input[k] = 1;
        const double bytes = tensor_bytes_per_rank(g.tensors[t], p.input_saved[k], mesh);
        p.saved_input_bytes += k == 0 && p.fp8_input_bytes_per_element > 0
                                   ? fp8_saved_input_bytes(g, plans, op, p, bytes)
                                   : bytes;
      }
    }
    for (const TensorUse& ex : op.saved_extra)
      p.saved_extra_bytes +=
          tensor_bytes_per_rank(g.tensors[ex.tensor], layout_of_use(ex, p.axis_dim, mesh, false), mesh);
  }
  return plans;
}

}  // namespace proteus
