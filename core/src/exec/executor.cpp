// HTAE: the Hierarchical Topology-Aware Executor (DESIGN.md §3). A discrete-event
// simulation of an ExecGraph on a topology:
//
// - One global event queue ordered by (time, insertion sequence) — see event_queue.h.
// - Per simulated rank, kNumStreams in-order queues. A task starts when it is at the head of
//   its queue and all its dependencies have ended; a collective starts when EVERY member task
//   is at the head of its own queue with its dependencies done (NCCL's in-order streams).
//   All member tasks of a collective start and end together.
// - Compute tasks last cost.compute_time_s(work) (once per ExecGraph::works entry), slowed by
//   gpu.compute_slowdown_with_comm while a collective runs on the same rank (not one marked
//   Collective::sm_free: TE userbuffers, whose SM cost is in the GEMM's sm_reserved). A send-recv
//   or ring exchange between nodes holds only NCCL's few network p2p CTAs (network_p2p_sms.h):
//   alone beside compute it stretches it by the SMs it holds instead; so does a ring member
//   with one peer on its node and one on another, once the ring's flows inside nodes are done.
//   Progress is kept as the remaining fraction of the work, so a slowdown that starts or ends
//   midway moves the end time by exactly the slowed part.
// - A collective becomes flows (executor_plans.h: plan_collective plus symmetry weights) that
//   share link bandwidth max-min fairly (BandwidthSharing). Each flow keeps its remaining
//   bytes, its rate and the time they were last brought up to date, and the time it ends at
//   that rate. A collective has one FlowEnd event, at the earliest end among its open flows,
//   that ends every flow due then (a plan's flows mostly end at the same instant); when the
//   rates of some of its flows change it gets a new one, and the old one is recognised as
//   stale by its version number. The collective ends plan.latency_s after its last flow.
// - Communication beside computation: while any member rank of a collective computes, its
//   flows progress at (max-min share) / gpu.comm_slowdown_with_compute. The slowed flow does
//   not hand its unused share to others (NCCL kernels slowed by SM contention still hold
//   their channel); with the default factor 1.0 this rule is inactive.
// - With the symmetry reduction, where a sibling's contention may not mirror its
//   representative's (a collective that loads the nodes of its group unequally, NCCL's tree over
//   3+ nodes, beside one standing for sibling groups), the start is counted in
//   Trace::symmetry_uneven_overlaps; nothing is changed.
// - State changes that happen at one instant (a task ends, the next starts) are settled once
//   per instant: interference factors and bandwidth shares are re-evaluated just before the
//   clock advances, so a zero-length flip does not churn events.
// - Memory per rank starts at static_bytes; a task's memory events apply at its start or end.
//
// Pure function of its inputs; no allocation per event in the steady state beyond the heap's
// amortized growth.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "event_queue.h"
#include "executor_memory_curve.h"
#include "executor_plans.h"
#include "network_p2p_sms.h"
#include "proteus/bandwidth_sharing.h"
#include "proteus/error.h"
#include "proteus/simulation.h"

namespace proteus {
namespace {

using exec::EventKind;

// Kept out of line: LLVM inlines a static function that has a single caller whatever its size,
// which made Executor::run one 15.7 kB WebAssembly function (setup, event loop and result
// together). V8 compiles a hot wasm function whole with TurboFan, in the background and in time
// that grows faster than its size, while the page's first simulation runs (web/README.md,
// "Start-up"; docs/performance.md, "The page's first simulation"). So each phase of run is a
// function of its own; what the loop does per event or per instant stays inlined into it (an
// out-of-line settle() cost 1.4% more instructions natively). Out-of-line calls change no
// arithmetic: results are byte-identical.
#define PROTEUS_OUT_OF_LINE [[gnu::noinline]]

enum class TaskState : uint8_t { Waiting, Ready, Running, Done };

// What the event loop reads and writes per task, packed in 24 bytes (the ExecGraph's Task is
// cold): the rank and stream are the queue's; a compute task's duration is its work's.
struct HotTask {
  int32_t queue = -1;       // rank * kNumStreams + stream
  int32_t collective = -1;  // -1: a compute task
  int32_t work = -1;        // a compute task: index into ExecGraph::works (and work_s_)
  int32_t pending = 0;      // dependencies not yet ended
  uint32_t version = 0;     // of its latest ComputeEnd event
  TaskState state = TaskState::Waiting;

