// The strategy tree (DESIGN.md §3): the OpGraph's module tree with a parallel config on every
// node, inherited downwards unless a node sets its own. The macros of StrategySpec (dp, tp,
// sp, cp, ep, pp, recompute) fill the root; overrides set nodes by module path. The root also
// carries the schedule (stages, chunks, micro-batches, schedule kind).
#pragma once
#include <array>
#include <string>
#include <vector>
#include "proteus/config.h"
#include "proteus/mesh.h"
#include "proteus/op_graph.h"

namespace proteus {

// How a mesh axis splits the ops of a module: the names of iteration dims it may split, in
// order of preference (the first one an op has wins); empty = replicate the op on this axis.
using AxisDims = std::vector<std::string>;

// Every strategy knob the compiler reads lives here, inherited from the parent module unless
// a node sets its own (the compiler never reads StrategySpec). Knobs that act once per rank
// (gradient buckets, overlap switches) are read from the root node.
struct ParallelConfig {
  std::array<AxisDims, kNumMeshAxes> axis_dims;
  Recompute recompute = Recompute::None;
  RecomputeModules recompute_modules = kDefaultRecomputeModules;  // what selective recomputes (root)
  int chunk = -1;  // model chunk (virtual pipeline stage, 0..pp*v-1); -1 = inherit/derive
  int zero = 0;    // ZeRO stage of this module's weights: 1 optimizer states, 2 + grads, 3 + weights
  double grad_bucket_MB = 25;        // data-parallel gradient bucket size (root node)
  bool overlap_grad_reduce = true;   // reduce a bucket as soon as its gradients are final (root)
  bool overlap_param_gather = true;  // ZeRO-1/2 parameter all-gather overlapped with the next forward (root)
  // Megatron-Core's grad_sync_func (align_grad_reduce, overlap_grad_reduce, pp > 1): its pipeline
  // schedules launch a model chunk's gradient reductions themselves, pipeline-rank backward passes
  // after the chunk's last one (interleaved), or after the last backward on every stage but the
  // first (1F1B), instead of the DDP hooks as each bucket fills (compile/grad_sync_points.h). Root.
  bool megatron_grad_sync_func = false;
  // Apex's DistributedFusedAdam (strategy.distributed_optimizer "apex"): a gradient bucket per
  // transformer layer (per model chunk under the interleaved schedule), the other parameters in
  // the first, and the updated parameters gathered by its pre-forward hooks, one group at a time
  // (compile/apex_param_sync.h); under the interleaved schedule Megatron-Core's param_sync_func
  // launches model chunks too. Root.
  bool apex_distributed_adam = false;
  bool apex_param_sync_func = false;
  bool grad_reduce_in_fp32 = true;  // gradient buffers and their reduction in fp32, else 16-bit (root)
  // Framework semantics (docs/frameworks.md): when gradients are reduced (root), how context
  // parallelism exchanges K/V in attention, and TE's TP comm/GEMM overlap.
  GradSync grad_sync = GradSync::AtBoundary;
  CpCommType cp_comm_type = CpCommType::P2p;
  int cp_a2a_size = 1;  // a2a+p2p: the inner all-to-all group (resolved, cp_a2a_group_size)
  bool tp_comm_overlap = false;
  // tp_comm_overlap is PyTorch's micro-pipelined async TP over symmetric memory (framework fsdp:
  // TorchTitan's enable_async_tensor_parallel), not TE's userbuffers (compile/userbuffers.h).
  bool torch_async_tp = false;
  // Tensor parallelism is PyTorch DTensor's under autograd (framework fsdp): a linear keeps the
  // gathered input it ran on (no gather again for its weight gradient), and the collective on
  // an input gradient starts when the op's autograd node returns, after its weight gradient
  // (docs/frameworks/tensor-parallelism-and-moe.md "DTensor tensor parallelism").
  bool dtensor_tp = false;
  // Memory-bound ops run as eager PyTorch ops (framework fsdp without torch_compile): every
  // kernel fusion off (Op::fusion).
  bool eager_elementwise = false;
  // Kernel fusions this run has off, one bit per KernelFusion: all under eager_elementwise,
  // else Megatron's --no-*-fusion flags (strategy.bias_dropout_fusion, ...).
  uint32_t unfused_mask = 0;
  bool unfused(KernelFusion f) const {
    return f != KernelFusion::None && (unfused_mask >> static_cast<int>(f) & 1u) != 0;
  }
  // PyTorch FSDP2's copy-out after each all-gather and copy-in before each reduce-scatter run
  // on the compute stream (framework fsdp; compile/fsdp_copies.h).
  bool fsdp2_copies = false;
  // ZeRO-3 under framework megatron is Megatron-FSDP (data_parallel_sharding_strategy
  // optim_grads_params, fsdp_unit_modules [TransformerLayer]): FSDP2's parameter groups without
  // its copies, each layer resharded after its forward, and prefetch by element count
  // (OpIndex::fsdp_prefetch_units; docs/frameworks/data-parallelism.md "Megatron-FSDP").
  bool megatron_fsdp = false;
  // DeepSpeed ZeRO-3's stage3_param_persistence_threshold (elements): a parameter with fewer
  // (norm weights, biases) is never partitioned, so never gathered; its gradient and optimizer
  // states are still partitioned, its update gathered after the step (compile/op_plan.cpp).
  // 0: every parameter partitioned.
  double zero3_persistence_elements = 0;
  // torch.distributed.pipelining runs FSDP2's gradient reduction once per stage, after the
  // stage's last backward (PipelineStage.backward_maybe_with_nosync: every backward under
  // set_requires_gradient_sync(False), then post_backward of every parameter group), as a chain
  // that holds the compute stream (IterationTail::end_pass). Framework fsdp with pp > 1.
  bool fsdp_pp_post_backward = false;
  // The optimizer step is torch.optim's foreach implementation after torch.nn.utils'
  // clip_grad_norm_ (TorchTitan's default, framework fsdp; compile/op_index.cpp).
  bool torch_optimizer = false;
  // Context parallelism is PyTorch's (context_parallel): its fp32 output merge and dQ/dK/dV
  // accumulation per step (framework fsdp; compile/torch_cp_merge.h).
  bool torch_cp = false;
  // Context parallelism is DeepSpeed-Ulysses (deepspeed.sequence.layer.DistributedAttention,
  // Megatron-DeepSpeed's --ds-sequence-parallel-size): Transformer Engine's a2a exchanges without
  // its chunk reordering or its second exchange of the saved output (framework deepspeed;
  // compile/ulysses_copies.h).
  bool ulysses_cp = false;
  // Selective recompute is TorchTitan's op-level policy (compile/torch_op_sac.h), not
  // Megatron's recompute modules (framework fsdp).
  bool torch_op_sac = false;
  // Megatron-Core's attention splits Q, K, V out of linear_qkv's output and TE copies the views
  // it cannot take (Op::split_qkv_fwd_bytes; framework megatron).
  bool megatron_split_qkv = false;
  // How a linear op's GEMMs are launched (compile/linear_kernels.h): Megatron's fused linear_qkv
  // (Op::fused_qkv_n_scale; frameworks megatron and deepspeed), or one GEMM per nn.Linear of the
  // PyTorch model (Op::torch_linears: Llama's wk and wv, w1 and w3; framework fsdp).
  bool fused_qkv_gemm = false;
  bool torch_linear_gemms = false;
  // Megatron's gradient_accumulation_fusion (on by default): a linear's weight-gradient GEMM adds
  // into the parameter's main_grad in its epilogue; off, a separate kernel adds the GEMM's output
  // into main_grad (compile/linear_kernels.h; framework megatron).
  bool wgrad_into_main_grad = false;
  bool wgrad_add_to_main_grad = false;
  // TorchTitan's attention repeats grouped K/V to every head before SDPA (Op::repeat_kv_fwd_bytes;
  // framework fsdp).
  bool torch_repeat_kv = false;
  // The loss is PyTorch's F.cross_entropy on the fp32 logits (TorchTitan's loss_fn), whose
  // log-softmax and gradients are new tensors; Megatron's works in place (framework fsdp;
  // compile/cross_entropy_memory.h).
  bool torch_cross_entropy = false;
  // PyTorch DDP's first gradient bucket is 1 MB (dist._DEFAULT_FIRST_BUCKET_BYTES), the later
  // ones grad_bucket_MB; Megatron's and DeepSpeed's buckets are all one size (framework fsdp,
  // zero 0: DDP; compile/iteration_tail.cpp).
  bool ddp_first_bucket = false;
  // DeepSpeed's BF16_Optimizer (deepspeed_bf16_optimizer, strategy_spec.h; root): the optimizer
  // states at zero 1, the gradients all-reduced whole in fp32 after the last backward, each
  // micro-batch's bf16 gradients cast and added into that fp32 buffer (compile/iteration_tail.cpp).
  bool bf16_optimizer = false;
  // DeepSpeed's other optimizers (FP16_Optimizer, ZeRO-1) leave the gradients to autograd across
  // micro-batches: each later one is added into param.grad in place (compile/iteration_tail.cpp).
  bool autograd_grad_accumulation = false;
  bool fp8_param_gather = false;  // FP8 weights gathered in FP8 (root)
  // FP8 linears keep their weights' FP8 copies from the first micro-batch's forward for the rest
  // of the iteration (Transformer Engine); torchao's Float8Linear casts in every forward
  // (framework fsdp; compile/fp8_weight_casts.h). Root.
  bool fp8_weight_cache = true;
  bool store_param_remainders = false;  // master weights as 16-bit remainders of the bf16 weights (root)
  // The precision-aware optimizer's state dtypes (root; strategy_spec.h).
  StateDtype exp_avg_dtype = StateDtype::Fp32;
  StateDtype exp_avg_sq_dtype = StateDtype::Fp32;
  StateDtype main_params_dtype = StateDtype::Fp32;
  bool tp_only_amax_red = false;  // delayed scaling's amax all-reduce over tp x cp only (root)
  // MoE (root): the dispatcher, and whether tp splits whole experts (expert_tp 1 under tp > 1).
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  bool experts_fold_tp = false;
};

struct StrategyNode {
  int module = -1;
  ParallelConfig config;         // resolved (after inheritance)
  std::vector<std::string> set;  // what this node set itself ("map.dp", "recompute", "stage")
  bool chunk_fixed = false;      // its chunk was set by an override (here or above)
};

struct StrategyTree {
  Mesh mesh;
  Schedule schedule = Schedule::OneFOneB;
  int stages = 1;          // physical pipeline stages (pp)
  int virtual_stages = 1;  // chunks per stage
  int micro_batches = 1;
  int64_t micro_batch = 1;
  bool sequence_parallel = false;
  // Megatron-Core's blocking pipeline point-to-point (compile/blocking_p2p.h): its
  // non-interleaved 1F1B always, its interleaved schedule without overlap_p2p_comm, whose
  // steady state makes one call per forward-backward pair (p2p_paired_steady_state).
  bool blocking_p2p = false;
  bool p2p_paired_steady_state = false;
  // PyTorch's PipelineScheduleMulti (ScheduleInterleaved1F1B under framework fsdp): one blocking
  // exchange per time step of its pipeline_order (compile/torch_lockstep_p2p.h).
  bool torch_lockstep_p2p = false;
  // Legacy Megatron-LM's scatter/gather of pipeline tensors over tp (pass_derivation.cpp, p2p_layout).
  bool scatter_gather_p2p = false;
  std::vector<StrategyNode> nodes;  // one per OpGraph module, same index
  // Copies of the model (DualPipe: 2; PipelineSchedule::copies). Ops carry a model chunk
  // (0..model_chunks()-1); copy k's chunk c is the pipeline's chunk k * model_chunks() + c and
  // runs the micro-batches of run k (copy_of_micro_batch).
  int copies = 1;
  std::vector<int> chunk_layers;  // layers per model chunk (model_chunks() entries)
  std::vector<int> chunk_stage;   // stage of each chunk, chunks in pipeline order (pp * v entries)
  int chunks() const { return stages * virtual_stages; }
  int model_chunks() const { return chunks() / copies; }
  int micro_batches_per_copy() const { return micro_batches / copies; }
  int copy_of_micro_batch(int mb) const { return mb / micro_batches_per_copy(); }
  // The root module's configuration: the knobs that act once per rank.
  const ParallelConfig& root() const { return nodes.front().config; }
  // The stage that runs model chunk `chunk` of copy `copy`.
  int stage_of_chunk(int chunk, int copy = 0) const {
    return chunk_stage[static_cast<size_t>(copy * model_chunks() + chunk)];
  }
};

// The op dim (index into op.dims) each mesh axis splits for `op` under `config`: the first
// name of the axis's list that the op has (-1: the op is replicated along that axis). The
// MoE dispatch routes each rank's own tokens, so it is never split by expert.
std::array<int, kNumMeshAxes> resolve_op_axis_dims(const Op& op, const ParallelConfig& config,
                                                   const Mesh& mesh);

// Builds the tree; throws Error("invalid_config", "strategy.overrides[i].path", ...) when an
// override matches no module or names a dim no op of its modules has.
StrategyTree build_strategy_tree(const Config& config, const OpGraph& graph);
std::string tree_to_text(const StrategyTree& tree, const OpGraph& graph);

// Layers per chunk: as even as possible, the first and last chunks lighter when it does not
// divide (Llama 3 405B: 126 layers on 16 stages = 7, 8 x 14, 7).
std::vector<int> split_layers(int layers, int chunks);
// Layers per chunk (pipeline order) as Megatron-Core's uneven-pipeline options give them
// (first/last_stage_layers, account_for_embedding/loss_in_pipeline_split; pipeline_split.cpp);
// throws invalid_config naming the option where Megatron-Core's divisibility checks fail.
std::vector<int> megatron_stage_layers(const StrategySpec& s, int layers);

// The stage of each model chunk: Megatron's round robin (chunk c on stage c % stages), or a V
// (chunk c on stage c going down, then 2 * stages - 1 - c coming back: ZB-V, DualPipeV).
std::vector<int> chunk_placement(int stages, int chunks_per_stage, bool v_shape);

}  // namespace proteus
