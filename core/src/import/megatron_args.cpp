#include "megatron_args.h"

#include <cstdlib>
#include "../config/limits.h"
#include "proteus/error.h"
#include "shell_script.h"

namespace proteus::import_detail {

namespace {

// Arguments the importer reads (the megatron_*.cpp parts that import_megatron.cpp calls map each of them).
const std::set<std::string>& mapped_args() {
  static const std::set<std::string> names = {
      "--num-layers", "--encoder-num-layers", "--decoder-num-layers", "--hidden-size", "--ffn-hidden-size",
      "--num-attention-heads", "--num-query-groups", "--group-query-attention", "--kv-channels",
      "--seq-length", "--encoder-seq-length", "--max-position-embeddings", "--position-embedding-type",
      "--use-rotary-position-embeddings", "--no-position-embedding", "--normalization", "--swiglu",
      "--squared-relu", "--disable-bias-linear", "--add-qkv-bias", "--untie-embeddings-and-output-weights",
      "--attention-dropout", "--hidden-dropout", "--use-flash-attn", "--attention-backend",
      "--bert-no-binary-head", "--tensor-model-parallel-size", "--model-parallel-size",
      "--pipeline-model-parallel-size", "--context-parallel-size", "--expert-model-parallel-size",
      "--expert-tensor-parallel-size", "--num-layers-per-virtual-pipeline-stage",
      "--virtual-pipeline-model-parallel-size", "--decoder-first-pipeline-num-layers",
      "--decoder-last-pipeline-num-layers", "--pipeline-model-parallel-layout", "--sequence-parallel",
      "--micro-batch-size", "--batch-size", "--global-batch-size", "--use-distributed-optimizer",
      "--use-torch-fsdp2", "--use-megatron-fsdp", "--data-parallel-sharding-strategy",
      "--overlap-grad-reduce", "--overlap-param-gather", "--ddp-bucket-size", "--recompute-granularity",
      "--recompute-method", "--recompute-num-layers", "--recompute-activations", "--checkpoint-activations",
      "--recompute-modules", "--fp16", "--bf16", "--grad-reduce-in-bf16",
      "--accumulate-allreduce-grads-in-fp32", "--fp8-format", "--fp8", "--fp8-recipe", "--fp8-param-gather",
      "--use-precision-aware-optimizer", "--main-params-dtype", "--main-grads-dtype", "--exp-avg-dtype",
      "--exp-avg-sq-dtype", "--no-store-param-remainders", "--tp-only-amax-red", "--tp-comm-overlap",
      "--cp-comm-type", "--hierarchical-context-parallel-sizes", "--optimizer", "--num-experts",
      "--moe-router-topk", "--moe-ffn-hidden-size", "--moe-expert-capacity-factor",
      "--moe-token-dispatcher-type", "--moe-shared-expert-intermediate-size", "--moe-layer-freq",
      "--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
      "--v-head-dim", "--mtp-num-layers", "--qk-layernorm", "--vocab-size", "--make-vocab-size-divisible-by",
      "--tokenizer-type", "--tokenizer-model", "--vocab-file", "--merge-file",
      "--moe-pad-expert-input-to-capacity", "--moe-token-drop-policy", "--rampup-batch-size", "--window-size",
      "--window-attn-skip-freq", "--softmax-type", "--moe-router-enable-expert-bias",
      "--overlap-p2p-communication", "--no-overlap-p2p-communication", "--no-align-grad-reduce",
      "--no-delay-grad-reduce", "--no-scatter-gather-tensors-in-pipeline", "--no-bias-dropout-fusion",
      "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion", "--no-masked-softmax-fusion", "--no-rope-fusion",
      "--no-gradient-accumulation-fusion", "--no-persist-layer-norm",
      // Megatron-DeepSpeed (megatron_deepspeed.cpp, megatron_model.cpp)
      "--deepspeed", "--deepspeed-config", "--zero-stage", "--deepspeed-activation-checkpointing",
      "--partition-activations", "--checkpoint-in-cpu", "--checkpoint-num-layers", "--pp-partition-method",
      "--no-pipeline-parallel", "--ds-sequence-parallel-size", "--ds-sequence-parallel-fpdt",
      "--use-flash-attn-v2", "--use-flash-attn-v1", "--use-flash-attn-triton", "--pad-vocab-size-to",
      "--embed-layernorm"};
  return names;
}

// Megatron-LM arguments that do not change the simulated iteration. Listed from
// megatron/training/arguments.py (Megatron-LM core_r0.x, 2024-2025) and its older names.
const char* const kUnusedArgs =
    // logging, profiling, evaluation
    " --log-interval --log-params-norm --log-num-zeros-in-grad --log-throughput --log-progress"
    " --log-timers-to-tensorboard --log-batch-size-to-tensorboard --no-log-learnig-rate-to-tensorboard"
    " --no-log-loss-scale-to-tensorboard --log-validation-ppl-to-tensorboard --log-memory-to-tensorboard"
    " --log-world-size-to-tensorboard --log-loss-scale-to-tensorboard --log-learning-rate-to-tensorboard"
    " --tensorboard-dir --tensorboard-log-interval --tensorboard-queue-size --timing-log-level"
    " --timing-log-option --barrier-with-L1-time --no-barrier-with-level-1-timing --wandb-project"
    " --wandb-exp-name --wandb-save-dir --wandb-entity --one-logger-project --one-logger-run-name"
    " --enable-one-logger --no-one-logger --log-straggler --disable-straggler-on-startup"
    " --straggler-ctrlr-port --straggler-minmax-count --profile --profile-step-start --profile-step-end"
    " --profile-ranks --use-pytorch-profiler --record-memory-history --memory-snapshot-path"
    " --eval-iters --eval-interval --skip-train --test-mode --logging-level --log-energy"
    " --log-memory-interval --log-device-memory-used"
    // checkpoints
    " --save --load --save-interval --save-retain-interval --no-save-optim --no-save-rng --no-load-optim"
    " --no-load-rng --finetune --pretrained-checkpoint --ckpt-step --use-checkpoint-args"
    " --use-mp-args-from-checkpoint-args --no-use-tokenizer-model-from-checkpoint-args --exit-on-missing-checkpoint"
    " --use-dist-ckpt --use-persistent-ckpt-worker --auto-detect-ckpt-format --dist-ckpt-format"
    " --ckpt-format --ckpt-convert-format --ckpt-convert-save --ckpt-convert-update-legacy-dist-opt-format"
    " --ckpt-fully-parallel-save --no-ckpt-fully-parallel-save --async-save --ckpt-fully-parallel-load"
    " --ckpt-assume-constant-structure --dist-ckpt-strictness --non-persistent-save-interval"
    " --non-persistent-ckpt-type --non-persistent-global-ckpt-dir --non-persistent-local-ckpt-dir"
    " --non-persistent-local-ckpt-algo --load-main-params-from-ckpt --ckpt-load-strict"
    " --exit-interval --exit-duration-in-mins --exit-signal-handler --adlr-autoresume"
    " --adlr-autoresume-interval --save-optim --dist-ckpt-save-pre-mcore-014"
    // data and tokenizer details
    " --data-path --split --train-data-path --valid-data-path --test-data-path --data-cache-path"
    " --mock-data --no-mmap-bin-files --mmap-warmup --num-workers --dataloader-type"
    " --no-create-attention-mask-in-dataloader --reset-position-ids --reset-attention-mask --eod-mask-loss"
    " --tiktoken-pattern --tiktoken-num-special-tokens --tiktoken-special-tokens --vocab-extra-ids"
    " --data-args-path --per-split-data-args-path --data-sharding --s3-cache-path --object-storage-cache-path"
    " --mid-level-dataset-surplus --sft --sft-tokenizer-prompt-format --dataset --extra-vocab-size"
    " --train-mode --max-padding-length --no-data-sharding --short-seq-prob --mask-prob --num-dataset-builder-threads"
    // schedule of training: iterations, learning rate, regularisation, initialisation
    " --train-iters --train-samples --lr --min-lr --lr-decay-style --lr-decay-iters --lr-decay-samples"
    " --lr-warmup-fraction --lr-warmup-iters --lr-warmup-samples --lr-warmup-init --decoupled-lr"
    " --decoupled-min-lr --override-opt_param-scheduler --override-opt-param-scheduler"
    " --use-checkpoint-opt_param-scheduler --use-checkpoint-opt-param-scheduler --lr-wsd-decay-style"
    " --lr-wsd-decay-samples --lr-wsd-decay-iters --warmup --weight-decay --start-weight-decay"
    " --end-weight-decay --weight-decay-incr-style --clip-grad --adam-beta1 --adam-beta2 --adam-eps"
    " --sgd-momentum --init-method-std --init-method-xavier-uniform --seed --data-parallel-random-init"
    " --loss-scale --initial-loss-scale --min-loss-scale --loss-scale-window --hysteresis"
    " --attention-softmax-in-fp32 --fp16-lm-cross-entropy"
    " --apply-query-key-layer-scaling --norm-epsilon --layernorm-epsilon --apply-layernorm-1p"
    " --apply-residual-connection-post-layernorm --openai-gelu --onnx-safe --rotary-base --rotary-percent"
    " --rotary-interleaved --rotary-seq-len-interpolation-factor --rotary-scaling-factor --use-rope-scaling"
    " --rope-scaling-factor --mscale --mscale-all-dim"
    " --no-async-tensor-model-parallel-allreduce --cross-entropy-loss-fusion"
    " --cross-entropy-fusion-impl --calculate-per-token-loss --manual-gc --manual-gc-interval"
    " --no-manual-gc-eval --empty-unused-memory-level --distributed-timeout-minutes --distributed-backend"
    " --local-rank --local_rank --lazy-mpu-init --use-cpu-initialization --use-mcore-models"
    " --use-legacy-models --transformer-impl --spec --check-for-nan-in-loss-and-grad"
    " --check-for-spiky-loss --check-for-large-grads --fp32-residual-connection --use-ring-exchange-p2p"
    " --no-shared-storage --deterministic-mode --qk-layernorm-weight-decay --bert-binary-head"
    " --init-model-with-meta-device --embedding-path --position-embedding-type-for-fixed --hidden-dropout-prob"
    " --first-last-layers-bf16 --num-layers-at-start-in-bf16"
    " --num-layers-at-end-in-bf16 --fp8-margin --fp8-interval --fp8-amax-history-len"
    " --fp8-amax-compute-algo --te-rng-tracker --inference-rng-tracker"
    " --no-fp8-weight-transpose-cache --fp8-wgrad --no-fp8-wgrad --fp4-format --fp4-recipe"
    " --tp-comm-overlap-cfg --disable-tp-comm-overlap-ag --disable-tp-comm-overlap-rs"
    " --tp-comm-overlap-rs-dgrad --disable-tp-comm-bulk-dgrad --disable-tp-comm-bulk-wgrad"
    " --tp-comm-bootstrap-backend --tp-comm-split-ag --tp-comm-split-rs"
    " --overlap-p2p-communication-warmup-flush --align-grad-reduce"
    " --no-align-grad-reduce --align-param-gather --no-align-param-gather --delay-grad-reduce"
    " --delay-param-gather --no-delay-grad-reduce --defer-embedding-wgrad-compute"
    " --wgrad-deferral-limit --num-distributed-optimizer-instances"
    " --optimizer-cpu-offload --optimizer-offload-fraction --use-torch-optimizer-for-cpu-offload"
    " --overlap-cpu-optimizer-d2h-h2d --pin-cpu-grads --pin-cpu-params --ddp-average-in-collective"
    " --ddp-pad-buckets-for-high-nccl-busbw --ddp-num-buckets --check-weight-hash-across-dp-replicas-interval"
    " --microbatch-group-size-per-vp-stage --account-for-embedding-in-pipeline-split"
    " --account-for-loss-in-pipeline-split --pipeline-model-parallel-split-rank"
    " --context-parallel-algo"
    " --use-tp-pp-dp-mapping --nccl-communicator-config-path --use-sharp --sharp-enabled-group"
    " --high-priority-stream-groups --distribute-saved-activations --encoder-pipeline-model-parallel-size"
    " --encoder-tensor-model-parallel-size --num-virtual-stages-per-pipeline-rank --heterogeneous-layers-config-path"
    " --heterogeneous-layers-config-encoded-json --use-custom-fsdp --no-gradient-reduce-div-fusion"
    " --suggested-communication-unit-size --keep-fp8-transpose-cache-when-using-custom-fsdp"
    " --init-model-with-meta-device --nccl-ub --fsdp-double-buffer --disable-bf16-reduced-precision-matmul"
    " --cuda-graph-impl --enable-cuda-graph --cuda-graph-scope --cuda-graph-warmup-steps"
    " --external-cuda-graph --use-te-activation-func --inference-max-seq-length --inference-max-requests"
    " --rerun-mode --result-rejected-tracker-filename --enable-ft-package --calc-ft-timeouts"
    " --run-workload-inspector-server --config-logger-dir --yaml-cfg --hybrid-override-pattern"
    " --hybrid-attention-ratio --hybrid-mlp-ratio --is-hybrid-model --retro-project-dir"
    " --tokenizer-metadata --tokenizer-hf-use-fast --tokenizer-hf-include-special-tokens"
    " --trust-remote-code --mtp-loss-scaling-factor --moe-router-load-balancing-type --moe-aux-loss-coeff"
    " --moe-z-loss-coeff --moe-input-jitter-eps --moe-grouped-gemm --moe-use-legacy-grouped-gemm"
    " --moe-router-score-function --moe-router-pre-softmax --moe-router-num-groups --moe-router-group-topk"
    " --moe-router-topk-scaling-factor --moe-router-bias-update-rate"
    " --moe-router-dtype --moe-router-fusion --moe-router-topk-limited-devices --moe-permute-fusion"
    " --moe-shared-expert-overlap --moe-per-layer-logging --moe-layer-recompute --moe-extended-tp"
    " --moe-enable-deepep --moe-deepep-num-sms --moe-use-upcycling --moe-upcycling-granularity"
    " --moe-apply-probs-on-input --moe-router-padding-for-fp8 --moe-router-force-load-balancing"
    " --moe-aux-loss-coeff --moe-expert-capacity-factor-eval --moe-token-dropping --moe-flex-dispatcher-backend"
    " --moe-router-padding-for-quantization --moe-latent-size --moe-shared-expert-gate --num-shared-experts"
    " --enable-shared-expert --no-bias-dropout-add-fusion --use-fused-weighted-squared-relu"
    " --attention-sink-k --fused-padded-mla-attention --no-rope-freq --rope-type --group-query-attention-bias"
    " --qk-l2-norm --use-flash-attn-triton --kv-channels-for-mla"
    " --disable-mamba-mem-eff-path --mamba-state-dim --mamba-head-dim --mamba-num-groups --mamba-num-heads"
    " --exit-on-sigterm --wandb-log-model --log-timers-to-tracker --use-tokenizer-model-from-checkpoint-args"
    " --export-te --export-kd-teacher-load --export-model-type --legacy-tokenizer --null-tokenizer"
    " --ict-head-size --biencoder-projection-dim --titles-data-path --num-experts-per-tok"
    " --rotary-base-for-local --local-rope-base --no-load-main-params-from-ckpt --fp8-param --store-param-remainders"
    " --no-check-for-nan-in-loss-and-grad --use-distributed-checkpoint --ckpt-parallel-load "
    " --use-hf-tokenizer --tokenizer-name-or-path --data-impl --no-bias-gelu --num-layers-per-stage "
    // Megatron-DeepSpeed and BigScience's fork: logging, data, checkpoint plumbing, DeepSpeed's
    // launcher and the ZeRO buckets of its JSON
    " --deepspeed-mpi --contigious-checkpointing --synchronize-each-layer --profile-backward"
    " --zero-contigious-gradients --zero-reduce-scatter --zero-reduce-bucket-size --zero-allgather-bucket-size"
    " --remote-device --use-pin-memory --log-optimizer-states-to-tensorboard --universal-checkpoint"
    " --kill-switch-path --abort-on-unmet-fused-kernel-constraints --train-weighted-split-paths-path"
    " --valid-weighted-split-paths-path --test-weighted-split-paths-path --train-weighted-split-paths"
    " --valid-weighted-split-paths --test-weighted-split-paths --valid-num-workers --repeated-dataloader ";

}  // namespace

bool is_known_unused_megatron_arg(const std::string& name) {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    std::string w;
    for (const char* p = kUnusedArgs;; ++p) {
      if (*p == ' ' || *p == '\0') {
        if (!w.empty()) out.insert(w);
        w.clear();
        if (*p == '\0') break;
      } else {
        w += *p;
      }
    }
    return out;
  }();
  return names.count(name) > 0;
}

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_option(const std::string& w) { return w.size() > 2 && starts_with(w, "--"); }