  int rank() const { return queue / kNumStreams; }
  Stream stream() const { return static_cast<Stream>(queue % kNumStreams); }
};

struct FlowState {
  double remaining_bytes = 0;
  double share_Bps = 0;  // max-min share from BandwidthSharing
  double rate_Bps = 0;   // effective: share / interference factor of its collective
  double last_s = 0;     // remaining_bytes is exact at this time
  double end_s = 0;      // when it ends at rate_Bps (+inf at rate 0)
  int collective = -1;
  int prev = -1, next = -1;  // list of the flows of one collective
  bool alive = false;
  bool local = false;  // inside one node, of a collective with members that switch (local_open)
};

struct CollectiveState {
  int ready_members = 0;
  int open_flows = 0;
  int first_flow = -1;
  double factor = 1;  // comm slowdown currently applied to its flows
  double latency_s = 0;
  uint32_t flow_version = 0;  // of its latest FlowEnd event
  bool ends_dirty = false;    // a flow's end_s changed since its FlowEnd event was pushed
  // Its plan's WeightedPlan::uneven_nodes and stands_for_siblings, while it has open flows.
  bool uneven_nodes = false, stands_for_siblings = false;
  // A ring exchange with members that hold only network p2p CTAs once its flows inside a node
  // are done (network_p2p_ctas_after_local): those flows still open, and whether they switched.
  int local_open = 0;
  bool switched = false;
};

struct RankState {
  // The compute-kind task running on the compute stream, and its progress.
  int compute_task = -1;
  double compute_duration_s = 0;  // of compute_task, unslowed
  double compute_frac_left = 0;
  double compute_factor = 1;
  double compute_last_s = 0;
  int collectives_running = 0;
  int sm_collectives_running = 0;  // of them, those that slow compute (not Collective::sm_free)
  int network_p2p_ctas = 0;        // CTAs held by the running p2p between nodes (not counted above)
  std::array<int, kNumStreams> running{{-1, -1, -1, -1, -1}};
  // Interval accounting for exposed communication (state as of acc_last_s).
  bool acc_compute = false, acc_comm = false;
  double acc_last_s = 0;
  bool dirty = false;
  // Memory
  std::array<double, kNumMemCategories> mem_bytes{};
  double mem_total_bytes = 0;
};

std::vector<double> link_capacities(const Topology& topology) {
  std::vector<double> caps;
  caps.reserve(topology.links.size());
  for (const Link& l : topology.links) caps.push_back(l.capacity_Bps);
  return caps;
}

class Executor {
 public:
  Executor(const ExecGraph& graph, const CostModel& cost, const Topology& topology,
           const ExecOptions& options)
      : g_(graph),
        cost_(cost),
        options_(options),
        plans_(graph, topology),
        topology_(topology),
        network_(link_capacities(topology)),
        compute_slowdown_(cost.gpu.compute_slowdown_with_comm > 0 ? cost.gpu.compute_slowdown_with_comm
                                                                  : 1.0),
        comm_slowdown_(cost.gpu.comm_slowdown_with_compute > 0 ? cost.gpu.comm_slowdown_with_compute : 1.0) {}

  Trace run() {
    validate_and_index();
    precompute_durations();
    init_ranks();
    start_queue_heads();
    loop();
    return finish();
  }

 private:
  // ---- setup ------------------------------------------------------------------------------

  // Checks the graph's invariants (a malformed graph is an internal error, not a hang) while
  // building the executor's indexes, in as few passes over the million-task arrays as it takes.
  PROTEUS_OUT_OF_LINE void validate_and_index() {
    const size_t n = g_.tasks.size();
    if (g_.dep_offsets.size() != n + 1 || g_.task_mem.size() != n)
      throw Error("internal", "", "exec graph: dependency offsets or memory lists do not match the tasks");
    if (g_.queues.size() > g_.ranks.size() * kNumStreams)
      throw Error("internal", "", "exec graph: more queues than ranks x streams");
    index_tasks();
    index_queues();
    index_dependents();
    index_members();
    index_memory_phases();
    start_s_.assign(n, 0.0);
    end_s_.assign(n, 0.0);
    coll_.assign(g_.collectives.size(), CollectiveState{});
    index_network_p2p();
    uneven_collectives_on_node_.assign(static_cast<size_t>(std::max(1, topology_.nodes)), 0);
    sibling_collectives_on_node_.assign(uneven_collectives_on_node_.size(), 0);
  }

  // hot_ from each task; its dependencies and memory list checked; dependents counted.
  // The arrays are read through local pointers: a store into hot_ or the counts (ints) could
  // alias the graph's int arrays as far as the compiler knows, and would reload them per task.
  PROTEUS_OUT_OF_LINE void index_tasks() {
    const size_t n = g_.tasks.size();
    const int mem_lists = static_cast<int>(g_.mem_list_offsets.size()) - 1;
    const size_t collectives = g_.collectives.size();
    const size_t works = g_.works.size();
    hot_.assign(n, HotTask{});
    dependents_offsets_.assign(n + 1, 0);
    const Task* tasks = g_.tasks.data();
    const int* task_mem = g_.task_mem.data();
    const int* dep_offsets = g_.dep_offsets.data();
    const int* deps = g_.deps.data();
    HotTask* hot = hot_.data();
    int* dependents_after = dependents_offsets_.data() + 1;
    for (size_t t = 0; t < n; ++t) {
      const Task& task = tasks[t];
      HotTask& h = hot[t];
      if (task.kind == TaskKind::Collective) {
        if (task.collective < 0 || static_cast<size_t>(task.collective) >= collectives)
          throw Error("internal", "",
                      "exec graph: collective task " + std::to_string(t) + " names no collective");
        h.collective = task.collective;
      }
      if (task.kind == TaskKind::Compute && (task.work < 0 || static_cast<size_t>(task.work) >= works))
        throw Error("internal", "", "exec graph: compute task " + std::to_string(t) + " names no work");
      h.work = task.work;
      if (task_mem[t] < -1 || task_mem[t] >= mem_lists)
        throw Error("internal", "", "exec graph: task " + std::to_string(t) + " names no memory list");
      const int first = dep_offsets[t], last = dep_offsets[t + 1];
      for (int i = first; i < last; ++i) {
        const int d = deps[static_cast<size_t>(i)];
        if (d < 0 || static_cast<size_t>(d) >= n || static_cast<size_t>(d) == t)
          throw Error("internal", "", "exec graph: task " + std::to_string(t) + " has an invalid dependency");
        ++dependents_after[static_cast<size_t>(d)];
      }
      h.pending = last - first;
    }
  }

