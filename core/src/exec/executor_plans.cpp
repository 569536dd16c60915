#include "executor_plans.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include "hashed_ids.h"
#include "link_slots.h"
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

  // A group that covers part of the one axis it spans (the explicit sub-groups of cp_comm_type
  // a2a+p2p: a node's all-to-all group, a ring across nodes) has siblings along that axis too:
  // its disjoint shifts along it.
  std::vector<int> shifts{0};
  int span = -1;
  for (int a = 0; a < kNumMeshAxes; ++a)
    if (collective.axes == (1u << a) && a != kAxisPp) span = a;
  if (span >= 0 && static_cast<int>(collective.group.size()) < mesh.size[span]) {
    std::vector<char> taken(static_cast<size_t>(mesh.size[span]), 0);
    for (const auto& c : coords) taken[static_cast<size_t>(c[span])] = 1;
    for (int o = 1; o < mesh.size[span]; ++o) {
      bool free = true;
      for (const auto& c : coords)
        free = free && !taken[static_cast<size_t>((c[span] + o) % mesh.size[span])];
      if (!free) continue;
      for (const auto& c : coords) taken[static_cast<size_t>((c[span] + o) % mesh.size[span])] = 1;
      shifts.push_back(o);
    }
  }

  std::vector<std::vector<int>> groups;
  groups.reserve(static_cast<size_t>(count) * shifts.size());
  for (int shift : shifts)
    for (int i = 0; i < count; ++i) {  // i = 0, shift 0 is the zero offset: the representative itself
      std::array<int, kNumMeshAxes> offset{};
      int rest = i;
      for (int a : vary) {
        offset[a] = rest % mesh.size[a];
        rest /= mesh.size[a];
      }
      if (shift > 0) offset[span] = shift;
      std::vector<int> members;
      members.reserve(coords.size());
      for (auto c : coords) {
        for (int a = 0; a < kNumMeshAxes; ++a) c[a] = (c[a] + offset[a]) % mesh.size[a];
        members.push_back(mesh.gpu_of(c));
      }
      groups.push_back(std::move(members));
    }
  return groups;
}

namespace {

// What the solver gets for a flow: its links sorted by id, duplicates merged (weights add
// up), every weight times the count of identical flows it stands for.
std::vector<std::pair<int, double>> solver_links_of(const WeightedFlow& f) {
  std::vector<std::pair<int, double>> s;
  s.reserve(f.links.size());
  for (const auto& [link, weight] : f.links)
    if (weight > 0) s.emplace_back(link, weight);
  std::stable_sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t out = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (out > 0 && s[out - 1].first == s[i].first)
      s[out - 1].second += s[i].second;
    else
      s[out++] = s[i];
  }
  s.resize(out);
  for (auto& lw : s) lw.second *= f.count;
  return s;
}

// Fills the solver_links of flow_at(0 .. n) from one new store (SolverLinkStore), returned.
template <class FlowAt>
SolverLinkStore fill_solver_links(size_t n, FlowAt flow_at) {
  auto store = std::make_shared<std::vector<std::pair<int, double>>>();
  std::vector<size_t> first;  // offsets: views are taken once the store stops growing
  first.reserve(n + 1);
  for (size_t i = 0; i < n; ++i) {
    first.push_back(store->size());
    const std::vector<std::pair<int, double>> links = solver_links_of(flow_at(i));
    store->insert(store->end(), links.begin(), links.end());
  }
  first.push_back(store->size());
  for (size_t i = 0; i < n; ++i)
    flow_at(i).solver_links = LinkWeights(store->data() + first[i], store->data() + first[i + 1]);
  return store;
}

// Merges identical flows (same bytes, same links; then also the same weights) into one with a
// count, keeping the order of first appearance, and fills solver_links.
void merge_identical_flows(WeightedPlan& plan) {
  std::map<std::pair<double, std::vector<std::pair<int, double>>>, size_t> index;
  std::vector<WeightedFlow> merged;
  merged.reserve(plan.flows.size());
  for (WeightedFlow& f : plan.flows) {
    auto [it, inserted] = index.emplace(std::make_pair(f.bytes + 0.0, f.links), merged.size());
    if (inserted)
      merged.push_back(std::move(f));
    else
      ++merged[it->second].count;
  }
  plan.solver_link_store =
      fill_solver_links(merged.size(), [&](size_t i) -> WeightedFlow& { return merged[i]; });
  plan.flows = std::move(merged);
}

// A flow's path, in a plan or in a shape.
const std::vector<int>& links_of(const CollectivePlan&, const FlowSpec& f) { return f.links; }
struct PathRange {
  const int* first;
  const int* last;
  const int* begin() const { return first; }
  const int* end() const { return last; }
};
PathRange links_of(const PlanShape& plan, const FlowShape& f) {
  return {plan.path_begin(f), plan.path_end(f)};
}

