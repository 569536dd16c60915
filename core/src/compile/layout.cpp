#include "proteus/layout.h"

namespace proteus {

double Layout::shard_factor(const Mesh& mesh) const {
  double f = 1;
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (placement[a] >= 0) f *= mesh.size[a];
  return f;
}

namespace {

// Which collective converts one placement into another on a single axis (or none).
bool step_kind(int from, int to, CollectiveKind* kind) {
  if (from == to) return false;
  if (from == kPartial) {
    *kind = (to == kReplicate) ? CollectiveKind::AllReduce : CollectiveKind::ReduceScatter;
    return true;
  }
  if (from >= 0) {
    if (to == kReplicate) {
      *kind = CollectiveKind::AllGather;
      return true;
    }
    if (to >= 0) {
      *kind = CollectiveKind::AllToAll;
      return true;
    }
  }
  return false;  // Replicate -> Shard is a local slice; nothing becomes Partial by moving data
}

}  // namespace

std::vector<CollectiveStep> redistribute(const Layout& from, const Layout& to, double tensor_bytes,
                                         const Mesh& mesh) {
  // Group the axes by the collective they need, in a fixed order.
  constexpr CollectiveKind kOrder[] = {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
                                       CollectiveKind::AllToAll, CollectiveKind::AllGather};
  std::vector<CollectiveStep> steps;
  Layout current = from;
  for (CollectiveKind want : kOrder) {
    AxisMask axes = 0;
    for (int a = 0; a < kNumMeshAxes; ++a) {
      if (mesh.size[a] <= 1) continue;
      CollectiveKind k;
      if (step_kind(current.placement[a], to.placement[a], &k) && k == want) axes |= axis_bit(MeshAxis(a));
    }
    if (!axes) continue;
    // S per rank: the buffer each rank holds on the side where it is largest. For all-reduce,
    // reduce-scatter and all-to-all that is the input (divided only by the other axes' shards);
    // for all-gather the gathered output.
    Layout sized = current;
    if (want == CollectiveKind::AllGather) {
      for (int a = 0; a < kNumMeshAxes; ++a)
        if (axes & (1u << a)) sized.placement[a] = kReplicate;
    }
    steps.push_back({want, axes, tensor_bytes / sized.shard_factor(mesh)});
    for (int a = 0; a < kNumMeshAxes; ++a)
      if (axes & (1u << a)) current.placement[a] = to.placement[a];
  }
  // Axes still differing are Replicate -> Shard slices (free).
  return steps;
}

std::string to_string(const Layout& layout) {
  std::string s = "[";
  bool first = true;
  for (int a = 0; a < kNumMeshAxes; ++a) {
    const int p = layout.placement[a];
    if (p == kReplicate) continue;
    if (!first) s += ' ';
    first = false;
    s += axis_name(MeshAxis(a));
    s += ':';
    s += (p == kPartial) ? std::string("P") : "S" + std::to_string(p);
  }
  return s + "]";
}

}  // namespace proteus