  // Every task in exactly one queue, its own rank's and stream's.
  PROTEUS_OUT_OF_LINE void index_queues() {
    const size_t n = g_.tasks.size();
    const Task* tasks = g_.tasks.data();
    HotTask* hot = hot_.data();
    size_t queued = 0;
    for (size_t q = 0; q < g_.queues.size(); ++q) {
      const std::vector<int>& queue = g_.queues[q];
      queued += queue.size();
      for (const int t : queue) {
        if (t < 0 || static_cast<size_t>(t) >= n || hot[t].queue != -1)
          throw Error("internal", "",
                      "exec graph: task " + std::to_string(t) + " is queued twice or out of range");
        const Task& task = tasks[t];
        if (task.rank < 0 ||
            static_cast<size_t>(task.rank) * kNumStreams + static_cast<size_t>(task.stream) != q)
          throw Error("internal", "",
                      "exec graph: task " + std::to_string(t) + " sits in another rank's or stream's queue");
        hot[t].queue = static_cast<int32_t>(q);
      }
    }
    if (queued != n)  // no task twice and n in all: every task is queued
      for (size_t t = 0; t < n; ++t)
        if (hot_[t].queue < 0)
          throw Error("internal", "", "exec graph: task " + std::to_string(t) + " is in no queue");
    heads_.assign(g_.ranks.size() * kNumStreams, 0);
  }

  // Member tasks of every collective, checked and copied into one flat array (the event loop
  // reads them at every start and end; the graph keeps them in a vector per collective).
  PROTEUS_OUT_OF_LINE void index_members() {
    const size_t n = g_.tasks.size();
    member_offsets_.assign(1, 0);
    member_offsets_.reserve(g_.collectives.size() + 1);
    members_.clear();
    for (size_t c = 0; c < g_.collectives.size(); ++c) {
      const Collective& col = g_.collectives[c];
      if (col.member_tasks.empty())
        throw Error("internal", "", "exec graph: collective " + std::to_string(c) + " has no member task");
      for (int t : col.member_tasks) {
        if (t < 0 || static_cast<size_t>(t) >= n ||
            g_.tasks[static_cast<size_t>(t)].collective != static_cast<int>(c))
          throw Error("internal", "",
                      "exec graph: collective " + std::to_string(c) + " lists a task that is not its member");
        members_.push_back(t);
      }
      member_offsets_.push_back(static_cast<int>(members_.size()));
    }
  }
  // Per member task (aligned with members_): the CTAs its p2p between nodes holds, 0 if none,
  // and those it holds once its ring's flows inside nodes are done (-1: it does not switch).
  PROTEUS_OUT_OF_LINE void index_network_p2p() {
    member_p2p_ctas_.assign(members_.size(), 0);
    member_ctas_after_local_.assign(members_.size(), -1);
    for (size_t c = 0; c < g_.collectives.size(); ++c) {
      const Collective& col = g_.collectives[c];
      if (col.sm_free) continue;
      for (int k = member_offsets_[c]; k < member_offsets_[c + 1]; ++k) {
        const size_t m = static_cast<size_t>(k);
        const int gpu = g_.ranks[static_cast<size_t>(g_.tasks[static_cast<size_t>(members_[m])].rank)].gpu;
        member_p2p_ctas_[m] = network_p2p_ctas(col, gpu, topology_);
        member_ctas_after_local_[m] = network_p2p_ctas_after_local(col, gpu, topology_);
      }
    }
  }
  // Each memory list's events split by phase, list order kept within each (the per-rank sums
  // add them in that order): a task's start and its end then read only their own events.
  // List l's start events are phase_events_[phase_bounds_[2l] .. phase_bounds_[2l + 1]), its
  // end events from there to phase_bounds_[2l + 2].
  PROTEUS_OUT_OF_LINE void index_memory_phases() {
    const size_t lists = g_.mem_list_offsets.size() - 1;
    phase_events_.clear();
    phase_events_.reserve(g_.mem_events.size());
    phase_bounds_.assign(1, 0);
    phase_bounds_.reserve(2 * lists + 1);
    for (size_t l = 0; l < lists; ++l)
      for (const bool at_end : {false, true}) {
        for (int i = g_.mem_list_offsets[l]; i < g_.mem_list_offsets[l + 1]; ++i) {
          const MemEvent& m = g_.mem_events[static_cast<size_t>(i)];
          if (m.at_end == at_end) phase_events_.push_back(m);
        }
        phase_bounds_.push_back(static_cast<int>(phase_events_.size()));
      }
  }
  const int* members_begin(int c) const { return members_.data() + member_offsets_[static_cast<size_t>(c)]; }
  const int* members_end(int c) const {
    return members_.data() + member_offsets_[static_cast<size_t>(c) + 1];
  }

  // Reverse CSR: who waits on each task (dependents_offsets_ holds the counts from index_tasks).
  PROTEUS_OUT_OF_LINE void index_dependents() {
    const size_t n = g_.tasks.size();
    for (size_t t = 0; t < n; ++t) dependents_offsets_[t + 1] += dependents_offsets_[t];
    dependents_.assign(static_cast<size_t>(dependents_offsets_[n]), 0);
    std::vector<int> fill(dependents_offsets_.begin(), dependents_offsets_.end() - 1);
    const int* dep_offsets = g_.dep_offsets.data();
    const int* deps = g_.deps.data();
    int* next = fill.data();
    int* dependents = dependents_.data();
    for (size_t t = 0; t < n; ++t)
      for (int i = dep_offsets[t]; i < dep_offsets[t + 1]; ++i)
        dependents[next[deps[static_cast<size_t>(i)]]++] = static_cast<int>(t);
  }

