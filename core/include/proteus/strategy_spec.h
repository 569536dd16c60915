// The parallelization strategy: the config's "strategy" object. Macros (dp, tp, ...) plus
// per-module overrides; the strategy builder turns them into a StrategyTree.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proteus/recompute_modules.h"
#include "proteus/training_spec.h"

namespace proteus {

// Named schedules (schedule.h); Explicit: the per-stage order given in the config.
enum class Schedule { GPipe, OneFOneB, Interleaved1F1B, ZbH1, ZbH2, ZbV, DualPipeV, DualPipe, Explicit };
enum class Recompute { None, Selective, Full };
// How the zero-bubble runtime orders a zb-h1, zb-h2 or zb-v schedule (docs/frameworks/pipeline.md,
// "Zero-bubble planning"): Profiled, its plan from the pass times its timers measure (what it
// runs after --zero-bubble-pipeline-timers-end-iter); Unit, the handcrafted order at T_F = T_B
// = T_W (Qi et al.'s schedules; what its first iterations approximate).
enum class ZbPlan { Profiled, Unit };
// Whose semantics a ZeRO stage follows (docs/frameworks.md): Megatron-Core (DDP, distributed
// optimizer), DeepSpeed ZeRO, PyTorch FSDP2.
enum class Framework { Megatron, DeepSpeed, Fsdp };
// When data-parallel gradients are reduced: once after the last micro-batch (a full gradient
// buffer accumulates until then) or after every micro-batch's backward (sharded gradients).
enum class GradSync { AtBoundary, PerMicroBatch };
// Transformer Engine's context-parallel attention (DotProductAttention cp_comm_type).
enum class CpCommType { P2p, AllGather, A2a, A2aP2p };
// The attention kernel a run uses (docs/frameworks/attention-and-kernels.md, "Attention kernels"): Auto
// follows the framework (attention_kernel_of); the others name cuDNN's fused attention (Transformer Engine's
// FusedAttention, PyTorch's CUDNN_ATTENTION), FlashAttention-2, FlashAttention-3.
enum class AttentionKernel { Auto, Cudnn, Fa2, Fa3 };
// Megatron-Core's MoE token dispatchers (--moe-token-dispatcher-type, token_dispatcher.py):
// all-to-all of each token to its experts' ranks (MoEAlltoAllTokenDispatcher), or all-gather
// of every token to every rank of the group and reduce-scatter of the outputs
// (MoEAllGatherTokenDispatcher).
enum class MoeDispatcher { AllToAll, AllGather };
// The dtype of one of Adam's states under Megatron-Core's precision-aware optimizer
// (--main-params-dtype, --exp-avg-dtype, --exp-avg-sq-dtype; Transformer Engine's FusedAdam
// master_weight_dtype, exp_avg_dtype, exp_avg_sq_dtype; docs/frameworks/data-parallelism.md, "Optimizer state
// dtypes"). Fp8 is TE's torch.uint8: an E4M3 Float8Tensor with one scale per tensor.
enum class StateDtype { Fp32, Bf16, Fp16, Fp8 };
// Which distributed optimizer shards the optimizer states at zero 1 under framework megatron
// (docs/frameworks/data-parallelism.md, "Apex's DistributedFusedAdam"): Megatron-Core's
// (--use-distributed-optimizer; NeMo's optim.name mcore_distributed_optim), or Apex's
// DistributedFusedAdam (NeMo's optim.name distributed_fused_adam, which NeMo's 24.x GPT and Llama
// recipes ran): gradients bucketed per transformer layer (per model chunk under the interleaved
// schedule) and the updated parameters gathered by Apex's own hooks.
enum class DistributedOptimizer { Megatron, Apex };
// Every schedule and recompute mode, in declaration order: the strategy search enumerates
// these lists (keep them in step with the enums and the config reader).
// (Explicit, an order given in the config, is not a generator: the search does not try it;
// nor DualPipeV, whose F&B groups its activation bound does not model yet. DualPipe is tried
// where the validator accepts it: even pp, an even number of micro-batches >= 2 pp.)
inline constexpr Schedule kSchedules[] = {Schedule::GPipe,   Schedule::OneFOneB, Schedule::Interleaved1F1B,
                                          Schedule::ZbH1,    Schedule::ZbH2,     Schedule::ZbV,
                                          Schedule::DualPipe};
inline constexpr Recompute kRecomputes[] = {Recompute::None, Recompute::Selective, Recompute::Full};

// A per-module setting. path matches module paths ("layers.3.mlp", "classifier",
// "layers.*.attention"; '*' matches one path segment, a trailing ".**" any depth).
struct OverrideSpec {
  std::string path;
  // mesh axis -> iteration dim name it splits in this module's ops ("" = replicate).
  std::map<std::string, std::string> map;
  std::optional<Recompute> recompute;
  std::optional<int> stage;  // pipeline stage this module runs on
};

// Bytes per gradient element in the gradient buffers and their reductions (and in Megatron's
// bucket, which --ddp-bucket-size counts in elements): fp32 main gradients, or the 16-bit training
// dtype when StrategySpec::grad_reduce_in_fp32 is false. The one place this rule lives: the
// compiler's buffers and collectives, the search's memory bound and the Megatron import/export.
constexpr double grad_bytes_per_element(bool grad_reduce_in_fp32) { return grad_reduce_in_fp32 ? 4 : 2; }

struct StrategySpec {
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  int64_t micro_batch = 1;
  Schedule schedule = Schedule::OneFOneB;
  int virtual_stages = 1;
  // Megatron-Core's microbatch_group_size_per_vp_stage for the interleaved schedule (0: pp).
  int microbatch_group_size = 0;
  // "schedule": {"stages": [["F0", "B0", ...], ...], "placement": "v"}: each stage's passes.
  std::vector<std::vector<std::string>> schedule_stages;
  bool schedule_v_placement = false;  // chunk c on stage c (down), then 2p-1-c (back up)
  // "copies": 2 (DualPipe's two copies of the model, placed in a V): a stage's chunk 0 (no
  // suffix) is copy 0's, its chunk 1 (".1") copy 1's; each copy runs half the micro-batches.
  int schedule_copies = 1;
  bool sequence_parallel = false;
  int zero = 0;
  Recompute recompute = Recompute::None;
  // What selective recompute recomputes: Megatron-Core's --recompute-modules (default
  // core_attn). Only with recompute "selective" (here or in an override).
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  // Resolved: the config's, or the framework's default (refresh_framework_defaults): true,
  // except under DeepSpeed, whose overlap_comm is on at ZeRO-3 only and whose ZeRO-1/2 gather
  // the weights inside the step.
  bool overlap_grad_reduce = true;
  bool overlap_grad_reduce_given = false;  // the config set overlap_grad_reduce
  bool overlap_param_gather = true;
  bool overlap_param_gather_given = false;  // the config set overlap_param_gather
  // Megatron-Core's align_grad_reduce (Megatron-LM's default; --no-align-grad-reduce, formerly
  // --no-delay-grad-reduce; NeMo's optim.align_grad_reduce): with overlap_grad_reduce and pp > 1
  // its pipeline schedules launch each model chunk's gradient reductions themselves, aligned
  // across the pipeline group (compile/grad_sync_points.h). false: the DDP hooks launch each
  // bucket as it fills in the chunk's last backward.
  bool align_grad_reduce = true;
  bool align_grad_reduce_given = false;  // the config set align_grad_reduce
  // Gradients accumulated and reduced in fp32 (4 bytes per parameter), Megatron-Core's
  // DistributedDataParallelConfig.grad_reduce_in_fp32, forced on for bf16 by Megatron-LM unless
  // --grad-reduce-in-bf16; false: in the 16-bit dtype (2 bytes), as NeMo's optim.grad_sync_dtype
  // bf16 and PyTorch FSDP's reduce_dtype bf16. Mixed precision only.
  // Resolved: the config's, or the framework's default (default_grad_reduce_in_fp32).
  bool grad_reduce_in_fp32 = true;
  bool grad_reduce_in_fp32_given = false;  // the config set grad_reduce_in_fp32
  // Framework deepspeed, bf16: DeepSpeed's data_types.grad_accum_dtype "fp32", which selects its
  // BF16_Optimizer (fp32 gradient buffer, states sharded as ZeRO-1) at ZeRO stage 0 or 1
  // (engine._do_optimizer_sanity_check). Resolved: the config's, or DeepSpeed's default (true
  // for bf16 without ZeRO, get_data_types; false otherwise).
  bool grad_accum_in_fp32 = false;
  bool grad_accum_in_fp32_given = false;  // the config set grad_accum_in_fp32
  // MB of gradients per data-parallel bucket. Resolved: the config's, or the framework's default
  // (default_grad_bucket_MB).
  double grad_bucket_MB = 25;
  bool grad_bucket_MB_given = false;  // the config set grad_bucket_MB
  Framework framework = Framework::Megatron;
  GradSync grad_sync = GradSync::AtBoundary;  // resolved: the config's, or the framework's default
  bool grad_sync_given = false;               // the config set grad_sync (else default_grad_sync)
  // Resolved: the config's, or the framework's default: p2p (Megatron-Core), all_gather (PyTorch's
  // context_parallel under fsdp), a2a (DeepSpeed-Ulysses).
  CpCommType cp_comm_type = CpCommType::P2p;
  bool cp_comm_type_given = false;                           // the config set cp_comm_type
  AttentionKernel attention_kernel = AttentionKernel::Auto;  // as given; attention_kernel_of resolves it
  // a2a+p2p: ranks of the inner all-to-all group (Megatron --hierarchical-context-parallel-sizes
  // [a2a, p2p]); 0 = the largest power of two of cp that fits a node beside tp.
  int cp_a2a_size = 0;
  bool tp_comm_overlap = false;  // Transformer Engine userbuffers: TP collectives hidden in GEMMs
  // Framework "fsdp" only: the model runs under torch.compile (TorchTitan training.compile), whose
  // Inductor fuses each chain of pointwise ops and reductions into one kernel; without it the
  // norms, rotary and SwiGLU run as eager PyTorch ops (Op::eager_bytes_factor, docs/fidelity/overheads.md).
  bool torch_compile = false;
  // Framework "megatron" and "deepspeed" (Megatron-DeepSpeed): Megatron's fused kernels, on by
  // default as Megatron-LM's arguments set them; --no-bias-dropout-fusion, --no-bias-gelu-fusion /
  // --no-bias-swiglu-fusion, --no-masked-softmax-fusion and --no-rope-fusion turn them off and
  // the ops run as separate PyTorch kernels (docs/frameworks/attention-and-kernels.md, "Megatron's fused
  // kernels").
  bool bias_dropout_fusion = true;
  bool bias_activation_fusion = true;
  bool masked_softmax_fusion = true;
  bool apply_rope_fusion = true;
  // Megatron's gradient_accumulation_fusion (on by default; --no-gradient-accumulation-fusion):
  // the weight-gradient GEMM adds into main_grad itself; off, it writes a gradient in the training
  // dtype and a separate kernel adds that into main_grad (compile/linear_kernels.h). Framework
  // "megatron" only.
  bool gradient_accumulation_fusion = true;
  // FP8 weights gathered in FP8 (1 byte per parameter): Megatron-Core --fp8-param-gather (the
  // distributed optimizer's parameter buffer holds the FP8 weights, no 16-bit copy), TorchTitan
  // / torchao enable_fsdp_float8_all_gather (FSDP2 casts the shard, then gathers). FP8 only.
  bool fp8_param_gather = false;
  // The optimizer keeps only the low 16 bits of each fp32 master weight, the high 16 being the
  // bf16 weight itself (2 bytes per parameter instead of 4): NeMo's distributed_fused_adam under
  // bf16 O2 (megatron_base_model.py setup_optimization: store_params False,
  // store_param_remainders True for Apex's DistributedFusedAdam), Megatron-Core's
  // --use-precision-aware-optimizer (Transformer Engine >= 2.1 FusedAdam, store_param_remainders).
  // Adam over bf16 weights only (bf16 or fp8 training, not fp8_param_gather).
  bool store_param_remainders = false;
  DistributedOptimizer distributed_optimizer = DistributedOptimizer::Megatron;
  // Megatron-Core's precision-aware optimizer (--use-precision-aware-optimizer with
  // --exp-avg-dtype, --exp-avg-sq-dtype, --main-params-dtype): Adam's moments in fp32, bf16, fp16
  // or fp8, the master weights in fp32 or fp16 (Transformer Engine's FusedAdam keeps them and
  // unscales them to fp32 copies around its fp32 kernel). Framework megatron, Adam, ZeRO >= 1
  // (Megatron asserts the distributed optimizer); fp16 masters need 16-bit weights.
  StateDtype exp_avg_dtype = StateDtype::Fp32;
  StateDtype exp_avg_sq_dtype = StateDtype::Fp32;
  StateDtype main_params_dtype = StateDtype::Fp32;  // fp32 or fp16
  // Megatron-Core --tp-only-amax-red: delayed scaling's amax all-reduce over the tensor- and
  // context-parallel ranks only (get_amax_reduction_group(with_context_parallel=True,
  // tp_only_amax_red=True)), not the stage's data-parallel ranks too. FP8 only.
  bool tp_only_amax_red = false;
  // Expert tensor parallelism (--expert-tensor-parallel-size): tp (experts split like the dense
  // MLP, Megatron's default) or 1 (experts whole; the tp ranks join the expert-parallel group,
  // Megatron-Core's MoE parallel folding). 0: not given, the same as tp (expert_tp_of).
  int expert_tp = 0;
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  std::vector<OverrideSpec> overrides;
  std::vector<int> stage_layers;  // optional explicit layers per (virtual) stage
  // Megatron-Core's uneven pipelines (transformer_block.py, get_num_layers_to_build):
  // --decoder-first/last-pipeline-num-layers (0: not set; else >= 1, split over the stage's
  // chunks), and --account-for-embedding/loss-in-pipeline-split (the embedding and the loss
  // each take one layer's slot in the first / last chunk).
  int first_stage_layers = 0, last_stage_layers = 0;
  bool embedding_as_layer = false, loss_as_layer = false;
  // The zero-bubble runtime's --enable-optimizer-post-validation (sail-sg/zero-bubble-pipeline-
  // parallelism README, "Optimizer Post Validation"): no all-reduce over the stages before the
  // optimizer step (gradient norm, fp16 inf/nan), so consecutive iterations overlap and the
  // iteration time is the steady-state period (docs/design.md, section 4). Zero-bubble schedules.
  bool optimizer_post_validation = false;
  // Megatron-Core's interleaved schedule with overlap_p2p_comm (Megatron-LM's default since
  // --no-overlap-p2p-communication replaced --overlap-p2p-communication; NeMo's configs for
  // virtual pipelines): sends and receives posted ahead and waited only by the pass that needs
  // them. false: its blocking path, as Megatron's non-interleaved 1F1B always runs (the calls
  // wait on every send and receive; docs/frameworks/pipeline.md, "Pipeline point-to-point").
  bool overlap_p2p_comm = true;
  bool overlap_p2p_comm_given = false;
  // Legacy Megatron-LM's --scatter-gather-tensors-in-pipeline (megatron/p2p_communication.py,
  // 2021-2022; Narayanan et al. SC'21 section 4.1): without sequence parallelism, each tp rank
  // sends its 1/tp slice of a pipeline tensor and the receiver all-gathers them over tp.
  // Megatron-Core's p2p sends the whole tensor (false, the default).
  bool scatter_gather_p2p = false;
  ZbPlan zb_plan = ZbPlan::Profiled;  // default_zb_plan(framework) unless given
  bool zb_plan_given = false;
};

const char* to_string(Schedule);
// The zero-bubble runtime's schedules: zb-h1, zb-h2 (ZB-2P) and zb-v.
bool zero_bubble_schedule(Schedule schedule);
// Model chunks each pipeline stage runs: virtual_stages (interleaved), 2 (zb-v), or for an
// explicit schedule one more than the highest chunk its passes name ("F3.1": chunk 1).
int chunks_per_stage(const StrategySpec& s);
// Chunks placed in a V (zb-v, an explicit schedule with "placement": "v") rather than round robin.
bool v_placement(const StrategySpec& s);
// Copies of the model the schedule holds (DualPipe: 2, one per direction; else 1), and the
// chunks one copy is cut into: pp * chunks_per_stage / copies (what stage_layers lists).
int model_copies(const StrategySpec& s);
int model_chunks(const StrategySpec& s);
// Any of Megatron-Core's uneven-pipeline options is set (megatron_stage_layers applies).
bool uneven_pipeline(const StrategySpec& s);
const char* to_string(Recompute);
const char* to_string(ZbPlan);
// The zero-bubble runtime that plans from measured pass times is Megatron's fork
// (sail-sg/zero-bubble-pipeline-parallelism): Profiled under framework megatron. PyTorch's
// pipelining (FSDP) runs static zero-bubble orders (ScheduleInterleavedZeroBubble,
// ScheduleZBVZeroBubble) and DeepSpeed has none: Unit.
ZbPlan default_zb_plan(Framework framework);
const char* to_string(Framework);
const char* to_string(GradSync);
// docs/frameworks/data-parallelism.md, "Gradient synchronisation": Megatron and DDP reduce at the boundary;
// DeepSpeed ZeRO-2/3 and FSDP reduce-scatter every micro-batch, except FSDP under a pipeline
// (torch.distributed.pipelining disables gradient sync until the last micro-batch).
GradSync default_grad_sync(const StrategySpec& strategy);
// docs/frameworks/data-parallelism.md, "Gradient dtype": fp32 gradients (Megatron's main_grad, FSDP2's
// reduce_dtype under TorchTitan, DeepSpeed's BF16_Optimizer), except DeepSpeed's other optimizers,
// which keep autograd's gradients in the module's 16-bit dtype and reduce them in it
// (communication_data_type's default); fp32/tf32 training has only fp32 gradients.
bool default_grad_reduce_in_fp32(const StrategySpec& strategy, Precision precision);
// docs/frameworks/data-parallelism.md, "Gradient buckets": Megatron-Core's DDP buckets of
// max(40M, 1M x dp x cp) parameters when it overlaps the reduction, else all gradients in one
// (zero 0-3: training.py gives Megatron-FSDP the same size, and at zero 3 each layer's gradients
// are one bucket whatever it is, compile/fsdp_units.cpp);
// DeepSpeed's 5e8 elements (reduce_bucket_size, allreduce_bucket_size); PyTorch DDP's 25 MB
// (bucket_cap_mb; FSDP2 reduces per parameter group and ignores it). In MB of gradients of
// the resolved gradient dtype; one bucket is kMaxGradBucket_MB.
double default_grad_bucket_MB(const StrategySpec& strategy);
// After parsing, and after changing zero, framework or pp (the search does): grad_sync,
// grad_reduce_in_fp32, the two overlaps and cp_comm_type follow them again unless the config set
// them. DeepSpeed's defaults are its own (docs/frameworks/data-parallelism.md, "What DeepSpeed
// overlaps"; docs/frameworks/context-parallelism.md, "DeepSpeed-Ulysses"): overlap_comm only at
// ZeRO-3, no weight gather outside the step, heads exchanged by all-to-all.
void refresh_framework_defaults(StrategySpec* strategy, Precision precision);
// For a strategy derived from a config (a search candidate, a fit change) before
// refresh_framework_defaults: an overlap the config set that the derived strategy's DeepSpeed
// stage or pipeline does not have (the validator refuses it) becomes unset, so DeepSpeed's
// default applies there.
void forget_overlaps_deepspeed_lacks(StrategySpec* strategy, Precision precision);
// For a strategy derived from a config, likewise: Megatron-Core's pipeline options the config set
// (overlap_p2p_comm, align_grad_reduce) become unset where the derived strategy's framework,
// schedule, pipeline or overlap has no such option, so a search over pp or zero does not refuse
// the candidates they cannot act on (core/src/config/validate.cpp says where each acts).
void forget_pipeline_options_that_do_not_apply(StrategySpec* strategy);
// Likewise strategy.distributed_optimizer "apex" becomes Megatron-Core's default where the derived
// strategy has no distributed optimizer of that kind (another framework, or zero other than 1).
void forget_distributed_optimizer_where_it_does_not_apply(StrategySpec* strategy);
// Where each of Megatron-Core's pipeline options acts (core/src/config/pipeline_options.cpp):
// overlap_p2p_comm on its interleaved schedule; align_grad_reduce on its pipeline schedules'
// overlapped gradient reduction (not Megatron-FSDP, zero 3).
bool overlap_p2p_comm_applies(const StrategySpec& strategy);
bool align_grad_reduce_applies(const StrategySpec& strategy);
const char* to_string(CpCommType);
const char* to_string(AttentionKernel);
// The kernel the framework runs on Hopper when the config leaves it to the framework: Megatron-Core
// -> Transformer Engine, which prefers FusedAttention (cuDNN) on sm90; TorchTitan/FSDP ->
// PyTorch SDPA's FLASH_ATTENTION backend (FlashAttention-2); Megatron-DeepSpeed -> flash-attn 2
// (--use-flash-attn-v2). An explicit choice is kept.
AttentionKernel attention_kernel_of(const StrategySpec& strategy);
const char* to_string(MoeDispatcher);
const char* to_string(StateDtype);
const char* to_string(DistributedOptimizer);
// Where strategy.distributed_optimizer acts: framework megatron at zero 1.
bool distributed_optimizer_applies(const StrategySpec& strategy);
// Any optimizer state dtype differs from fp32 (the precision-aware optimizer's dtypes are in use).
bool low_precision_optimizer_states(const StrategySpec& strategy);
// Expert parallelism folds the tp ranks in (expert_tp 1 under tp > 1): the mesh's ep axis is
// then ep / tp and tp splits the experts in expert layers (docs/frameworks/tensor-parallelism-and-moe.md,
// "MoE").
int expert_tp_of(const StrategySpec& strategy);
bool experts_fold_tp(const StrategySpec& strategy);
int ep_axis_size(const StrategySpec& strategy);
// Whether the strategy's framework runs ZeRO stage `zero` (docs/frameworks.md): Megatron-Core's
// and DeepSpeed's pipelines shard at most the optimizer state (zero 0-1), FSDP has no
// optimizer-only sharding (no zero 1). The validator names the field; the search skips the rest.
bool framework_runs_zero(const StrategySpec& strategy, int zero);
// DeepSpeed's default data_types.grad_accum_dtype: fp32 for bf16 without ZeRO (get_data_types),
// else the model's dtype.
bool default_grad_accum_in_fp32(const StrategySpec& strategy, Precision precision);
// DeepSpeed trains bf16 with fp32 gradient accumulation (grad_accum_in_fp32: its default without
// ZeRO, or set at ZeRO-1) through its BF16_Optimizer (deepspeed/runtime/engine.py
// _do_optimizer_sanity_check -> BFLOAT16), "its own
// zero stage 1 equivalent": optimizer states sharded over the data-parallel ranks, fp32 gradients
// accumulated after every micro-batch and all-reduced after the backward, the updated bf16
// weights all-gathered (docs/frameworks/data-parallelism.md, "DeepSpeed's BF16_Optimizer").
bool deepspeed_bf16_optimizer(const StrategySpec& strategy, Precision precision);
// Whether DeepSpeed reduces gradients during the backward at all (ZeRO-1/2 without a pipeline,
// with its JSON's overlap_comm, and ZeRO-3; not BF16_Optimizer at ZeRO-1, which grad_accum_in_fp32
// selects, valid with bf16 only); otherwise after it, whatever overlap_grad_reduce says
// (docs/frameworks/data-parallelism.md, "What DeepSpeed overlaps").
bool deepspeed_can_overlap_grad_reduce(const StrategySpec& strategy);
// DeepSpeed's ZeRO-1/2 and BF16_Optimizer all-gather the updated weights inside step()
// (all_gather_dp_groups), never beside the next forward: overlap_param_gather has no meaning there.
bool deepspeed_gathers_weights_in_step(const StrategySpec& strategy, Precision precision);
// The ZeRO stage the optimizer states are sharded at: the config's, or 1 under BF16_Optimizer.
int optimizer_state_zero(const StrategySpec& strategy, Precision precision);

// Ranks of a context-parallel group that exchange heads by all-to-all: a2a all of cp; a2a+p2p
// cp_a2a_size, or when 0 the largest power of two dividing cp with tp x it <= gpus_per_node
// (the all-to-all stays on NVLink, the ring crosses nodes); otherwise 1.
int cp_a2a_group_size(const StrategySpec& strategy, int gpus_per_node);

}  // namespace proteus
