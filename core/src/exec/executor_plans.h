// Collectives as weighted flows for the executor (DESIGN.md §3, "Notes on the hard parts":
// symmetry). plan_collective() gives the flows of one group; with the symmetry reduction on,
// that group stands for all its "sibling groups" — the groups obtained by moving every
// member along the mesh axes the collective does not span (pp excluded: siblings stay in the
// same pipeline stages). They run the same collective at the same time, so the flows of the
// representative group carry, on each link l, the weight
//     w(l) = (flows of ALL sibling groups crossing l) / (flows of the representative crossing l)
// e.g. 8 data-parallel groups (tp = 8) crossing one NIC: the representative's flow on that
// NIC has weight 8, and max-min sharing gives it C/8 as if the 8 flows were simulated.
// Without the reduction (graph.symmetric == false) every weight is 1.
//
// Plans are cached per signature (kind, axes, group, bytes), so the sibling groups are
// planned once per distinct collective, not once per micro-batch; and the group's flows
// once per (kind, axes, group), whatever the sizes (PlanCache below).
//
// Identical flows are merged: flows of one plan with the same links and the same bytes (e.g.
// the c channels of a ring hop that all leave a node through the same NIC, as when a
// data-parallel group has one member per node) start together, get the same max-min rate
// at every instant (no rule of the solver tells them apart) and end together. One flow with
// `count` = k and every link weight multiplied by k stands for them: a flow of weight w
// stands for w identical flows (bandwidth_sharing.h), so the rates and end times are those of
// the k flows. The solver and the event queue then see one flow instead of k.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>
#include "proteus/bandwidth_sharing.h"
#include "proteus/collective_flows.h"
#include "proteus/exec_graph.h"
#include "proteus/topology.h"

namespace proteus::exec {

struct WeightedFlow {
  double bytes = 0;
  std::vector<std::pair<int, double>> links;  // (topology link id, symmetry weight), path order
  int count = 1;                              // identical flows this one stands for
  // What the solver gets: links sorted by id, duplicates merged, weight * count. A view into
  // the plan's solver_link_store.
  LinkWeights solver_links;
};

// The solver links of all the flows of a plan, flow after flow, in one array: the executor
// hands them to the solver for every collective it starts (millions of flows in a large
// simulation), and one run per plan keeps that a sequential read. Shared, not copied, by
// the plans of every size of one group and algorithm (PlanCache); each plan keeps it alive.
using SolverLinkStore = std::shared_ptr<const std::vector<std::pair<int, double>>>;

struct WeightedPlan {
  std::vector<WeightedFlow> flows;
  double latency_s = 0;
  int64_t source_flows = 0;           // flows before merging (what Trace::flows counts)
  SolverLinkStore solver_link_store;  // what the flows' solver_links point into
  // Where the symmetry reduction's premise (a rank's siblings see images of its contention)
  // can fail (DESIGN.md §3, "Symmetry"): the plan stands for sibling groups, whose flows on
  // links the representative does not cross are not simulated; or the plan loads the nodes
  // of its group unequally, NCCL's double binary tree over three or more nodes, whose
  // interior nodes send on more edges than its root and leaves.
  bool stands_for_siblings = false;
  bool uneven_nodes = false;
  std::vector<int> nodes;  // of its group, each once; filled where either of the above holds
};

// The sibling groups of `collective` (the representative's own group first), each in the
// same member order as collective.group. Pure; exposed for tests.
std::vector<std::vector<int>> sibling_groups(const Mesh& mesh, const Collective& collective);

// The representative's flows with their per-link weights (all 1 when !symmetric).
WeightedPlan weighted_plan(const Topology& topology, const Mesh& mesh, bool symmetric,
                           const Collective& collective);

class PlanCache {
 public:
  PlanCache(const ExecGraph& graph, const Topology& topology);
  PlanCache(const PlanCache&) = delete;  // its hash functors point at it
  PlanCache& operator=(const PlanCache&) = delete;
  // Plan of graph.collectives[collective], computed on first use.
  const WeightedPlan& plan_of(int collective);
  int distinct_plans() const { return static_cast<int>(plans_.size()); }

 private:
  // A signature is named by the first collective that has it; hashing and comparing read
  // that collective's fields in place (no copy of its group). Lookups only: the map's
  // iteration order is never observed, plan ids follow first use.
  struct SignatureHash {
    const PlanCache* cache;
    size_t operator()(int collective) const;
  };
  struct SignatureEq {
    const PlanCache* cache;
    bool operator()(int a, int b) const;
  };
  AxisMask axes_of(const Collective& c) const { return graph_.symmetric ? c.axes : AxisMask{0}; }
  WeightedPlan plan(const Collective& c);

  // Plans of one (kind, axes, group) differ from size to size only in their flows' bytes and
  // in the ring-or-tree choice (collective_flows.h, CollectiveShapes). So the group is
  // planned once; the sibling weights and the merged flows once per algorithm, at the first
  // size that picks it (sibling weights depend on the links, not on the bytes); and every
  // further size only evaluates its bytes. Gradient buckets of many sizes then cost one
  // planning each. Ordered map: lookups only.
  struct TemplateFlow {
    double scale = 1, divisor = 1;  // bytes = scale * S / divisor (FlowShape)
    WeightedFlow flow;              // all but bytes
  };
  struct PlanTemplate {
    std::vector<TemplateFlow> flows;    // merged, in order of first appearance
    SolverLinkStore solver_link_store;  // of the flows' solver_links
    std::vector<double> weights;        // sibling weights of the candidate's links (empty: all 1)
    // Two merged flows with the same links and weights but different byte expressions: they
    // may have equal bytes at some sizes and then merge, so each size is merged on its own.
    bool merge_per_size = false;
    bool uneven_nodes = false;  // WeightedPlan::uneven_nodes
    std::vector<int> nodes;     // WeightedPlan::nodes
  };
  struct GroupPlans {
    CollectiveShapes shapes;
    std::vector<std::unique_ptr<PlanTemplate>> templates;  // per candidate, built on first use
  };
  std::map<std::tuple<int, AxisMask, std::vector<int>>, GroupPlans> groups_;
  const PlanTemplate& template_of(const Collective& c, GroupPlans& group, size_t chosen);
  static void merge_template_flows(const PlanShape& shape, PlanTemplate& t);
  WeightedPlan instantiate(const GroupPlans& group, size_t chosen, double bytes);

  const ExecGraph& graph_;
  const Topology& topology_;
  std::vector<int> plan_id_;            // per collective, -1 until planned
  std::vector<int> plan_of_signature_;  // per Collective::signature, -1 until planned
  std::unordered_map<int, int, SignatureHash, SignatureEq> ids_;  // first collective -> plan id
  std::vector<WeightedPlan> plans_;
};

}  // namespace proteus::exec
