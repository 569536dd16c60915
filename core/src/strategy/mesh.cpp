#include "proteus/mesh.h"

namespace proteus {

int Mesh::ranks() const {
  int n = 1;
  for (int s : size) n *= s;
  return n;
}

// Placement order is the array order: pp slowest, tp fastest (Megatron's tp-cp-ep-dp-pp).
std::array<int, kNumMeshAxes> Mesh::coords_of(int gpu) const {
  std::array<int, kNumMeshAxes> c{};
  for (int a = kNumMeshAxes - 1; a >= 0; --a) {
    c[a] = gpu % size[a];
    gpu /= size[a];
  }
  return c;
}

int Mesh::gpu_of(const std::array<int, kNumMeshAxes>& coords) const {
  int gpu = 0;
  for (int a = 0; a < kNumMeshAxes; ++a) gpu = gpu * size[a] + coords[a];
  return gpu;
}

std::vector<int> Mesh::group(int gpu, AxisMask axes) const {
  const auto base = coords_of(gpu);
  int count = 1;
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (axes & (1u << a)) count *= size[a];
  std::vector<int> members;
  members.reserve(count);
  for (int i = 0; i < count; ++i) {
    auto c = base;
    int rest = i;
    for (int a = kNumMeshAxes - 1; a >= 0; --a) {  // fastest axis varies first
      if (!(axes & (1u << a))) continue;
      c[a] = rest % size[a];
      rest /= size[a];
    }
    members.push_back(gpu_of(c));
  }
  return members;
}

const char* axis_name(MeshAxis a) {
  switch (a) {
    case kAxisPp:
      return "pp";
    case kAxisDp:
      return "dp";
    case kAxisEp:
      return "ep";
    case kAxisCp:
      return "cp";
    case kAxisTp:
      return "tp";
    default:
      return "?";
  }
}

std::string axes_name(AxisMask axes) {
  std::string out;
  for (int a = 0; a < kNumMeshAxes; ++a) {
    if (!(axes & (1u << a))) continue;
    if (!out.empty()) out += '+';
    out += axis_name(static_cast<MeshAxis>(a));
  }
  return out.empty() ? "none" : out;
}

int axis_from_name(const std::string& n) {
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (n == axis_name(static_cast<MeshAxis>(a))) return a;
  return -1;
}

}  // namespace proteus
