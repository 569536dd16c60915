// The parallelization strategy: the config's "strategy" object. Macros (dp, tp, ...) plus
// per-module overrides; the strategy builder turns them into a StrategyTree.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace proteus {

enum class Schedule { GPipe, OneFOneB, Interleaved1F1B, ZbH1 };
enum class Recompute { None, Selective, Full };

// A per-module setting. path matches module paths ("layers.3.mlp", "classifier",
// "layers.*.attention"; '*' matches one path segment, a trailing ".**" any depth).
struct OverrideSpec {
  std::string path;
  // mesh axis -> iteration dim name it splits in this module's ops ("" = replicate).
  std::map<std::string, std::string> map;
  std::optional<Recompute> recompute;
  std::optional<int> stage;  // pipeline stage this module runs on
};

struct StrategySpec {
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  int64_t micro_batch = 1;
  Schedule schedule = Schedule::OneFOneB;
  int virtual_stages = 1;
  bool sequence_parallel = false;
  int zero = 0;
  Recompute recompute = Recompute::None;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  double grad_bucket_MB = 25;
  std::vector<OverrideSpec> overrides;
  std::vector<int> stage_layers;  // optional explicit layers per (virtual) stage
};

const char* to_string(Schedule);
const char* to_string(Recompute);

}  // namespace proteus