  // The cost model once per distinct work (ExecGraph::works).
  PROTEUS_OUT_OF_LINE void precompute_durations() {
    work_s_.resize(g_.works.size());
    for (size_t w = 0; w < g_.works.size(); ++w) work_s_[w] = cost_.compute_time_s(g_.works[w]);
  }
  double duration_s(int t) const { return work_s_[static_cast<size_t>(hot_[static_cast<size_t>(t)].work)]; }

  PROTEUS_OUT_OF_LINE void init_ranks() {
    ranks_.assign(g_.ranks.size(), RankState{});
    traces_.assign(g_.ranks.size(), RankTrace{});
    first_start_s_.assign(g_.ranks.size(), std::numeric_limits<double>::infinity());
    raw_curves_.assign(options_.record_memory_curve ? g_.ranks.size() : 0, {});
    for (size_t r = 0; r < g_.ranks.size(); ++r) {
      RankState& rs = ranks_[r];
      rs.mem_bytes = g_.ranks[r].static_bytes;
      rs.mem_total_bytes = 0;
      for (double b : rs.mem_bytes) rs.mem_total_bytes += b;
      traces_[r].peak_memory_bytes = rs.mem_total_bytes;
      traces_[r].memory_at_peak_bytes = rs.mem_bytes;
      if (options_.record_memory_curve) raw_curves_[r].push_back(MemorySample{0.0, rs.mem_total_bytes});
    }
  }

  // At time 0, every queue's first task that has no dependencies.
  PROTEUS_OUT_OF_LINE void start_queue_heads() {
    for (size_t q = 0; q < heads_.size(); ++q)
      if (static_cast<size_t>(heads_[q]) < queue_len(q)) try_start(head_task(q));
  }

  size_t queue_len(size_t q) const { return q < g_.queues.size() ? g_.queues[q].size() : 0; }
  int head_task(size_t q) const { return g_.queues[q][static_cast<size_t>(heads_[q])]; }

  // ---- the loop -----------------------------------------------------------------------------

  PROTEUS_OUT_OF_LINE void loop() {
    for (;;) {
      if (events_.empty() || events_.top().time_s > now_s_) {
        settle();
        if (events_.empty()) break;
      }
      const exec::Event e = events_.pop();
      if (++popped_ > options_.max_events)
        throw Error("limit_exceeded", "simulation.max_events",
                    "the simulation needed more than " + std::to_string(options_.max_events) +
                        " events; raise simulation.max_events or simulate a smaller configuration");
      now_s_ = e.time_s;
      switch (e.kind()) {
        case EventKind::ComputeEnd: {
          const size_t t = static_cast<size_t>(e.id);
          if (hot_[t].state != TaskState::Running || hot_[t].version != e.version) continue;
          end_task(e.id);
          break;
        }
        case EventKind::FlowEnd:
          if (coll_[static_cast<size_t>(e.id)].flow_version != e.version) continue;
          end_flows_due(e.id);
          break;
        case EventKind::CollectiveEnd:
          end_collective(e.id);
          break;
      }
    }
    if (done_ != g_.tasks.size()) report_deadlock();
  }

  // Every flow of collective c that ends now (flows of one plan often end together).
  void end_flows_due(int c) {
    CollectiveState& cs = coll_[static_cast<size_t>(c)];
    for (int f = cs.first_flow; f >= 0;) {
      const int next = flows_[static_cast<size_t>(f)].next;
      if (flows_[static_cast<size_t>(f)].end_s <= now_s_) end_flow(f);
      f = next;
    }
    if (cs.open_flows > 0) touch_flow_ends(c);
  }

  // Everything that happened at now_s_ is in: re-evaluate interference factors of the ranks
  // whose busy state changed, then re-solve bandwidth sharing.
  void settle() {
    for (int r : dirty_ranks_) refresh_rank(r);
    dirty_ranks_.clear();
    if (network_dirty_) {
      network_dirty_ = false;
      // A new flow is usually among the changed ones too; visiting it again finds its share
      // already taken and does nothing (a flow left at rate 0 is rescheduled to the same end).
      for (int f : network_.solve()) reschedule_flow_share(f);
      for (int f : new_flows_) reschedule_flow_share(f);
      new_flows_.clear();
    }
    for (int c : dirty_flow_ends_) schedule_flow_ends(c);
    dirty_flow_ends_.clear();
  }

  // One FlowEnd event per collective, at the earliest end among its flows: a plan's flows
  // (ring hops, channels) mostly end at the same instant, and are then ended by one event.
  void touch_flow_ends(int c) {
    CollectiveState& cs = coll_[static_cast<size_t>(c)];
    if (!cs.ends_dirty) {
      cs.ends_dirty = true;
      dirty_flow_ends_.push_back(c);
    }
  }

  void schedule_flow_ends(int c) {
    CollectiveState& cs = coll_[static_cast<size_t>(c)];
    cs.ends_dirty = false;
    ++cs.flow_version;  // whatever was scheduled before is stale now
    double first_s = std::numeric_limits<double>::infinity();
    for (int f = cs.first_flow; f >= 0; f = flows_[static_cast<size_t>(f)].next)
      first_s = std::min(first_s, flows_[static_cast<size_t>(f)].end_s);
    if (first_s < std::numeric_limits<double>::infinity())
      events_.push(first_s, EventKind::FlowEnd, c, cs.flow_version);
    // All at rate 0 (links of capacity 0): they never end; the deadlock check reports it.
  }

