// Megatron-LM's command line as data: the training command found in a launch script, its
// launcher's world size, and the arguments by name. Every argument must be one Megatron-LM
// (megatron/training/arguments.py) defines; those Proteus does not use are kept so the
// importer can list them as ignored.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace proteus::import_detail {

struct MegatronArgs {
  std::string script;  // the training script (pretrain_gpt.py), "" for bare arguments
  // Launcher (torchrun, python -m torch.distributed.run, srun, #SBATCH): 0 = not given.
  int nnodes = 0, nproc_per_node = 0;
  std::string nnodes_source, nproc_source;                 // the argument that gave it, for messages
  std::map<std::string, std::vector<std::string>> values;  // "--num-layers" -> its words
  std::vector<std::string> order;                          // first appearance of each name
  std::vector<std::string> repeated;                       // given twice with different values
};

// Throws proteus::Error naming the argument for an unknown one or a malformed command line.
MegatronArgs parse_megatron_command(const std::string& text);

// Arguments that Megatron-LM defines but that do not change what Proteus simulates
// (logging, checkpoints, data, learning rate, fused kernels, ...).
bool is_known_unused_megatron_arg(const std::string& name);

}  // namespace proteus::import_detail