// A python training script, possibly behind a path: .../pretrain_gpt.py.
bool is_script(const std::string& w) { return ends_with(w, ".py"); }

int positive_int(const std::string& text, const std::string& arg) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 1 || v > 1'000'000) {
    throw Error("invalid_config", arg,
                arg + " \"" + text + "\" is not a positive integer (an elastic range or an unset variable?)");
  }
  return static_cast<int>(v);
}

// Launcher options before the script: torchrun / torch.distributed.run / launch, deepspeed, srun.
void read_launcher(const std::vector<std::string>& words, size_t end, MegatronArgs& out,
                   const std::string& source) {
  for (size_t i = 0; i < end; ++i) {
    std::string w = words[i], value;
    const size_t eq = w.find('=');
    if (starts_with(w, "-") && eq != std::string::npos) {
      value = w.substr(eq + 1);
      w = w.substr(0, eq);
    } else if (i + 1 < end) {
      value = words[i + 1];
    }
    for (char& c : w)
      if (c == '_') c = '-';
    if (w == "--nnodes" || w == "--num-nodes" || w == "--nodes" || w == "-N") {
      out.nnodes = positive_int(value, words[i].substr(0, eq == std::string::npos ? words[i].size() : eq));
      out.nnodes_source = source + w;
    } else if (w == "--nproc-per-node" || w == "--num-gpus" || w == "--ntasks-per-node" ||
               w == "--gpus-per-node") {
      out.nproc_per_node = positive_int(value, w);
      out.nproc_source = source + w;
    }
  }
}

