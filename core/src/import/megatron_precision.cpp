// Megatron's numeric-format arguments -> the config's training precision and optimizer and the
// strategy fields that follow from them: the main gradients' dtype, Transformer Engine's FP8
// recipe, FP8 parameter gathers, TP-overlap and context-parallel communication knobs, and the
// precision-aware optimizer's master-weight remainders.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "megatron_arg_reader.h"
#include "megatron_parts.h"
#include "proteus/error.h"
#include "proteus/strategy_spec.h"

namespace proteus::import_detail {

Json training_part(ArgReader& in, Json& training) {
  const bool fp16 = in.flag("--fp16"), bf16 = in.flag("--bf16");
  if (fp16 && bf16) throw Error("invalid_config", "--bf16", "--bf16 contradicts --fp16");
  std::string precision = fp16 ? "fp16" : bf16 ? "bf16" : "fp32";
  if (in.has("--fp8-format") || in.has("--fp8")) {
    const std::string arg = in.has("--fp8-format") ? "--fp8-format" : "--fp8";
    in.choice(arg, "hybrid", {"e4m3", "hybrid"});
    if (precision == "fp32")
      throw Error("invalid_config", arg,
                  arg + " needs --bf16 or --fp16 (Transformer Engine's FP8 runs inside mixed precision)");
    precision = "fp8";
  }
  training["precision"] = precision;
  training["optimizer"] = in.choice("--optimizer", "adam", {"adam", "sgd"});
  return training;
}

// The dtype of the main gradients and their reduction (megatron/training/arguments.py): bf16
// training accumulates and reduces in fp32 unless --grad-reduce-in-bf16 (Megatron-Core's
// DistributedDataParallelConfig.grad_reduce_in_fp32 takes it). fp16 training keeps fp16 main
// gradients unless --accumulate-allreduce-grads-in-fp32; Proteus keeps fp32 there and says so,
// since the published fp16 Megatron runs' memory (Korthikanti et al.: 18 bytes per parameter,
// tests/validation) counts fp32 gradients. With 16-bit gradients a bucket of the same parameter
// count holds half the bytes.
void gradient_dtype_part(ArgReader& in, Json& st, const Json& training, std::vector<std::string>& assumed) {
  const std::string precision = training["precision"].get<std::string>();
  if (st.value("framework", std::string()) == "deepspeed") {
    // DeepSpeed's engine, not Megatron's DDP, keeps the gradients: its JSON's dtypes apply.
    in.flag("--grad-reduce-in-bf16");
    in.flag("--accumulate-allreduce-grads-in-fp32");
    if (precision != "fp32")
      assumed.push_back(
          "gradients as DeepSpeed keeps them by default: the module's 16-bit dtype, reduced in it "
          "(communication_data_type), fp32 under its BF16_Optimizer (bf16 at ZeRO stage 0)");
    return;
  }
  const bool bf16_grads = in.flag("--grad-reduce-in-bf16");
  const bool fp32_grads = in.flag("--accumulate-allreduce-grads-in-fp32");
  if (bf16_grads && fp32_grads)
    throw Error("invalid_config", "--grad-reduce-in-bf16",
                "--grad-reduce-in-bf16 contradicts --accumulate-allreduce-grads-in-fp32");
  if (bf16_grads && precision == "fp32")
    throw Error("invalid_config", "--grad-reduce-in-bf16", "--grad-reduce-in-bf16 needs --bf16");
  if (in.flag("--fp16") && !fp32_grads)
    assumed.push_back(
        "fp32 main gradients under --fp16 (Megatron's default there is fp16; add "
        "--accumulate-allreduce-grads-in-fp32 to say so, or set strategy.grad_reduce_in_fp32 false)");
  if (!bf16_grads) return;
  st["grad_reduce_in_fp32"] = false;
  if (st.contains("grad_bucket_MB"))
    st["grad_bucket_MB"] =
        st["grad_bucket_MB"].get<double>() * grad_bytes_per_element(false) / kFp32GradBytes;
}

// Megatron-Core's --use-precision-aware-optimizer (megatron/core/optimizer/__init__.py): Transformer
// Engine's FusedAdam holds the master weights and moments in the dtypes --main-params-dtype,
// --exp-avg-dtype and --exp-avg-sq-dtype name (strategy.main_params_dtype, exp_avg_dtype,
// exp_avg_sq_dtype), and from TE 2.1 Megatron passes it store_param_remainders
// (OptimizerConfig default true), which keeps only the masters' low 16 bits when the weights are
// bf16 and the masters fp32. FusedAdam holds the masters only under delayed scaling or without
// FP8 (use_precision_aware_optimizer_no_fp8_or_ds_fp8); under other FP8 recipes Megatron keeps
// whole fp32 masters itself. Without the flag OptimizerConfig asserts every dtype is fp32.
void precision_aware_optimizer_part(ArgReader& in, Json& st, const Json& training,
                                    std::vector<std::string>& ignored) {
  const bool aware = in.flag("--use-precision-aware-optimizer");
  const bool no_remainders = in.flag("--no-store-param-remainders");
  const std::string main_params = in.choice("--main-params-dtype", "fp32", {"fp32", "fp16"});
  const std::string exp_avg = in.choice("--exp-avg-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
  const std::string exp_avg_sq = in.choice("--exp-avg-sq-dtype", "fp32", {"fp32", "fp16", "bf16", "fp8"});
  const std::string main_grads = in.choice("--main-grads-dtype", "fp32", {"fp32", "bf16"});
  if (!aware) {
    const std::pair<const char*, std::string> dtypes[] = {{"--main-params-dtype", main_params},
                                                          {"--exp-avg-dtype", exp_avg},
                                                          {"--exp-avg-sq-dtype", exp_avg_sq},
                                                          {"--main-grads-dtype", main_grads}};
    for (const auto& [arg, dtype] : dtypes) {
      if (dtype != "fp32")
        throw Error(
            "invalid_config", arg,
            std::string(arg) + " " + dtype +
                " needs --use-precision-aware-optimizer (Megatron's OptimizerConfig asserts fp32 otherwise)");
    }
    return;
  }
  if (training.value("optimizer", "adam") != "adam")
    throw Error("invalid_config", "--use-precision-aware-optimizer",
                "--use-precision-aware-optimizer needs --optimizer adam (Megatron asserts this)");
  if (st.value("zero", 0) < 1)
    throw Error("invalid_config", "--use-precision-aware-optimizer",
                "--use-precision-aware-optimizer needs --use-distributed-optimizer (Megatron asserts this)");
  if (exp_avg != "fp32") st["exp_avg_dtype"] = exp_avg;
  if (exp_avg_sq != "fp32") st["exp_avg_sq_dtype"] = exp_avg_sq;
  if (main_grads != "fp32")
    ignored.push_back(
        "--main-grads-dtype bf16: the gradient buffer's dtype follows --grad-reduce-in-bf16 here");
  const bool fp8 = training.value("precision", "fp32") == "fp8";
  const bool te_masters = !fp8 || training.value("fp8_recipe", "delayed") == "delayed";
  const bool bf16_weights = in.flag("--bf16") && !st.value("fp8_param_gather", false);
  if (main_params != "fp32") {
    st["main_params_dtype"] = main_params;
  } else if (bf16_weights && te_masters && !no_remainders) {
    st["store_param_remainders"] = true;
  } else if (no_remainders || training.value("precision", "fp32") == "fp32") {
    return;
  } else {
    ignored.push_back(
        "--use-precision-aware-optimizer: without bf16 weights (--bf16, no --fp8-param-gather) and "
        "Transformer Engine's masters (no FP8 recipe but delayed) the master weights stay whole fp32");
  }
}

// Transformer Engine's knobs that Megatron-LM passes through (megatron/training/arguments.py):
// the FP8 recipe and its amax group, FP8 parameter gathers, TP communication overlap and the
// context-parallel communication type. Read after the strategy and the precision are known.
void transformer_engine_part(ArgReader& in, Json& st, Json& training, std::vector<std::string>& ignored) {
  const bool fp8 = training["precision"] == "fp8";
  if (in.has("--fp8-recipe")) {
    // Megatron's "tensorwise" is TE's Float8CurrentScaling (docs/frameworks/fp8.md).
    const std::string recipe =
        in.choice("--fp8-recipe", "delayed", {"delayed", "tensorwise", "mxfp8", "blockwise"});
    if (!fp8) {
      ignored.push_back("--fp8-recipe: without --fp8-format the run is not FP8");
    } else if (recipe == "blockwise") {
      ignored.push_back(
          "--fp8-recipe blockwise: TE's Float8BlockScaling is not modelled; simulated with delayed scaling");
    } else {
      training["fp8_recipe"] = recipe == "tensorwise" ? "current" : recipe;
    }
  }
  if (in.flag("--fp8-param-gather")) {
    if (!fp8) {
      ignored.push_back("--fp8-param-gather: without --fp8-format there are no FP8 weights to gather");
    } else if (st["zero"].get<int>() < 1) {
      // Megatron asserts it: the FP8 copy lives in the distributed optimizer's parameter buffer.
      throw Error(
          "invalid_config", "--fp8-param-gather",
          "--fp8-param-gather needs --use-distributed-optimizer or Megatron FSDP (Megatron asserts this)");
    } else {
      st["fp8_param_gather"] = true;
    }
  }
  if (in.flag("--tp-only-amax-red")) {
    if (fp8)
      st["tp_only_amax_red"] = true;
    else
      ignored.push_back("--tp-only-amax-red: without --fp8-format there is no amax to reduce");
  }
  if (in.flag("--tp-comm-overlap")) {
    if (!st["sequence_parallel"].get<bool>()) {
      throw Error("invalid_config", "--tp-comm-overlap",
                  "--tp-comm-overlap needs --sequence-parallel (Megatron asserts this)");
    }
    if (st["tp"].get<int64_t>() > 1)
      st["tp_comm_overlap"] = true;
    else
      ignored.push_back("--tp-comm-overlap: one tensor-parallel rank has no TP communication to overlap");
  }
  if (in.has("--cp-comm-type")) {
    // nargs='+': one type for every layer, or one per layer. Per-layer types are not modelled.
    const std::vector<std::string>& types = in.values("--cp-comm-type");
    if (types.empty()) throw Error("invalid_config", "--cp-comm-type", "--cp-comm-type needs a value");
    for (const std::string& t : types) {
      if (t != "p2p" && t != "all_gather" && t != "a2a" && t != "a2a+p2p") {
        throw Error("invalid_config", "--cp-comm-type",
                    "--cp-comm-type \"" + t + "\" is not one of: p2p, all_gather, a2a, a2a+p2p");
      }
    }
    const bool same =
        std::all_of(types.begin(), types.end(), [&](const std::string& t) { return t == types[0]; });
    if (!same) {
      ignored.push_back("--cp-comm-type: one type per layer is not modelled; the default p2p is simulated");
    } else if (st["cp"].get<int64_t>() > 1) {
      st["cp_comm_type"] = types[0];
      if (types[0] == "a2a+p2p" && in.has("--hierarchical-context-parallel-sizes")) {
        // [a2a, p2p]: the inner all-to-all group's ranks first.
        const std::vector<std::string>& sizes = in.values("--hierarchical-context-parallel-sizes");
        char* end = nullptr;
        const long long a2a = sizes.empty() ? 0 : std::strtoll(sizes[0].c_str(), &end, 10);
        if (sizes.size() != 2 || *end || a2a < 1) {
          throw Error("invalid_config", "--hierarchical-context-parallel-sizes",
                      "--hierarchical-context-parallel-sizes takes two positive integers: a2a p2p");
        }
        st["cp_a2a_size"] = a2a;
      }
    } else {
      ignored.push_back("--cp-comm-type: without context parallelism there is no CP communication");
    }
  }
}

}  // namespace proteus::import_detail