  void mark_dirty(int rank) {
    RankState& rs = ranks_[static_cast<size_t>(rank)];
    if (!rs.dirty) {
      rs.dirty = true;
      dirty_ranks_.push_back(rank);
    }
  }

  void refresh_rank(int r) {
    RankState& rs = ranks_[static_cast<size_t>(r)];
    rs.dirty = false;
    const bool computing = rs.compute_task >= 0;
    const bool communicating = rs.collectives_running > 0;
    // Exposed communication: comm busy while compute idle, over the interval just closed.
    if (rs.acc_comm && !rs.acc_compute)
      traces_[static_cast<size_t>(r)].exposed_comm_s += now_s_ - rs.acc_last_s;
    rs.acc_compute = computing;
    rs.acc_comm = communicating;
    rs.acc_last_s = now_s_;
    if (computing) {
      const double want = compute_factor_of(rs);
      if (want != rs.compute_factor) {
        advance_compute(rs);
        rs.compute_factor = want;
        schedule_compute_end(rs);
      }
    }
    if (comm_slowdown_ != 1.0)
      for (int s = 0; s < kNumStreams; ++s) {
        const int t = rs.running[static_cast<size_t>(s)];
        if (t < 0 || hot_[static_cast<size_t>(t)].collective < 0) continue;
        const int c = hot_[static_cast<size_t>(t)].collective;
        const double want = collective_factor(c);
        CollectiveState& cs = coll_[static_cast<size_t>(c)];
        if (want == cs.factor) continue;
        cs.factor = want;
        for (int f = cs.first_flow; f >= 0; f = flows_[static_cast<size_t>(f)].next) {
          FlowState& fs = flows_[static_cast<size_t>(f)];
          advance_flow(fs);
          fs.rate_Bps = fs.share_Bps / want;
          schedule_flow_end(f);
        }
      }
  }

  double collective_factor(int c) const {
    for (const int* t = members_begin(c); t != members_end(c); ++t)
      if (ranks_[static_cast<size_t>(hot_[static_cast<size_t>(*t)].rank())].compute_task >= 0)
        return comm_slowdown_;
    return 1.0;
  }

  // ---- starting tasks -------------------------------------------------------------------------

  void try_start(int t) {
    const size_t ti = static_cast<size_t>(t);
    HotTask& h = hot_[ti];
    if (h.state != TaskState::Waiting || h.pending > 0) return;
    if (head_task(static_cast<size_t>(h.queue)) != t) return;
    if (h.collective < 0) {
      start_compute(t);
      return;
    }
    h.state = TaskState::Ready;
    const size_t c = static_cast<size_t>(h.collective);
    if (++coll_[c].ready_members == member_offsets_[c + 1] - member_offsets_[c])
      start_collective(h.collective);
  }

  void begin_task(int t) {
    const size_t ti = static_cast<size_t>(t);
    HotTask& h = hot_[ti];
    h.state = TaskState::Running;
    start_s_[ti] = now_s_;
    ranks_[static_cast<size_t>(h.rank())].running[static_cast<size_t>(h.stream())] = t;
    apply_memory(t, false);
    mark_dirty(h.rank());
  }

  void start_compute(int t) {
    begin_task(t);
    const HotTask& h = hot_[static_cast<size_t>(t)];
    RankState& rs = ranks_[static_cast<size_t>(h.rank())];
    if (h.stream() == Stream::Compute) {
      rs.compute_task = t;
      rs.compute_duration_s = duration_s(t);
      rs.compute_frac_left = 1.0;
      rs.compute_last_s = now_s_;
      rs.compute_factor = compute_factor_of(rs);
      schedule_compute_end(rs);
    } else {
      // A compute-kind task on a communication stream (host-side work): not subject to
      // interference.
      events_.push(now_s_ + duration_s(t), EventKind::ComputeEnd, t, ++hot_[static_cast<size_t>(t)].version);
    }
  }

  void advance_compute(RankState& rs) {
    const double d = rs.compute_duration_s * rs.compute_factor;
    if (d > 0) rs.compute_frac_left -= (now_s_ - rs.compute_last_s) / d;
    if (rs.compute_frac_left < 0) rs.compute_frac_left = 0;
    rs.compute_last_s = now_s_;
  }

  void schedule_compute_end(RankState& rs) {
    const size_t t = static_cast<size_t>(rs.compute_task);
    const double left_s = rs.compute_frac_left * rs.compute_duration_s * rs.compute_factor;
    events_.push(now_s_ + left_s, EventKind::ComputeEnd, rs.compute_task, ++hot_[t].version);
  }

  // A collective's measured slowdown, or, with only p2p between nodes beside it, the SMs they hold.
  double compute_factor_of(const RankState& rs) const {
    if (rs.sm_collectives_running > 0) return compute_slowdown_;
    return sm_held_factor(cost_.gpu.sm_count, rs.network_p2p_ctas);
  }

  // Counts (sign +1) or uncounts (-1) what member *m of collective c does to its rank's compute:
  // the CTAs of a p2p between nodes (after the local part, for a ring member that switches), or
  // one collective that slows it by compute_slowdown_.
  void count_interference(RankState& rs, int c, const int* m, int sign) {
    const size_t k = static_cast<size_t>(m - members_.data());
    const int after_local = member_ctas_after_local_[k];
    if (after_local >= 0 && coll_[static_cast<size_t>(c)].switched) {
      rs.network_p2p_ctas += sign * after_local;
      return;
    }
    const int p2p_ctas = member_p2p_ctas_[k];
    if (p2p_ctas > 0)
      rs.network_p2p_ctas += sign * p2p_ctas;
    else if (!g_.collectives[static_cast<size_t>(c)].sm_free)
      rs.sm_collectives_running += sign;
  }

