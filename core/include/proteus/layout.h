// Tensor layouts over the device mesh and the redistribution rule (DESIGN.md §3).
// A layout gives, per mesh axis, one placement: Shard(tensor axis i), Replicate, or Partial
// (the axis splits a dim the tensor is not indexed by: ranks hold partial sums).
// Converting one layout into another needs, per mesh axis:
//   Partial -> Replicate  all-reduce        Partial -> Shard     reduce-scatter
//   Shard   -> Replicate  all-gather        Shard(i) -> Shard(j) all-to-all
//   Replicate -> Shard    nothing (local slice)   equal          nothing
// Axes that need the same kind of collective are merged into one collective over their
// product group (e.g. a gradient all-reduce over dp and cp together).
#pragma once
#include <array>
#include <string>
#include <vector>
#include "proteus/exec_graph.h"
#include "proteus/mesh.h"

namespace proteus {

constexpr int kReplicate = -1;
constexpr int kPartial = -2;  // values >= 0 are Shard(tensor axis)

struct Layout {
  std::array<int, kNumMeshAxes> placement{kReplicate, kReplicate, kReplicate, kReplicate, kReplicate};
  bool operator==(const Layout& o) const { return placement == o.placement; }
  bool operator!=(const Layout& o) const { return !(*this == o); }
  // Product of the sizes of the axes that shard the tensor: its per-rank bytes are bytes / this.
  double shard_factor(const Mesh& mesh) const;
};

struct CollectiveStep {
  CollectiveKind kind;
  AxisMask axes;
  double bytes;  // algorithm-independent size S per rank (see exec_graph.h)
};

// The collectives that turn `from` into `to` for a tensor of `tensor_bytes` global bytes.
std::vector<CollectiveStep> redistribute(const Layout& from, const Layout& to, double tensor_bytes,
                                         const Mesh& mesh);

std::string to_string(const Layout& layout);  // "[dp:S0 tp:P]"

}  // namespace proteus
