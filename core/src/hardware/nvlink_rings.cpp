#include "nvlink_rings.h"
#include <algorithm>

namespace proteus {
namespace {

// Search budgets (expanded states). An 8-GPU DGX-1 mesh needs a few thousand; the caps only
// bound pathological inputs (large meshes), where the best packing found so far is returned.
constexpr long kEnumerateBudgetSteps = 2000000;
constexpr size_t kMaxCycles = 20000;
constexpr long kPackBudgetSteps = 2000000;

struct Search {
  int n = 0;
  std::vector<int> units;  // n*n NVLink units between member positions (symmetric)
  // Enumeration of Hamiltonian cycles (start at position 0; each undirected cycle once).
  std::vector<char> used;
  std::vector<int> order;
  std::vector<std::vector<int>> cycles;
  long steps = 0;
  // Packing: the largest set of cycles whose edge use fits in `units`.
  std::vector<int> left, chosen, best;
  int bound = 0;

  void enumerate(int at) {
    if (++steps > kEnumerateBudgetSteps || cycles.size() >= kMaxCycles) return;
    if (static_cast<int>(order.size()) == n) {
      // order[1] < order[n-1] keeps one of the two directions of each cycle.
      if (units[at * n + order[0]] > 0 && order[1] < order[n - 1]) cycles.push_back(order);
      return;
    }
    for (int next = 0; next < n; ++next) {
      if (used[next] || units[at * n + next] <= 0) continue;
      used[next] = 1;
      order.push_back(next);
      enumerate(next);
      order.pop_back();
      used[next] = 0;
    }
  }

  bool fits(const std::vector<int>& c, int delta) {
    bool ok = true;
    for (int k = 0; k < n; ++k) {
      const int a = c[k], b = c[(k + 1) % n];
      left[a * n + b] += delta;
      left[b * n + a] += delta;
      ok = ok && left[a * n + b] >= 0;
    }
    return ok;
  }

  void pack(size_t from) {
    if (chosen.size() > best.size()) best = chosen;
    if (static_cast<int>(best.size()) >= bound || ++steps > kPackBudgetSteps) return;
    for (size_t i = from; i < cycles.size(); ++i) {
      if (static_cast<int>(best.size()) >= bound) return;
      const bool ok = fits(cycles[i], -1);
      if (ok) {
        chosen.push_back(static_cast<int>(i));
        pack(i + 1);
        chosen.pop_back();
      }
      fits(cycles[i], +1);
    }
  }
};

}  // namespace

std::vector<std::vector<int>> nvlink_mesh_cycles(const IntraNodeSpec& intra,
                                                 const std::vector<int>& local_members) {
  std::vector<std::vector<int>> result;
  const int n = static_cast<int>(local_members.size());
  if (n < 3) return result;
  Search s;
  s.n = n;
  s.units.assign(static_cast<size_t>(n) * n, 0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const int i = local_members[a], j = local_members[b];
      if (a == b || i < 0 || j < 0) continue;
      if (i < static_cast<int>(intra.links.size()) && j < static_cast<int>(intra.links[i].size()))
        s.units[a * n + b] = intra.links[i][j];
    }
  }
  // Upper bound on edge-disjoint cycles: each uses two NVLink units at every GPU.
  s.bound = n;
  for (int a = 0; a < n; ++a) {
    int degree = 0;
    for (int b = 0; b < n; ++b) degree += s.units[a * n + b];
    s.bound = std::min(s.bound, degree / 2);
  }
  if (s.bound == 0) return result;
  s.used.assign(n, 0);
  s.used[0] = 1;
  s.order.assign(1, 0);
  s.enumerate(0);
  s.left = s.units;
  s.steps = 0;
  s.pack(0);
  for (int index : s.best) {
    std::vector<int> cycle;
    cycle.reserve(n);
    for (int position : s.cycles[index]) cycle.push_back(local_members[position]);
    result.push_back(std::move(cycle));
  }
  return result;
}

}  // namespace proteus
