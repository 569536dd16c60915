// The device mesh: named axes over the cluster's GPUs. Ranks are placed in Megatron's order
// (tp fastest, then cp, ep, dp, pp) unless a config says otherwise; the GPU of a rank is its
// linear index in that order.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace proteus {

enum MeshAxis : int { kAxisPp = 0, kAxisDp = 1, kAxisEp = 2, kAxisCp = 3, kAxisTp = 4, kNumMeshAxes = 5 };
using AxisMask = uint8_t;  // bit i set = axis i
constexpr AxisMask axis_bit(MeshAxis a) { return static_cast<AxisMask>(1u << a); }

struct Mesh {
  // Sizes in placement order, slowest first: pp, dp (= strategy dp / ep), ep, cp, tp.
  std::array<int, kNumMeshAxes> size{1, 1, 1, 1, 1};
  int ranks() const;
  std::array<int, kNumMeshAxes> coords_of(int gpu) const;
  int gpu_of(const std::array<int, kNumMeshAxes>& coords) const;
  // GPUs of the group spanned by `axes` that contains `gpu` (ordered by the axes' coords).
  std::vector<int> group(int gpu, AxisMask axes) const;
};

const char* axis_name(MeshAxis a);         // "pp", "dp", "ep", "cp", "tp"
std::string axes_name(AxisMask axes);      // "dp+cp", "tp", ...
int axis_from_name(const std::string& n);  // -1 if unknown

}  // namespace proteus
