// Megatron-LM / Megatron-Core training arguments -> a Proteus config. Each argument's meaning
// and default are Megatron's own (megatron/training/arguments.py, core_r0.x); docs/import.md
// lists the mapping. The hardware is not in the arguments: the caller names the cluster.
// The mapping is split by concept, one file each (megatron_parts.h lists them); here only the
// order in which the parts run, and the result.
#include <string>

#include "megatron_arg_reader.h"
#include "megatron_args.h"
#include "megatron_parts.h"
#include "proteus/import.h"

namespace proteus {

using namespace import_detail;  // the parts (megatron_parts.h) and their reader

ImportResult import_megatron(const std::string& text, const MegatronImportOptions& options) {
  const MegatronArgs args = import_detail::parse_megatron_command(text);
  ArgReader in(args);
  ImportResult result;
  const Family family = script_family(args.script, result.assumed);
  int gpus = 0;
  Json cluster = cluster_part(options, args, gpus, result.assumed);
  Json training = Json::object();
  // tp first: the vocabulary padding depends on it.
  const int64_t tp = in.has("--tensor-model-parallel-size")
                         ? in.integer("--tensor-model-parallel-size", 1, 1, 1 << 20)
                         : in.integer("--model-parallel-size", 1, 1, 1 << 20);
  Json model = model_part(in, family, tp, result.ignored, result.assumed);
  moe_part(in, model, result.ignored, result.assumed);
  Json strategy = strategy_part(in, model["layers"].get<int64_t>(), gpus, result.ignored, result.assumed,
                                training, model);
  deepspeed_part(in, strategy, result.ignored, result.assumed);
  training["seq_len"] = in.has("--seq-length") ? in.integer("--seq-length", 0, 1, 16777216)
                                               : in.integer("--encoder-seq-length", 0, 1, 16777216);
  training_part(in, training);
  gradient_dtype_part(in, strategy, training, result.assumed);
  transformer_engine_part(in, strategy, training, result.ignored);
  precision_aware_optimizer_part(in, strategy, training, result.ignored);
  attention_kernel_part(in, strategy, result.assumed);
  kernel_fusion_part(in, model, strategy, result.ignored);
  if (strategy.value("framework", std::string()) != "deepspeed")  // its pipeline engine's p2p is fixed
    pipeline_p2p_part(in, strategy, result.ignored, result.assumed);
  for (const std::string& name : args.repeated)
    result.ignored.push_back(name + " is given more than once: the last value is used (as argparse does)");
  for (const std::string& name : in.unread()) result.ignored.push_back(name);
  Json config = Json::object();
  config["schema"] = 1;
  config["model"] = model;
  config["cluster"] = cluster;
  config["training"] = training;
  config["strategy"] = strategy;
  result.config_json = config.dump(2);
  return result;
}

}  // namespace proteus
