// Names the report shows for tasks and ranks (shared by result JSON and Chrome trace).
#pragma once
#include <string>
#include "proteus/exec_graph.h"

namespace proteus::report {

// "layers.3.mlp.fc1 B"
inline std::string task_name(const ExecGraph& graph, int task) {
  const Task& t = graph.tasks[static_cast<size_t>(task)];
  std::string label = t.label >= 0 && static_cast<size_t>(t.label) < graph.labels.size()
                          ? graph.labels[static_cast<size_t>(t.label)]
                          : std::string("task");
  return label + " " + phase_letter(t.phase);
}

// Phase for compute tasks, collective kind for collectives.
inline const char* task_kind(const ExecGraph& graph, int task) {
  const Task& t = graph.tasks[static_cast<size_t>(task)];
  if (t.kind == TaskKind::Collective && t.collective >= 0)
    return to_string(graph.collectives[static_cast<size_t>(t.collective)].kind);
  return to_string(t.phase);
}

}  // namespace proteus::report
