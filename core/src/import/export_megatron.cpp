// A config -> the Megatron-LM command line that trains the same run. Written so that
// import_megatron(export_megatron(c), cluster of c) gives c back (tests/test_import.cpp checks
// it on every transformer scenario); what Megatron cannot express is an error naming the field.
#include <sstream>

#include "proteus/config.h"
#include "proteus/error.h"
#include "proteus/import.h"
#include "proteus/strategy_spec.h"

namespace proteus {

namespace {

class Args {
 public:
  void add(const std::string& name) { lines_.push_back(name); }
  template <class T>
  void add(const std::string& name, const T& value) {
    std::ostringstream s;
    s << name << " " << value;
    lines_.push_back(s.str());
  }
  std::string text(const std::string& head) const {
    std::string out = head;
    for (const std::string& l : lines_) out += " \\\n    " + l;
    return out + "\n";
  }

 private:
  std::vector<std::string> lines_;
};

// Megatron's --attention-backend for the config's kernel (import_megatron's mapping backwards):
// a kernel left to Megatron's framework is TE's own choice (auto); one left to another framework
// (FlashAttention-2 for fsdp/deepspeed) or named is pinned.
const char* attention_backend_of(const ModelSpec& m, const StrategySpec& st) {
  if (!m.flash_attention) return "unfused";
  if (st.attention_kernel == AttentionKernel::Auto && st.framework == Framework::Megatron) return "auto";
  return attention_kernel_of(st) == AttentionKernel::Cudnn ? "fused" : "flash";
}

void model_args(const ModelSpec& m, const StrategySpec& st, Args& a) {
  if (m.kind != ModelKind::Transformer) {
    throw invalid_config(
        "model.kind", std::string("Megatron-LM trains transformers; this model is a ") + to_string(m.kind));
  }
  a.add("--num-layers", m.layers);
  a.add("--hidden-size", m.hidden);
  a.add("--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) {
    a.add("--group-query-attention");
    a.add("--num-query-groups", m.kv_heads);
  }
  a.add("--ffn-hidden-size", m.ffn_hidden);
  a.add("--max-position-embeddings", m.seq_len);
  if (m.mlp == MlpKind::Swiglu) a.add("--swiglu");
  a.add("--normalization", m.norm == NormKind::RmsNorm ? "RMSNorm" : "LayerNorm");
  if (!m.tied_embeddings) a.add("--untie-embeddings-and-output-weights");
  if (!m.bias) a.add("--disable-bias-linear");
  if (!m.dropout) {
    a.add("--attention-dropout", 0.0);
    a.add("--hidden-dropout", 0.0);
  }
  // Megatron-DeepSpeed has no --attention-backend: its fused kernel is flash-attn 2's
  // (--use-flash-attn-v2), the framework's only one (a kernel other than fa2 is a comment line).
  if (st.framework != Framework::DeepSpeed)
    a.add("--attention-backend", attention_backend_of(m, st));
  else if (m.flash_attention)
    a.add("--use-flash-attn-v2");
  a.add("--position-embedding-type", m.learned_positions ? "learned_absolute" : "rope");
  if (!m.causal) {
    if (m.pooler != (m.type_vocab == 2) || (m.type_vocab != 0 && m.type_vocab != 2)) {
      throw invalid_config("model.type_vocab",
                           "Megatron's BERT has 2 token types with the binary head, none without");
    }
    if (!m.pooler) a.add("--bert-no-binary-head");
  } else if (m.pooler || m.type_vocab != 0) {
    throw invalid_config(m.pooler ? "model.pooler" : "model.type_vocab",
                         "Megatron's GPT models have no pooler or token types");
  }
  // The vocabulary as given: Megatron pads it to a multiple of divisible_by x tp.
  if (m.vocab % st.tp != 0) {
    const int64_t padded = (m.vocab + st.tp - 1) / st.tp * st.tp;
    throw invalid_config("model.vocab",
                         "Megatron pads the vocabulary to a multiple of tp=" + std::to_string(st.tp) +
                             ": vocab " + std::to_string(m.vocab) + " would train as " +
                             std::to_string(padded) + "; set model.vocab to " + std::to_string(padded));
  }
  a.add("--vocab-size", m.vocab);
  a.add("--make-vocab-size-divisible-by", 1);
  if (m.head_dim > 0) a.add("--kv-channels", m.head_dim);
  if (m.qk_norm) a.add("--qk-layernorm");
  if (m.mla.enabled()) {
    a.add("--multi-latent-attention");
    if (m.mla.q_lora_rank > 0) a.add("--q-lora-rank", m.mla.q_lora_rank);
    a.add("--kv-lora-rank", m.mla.kv_lora_rank);
    a.add("--qk-head-dim", m.mla.qk_nope_head_dim);
    a.add("--qk-pos-emb-head-dim", m.mla.qk_rope_head_dim);
    a.add("--v-head-dim", m.mla.v_head_dim);
  }
  if (m.mtp_layers > 0) a.add("--mtp-num-layers", m.mtp_layers);
  if (m.sliding_window > 0) {
    a.add("--window-size", "\"(" + std::to_string(m.sliding_window) + ", 0)\"");
    if (m.full_attention_every > 0) a.add("--window-attn-skip-freq", m.full_attention_every);
  }
  if (m.attention_sinks) a.add("--softmax-type", "learnable");
  if (m.moe.experts > 0) {
    a.add("--num-experts", m.moe.experts);
    a.add("--moe-router-topk", m.moe.top_k);
    a.add("--moe-ffn-hidden-size", m.moe.expert_ffn_hidden);
    if (m.moe.routing == MoeRouting::Capacity) {
      a.add("--moe-expert-capacity-factor", m.moe.capacity_factor);
      a.add("--moe-pad-expert-input-to-capacity");
    } else if (m.moe.imbalance != 1.0) {
      throw invalid_config("model.moe.imbalance", "an expert load imbalance has no Megatron-LM argument");
    }
    if (m.moe.shared_expert_ffn_hidden > 0)
      a.add("--moe-shared-expert-intermediate-size", m.moe.shared_expert_ffn_hidden);
    if (m.moe.first_dense_layers > 0) {
      a.add("--moe-layer-freq", "\"([0]*" + std::to_string(m.moe.first_dense_layers) + "+[1]*" +
                                    std::to_string(m.layers - m.moe.first_dense_layers) + ")\"");
    }
    if (m.moe.router_bias) a.add("--moe-router-enable-expert-bias");
    a.add("--moe-token-dispatcher-type", to_string(st.moe_dispatcher));
    if (expert_tp_of(st) != st.tp) a.add("--expert-tensor-parallel-size", expert_tp_of(st));
  }
}

// Megatron-Core's precision-aware optimizer (TE >= 2.1): the remainders and the state dtypes.
// Megatron stores remainders by default (OptimizerConfig.store_param_remainders) wherever TE holds
// fp32 masters of bf16 weights, so a config that keeps them whole there says
// --no-store-param-remainders.
void precision_aware_optimizer_args(const Config& c, Args& a) {
  const StrategySpec& st = c.strategy;
  if (!st.store_param_remainders && !low_precision_optimizer_states(st)) return;
  a.add("--use-precision-aware-optimizer");
  if (st.main_params_dtype != StateDtype::Fp32) a.add("--main-params-dtype", to_string(st.main_params_dtype));
  if (st.exp_avg_dtype != StateDtype::Fp32) a.add("--exp-avg-dtype", to_string(st.exp_avg_dtype));
  if (st.exp_avg_sq_dtype != StateDtype::Fp32) a.add("--exp-avg-sq-dtype", to_string(st.exp_avg_sq_dtype));
  const Precision p = c.training.precision;
  const bool bf16_weights = (p == Precision::Bf16 || p == Precision::Fp8) && !st.fp8_param_gather;
  const bool te_masters = p != Precision::Fp8 || c.training.fp8_recipe == Fp8Recipe::Delayed;
  if (!st.store_param_remainders && st.main_params_dtype == StateDtype::Fp32 && bf16_weights && te_masters)
    a.add("--no-store-param-remainders");
}

void strategy_args(const Config& c, Args& a) {
  const StrategySpec& st = c.strategy;
  a.add("--tensor-model-parallel-size", st.tp);
  a.add("--pipeline-model-parallel-size", st.pp);
  // Megatron-DeepSpeed splits the sequence with DeepSpeed-Ulysses (the validator holds it to a2a).
  if (st.cp > 1)
    a.add(st.framework == Framework::DeepSpeed ? "--ds-sequence-parallel-size" : "--context-parallel-size",
          st.cp);
  if (st.ep > 1) a.add("--expert-model-parallel-size", st.ep);
  if (st.sequence_parallel) a.add("--sequence-parallel");
  switch (st.schedule) {
    case Schedule::OneFOneB:
      break;
    case Schedule::Interleaved1F1B:
      a.add("--virtual-pipeline-model-parallel-size", st.virtual_stages);
      // Megatron-LM overlaps the interleaved schedule's p2p unless told not to.
      if (!st.overlap_p2p_comm) a.add("--no-overlap-p2p-communication");
      break;
    default:
      throw invalid_config("strategy.schedule", std::string("Megatron-LM has no ") + to_string(st.schedule) +
                                                    " schedule (it runs 1F1B and interleaved 1F1B)");
  }
  if (!st.stage_layers.empty()) {
    // Megatron-Core's layout string: "E" embedding, "t" a layer, "L" loss, "|" between
    // stages, "(...)*N" a repetition: [1, 2, 2, 2, 1] -> "Et|(tt|)*3tL".
    const auto& sl = st.stage_layers;
    std::string layout = "E" + std::string(static_cast<size_t>(sl.front()), 't');
    for (size_t i = 1; i < sl.size();) {
      size_t j = i;
      while (j + 1 < sl.size() && sl[j] == sl[i]) ++j;  // stages i..j-1 repeat (the last is separate)
      const std::string stage = std::string(static_cast<size_t>(sl[i]), 't');
      if (j - i > 1) {
        layout += "|(" + stage + "|)*" + std::to_string(j - i - 1) + stage;
        i = j;
      } else {
        layout += "|" + stage;
        ++i;
      }
    }
    layout += "L";
    a.add("--pipeline-model-parallel-layout", "\"" + layout + "\"");
  }
  a.add("--micro-batch-size", st.micro_batch);
  a.add("--global-batch-size", c.training.global_batch);
  const bool deepspeed = st.framework == Framework::DeepSpeed;
  if (deepspeed) {
    // Megatron-DeepSpeed: DeepSpeed's engine and the ZeRO stage its config JSON also names
    // (docs/import.md, "Megatron-DeepSpeed"); its overlaps are DeepSpeed's own.
    a.add("--deepspeed");
    a.add("--zero-stage", st.zero);
  } else {
    switch (st.zero) {
      case 0:
        break;
      case 1:
        a.add("--use-distributed-optimizer");
        break;
      default:
        a.add("--use-megatron-fsdp");
        a.add("--data-parallel-sharding-strategy", st.zero == 2 ? "optim_grads" : "optim_grads_params");
    }
  }
  if (st.recompute != Recompute::None) a.add("--recompute-granularity", to_string(st.recompute));
  if (st.recompute == Recompute::Selective && st.recompute_modules != kDefaultRecomputeModules) {
    std::string names;
    for (int k = 0; k < kNumRecomputeModules; ++k)
      if (st.recompute_modules & recompute_bit(static_cast<RecomputeModule>(k)))
        names += std::string(names.empty() ? "" : " ") + to_string(static_cast<RecomputeModule>(k));
    a.add("--recompute-modules", names);
    // Megatron-Core accepts moe_act only with grouped GEMMs (the experts Proteus models).
    if (st.recompute_modules & recompute_bit(RecomputeModule::MoeAct)) a.add("--moe-grouped-gemm");
  }
  if (st.recompute == Recompute::Full) {
    a.add("--recompute-method", "uniform");
    a.add("--recompute-num-layers", 1);
  }
  if (!st.overrides.empty()) {
    throw invalid_config("strategy.overrides", "per-module overrides have no Megatron-LM argument");
  }
  if (st.cp > 1 && st.cp_comm_type != CpCommType::P2p && st.framework != Framework::DeepSpeed)
    a.add("--cp-comm-type", to_string(st.cp_comm_type));
  if (st.cp > 1 && st.cp_comm_type == CpCommType::A2aP2p && st.cp_a2a_size > 0) {
    a.add("--hierarchical-context-parallel-sizes",
          std::to_string(st.cp_a2a_size) + " " + std::to_string(st.cp / st.cp_a2a_size));
  }
  if (st.scatter_gather_p2p)
    throw invalid_config(
        "strategy.scatter_gather_p2p",
        "Megatron-Core's p2p sends pipeline tensors whole: the legacy scatter/gather over tp "
        "has no Megatron-LM argument any more");
  if (st.tp_comm_overlap) a.add("--tp-comm-overlap");
  if (!st.bias_dropout_fusion) a.add("--no-bias-dropout-fusion");
  if (!st.bias_activation_fusion)
    a.add(c.model.mlp == MlpKind::Swiglu ? "--no-bias-swiglu-fusion" : "--no-bias-gelu-fusion");
  if (!st.masked_softmax_fusion) a.add("--no-masked-softmax-fusion");
  if (!st.apply_rope_fusion) a.add("--no-rope-fusion");
  if (!st.gradient_accumulation_fusion) a.add("--no-gradient-accumulation-fusion");
  if (st.fp8_param_gather) a.add("--fp8-param-gather");
  precision_aware_optimizer_args(c, a);
  if (st.tp_only_amax_red) a.add("--tp-only-amax-red");
  if (st.overlap_grad_reduce && !deepspeed) a.add("--overlap-grad-reduce");
  if (st.align_grad_reduce_given && !st.align_grad_reduce) a.add("--no-align-grad-reduce");
  if (st.zero >= 1 && st.overlap_param_gather && !deepspeed) a.add("--overlap-param-gather");
  // Megatron's gradient dtype defaults (arguments.py): fp32 under bf16 unless
  // --grad-reduce-in-bf16; fp16 under fp16 unless --accumulate-allreduce-grads-in-fp32.
  // Under DeepSpeed the gradient dtype is its JSON's (default: the module's dtype).
  const bool fp16 = c.training.precision == Precision::Fp16;
  if (st.grad_reduce_in_fp32 && fp16 && !deepspeed) a.add("--accumulate-allreduce-grads-in-fp32");
  if (!st.grad_reduce_in_fp32 && !fp16 && !deepspeed) a.add("--grad-reduce-in-bf16");
  // Megatron counts the bucket in gradient elements; without --overlap-grad-reduce it reduces all
  // gradients in one bucket whatever --ddp-bucket-size says (other sizes are a comment line).
  if (!deepspeed && st.overlap_grad_reduce && st.grad_bucket_MB != default_grad_bucket_MB(st)) {
    const double elements = st.grad_bucket_MB * 1e6 / grad_bytes_per_element(st.grad_reduce_in_fp32);
    if (elements != static_cast<double>(static_cast<int64_t>(elements))) {
      throw invalid_config("strategy.grad_bucket_MB", "the bucket is not a whole number of gradients");
    }
    a.add("--ddp-bucket-size", static_cast<int64_t>(elements));
  }
}

void training_args(const TrainingSpec& t, Args& a) {
  a.add("--seq-length", t.seq_len);
  switch (t.precision) {
    case Precision::Fp32:
      break;
    case Precision::Fp16:
      a.add("--fp16");
      break;
    case Precision::Bf16:
      a.add("--bf16");
      break;
    case Precision::Fp8:
      a.add("--bf16");
      a.add("--fp8-format", "hybrid");
      // Megatron's --fp8-recipe names TE's current scaling "tensorwise".
      if (t.fp8_recipe != Fp8Recipe::Delayed)
        a.add("--fp8-recipe", t.fp8_recipe == Fp8Recipe::Current ? "tensorwise" : to_string(t.fp8_recipe));
      break;
    case Precision::Tf32:
      throw invalid_config("training.precision",
                           "Megatron-LM has no TF32 switch (fp32 runs under PyTorch's TF32 setting)");
  }
  a.add("--optimizer", to_string(t.optimizer));
}

// Comment lines for settings a Megatron or Megatron-DeepSpeed command line cannot carry: DeepSpeed
// config JSON entries that differ from DeepSpeed's defaults, a bucket Megatron cannot express, an
// attention kernel Megatron-DeepSpeed does not run, NeMo's Apex optimizer. Import keeps the defaults they
// differ from.
std::string setting_comments(const Config& c) {
  const StrategySpec& st = c.strategy;
  const Precision p = c.training.precision;
  const bool ds = st.framework == Framework::DeepSpeed;
  std::string out;
  const auto deepspeed_json = [&](const std::string& entry) {
    out += "# DeepSpeed config JSON: " + entry +
           " (not a Megatron argument: import keeps DeepSpeed's default)\n";
  };
  if (ds && deepspeed_can_overlap_grad_reduce(st) && st.overlap_grad_reduce != (st.zero == 3))
    deepspeed_json(std::string("\"zero_optimization\": {\"overlap_comm\": ") +
                   (st.overlap_grad_reduce ? "true" : "false") + "}");
  if (ds && st.grad_reduce_in_fp32 != default_grad_reduce_in_fp32(st, p))
    deepspeed_json(std::string("\"communication_data_type\": \"") +
                   (st.grad_reduce_in_fp32 ? "fp32" : to_string(p)) + "\"");
  if (ds && st.grad_accum_in_fp32 != default_grad_accum_in_fp32(st, p))
    deepspeed_json(std::string("\"data_types\": {\"grad_accum_dtype\": \"") +
                   (st.grad_accum_in_fp32 ? "fp32" : to_string(p)) + "\"}");
  std::ostringstream bucket;
  bucket << st.grad_bucket_MB;
  if (st.grad_bucket_MB != default_grad_bucket_MB(st) && (ds || !st.overlap_grad_reduce))
    out += "# grad_bucket_MB " + bucket.str() +
           (ds ? ": DeepSpeed config JSON \"reduce_bucket_size\" (not a Megatron argument"
               : ": Megatron reduces all gradients in one bucket without --overlap-grad-reduce (not "
                 "expressible") +
           "; import keeps the framework's default)\n";
  // NeMo's optim.name, not a Megatron-LM argument: the command line runs Megatron-Core's own.
  if (st.distributed_optimizer == DistributedOptimizer::Apex)
    out +=
        "# distributed_optimizer apex: Apex's DistributedFusedAdam (NeMo's optim.name "
        "distributed_fused_adam), which Megatron-LM does not run: --use-distributed-optimizer is "
        "Megatron-Core's (import keeps that)\n";
  if (ds && c.model.flash_attention && attention_kernel_of(st) != AttentionKernel::Fa2)
    out += std::string("# attention_kernel ") + to_string(attention_kernel_of(st)) +
           ": Megatron-DeepSpeed runs flash-attn 2 (--use-flash-attn-v2); import keeps that\n";
  return out;
}

}  // namespace

std::string export_megatron(const std::string& config_text) {
  const Config c = parse_config(config_text);
  Args a;
  model_args(c.model, c.strategy, a);
  training_args(c.training, a);
  strategy_args(c, a);
  const std::string script = c.model.causal ? "pretrain_gpt.py" : "pretrain_bert.py";
  std::string head = "# " + (c.name.empty() ? std::string("Proteus config") : c.name) +
                     "\n# cluster: " + (c.cluster.name.empty() ? std::string("(unnamed)") : c.cluster.name) +
                     " (not a Megatron argument: import with --cluster)\n";
  head += setting_comments(c);
  head += "torchrun --nnodes " + std::to_string(c.cluster.nodes) + " --nproc-per-node " +
          std::to_string(c.cluster.gpus_per_node) + " " + script;
  return a.text(head);
}

}  // namespace proteus