// The command that runs the training: the last one with a python script followed by
// options; else a pasted list of bare options.
const ShellCommand* training_command(const ShellScript& script, size_t& script_index) {
  const ShellCommand* best = nullptr;
  for (const ShellCommand& cmd : script.commands) {
    for (size_t i = 0; i < cmd.words.size(); ++i) {
      if (is_script(cmd.words[i]) && i + 1 < cmd.words.size() && is_option(cmd.words[i + 1])) {
        best = &cmd;
        script_index = i;
        break;
      }
    }
  }
  if (best) return best;
  for (const ShellCommand& cmd : script.commands) {
    if (!cmd.words.empty() && is_option(cmd.words[0])) {
      best = &cmd;
      script_index = std::string::npos;
    }
  }
  return best;
}

std::string unquote(std::string v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
    v = v.substr(1, v.size() - 2);
  return v;
}

}  // namespace

MegatronArgs parse_megatron_command(const std::string& text) {
  if (static_cast<int64_t>(text.size()) > config_limits::kMaxInputBytes) {
    throw Error("invalid_json", "",
                "the arguments are " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(config_limits::kMaxInputBytes) + " bytes (16 MiB)");
  }
  const ShellScript script = read_shell_script(text);
  size_t at = 0;
  const ShellCommand* cmd = training_command(script, at);
  if (!cmd) {
    throw Error(
        "invalid_config", "",
        "no training command found: expected Megatron-LM arguments (--num-layers ...), alone or after "
        "a training script such as pretrain_gpt.py");
  }
  MegatronArgs out;
  read_launcher(script.sbatch_words, script.sbatch_words.size(), out, "#SBATCH ");
  size_t first = 0;
  if (at != std::string::npos) {
    out.script = cmd->words[at];
    read_launcher(cmd->words, at, out, "");
    first = at + 1;
  }
  const std::vector<std::string>& w = cmd->words;
  for (size_t i = first; i < w.size();) {
    if (!is_option(w[i])) {
      throw Error("invalid_config", w[i],
                  "\"" + w[i] + "\" (line " + std::to_string(cmd->line) +
                      ") is not an argument: Megatron-LM arguments start with --");
    }
    std::string name = w[i];
    std::vector<std::string> values;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      values.push_back(unquote(name.substr(eq + 1)));
      name = name.substr(0, eq);
    }
    for (size_t k = 2; k < name.size(); ++k)
      if (name[k] == '_') name[k] = '-';
    ++i;
    while (i < w.size() && !is_option(w[i])) values.push_back(unquote(w[i++]));
    if (!mapped_args().count(name) && !is_known_unused_megatron_arg(name)) {
      throw Error("invalid_config", name,
                  "unknown argument " + name + ": not a Megatron-LM training argument (check the spelling)");
    }
    auto it = out.values.find(name);
    if (it == out.values.end()) {
      out.order.push_back(name);
    } else if (it->second != values && mapped_args().count(name)) {
      out.repeated.push_back(name);
    }
    out.values[name] = values;  // argparse keeps the last occurrence
  }
  return out;
}

}  // namespace proteus::import_detail
