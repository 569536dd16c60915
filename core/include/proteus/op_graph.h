// The model as a graph of ops (DESIGN.md §3, "OpGraph"): a tree of modules whose leaves own
// ops; ops read and write tensors. Shapes are global (the whole data-parallel micro-batch),
// named by iteration dims, so that a strategy can split any dim and the compiler can derive
// tensor layouts and communication from the names alone.
//
// Conventions every builder follows, so that strategies can refer to dims by name:
//   "batch"  samples of the micro-batch (split by dp/ep);     "seq" tokens (split by cp / sp)
//   "hidden" model width; "heads" attention heads (q side);  "kv_heads" GQA key/value heads
//   "head_dim"; "ffn" MLP inner width; "vocab"; "expert"; "tokens" routed tokens per expert
//   "in" / "out" generic linear features; "cin" / "cout" / "h" / "w" / "kh" / "kw" for convs
//   "table" / "rows" / "dim" / "lookups" for embedding tables.
// A dim that indexes no output of an op is a reduction dim of that op.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "proteus/recompute_modules.h"

namespace proteus {

enum class OpKind {
  Matmul,     // dense GEMM (linear layers, expert GEMMs, LM head)
  Attention,  // core attention: QK^T, softmax, dropout, AV (fused or not)
  Conv2d,
  Embedding,    // gather rows of a table (token / position / DLRM tables)
  Norm,         // LayerNorm, RMSNorm, BatchNorm
  Elementwise,  // activations, residual adds, dropout, rotary, bias
  Softmax,
  Pool,
  Router,       // MoE gate: scores + top-k
  Dispatch,     // MoE permutation of tokens to experts (and back: Combine)
  Loss,         // cross-entropy
  Interaction,  // DLRM pairwise dot products
  Custom,
};

// The fused kernel a memory-bound op's cost assumes (Transformer Engine, Apex, Megatron's jit
// fusions, torch.compile): eager PyTorch runs each such chain as separate kernels, and Megatron's
// --no-*-fusion flags turn one kind off (ParallelConfig::unfused).
enum class KernelFusion : uint8_t {
  None,            // one kernel either way
  Norm,            // LayerNorm / RMSNorm (eager PyTorch's RMSNorm is several kernels)
  Rope,            // rotary embedding (apply_rope_fusion)
  BiasActivation,  // bias + GeLU / SwiGLU (bias_activation_fusion)
  BiasDropoutAdd,  // bias + dropout + residual add (bias_dropout_fusion)
  MaskedSoftmax,   // mask + softmax of unfused attention (masked_softmax_fusion)
};
constexpr int kNumKernelFusions = 6;

struct Dim {
  std::string name;
  int64_t size = 1;
};

// How an op sees a tensor: for each tensor axis, the index of the op's iteration dim that
// indexes it. Op "Linear" (dims batch, seq, out, in) reads x[batch, seq, in] as {0, 1, 3}.
struct TensorUse {
  int tensor = -1;
  std::vector<int> dims;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;  // global shape
  double bytes_per_element = 2;
  bool is_weight = false;  // a trainable parameter
  int producer = -1;       // op that writes it (-1: model input or weight)
  int64_t elements() const;
  double bytes() const { return static_cast<double>(elements()) * bytes_per_element; }
};

struct Op {
  std::string name;  // short, e.g. "fc1"
  OpKind kind = OpKind::Custom;
  int module = -1;                 // leaf module that owns it
  std::vector<Dim> dims;           // iteration space
  std::vector<TensorUse> inputs;   // activations read (not weights)
  std::vector<TensorUse> weights;  // parameters read
  TensorUse output;
  // Tensors the backward needs beyond inputs/weights (softmax probabilities, dropout masks),
  // global size; they are indexed by iteration dims like any tensor.
  std::vector<TensorUse> saved_extra;
  bool saves_inputs = true;  // backward needs the inputs (false for adds, dropout)
  // Megatron-Core's selective recompute modules whose code runs this op (recompute_modules.h):
  // under selective recompute with one of them in strategy.recompute_modules it is recomputed.
  RecomputeModules recompute_modules = 0;
  // Its backward reads its own output (flash attention's O), which the consumer saves: a
  // consumer keeping only an FP8 copy (an FP8 linear) leaves the 16-bit tensor held too.
  bool backward_reads_output = false;
  // The nn.Linear calls a PyTorch model makes for this op, in order, each one aten.mm (what
  // TorchTitan's op-level selective checkpointing counts, compile/torch_op_sac.h): 2 for
  // kv_proj (Llama's wk, wv) and a gated fc1 (w1, w3), equal halves of the op; else 1.
  int torch_linears = 1;
  // Megatron's fused linear_qkv (Megatron-Core's TELayerNormColumnParallelLinear linear_qkv,
  // legacy Megatron's and Megatron-DeepSpeed's query_key_value): Q and [K | V] are one GEMM there,
  // split into q_proj and kv_proj here so that tensor parallelism binds each to its own heads.
  // The fused GEMM's N over this op's: q_proj (a + 2k)/a, kv_proj (a + 2k)/2k (a, k: query and
  // kv heads); 1 for any other op. fused_qkv_second marks kv_proj, whose launch is q_proj's.
  double fused_qkv_n_scale = 1;
  bool fused_qkv_second = false;
  // Cost, for the whole global op (the compiler divides by the shards of its dims).
  double fwd_flops = 0;
  double fwd_bytes = 0;        // HBM traffic (reads + writes)
  double bwd_input_flops = 0;  // B: gradient w.r.t. inputs
  double bwd_input_bytes = 0;
  double bwd_weight_flops = 0;  // W: gradient w.r.t. weights (0 if no weights)
  double bwd_weight_bytes = 0;
  // The fused kernel the bytes above count; when the run has it off (ParallelConfig::unfused:
  // eager PyTorch, or a Megatron --no-*-fusion flag) the op moves what separate kernels move:
  //  - eager_fwd_bytes_factor, eager_bwd_input_bytes_factor and eager_bwd_weight_bytes_factor
  //    times its forward, input-gradient and weight-gradient bytes (eager PyTorch's kernels, or
  //    autograd's for their backward, over the fused kernel's; 1: the same traffic);
  //  - unfused_fwd_extra_bytes / unfused_bwd_extra_bytes more (intermediates written and read
  //    back: bias-dropout-add's dropped-out tensor, unfused attention's masked scores);
  //  - separate_bias_add_bytes more in the forward, Megatron only: its skip_bias_add linears
  //    leave the bias to the fused kernel that follows, so without that fusion an `x + bias`
  //    kernel runs (eager PyTorch's nn.Linear adds its bias inside the GEMM instead);
  //  - glu_chunk_bwd_bytes more in the input gradient, Megatron only: its unfused GLU splits
  //    fc1's output with torch.chunk, whose gradient is a cat of the two halves' gradients
  //    (TorchTitan's w1 and w3 are two linears, nothing to join).
  // Megatron-Core's attention splits Q, K and V out of linear_qkv's output as views, and TE's
  // DotProductAttention copies the ones whose layout it cannot take; the gradients are joined
  // again by a cat (layers.h, split_qkv_copy_bytes). Megatron only, as side kernels of the
  // attention op: split_qkv_fwd_bytes, split_qkv_bwd_bytes.
  // TorchTitan's attention repeats grouped-query K and V to every query head before SDPA
  // (layers.h, repeat_kv_bytes): a copy kernel per tensor, their gradients summed back, and SDPA
  // saving the repeated tensors. Framework fsdp only, as side kernels of the attention op:
  // repeat_kv_fwd_bytes, repeat_kv_bwd_bytes; repeat_kv_saved_bytes beyond the K/V it saves;
  // kv_repeats (heads / kv_heads), the factor the K/V SDPA reads are of the grouped ones.
  KernelFusion fusion = KernelFusion::None;
  double eager_fwd_bytes_factor = 1;
  double eager_bwd_input_bytes_factor = 1;
  double eager_bwd_weight_bytes_factor = 1;
  double unfused_fwd_extra_bytes = 0;
  double unfused_bwd_extra_bytes = 0;
  double separate_bias_add_bytes = 0;
  double glu_chunk_bwd_bytes = 0;
  double split_qkv_fwd_bytes = 0;
  double split_qkv_bwd_bytes = 0;
  double repeat_kv_fwd_bytes = 0;
  double repeat_kv_bwd_bytes = 0;
  double repeat_kv_saved_bytes = 0;
  int64_t kv_repeats = 1;
  // The language model's cross-entropy over the vocabulary: its backward reads the fp32 softmax
  // it saves, not the logits; what the frameworks allocate while it runs is per framework
  // (compile/cross_entropy_memory.h).
  bool vocab_cross_entropy = false;
  // For the cost model: the forward GEMM's M, N, K (and batch) as lists of iteration-dim
  // indices whose sizes multiply to each (empty = not a GEMM). The compiler divides each by
  // the shards of its dims to get the per-GPU GEMM shape. Attention uses batch=(batch, heads),
  // M=seq, N=seq_kv, K=head_dim for its QK^T product.
  std::vector<int> gemm_m_dims, gemm_n_dims, gemm_k_dims, gemm_batch_dims;
  int find_dim(const std::string& dim_name) const;  // -1 if absent
};

struct Module {
  std::string name;  // segment: "layers", "3", "attention", ...
  std::string path;  // dotted path from the root (root's path is "")
  std::string kind;  // "model", "embedding", "layer", "attention", "mlp", "moe", "norm", "head", "conv", ...
  int parent = -1;
  std::vector<int> children;
  std::vector<int> ops;  // ops owned directly by this module (in execution order)
  int layer = -1;  // index of the repeated block it belongs to (transformer layer, CNN stage), -1 if none
};

struct OpGraph {
  std::string model_name;
  std::vector<Module> modules;  // modules[0] is the root
  std::vector<Op> ops;          // in a valid forward execution order
  std::vector<Tensor> tensors;
  int num_layers = 0;                  // repeated blocks that pipeline stages split
  int64_t batch = 0;                   // samples in the graph's "batch" dim
  int64_t samples_per_batch_unit = 1;  // tokens per sample for LMs (seq), 1 otherwise

  int64_t parameter_count() const;  // sum over weight tensors (tied weights counted once)
  double forward_flops() const;     // sum of fwd_flops
  double training_flops() const;    // fwd + bwd_input + bwd_weight
};

struct ModelSpec;
struct TrainingSpec;

// Builds the graph for `batch` samples of training.seq_len tokens (LMs). Pure function.
OpGraph build_op_graph(const ModelSpec& model, const TrainingSpec& training, int64_t batch);

const char* to_string(OpKind);

}  // namespace proteus