  // The flows of ring c inside nodes are done: its members with a peer on their node now hold
  // only the network p2p CTAs of a remote peer, or none (network_p2p_ctas_after_local).
  void switch_after_local(int c) {
    CollectiveState& cs = coll_[static_cast<size_t>(c)];
    for (const bool after : {false, true}) {
      cs.switched = after;
      for (const int* m = members_begin(c); m != members_end(c); ++m) {
        if (member_ctas_after_local_[static_cast<size_t>(m - members_.data())] < 0) continue;
        const int rank = hot_[static_cast<size_t>(*m)].rank();
        count_interference(ranks_[static_cast<size_t>(rank)], c, m, after ? +1 : -1);
        mark_dirty(rank);
      }
    }
  }

  void start_collective(int c) {
    CollectiveState& cs = coll_[static_cast<size_t>(c)];
    cs.switched = false;
    bool switches = false;  // a member switches once the ring's flows inside nodes are done
    for (const int* m = members_begin(c); m != members_end(c); ++m) {
      const int t = *m;
      begin_task(t);
      RankState& rs = ranks_[static_cast<size_t>(hot_[static_cast<size_t>(t)].rank())];
      ++rs.collectives_running;
      count_interference(rs, c, m, +1);
      switches = switches || member_ctas_after_local_[static_cast<size_t>(m - members_.data())] >= 0;
    }
    cs.factor = collective_factor(c);
    cs.local_open = 0;
    const exec::WeightedPlan& plan = plans_.plan_of(c);
    cs.latency_s = plan.latency_s;
    flows_started_ += plan.source_flows;
    for (const exec::WeightedFlow& wf : plan.flows) {
      if (wf.bytes <= 0 || wf.links.empty()) continue;  // nothing to move on any link
      const int f = network_.add_flow(wf.solver_links);
      if (static_cast<size_t>(f) >= flows_.size()) flows_.resize(static_cast<size_t>(f) + 1);
      FlowState& fs = flows_[static_cast<size_t>(f)];
      fs = FlowState{};
      fs.alive = true;
      fs.remaining_bytes = wf.bytes;
      fs.last_s = now_s_;
      fs.collective = c;
      fs.local = switches && inside_one_node(wf);
      cs.local_open += fs.local ? 1 : 0;
      fs.next = cs.first_flow;
      if (cs.first_flow >= 0) flows_[static_cast<size_t>(cs.first_flow)].prev = f;
      cs.first_flow = f;
      ++cs.open_flows;
      new_flows_.push_back(f);
      network_dirty_ = true;
    }
    if (switches && cs.local_open == 0) switch_after_local(c);
    if (cs.open_flows == 0)
      events_.push(now_s_ + cs.latency_s, EventKind::CollectiveEnd, c, 0);
    else
      open_symmetry_watch(cs, plan);
  }

  bool inside_one_node(const exec::WeightedFlow& wf) const {
    for (const auto& [link, weight] : wf.links) {
      const LinkLevel level = topology_.links[static_cast<size_t>(link)].level;
      if (level == LinkLevel::Nic || level == LinkLevel::Fabric) return false;
    }
    return true;
  }

  // The symmetry reduction simulates a sibling's flows only where they cross the
  // representative's links, assuming its contention elsewhere mirrors the representative's.
  // A plan that loads the nodes of its group unequally breaks that mirror for the per-rank
  // traffic that runs beside it on those nodes (DESIGN.md §3, "Symmetry"). Counts the
  // collectives that start while both kinds have flows on a common node: counters per node,
  // touched only by the collectives concerned, so the watch costs nothing per flow.
  void open_symmetry_watch(CollectiveState& cs, const exec::WeightedPlan& plan) {
    cs.uneven_nodes = plan.uneven_nodes;
    cs.stands_for_siblings = plan.stands_for_siblings;
    if (!cs.uneven_nodes && !cs.stands_for_siblings) return;
    bool overlap = false;
    for (int node : plan.nodes) {
      const size_t n = static_cast<size_t>(node);
      overlap = overlap || (cs.uneven_nodes && sibling_collectives_on_node_[n] > 0) ||
                (cs.stands_for_siblings && uneven_collectives_on_node_[n] > 0);
    }
    symmetry_uneven_overlaps_ += overlap ? 1 : 0;
    count_on_nodes(cs, plan, +1);
  }

  void close_symmetry_watch(int c, CollectiveState& cs) {
    if (!cs.uneven_nodes && !cs.stands_for_siblings) return;
    count_on_nodes(cs, plans_.plan_of(c), -1);  // the cached plan: an index lookup
    cs.uneven_nodes = cs.stands_for_siblings = false;
  }

  void count_on_nodes(const CollectiveState& cs, const exec::WeightedPlan& plan, int delta) {
    for (int node : plan.nodes) {
      if (cs.uneven_nodes) uneven_collectives_on_node_[static_cast<size_t>(node)] += delta;
      if (cs.stands_for_siblings) sibling_collectives_on_node_[static_cast<size_t>(node)] += delta;
    }
  }

  // ---- flows ----------------------------------------------------------------------------------

  void advance_flow(FlowState& fs) {
    fs.remaining_bytes -= fs.rate_Bps * (now_s_ - fs.last_s);
    if (fs.remaining_bytes < 0) fs.remaining_bytes = 0;
    fs.last_s = now_s_;
  }