// Symmetry weight of every link of every representative flow (flow after flow, each flow's
// links in path order): flows of all sibling groups on the link / the representative's
// flows on it. Empty when the collective has no siblings. Rep: a CollectivePlan or a
// PlanShape (links_of gives a flow's path in either).
template <class Rep>
std::vector<double> sibling_weights(const Topology& topology, const Mesh& mesh, const Collective& collective,
                                    const Rep& rep) {
  const std::vector<std::vector<int>> siblings = sibling_groups(mesh, collective);
  if (siblings.size() <= 1) return {};

  // Links the representative uses, numbered densely, with its flow count on each.
  LinkSlots slot_of_link;
  std::vector<int> rep_count;
  for (const auto& f : rep.flows)
    for (int l : links_of(rep, f)) {
      const size_t slot = static_cast<size_t>(slot_of_link.number(l));
      if (slot == rep_count.size()) rep_count.push_back(0);
      ++rep_count[slot];
    }
  // Flows of every sibling group (the representative included) on those links. Flows on
  // links the representative does not use are its siblings' business: by symmetry their
  // contention mirrors the representative's own links (not beside a plan that loads its
  // nodes unequally: uneven_nodes below, which the executor watches for).
  std::vector<int> all_count(rep_count.size(), 0);
  auto count_links = [&](const auto& links) {
    for (int l : links) {
      const int slot = slot_of_link.find(l);
      if (slot >= 0) ++all_count[static_cast<size_t>(slot)];
    }
  };
  for (const auto& f : rep.flows) count_links(links_of(rep, f));
  for (size_t s = 1; s < siblings.size(); ++s) {
    // The sibling's own plan at this size: plan_collective's flows, without their bytes.
    const CollectiveShapes shapes = collective_shapes(topology, collective.kind, siblings[s]);
    if (!(collective.bytes > 0)) continue;
    const size_t chosen = choose_plan(topology, shapes, collective.bytes);
    const PlanShape& plan = shapes.candidates[chosen];
    for (const FlowShape& f : plan.flows) count_links(links_of(plan, f));
  }

  std::vector<double> weights;
  for (const auto& f : rep.flows)
    for (int l : links_of(rep, f)) {
      const size_t slot = static_cast<size_t>(slot_of_link.find(l));
      weights.push_back(static_cast<double>(all_count[slot]) / static_cast<double>(rep_count[slot]));
    }
  return weights;
}

// True when the flows (a PlanShape's or a CollectivePlan's) do not leave and enter every node
// of the group alike (WeightedPlan::uneven_nodes): NCCL's double binary tree over three or more nodes
// (ncclGetDtree; collective_flows.cpp) makes some nodes interior in one tree and others root or leaf in both,
// e.g. over 4 nodes the trees 0-2-{1,3} and 3-1-{2,0} give nodes 1 and 2 four edges each, nodes 0 and 3 two.
// Rings (one hop in, one out per channel on every node), all-to-all and trees over two
// nodes are even. Counts flows, not bytes: every edge of a tree carries the same bytes.
template <class Flows>
bool uneven_nodes(const Topology& topology, const std::vector<int>& group, const Flows& flows) {
  const int per_node = std::max(1, topology.gpus_per_node);
  std::map<int, std::pair<int, int>> out_in;  // node -> (flows leaving, flows entering)
  for (int gpu : group) out_in.emplace(gpu / per_node, std::make_pair(0, 0));
  if (out_in.size() < 3) return false;
  for (const auto& f : flows) {
    const int from = f.src_gpu / per_node, to = f.dst_gpu / per_node;
    if (from == to) continue;
    ++out_in[from].first;
    ++out_in[to].second;
  }
  for (const auto& [node, counts] : out_in)
    if (counts != out_in.begin()->second) return true;
  return false;
}

// The nodes of a group, each once, in order of first appearance.
std::vector<int> nodes_of(const Topology& topology, const std::vector<int>& group) {
  const int per_node = std::max(1, topology.gpus_per_node);
  std::vector<int> nodes;
  for (int gpu : group)
    if (std::find(nodes.begin(), nodes.end(), gpu / per_node) == nodes.end()) nodes.push_back(gpu / per_node);
  return nodes;
}

