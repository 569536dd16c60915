// The Megatron importer's parts, grouped by the file that defines each. import_megatron()
// (import_megatron.cpp) calls them in order: script, cluster, model, MoE, strategy, DeepSpeed,
// precision, Transformer Engine, optimizer, kernels, pipeline p2p. Each reads its arguments through the
// ArgReader, writes its fields into the config's JSON objects, and lists what it did not
// simulate (ignored) or took from Megatron's defaults (assumed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "megatron_arg_reader.h"
#include "megatron_args.h"
#include "proteus/import.h"

namespace proteus::import_detail {

// megatron_model.cpp: the script's model family and the transformer's own fields.

// What the training script builds (Megatron's entry points).
enum class Family { Gpt, Bert };

Family script_family(const std::string& script, std::vector<std::string>& assumed);
Json model_part(ArgReader& in, Family family, int64_t tp, std::vector<std::string>& ignored,
                std::vector<std::string>& assumed);

// megatron_moe.cpp: the experts (model.moe) and how they are split and dispatched (strategy).

void moe_part(ArgReader& in, Json& model, std::vector<std::string>& ignored,
              std::vector<std::string>& assumed);
void moe_strategy_part(ArgReader& in, const Json& model, int64_t tp, Json& st,
                       std::vector<std::string>& assumed);

// megatron_strategy.cpp: the cluster, the parallel layout and the pipeline's point-to-point.

Json cluster_part(const MegatronImportOptions& options, const MegatronArgs& args, int& gpus,
                  std::vector<std::string>& assumed);
Json strategy_part(ArgReader& in, int64_t layers, int gpus, std::vector<std::string>& ignored,
                   std::vector<std::string>& assumed, Json& training, Json& model);
void pipeline_p2p_part(ArgReader& in, Json& st, std::vector<std::string>& ignored,
                       std::vector<std::string>& assumed);

// megatron_deepspeed.cpp: Megatron-DeepSpeed's --deepspeed (framework deepspeed) and its ZeRO stage.

void deepspeed_part(ArgReader& in, Json& st, std::vector<std::string>& ignored,
                    std::vector<std::string>& assumed);
// The sequence split: Megatron's --context-parallel-size, or Megatron-DeepSpeed's
// --ds-sequence-parallel-size (DeepSpeed-Ulysses, strategy.cp under framework deepspeed).
int64_t context_parallel_size(ArgReader& in);

// megatron_precision.cpp: number formats, and the knobs that depend on them.

Json training_part(ArgReader& in, Json& training);
void gradient_dtype_part(ArgReader& in, Json& st, const Json& training, std::vector<std::string>& assumed);
void transformer_engine_part(ArgReader& in, Json& st, Json& training, std::vector<std::string>& ignored);
void precision_aware_optimizer_part(ArgReader& in, Json& st, const Json& training,
                                    std::vector<std::string>& ignored);

// megatron_kernels.cpp: fused kernels and the attention kernel.

void kernel_fusion_part(ArgReader& in, const Json& model, Json& st, std::vector<std::string>& ignored);
void attention_kernel_part(ArgReader& in, Json& st, std::vector<std::string>& assumed);

}  // namespace proteus::import_detail