  void schedule_flow_end(int f) {
    FlowState& fs = flows_[static_cast<size_t>(f)];
    fs.end_s =
        fs.rate_Bps > 0 ? now_s_ + fs.remaining_bytes / fs.rate_Bps : std::numeric_limits<double>::infinity();
    touch_flow_ends(fs.collective);
  }

  void reschedule_flow_share(int f) {
    if (f < 0 || static_cast<size_t>(f) >= flows_.size()) return;
    FlowState& fs = flows_[static_cast<size_t>(f)];
    if (!fs.alive) return;
    const double share = network_.rate_Bps(f);
    if (share == fs.share_Bps && fs.rate_Bps > 0) return;
    advance_flow(fs);
    fs.share_Bps = share;
    fs.rate_Bps = share / coll_[static_cast<size_t>(fs.collective)].factor;
    schedule_flow_end(f);
  }

  void end_flow(int f) {
    FlowState& fs = flows_[static_cast<size_t>(f)];
    fs.alive = false;
    network_.remove_flow(f);
    network_dirty_ = true;
    CollectiveState& cs = coll_[static_cast<size_t>(fs.collective)];
    if (fs.prev >= 0)
      flows_[static_cast<size_t>(fs.prev)].next = fs.next;
    else
      cs.first_flow = fs.next;
    if (fs.next >= 0) flows_[static_cast<size_t>(fs.next)].prev = fs.prev;
    fs.prev = fs.next = -1;
    if (fs.local && --cs.local_open == 0) switch_after_local(fs.collective);
    if (--cs.open_flows == 0) {
      close_symmetry_watch(fs.collective, cs);
      events_.push(now_s_ + cs.latency_s, EventKind::CollectiveEnd, fs.collective, 0);
    }
  }

  void end_collective(int c) {
    for (const int* m = members_begin(c); m != members_end(c); ++m) {
      const int t = *m;
      RankState& rs = ranks_[static_cast<size_t>(hot_[static_cast<size_t>(t)].rank())];
      --rs.collectives_running;
      count_interference(rs, c, m, -1);
      end_task(t);
    }
  }

  // ---- progress ----------------------------------------------------------------------------------

  // At the first task's end, then every ceil(total / 100) tasks, and at the last (done ==
  // total): at most 101 calls, so the callback costs nothing next to the simulation.
  void report_progress() {
    const size_t total = g_.tasks.size();
    options_.progress(static_cast<int64_t>(done_), static_cast<int64_t>(total));
    const size_t step = (total + 99) / 100;
    next_progress_ = done_ >= total ? total + 1 : std::min(total, done_ + step);
  }

  // ---- ending tasks ---------------------------------------------------------------------------

  void end_task(int t) {
    const size_t ti = static_cast<size_t>(t);
    HotTask& h = hot_[ti];
    h.state = TaskState::Done;
    end_s_[ti] = now_s_;
    ++done_;
    if (options_.progress && done_ >= next_progress_) report_progress();
    RankState& rs = ranks_[static_cast<size_t>(h.rank())];
    RankTrace& tr = traces_[static_cast<size_t>(h.rank())];
    tr.busy_s[static_cast<size_t>(h.stream())] += now_s_ - start_s_[ti];
    if (now_s_ > tr.end_s) tr.end_s = now_s_;
    double& first = first_start_s_[static_cast<size_t>(h.rank())];
    if (start_s_[ti] < first) first = start_s_[ti];
    rs.running[static_cast<size_t>(h.stream())] = -1;
    if (rs.compute_task == t) rs.compute_task = -1;
    apply_memory(t, true);
    mark_dirty(h.rank());

    const size_t q = static_cast<size_t>(h.queue);
    ++heads_[q];
    if (static_cast<size_t>(heads_[q]) < queue_len(q)) try_start(head_task(q));
    for (int i = dependents_offsets_[ti]; i < dependents_offsets_[ti + 1]; ++i) {
      const int d = dependents_[static_cast<size_t>(i)];
      if (--hot_[static_cast<size_t>(d)].pending == 0) try_start(d);
    }
  }

  // ---- memory ---------------------------------------------------------------------------------

  void apply_memory(int t, bool at_end) {
    const size_t ti = static_cast<size_t>(t);
    const int list = g_.task_mem[ti];
    if (list < 0) return;
    const size_t phase = 2 * static_cast<size_t>(list) + (at_end ? 1 : 0);
    const int begin = phase_bounds_[phase], end = phase_bounds_[phase + 1];
    if (begin == end) return;
    const int rank = hot_[ti].rank();
    RankState& rs = ranks_[static_cast<size_t>(rank)];
    for (int i = begin; i < end; ++i) {
      const MemEvent& m = phase_events_[static_cast<size_t>(i)];
      rs.mem_bytes[static_cast<size_t>(m.category)] += m.bytes;
      rs.mem_total_bytes += m.bytes;
    }
    RankTrace& tr = traces_[static_cast<size_t>(rank)];
    if (rs.mem_total_bytes > tr.peak_memory_bytes) {
      tr.peak_memory_bytes = rs.mem_total_bytes;
      tr.memory_at_peak_bytes = rs.mem_bytes;
    }
    if (options_.record_memory_curve)
      raw_curves_[static_cast<size_t>(rank)].push_back(MemorySample{now_s_, rs.mem_total_bytes});
  }

  // ---- the end --------------------------------------------------------------------------------