// The representative's flows with the given weights (concatenated_links order; empty: all 1),
// identical flows merged.
WeightedPlan assemble(const CollectivePlan& rep, const std::vector<double>& weights) {
  WeightedPlan out;
  out.latency_s = rep.latency_s;
  out.source_flows = static_cast<int64_t>(rep.flows.size());
  out.flows.reserve(rep.flows.size());
  size_t i = 0;
  for (const FlowSpec& f : rep.flows) {
    WeightedFlow wf;
    wf.bytes = f.bytes;
    wf.links.reserve(f.links.size());
    for (int l : f.links) wf.links.emplace_back(l, weights.empty() ? 1.0 : weights[i++]);
    out.flows.push_back(std::move(wf));
  }
  merge_identical_flows(out);
  return out;
}

}  // namespace

WeightedPlan weighted_plan(const Topology& topology, const Mesh& mesh, bool symmetric,
                           const Collective& collective) {
  const CollectivePlan rep = plan_collective(topology, collective.kind, collective.group, collective.bytes);
  if (!symmetric || rep.flows.empty()) return assemble(rep, {});
  const std::vector<double> weights = sibling_weights(topology, mesh, collective, rep);
  WeightedPlan out = assemble(rep, weights);
  out.stands_for_siblings = !weights.empty();
  out.uneven_nodes = uneven_nodes(topology, collective.group, rep.flows);
  if (out.stands_for_siblings || out.uneven_nodes) out.nodes = nodes_of(topology, collective.group);
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
  return x.kind == y.kind && cache->axes_of(x) == cache->axes_of(y) && x.bytes == y.bytes &&
         x.group == y.group;
}

PlanCache::PlanCache(const ExecGraph& graph, const Topology& topology)
    : graph_(graph),
      topology_(topology),
      plan_id_(graph.collectives.size(), -1),
      ids_(16, SignatureHash{this}, SignatureEq{this}) {}

const WeightedPlan& PlanCache::plan_of(int collective) {
  int& id = plan_id_[static_cast<size_t>(collective)];
  // Collectives interned by the compiler (Collective::signature) find their plan by index.
  const int signature = graph_.collectives[static_cast<size_t>(collective)].signature;
  if (id < 0 && signature >= 0 && static_cast<size_t>(signature) < plan_of_signature_.size())
    id = plan_of_signature_[static_cast<size_t>(signature)];
  if (id < 0) {
    auto it = ids_.find(collective);
    if (it != ids_.end()) {
      id = it->second;
    } else {
      plans_.push_back(plan(graph_.collectives[static_cast<size_t>(collective)]));
      id = static_cast<int>(plans_.size()) - 1;
      ids_.emplace(collective, id);
    }
    if (signature >= 0) {
      if (static_cast<size_t>(signature) >= plan_of_signature_.size())
        plan_of_signature_.resize(static_cast<size_t>(signature) + 1, -1);
      plan_of_signature_[static_cast<size_t>(signature)] = id;
    }
  }
  return plans_[static_cast<size_t>(id)];
}

// weighted_plan, with the group planned once and the weights and merging done once per
// algorithm (executor_plans.h, PlanCache).
WeightedPlan PlanCache::plan(const Collective& c) {
  auto [it, inserted] = groups_.try_emplace({static_cast<int>(c.kind), axes_of(c), c.group});
  GroupPlans& group = it->second;
  if (inserted) {
    group.shapes = collective_shapes(topology_, c.kind, c.group);
    group.templates.resize(group.shapes.candidates.size());
  }
  const size_t chosen = choose_plan(topology_, group.shapes, c.bytes);
  if (!(c.bytes > 0) || group.shapes.candidates[chosen].flows.empty()) {
    // No flows: the latency alone (what weighted_plan gives for an empty plan).
    WeightedPlan out;
    out.latency_s = plan_latency_s(topology_, group.shapes, chosen);
    return out;
  }
  template_of(c, group, chosen);
  return instantiate(group, chosen, c.bytes);
}

// The merged weighted flows of candidate `chosen`, built at the first collective that runs it.
const PlanCache::PlanTemplate& PlanCache::template_of(const Collective& c, GroupPlans& group, size_t chosen) {
  std::unique_ptr<PlanTemplate>& slot = group.templates[chosen];
  if (slot) return *slot;
  slot = std::make_unique<PlanTemplate>();
  PlanTemplate& t = *slot;
  const PlanShape& shape = group.shapes.candidates[chosen];
  if (graph_.symmetric) {
    t.weights = sibling_weights(topology_, graph_.mesh, c, shape);
    t.uneven_nodes = uneven_nodes(topology_, c.group, shape.flows);
    if (t.uneven_nodes || !t.weights.empty()) t.nodes = nodes_of(topology_, c.group);
  }
  merge_template_flows(shape, t);
  t.solver_link_store =
      fill_solver_links(t.flows.size(), [&](size_t i) -> WeightedFlow& { return t.flows[i].flow; });
  return t;
}

