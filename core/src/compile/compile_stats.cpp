#include "compile_stats.h"

#include <array>
#include <cstring>

#include <nlohmann/json.hpp>

namespace proteus {

bool CollectiveCounter::Key::operator==(const Key& o) const {
  return stage == o.stage && kind == o.kind && axes == o.axes && group_size == o.group_size &&
         std::strcmp(purpose, o.purpose) == 0;
}

void CollectiveCounter::count(int stage, CollectiveKind kind, AxisMask axes, const char* purpose,
                              int group_size, double bytes) {
  const Key key{stage, kind, axes, purpose, group_size};
  for (size_t i = rank_begin_; i < keys_.size(); ++i) {  // this rank's entries
    if (!(keys_[i] == key)) continue;
    CollectiveStat& s = stats_.collectives[i];
    ++s.count;
    s.bytes_per_rank += bytes;
    return;
  }
  keys_.push_back(key);
  stats_.collectives.push_back({to_string(kind), axes_name(axes), purpose, group_size, 1, bytes, stage});
}

// Counted in arrays first: a string-keyed map lookup per task was a tenth of the compile time
// at a million tasks.
void count_tasks(const ExecGraph& exec, CompileStats* st) {
  enum { kCompute, kCollective, kP2p, kKinds };
  constexpr int kPhases = static_cast<int>(Phase::Sync) + 1;
  std::array<int64_t, kKinds> by_kind{};
  std::array<int64_t, kPhases> by_phase{};
  for (const Task& t : exec.tasks) {
    if (t.kind == TaskKind::Compute)
      ++by_kind[kCompute];
    else if (exec.collectives[static_cast<size_t>(t.collective)].kind == CollectiveKind::SendRecv)
      ++by_kind[kP2p];
    else
      ++by_kind[kCollective];
    ++by_phase[static_cast<size_t>(t.phase)];
  }
  const char* kind_names[kKinds] = {"compute", "collective", "p2p"};
  for (int k = 0; k < kKinds; ++k)
    if (by_kind[static_cast<size_t>(k)] > 0)
      st->tasks_by_kind[kind_names[k]] = by_kind[static_cast<size_t>(k)];
  for (int p = 0; p < kPhases; ++p)
    if (by_phase[static_cast<size_t>(p)] > 0)
      st->tasks_by_phase[to_string(Phase(p))] = by_phase[static_cast<size_t>(p)];
}

std::string compile_stats_json(const CompiledModel& c) {
  using nlohmann::ordered_json;
  const CompileStats& st = c.stats;
  ordered_json j;
  j["ok"] = true;
  j["schema"] = 1;
  j["model"] = c.graph.model_name;
  j["parameters"] = st.parameters;
  j["model_flops_per_iteration"] = st.model_flops_per_iteration;
  j["hardware_flops_per_iteration"] = st.hardware_flops_per_iteration;
  ordered_json mesh;
  for (int a = 0; a < kNumMeshAxes; ++a) mesh[axis_name(MeshAxis(a))] = c.tree.mesh.size[a];
  j["mesh"] = mesh;
  j["micro_batches"] = c.tree.micro_batches;
  j["stages"] = c.tree.stages;
  j["virtual_stages"] = c.tree.virtual_stages;
  j["layers_per_chunk"] = c.tree.chunk_layers;
  j["simulated_ranks"] = c.exec.ranks.size();
  j["tasks"] = c.exec.tasks.size();
  j["tasks_by_kind"] = st.tasks_by_kind;
  j["tasks_by_phase"] = st.tasks_by_phase;
  j["passes"] = st.passes;
  j["passes_from_templates"] = st.passes_from_templates;
  ordered_json colls = ordered_json::array();
  for (const CollectiveStat& s : st.collectives) {
    colls.push_back({{"stage", s.stage},
                     {"kind", s.kind},
                     {"axes", s.axes},
                     {"purpose", s.purpose},
                     {"group_size", s.group_size},
                     {"count", s.count},
                     {"bytes_per_rank", s.bytes_per_rank}});
  }
  j["collectives"] = colls;
  j["p2p_bytes_per_boundary"] = st.p2p_bytes_per_boundary;
  j["stage_orders"] = st.stage_orders;
  ordered_json mem = ordered_json::array();
  for (size_t s = 0; s < st.static_bytes_per_stage.size(); ++s) {
    ordered_json m;
    for (int k = 0; k < kNumMemCategories; ++k)
      m[to_string(MemCategory(k))] = st.static_bytes_per_stage[s][k];
    m["activations_per_micro_batch"] = st.activation_bytes_per_microbatch_per_stage[s];
    mem.push_back(m);
  }
  j["static_memory_bytes_per_stage"] = mem;
  return j.dump(2);
}

}  // namespace proteus