  [[noreturn]] void report_deadlock() const {
    size_t never_started = 0;
    for (const HotTask& h : hot_)
      if (h.state == TaskState::Waiting || h.state == TaskState::Ready) ++never_started;
    std::string first = "none";
    for (size_t q = 0; q < heads_.size(); ++q) {
      if (static_cast<size_t>(heads_[q]) >= queue_len(q)) continue;
      const int t = head_task(q);
      const Task& task = g_.tasks[static_cast<size_t>(t)];
      const std::string label = task.label >= 0 && static_cast<size_t>(task.label) < g_.labels.size()
                                    ? g_.labels[static_cast<size_t>(task.label)]
                                    : "task " + std::to_string(t);
      first = label + " " + phase_letter(task.phase) +
              (task.micro_batch >= 0 ? " mb " + std::to_string(task.micro_batch) : "") + " on rank " +
              std::to_string(task.rank) + " stream " + to_string(task.stream);
      break;
    }
    throw Error("internal", "",
                "deadlock: " + std::to_string(never_started) + " tasks never started; first: " + first);
  }

  // The period of back-to-back iterations with no synchronisation between them (optimizer
  // post-validation): each rank repeats its own order, so iteration k + 1 shifted by the longest
  // rank span (first task start to last task end) keeps every dependency and never starts a
  // rank before it is done: the period is at most that span. It is also at least the span of a
  // rank that starts at time 0 (the first stage: nothing releases it, and a later start
  // downstream only delays the gradients it waits for). So the period is exact when such a rank
  // has the longest span (in 1F1B the first stage spans the makespan: nothing is gained), an
  // upper bound otherwise.
  PROTEUS_OUT_OF_LINE double steady_period_s() const {
    double period = 0;
    for (size_t r = 0; r < traces_.size(); ++r)
      if (first_start_s_[r] <= traces_[r].end_s)
        period = std::max(period, traces_[r].end_s - first_start_s_[r]);
    return period;
  }

  PROTEUS_OUT_OF_LINE Trace finish() {
    // Close the accounting intervals (every rank is idle by now).
    for (size_t r = 0; r < ranks_.size(); ++r) mark_dirty(static_cast<int>(r));
    for (int r : dirty_ranks_) refresh_rank(r);
    dirty_ranks_.clear();

    Trace trace;
    trace.events = popped_;
    trace.flows = flows_started_;
    trace.symmetry_uneven_overlaps = symmetry_uneven_overlaps_;
    for (size_t r = 0; r < traces_.size(); ++r) {
      RankTrace& tr = traces_[r];
      tr.compute_busy_s = tr.busy_s[static_cast<size_t>(Stream::Compute)];
      trace.iteration_time_s = std::max(trace.iteration_time_s, tr.end_s);
    }
    for (size_t r = 0; r < raw_curves_.size(); ++r) {
      traces_[r].memory_curve =
          exec::decimate_memory_curve(raw_curves_[r], trace.iteration_time_s, exec::kMemoryCurveBuckets);
      std::vector<MemorySample>().swap(raw_curves_[r]);
    }
    if (options_.overlap_iterations) trace.iteration_time_s = steady_period_s();
    trace.ranks = std::move(traces_);
    trace.task_start_s = std::move(start_s_);
    trace.task_end_s = std::move(end_s_);
    return trace;
  }

  // ---- state ----------------------------------------------------------------------------------

  const ExecGraph& g_;
  const CostModel& cost_;
  const ExecOptions& options_;
  exec::PlanCache plans_;
  const Topology& topology_;
  BandwidthSharing network_;
  const double compute_slowdown_;
  const double comm_slowdown_;

  exec::EventQueue events_;
  double now_s_ = 0;
  int64_t popped_ = 0;
  int64_t flows_started_ = 0;
  // The symmetry watch: per node, collectives with open flows whose plan is uneven / stands
  // for sibling groups.
  std::vector<int> uneven_collectives_on_node_, sibling_collectives_on_node_;
  int64_t symmetry_uneven_overlaps_ = 0;
  size_t done_ = 0;
  size_t next_progress_ = 1;  // done_ at which progress is reported next

  // Per task
  std::vector<HotTask> hot_;
  std::vector<int> dependents_offsets_, dependents_;
  std::vector<int> member_offsets_, members_;  // CSR: member tasks of each collective
  std::vector<int> member_p2p_ctas_;           // aligned with members_: network_p2p_ctas
  std::vector<int> member_ctas_after_local_;   // aligned with members_: network_p2p_ctas_after_local
  std::vector<double> start_s_, end_s_;
  std::vector<double> work_s_;          // per ExecGraph::works entry
  std::vector<MemEvent> phase_events_;  // index_memory_phases
  std::vector<int> phase_bounds_;
  // Per queue: index of its head task
  std::vector<int> heads_;
  // Per collective, flow, rank
  std::vector<CollectiveState> coll_;
  std::vector<FlowState> flows_;
  std::vector<RankState> ranks_;
  std::vector<RankTrace> traces_;
  std::vector<double> first_start_s_;  // per rank: when its first task started
  std::vector<std::vector<MemorySample>> raw_curves_;
  // Work lists, reused
  std::vector<int> dirty_ranks_;
  std::vector<int> new_flows_;
  std::vector<int> dirty_flow_ends_;  // collectives whose FlowEnd event must be rescheduled
  bool network_dirty_ = false;
};

#undef PROTEUS_OUT_OF_LINE

}  // namespace

Trace execute(const ExecGraph& graph, const CostModel& cost, const Topology& topology,
              const ExecOptions& options) {
  return Executor(graph, cost, topology, options).run();
}

}  // namespace proteus
