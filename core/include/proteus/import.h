// Importers and exporters (DESIGN.md §7): a run written for another tool -> a Proteus config,
// and a config -> that tool's arguments. Each importer maps every argument it understands and
// lists the rest; an argument it cannot read (unknown, malformed, contradictory, an
// unsupported architecture) is a proteus::Error whose path names it ("--num-layers",
// "num_hidden_layers", "architectures[0]"). docs/import.md is the reference.
#pragma once
#include <string>
#include <vector>

namespace proteus {

struct ImportResult {
  std::string config_json;           // a config (Megatron) or {"model": {...}} (Hugging Face)
  std::vector<std::string> ignored;  // inputs read but not applied, each with the reason
  std::vector<std::string> assumed;  // values the input does not give that the importer chose
};

struct MegatronImportOptions {
  // The hardware, which Megatron's arguments do not name: a cluster preset name or a JSON
  // cluster object (the config's "cluster" field). Empty: the result has no cluster and the
  // import fails with an error saying so.
  std::string cluster_json;
  int nodes = 0;  // > 0: overrides torchrun --nnodes / #SBATCH --nodes
};

// Megatron-LM / Megatron-Core / NeMo (Megatron-style) training arguments, bare or inside a
// launch script (torchrun/python/srun prefixes, variables, arrays, line continuations).
ImportResult import_megatron(const std::string& text, const MegatronImportOptions& options);
// A Hugging Face config.json of a supported causal LM -> the model part of a config.
ImportResult import_hf(const std::string& text);
// A config (any form parse_config reads) -> the equivalent Megatron-LM command line.
std::string export_megatron(const std::string& config_text);

}  // namespace proteus