// Merges the shape's flows that have the same byte expression and weighted links into t.flows
// (in order of first appearance, with counts). Those have equal bytes at every size; flows
// whose expressions differ are told apart, which is exact unless two of them share weighted
// links (merge_per_size). Keys are compared as a std::map keyed by them would (doubles by ==),
// found by hash.
void PlanCache::merge_template_flows(const PlanShape& shape, PlanTemplate& t) {
  const size_t n = shape.flows.size();
  std::vector<std::pair<int, double>> weighted;  // every flow's weighted links, flow after flow
  std::vector<size_t> first(n + 1, 0);
  size_t w = 0;
  for (size_t k = 0; k < n; ++k) {
    first[k] = weighted.size();
    for (int l : links_of(shape, shape.flows[k]))
      weighted.emplace_back(l, t.weights.empty() ? 1.0 : t.weights[w++]);
  }
  first[n] = weighted.size();
  auto same_links = [&](size_t a, size_t b) {
    return std::equal(weighted.begin() + static_cast<std::ptrdiff_t>(first[a]),
                      weighted.begin() + static_cast<std::ptrdiff_t>(first[a + 1]),
                      weighted.begin() + static_cast<std::ptrdiff_t>(first[b]),
                      weighted.begin() + static_cast<std::ptrdiff_t>(first[b + 1]));
  };
  auto same_expression = [&](size_t a, size_t b) {
    return shape.flows[a].scale == shape.flows[b].scale && shape.flows[a].divisor == shape.flows[b].divisor;
  };
  HashedIds by_key(n), by_links(n);  // merged flow ids; shape flows with new links
  std::vector<size_t> defined_by;    // per merged flow, the shape flow that made it
  for (size_t k = 0; k < n; ++k) {
    uint64_t links_hash = 0;
    for (size_t j = first[k]; j < first[k + 1]; ++j)
      links_hash = HashedIds::mix(HashedIds::mix(links_hash, static_cast<uint64_t>(weighted[j].first)),
                                  HashedIds::bits(weighted[j].second));
    const FlowShape& f = shape.flows[k];
    const uint64_t key_hash =
        HashedIds::mix(HashedIds::mix(links_hash, HashedIds::bits(f.scale)), HashedIds::bits(f.divisor));
    const int merged = by_key.find(key_hash, [&](int m) {
      const size_t d = defined_by[static_cast<size_t>(m)];
      return same_expression(d, k) && same_links(d, k);
    });
    if (merged >= 0) {
      ++t.flows[static_cast<size_t>(merged)].flow.count;
      continue;
    }
    by_key.add(key_hash, static_cast<int>(t.flows.size()));
    defined_by.push_back(k);
    const int known = by_links.find(links_hash, [&](int d) { return same_links(static_cast<size_t>(d), k); });
    if (known < 0)
      by_links.add(links_hash, static_cast<int>(k));
    else if (!same_expression(static_cast<size_t>(known), k))
      t.merge_per_size = true;
    TemplateFlow tf;
    tf.scale = f.scale;
    tf.divisor = f.divisor;
    tf.flow.links.assign(weighted.begin() + static_cast<std::ptrdiff_t>(first[k]),
                         weighted.begin() + static_cast<std::ptrdiff_t>(first[k + 1]));
    t.flows.push_back(std::move(tf));
  }
}

WeightedPlan PlanCache::instantiate(const GroupPlans& group, size_t chosen, double bytes) {
  const PlanTemplate& t = *group.templates[chosen];
  auto watch = [&t](WeightedPlan& out) {
    out.stands_for_siblings = !t.weights.empty();  // sibling_weights is empty without siblings
    out.uneven_nodes = t.uneven_nodes;
    out.nodes = t.nodes;
  };
  if (t.merge_per_size) {
    WeightedPlan out = assemble(instantiate_plan(topology_, group.shapes, chosen, bytes), t.weights);
    watch(out);
    return out;
  }
  WeightedPlan out;
  watch(out);
  out.latency_s = plan_latency_s(topology_, group.shapes, chosen);
  out.source_flows = static_cast<int64_t>(group.shapes.candidates[chosen].flows.size());
  out.flows.reserve(t.flows.size());
  for (const TemplateFlow& tf : t.flows) {
    WeightedFlow wf;
    wf.bytes = tf.scale * bytes / tf.divisor;  // FlowShape::bytes_of
    wf.links = tf.flow.links;
    wf.count = tf.flow.count;
    wf.solver_links = tf.flow.solver_links;
    out.flows.push_back(std::move(wf));
  }
  out.solver_link_store = t.solver_link_store;
  return out;
}

}  // namespace proteus::exec
