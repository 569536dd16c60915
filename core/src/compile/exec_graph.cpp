#include "proteus/exec_graph.h"

namespace proteus {

int ExecGraph::add_task(const Task& t, const std::vector<int>& task_deps, const std::vector<MemEvent>& mem) {
  const int id = static_cast<int>(tasks.size());
  tasks.push_back(t);
  deps.insert(deps.end(), task_deps.begin(), task_deps.end());
  dep_offsets.push_back(static_cast<int>(deps.size()));
  task_mem.push_back(add_mem_list(mem.data(), mem.size()));
  const size_t q = static_cast<size_t>(t.rank) * kNumStreams + static_cast<size_t>(t.stream);
  if (queues.size() <= q) queues.resize(q + 1);
  queues[q].push_back(id);
  return id;
}

int ExecGraph::add_mem_list(const MemEvent* events, size_t n) {
  if (n == 0) return -1;
  mem_events.insert(mem_events.end(), events, events + n);
  mem_list_offsets.push_back(static_cast<int>(mem_events.size()));
  return static_cast<int>(mem_list_offsets.size()) - 2;
}

double ExecGraph::memory_change(int task, MemCategory category) const {
  const int list = static_cast<size_t>(task) < task_mem.size() ? task_mem[static_cast<size_t>(task)] : -1;
  if (list < 0) return 0;
  double bytes = 0;
  for (int e = mem_list_offsets[static_cast<size_t>(list)];
       e < mem_list_offsets[static_cast<size_t>(list) + 1]; ++e)
    if (mem_events[static_cast<size_t>(e)].category == category)
      bytes += mem_events[static_cast<size_t>(e)].bytes;
  return bytes;
}

int ExecGraph::add_work(const ComputeWork& work) {
  works.push_back(work);
  return static_cast<int>(works.size()) - 1;
}

int ExecGraph::label_id(const std::string& label) {
  auto it = label_index.find(label);
  if (it != label_index.end()) return it->second;
  const int id = static_cast<int>(labels.size());
  labels.push_back(label);
  label_index.emplace(label, id);
  return id;
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "forward";
    case Phase::BackwardInput:
      return "backward_input";
    case Phase::BackwardWeight:
      return "backward_weight";
    case Phase::Recompute:
      return "recompute";
    case Phase::Optimizer:
      return "optimizer";
    case Phase::Sync:
      return "sync";
  }
  return "?";
}

const char* phase_letter(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "F";
    case Phase::BackwardInput:
      return "B";
    case Phase::BackwardWeight:
      return "W";
    case Phase::Recompute:
      return "R";
    case Phase::Optimizer:
      return "O";
    case Phase::Sync:
      return "S";
  }
  return "?";
}

const char* to_string(Stream s) {
  switch (s) {
    case Stream::Compute:
      return "compute";
    case Stream::TpComm:
      return "tp_comm";
    case Stream::DpComm:
      return "dp_comm";
    case Stream::PpComm:
      return "pp_comm";
    case Stream::ParamComm:
      return "param_comm";
  }
  return "?";
}

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::AllGather:
      return "all_gather";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::AllToAll:
      return "all_to_all";
    case CollectiveKind::SendRecv:
      return "send_recv";
    case CollectiveKind::RingExchange:
      return "ring_exchange";
  }
  return "?";
}

const char* to_string(MemCategory c) {
  switch (c) {
    case MemCategory::Weights:
      return "weights";
    case MemCategory::Gradients:
      return "gradients";
    case MemCategory::OptimizerStates:
      return "optimizer_states";
    case MemCategory::Activations:
      return "activations";
    case MemCategory::CommBuffers:
      return "communication_buffers";
  }
  return "?";
}

}  // namespace proteus
