#include "grad_sync_points.h"

#include <algorithm>

namespace proteus {

GradSyncPoints megatron_grad_sync_points(const std::vector<Pass>& passes, int stage, bool interleaved) {
  GradSyncPoints points;
  points.chunks_after_pass.resize(passes.size());
  std::vector<int> backward_pass;  // pass index of each backward, in order
  int chunks = 0;
  for (size_t i = 0; i < passes.size(); ++i) {
    chunks = std::max(chunks, passes[i].chunk + 1);
    if (passes[i].kind == PassKind::B) backward_pass.push_back(static_cast<int>(i));
  }
  if (backward_pass.empty()) return points;
  const int backwards = static_cast<int>(backward_pass.size());
  if (!interleaved) {
    if (stage == 0)
      points.on_ready = true;
    else
      points.chunks_after_pass[static_cast<size_t>(backward_pass.back())].push_back(0);
    return points;
  }
  // Each chunk's last backward (its last micro-batch), as an index among the backwards.
  std::vector<int> last_backward(static_cast<size_t>(chunks), -1);
  for (int k = 0; k < backwards; ++k)
    last_backward[static_cast<size_t>(passes[static_cast<size_t>(backward_pass[k])].chunk)] = k;
  for (int c = 0; c < chunks; ++c) {
    if (last_backward[static_cast<size_t>(c)] < 0) continue;
    const int k = std::min(last_backward[static_cast<size_t>(c)] + stage, backwards - 1);
    points.chunks_after_pass[static_cast<size_t>(backward_pass[static_cast<size_t>(k)])].push_back(c);
  }
  return points;
}

std::vector<int> megatron_param_sync_chunks(const std::vector<Pass>& passes, int stage, int stages) {
  std::vector<int> chunk_before(passes.size(), -1);
  int chunks = 0, forwards = 0;
  for (const Pass& p : passes) {
    chunks = std::max(chunks, p.chunk + 1);
    if (p.kind == PassKind::F) ++forwards;
  }
  int k = 0;  // forward_step_helper's virtual micro-batch id
  for (size_t i = 0; i < passes.size(); ++i) {
    if (passes[i].kind != PassKind::F) continue;
    const int id = k++ + stage;  // param_sync_microbatch_id
    if (id >= forwards || id >= stages * chunks || id % stages != 0) continue;
    const int chunk = id / stages + 1;
    if (chunk > 1 && chunk < chunks) chunk_before[i] = chunk;
  }
  return chunk_before;
}

}  // namespace proteus
