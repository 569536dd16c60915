// What the strategy's schedule implies for the pipeline's shape.
#include <algorithm>

#include "proteus/strategy_spec.h"

namespace proteus {

int chunks_per_stage(const StrategySpec& s) {
  switch (s.schedule) {
    case Schedule::Interleaved1F1B:
      return std::max(1, s.virtual_stages);
    case Schedule::ZbV:
    case Schedule::DualPipeV:
    case Schedule::DualPipe:  // copy A's stage r and copy B's stage pp-1-r
      return 2;
    case Schedule::Explicit: {
      if (s.schedule_copies == 2) return 2;  // copy 0's chunk and copy 1's on every stage
      int chunks = 1;
      for (const auto& stage : s.schedule_stages)
        for (const std::string& pass : stage) {
          const size_t dot = pass.find('.');
          if (dot == std::string::npos) continue;
          int chunk = 0;
          for (size_t i = dot + 1; i < pass.size() && pass[i] >= '0' && pass[i] <= '9' && chunk < (1 << 20);
               ++i)
            chunk = chunk * 10 + (pass[i] - '0');
          chunks = std::max(chunks, chunk + 1);
        }
      return chunks;
    }
    default:
      return 1;
  }
}

bool v_placement(const StrategySpec& s) {
  return s.schedule == Schedule::ZbV || s.schedule == Schedule::DualPipeV ||
         s.schedule == Schedule::DualPipe || (s.schedule == Schedule::Explicit && s.schedule_v_placement);
}

int model_copies(const StrategySpec& s) {
  if (s.schedule == Schedule::Explicit) return s.schedule_copies;
  return s.schedule == Schedule::DualPipe ? 2 : 1;
}

int model_chunks(const StrategySpec& s) { return s.pp * chunks_per_stage(s) / model_copies(s); }

bool uneven_pipeline(const StrategySpec& s) {
  return s.first_stage_layers > 0 || s.last_stage_layers > 0 || s.embedding_as_layer || s.loss_as_layer;
}

}  // namespace proteus
