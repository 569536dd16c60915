#include "executor_plans.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include "proteus/error.h"

namespace proteus::exec {

std::vector<std::vector<int>> sibling_groups(const Mesh& mesh, const Collective& collective) {
  const int gpus = mesh.ranks();
  for (int g : collective.group)
    if (g < 0 || g >= gpus)
      throw Error("internal", "",
                  "collective group member GPU " + std::to_string(g) + " is outside the mesh of " +
                      std::to_string(gpus) + " GPUs");
  // Axes along which sibling groups lie: every non-pp axis the collective does not span.
  std::vector<int> vary;
  int count = 1;
  for (int a = kNumMeshAxes - 1; a >= 0; --a) {  // fastest axis first, as Mesh::group
    if (a == kAxisPp || (collective.axes & (1u << a)) || mesh.size[a] == 1) continue;
    vary.push_back(a);
    count *= mesh.size[a];
  }
  std::vector<std::array<int, kNumMeshAxes>> coords;
  coords.reserve(collective.group.size());
  for (int g : collective.group) coords.push_back(mesh.coords_of(g));

  std::vector<std::vector<int>> groups;
  groups.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {  // i = 0 is the zero offset: the representative itself
    std::array<int, kNumMeshAxes> offset{};
    int rest = i;
    for (int a : vary) {
      offset[a] = rest % mesh.size[a];
      rest /= mesh.size[a];
    }
    std::vector<int> members;
    members.reserve(coords.size());
    for (auto c : coords) {
      for (int a : vary) c[a] = (c[a] + offset[a]) % mesh.size[a];
      members.push_back(mesh.gpu_of(c));
    }
    groups.push_back(std::move(members));
  }
  return groups;
}

WeightedPlan weighted_plan(const Topology& topology, const Mesh& mesh, bool symmetric,
                           const Collective& collective) {
  const CollectivePlan rep =
      plan_collective(topology, collective.kind, collective.group, collective.bytes);
  WeightedPlan out;
  out.latency_s = rep.latency_s;
  out.flows.reserve(rep.flows.size());
  for (const FlowSpec& f : rep.flows) {
    WeightedFlow wf;
    wf.bytes = f.bytes;
    wf.links.reserve(f.links.size());
    for (int l : f.links) wf.links.emplace_back(l, 1.0);
    out.flows.push_back(std::move(wf));
  }
  if (!symmetric || rep.flows.empty()) return out;
  const std::vector<std::vector<int>> siblings = sibling_groups(mesh, collective);
  if (siblings.size() <= 1) return out;

  // Links the representative uses, numbered densely, with its flow count on each.
  std::map<int, int> slot_of_link;
  std::vector<int> rep_count;
  for (const FlowSpec& f : rep.flows)
    for (int l : f.links) {
      auto [it, inserted] = slot_of_link.emplace(l, static_cast<int>(rep_count.size()));
      if (inserted) rep_count.push_back(0);
      ++rep_count[static_cast<size_t>(it->second)];
    }
  // Flows of every sibling group (the representative included) on those links. Flows on
  // links the representative does not use are its siblings' business: by symmetry their
  // contention mirrors the representative's own links.
  std::vector<int> all_count(rep_count.size(), 0);
  auto count_plan = [&](const CollectivePlan& p) {
    for (const FlowSpec& f : p.flows)
      for (int l : f.links) {
        auto it = slot_of_link.find(l);
        if (it != slot_of_link.end()) ++all_count[static_cast<size_t>(it->second)];
      }
  };
  count_plan(rep);
  for (size_t s = 1; s < siblings.size(); ++s)
    count_plan(plan_collective(topology, collective.kind, siblings[s], collective.bytes));

  for (WeightedFlow& wf : out.flows)
    for (auto& [link, weight] : wf.links) {
      const size_t slot = static_cast<size_t>(slot_of_link.at(link));
      weight = static_cast<double>(all_count[slot]) / static_cast<double>(rep_count[slot]);
    }
  return out;
}

size_t PlanCache::SignatureHash::operator()(int collective) const {
  const Collective& c = cache->graph_.collectives[static_cast<size_t>(collective)];
  uint64_t h = static_cast<uint64_t>(c.kind) * 0x100 + cache->axes_of(c);
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  double bytes = c.bytes + 0.0;  // -0.0 == +0.0: hash them alike
  uint64_t bits = 0;
  std::memcpy(&bits, &bytes, sizeof bits);
  mix(bits);
  for (int g : c.group) mix(static_cast<uint64_t>(static_cast<uint32_t>(g)));
  return static_cast<size_t>(h);
}

bool PlanCache::SignatureEq::operator()(int a, int b) const {
  const Collective& x = cache->graph_.collectives[static_cast<size_t>(a)];
  const Collective& y = cache->graph_.collectives[static_cast<size_t>(b)];
  return x.kind == y.kind && cache->axes_of(x) == cache->axes_of(y) && x.bytes == y.bytes && x.group == y.group;
}

PlanCache::PlanCache(const ExecGraph& graph, const Topology& topology)
    : graph_(graph),
      topology_(topology),
      plan_id_(graph.collectives.size(), -1),
      ids_(16, SignatureHash{this}, SignatureEq{this}) {}

const WeightedPlan& PlanCache::plan_of(int collective) {
  int& id = plan_id_[static_cast<size_t>(collective)];
  if (id < 0) {
    auto it = ids_.find(collective);
    if (it != ids_.end()) {
      id = it->second;
    } else {
      plans_.push_back(weighted_plan(topology_, graph_.mesh, graph_.symmetric,
                                     graph_.collectives[static_cast<size_t>(collective)]));
      id = static_cast<int>(plans_.size()) - 1;
      ids_.emplace(collective, id);
    }
  }
  return plans_[static_cast<size_t>(id)];
}

}  // namespace proteus::exec
