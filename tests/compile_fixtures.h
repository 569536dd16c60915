// Small configs for compiler and executor tests (JSON text, parsed by the real parser).
#pragma once
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proteus/compile.h"
#include "proteus/config.h"

namespace proteus::test {

struct CollCount {
  int count = 0;
  double bytes = 0;
};

// Simulated rank 0's data-parallel collectives of one kind in `phase`, every micro-batch.
inline int dp_collectives(const CompiledModel& c, CollectiveKind kind, Phase phase) {
  int n = 0;
  for (const Task& t : c.exec.tasks)
    if (t.kind == TaskKind::Collective && t.rank == 0 && t.phase == phase &&
        c.exec.collectives[static_cast<size_t>(t.collective)].kind == kind &&
        c.exec.collectives[static_cast<size_t>(t.collective)].axes == axis_bit(kAxisDp))
      ++n;
  return n;
}

// Collectives of one kind over exactly `axes` whose label starts with `prefix`, in `phase`,
// for micro-batch 0 on simulated rank `rank`: how many, and the bytes of the last one.
inline CollCount count_collectives(const CompiledModel& c, CollectiveKind kind, AxisMask axes, Phase phase,
                                   const std::string& prefix, int rank = 0) {
  CollCount out;
  for (const Task& t : c.exec.tasks) {
    if (t.kind != TaskKind::Collective || t.rank != rank || t.phase != phase) continue;
    if (t.micro_batch != 0 && t.micro_batch != -1) continue;
    const Collective& col = c.exec.collectives[t.collective];
    if (col.kind != kind || col.axes != axes) continue;
    if (c.exec.labels[t.label].rfind(prefix, 0) != 0) continue;
    ++out.count;
    out.bytes = col.bytes;
  }
  return out;
}

// Compute tasks on the compute stream of simulated rank 0 labelled exactly `label` in `phase`:
// how many, and the bytes of the last one's work.
inline CollCount count_compute_tasks(const CompiledModel& c, const std::string& label, Phase phase) {
  CollCount out;
  for (const Task& t : c.exec.tasks) {
    if (t.rank != 0 || t.phase != phase || c.exec.labels[t.label] != label) continue;
    CHECK(t.stream == Stream::Compute);
    ++out.count;
    out.bytes = c.exec.works[t.work].bytes;
  }
  return out;
}

// A GPT-style model: `layers` layers, hidden h, `heads` heads, seq s, vocab v, with dropout.
inline std::string gpt_model(int layers, int h, int heads, int s, int vocab) {
  return "{\"kind\":\"transformer\",\"name\":\"test-gpt\",\"layers\":" + std::to_string(layers) +
         ",\"hidden\":" + std::to_string(h) + ",\"heads\":" + std::to_string(heads) +
         ",\"ffn_hidden\":" + std::to_string(4 * h) + ",\"seq_len\":" + std::to_string(s) +
         ",\"vocab\":" + std::to_string(vocab) +
         ",\"mlp\":\"gelu\",\"norm\":\"layernorm\",\"tied_embeddings\":true}";
}

// A config in the given training precision ("fp32", "fp16", "bf16", "fp8"), Adam.
inline std::string config_json_in(const std::string& precision, const std::string& model,
                                  const std::string& cluster, int64_t global_batch,
                                  const std::string& strategy, const std::string& extra = "") {
  return "{\"model\":" + model + ",\"cluster\":" + cluster +
         ",\"training\":{\"global_batch\":" + std::to_string(global_batch) + ",\"precision\":\"" + precision +
         "\",\"optimizer\":\"adam\"},\"strategy\":" + strategy + extra + "}";
}

inline std::string config_json(const std::string& model, const std::string& cluster, int64_t global_batch,
                               const std::string& strategy, const std::string& extra = "") {
  return config_json_in("bf16", model, cluster, global_batch, strategy, extra);
}

inline CompiledModel compile_text(const std::string& json) { return compile(parse_config(json)); }

// The work of simulated rank 0's first compute task in `phase` whose label ends with `suffix`
// (".act", "loss"), or nullptr.
inline const ComputeWork* compute_work_ending(const CompiledModel& c, Phase phase,
                                              const std::string& suffix) {
  for (const Task& t : c.exec.tasks) {
    if (t.kind != TaskKind::Compute || t.rank != 0 || t.phase != phase) continue;
    const std::string& label = c.exec.labels[static_cast<size_t>(t.label)];
    if (label.size() >= suffix.size() &&
        label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0)
      return &c.exec.works[static_cast<size_t>(t.work)];
  }
  return nullptr;
}

// HBM bytes of simulated rank 0's first compute task in `phase` labelled exactly `label`.
inline double rank0_bytes(const CompiledModel& c, const std::string& label, Phase phase) {
  const ComputeWork* w = compute_work_ending(c, phase, label);
  REQUIRE_MESSAGE(w != nullptr, "no task " << label);
  return w->bytes;
}

// A Llama-style model (RMSNorm, SwiGLU, rotary, GQA, no dropout): 2 layers, h 1024, 8 heads of
// 128, 2 KV heads, ffn 4096, sequence 2048; `extra` adds fields (",\"bias\":false").
inline std::string tiny_llama_model(const std::string& extra = "") {
  return "{\"kind\":\"transformer\",\"name\":\"tiny-llama\",\"layers\":2,\"hidden\":1024,\"heads\":8,"
         "\"kv_heads\":2,\"ffn_hidden\":4096,\"seq_len\":2048,\"vocab\":32000,\"mlp\":\"swiglu\","
         "\"norm\":\"rmsnorm\",\"tied_embeddings\":false,\"learned_positions\":false,\"dropout\":false" +
         extra + "}";
}

// Whether task `task` of `g` waits on task `dep` directly.
inline bool depends_on(const ExecGraph& g, int task, int dep) {
  for (int i = g.dep_offsets[static_cast<size_t>(task)]; i < g.dep_offsets[static_cast<size_t>(task) + 1];
       ++i)
    if (g.deps[static_cast<size_t>(i)] == dep) return true;
  return false;
}

// The collective that collective task `task` of `g` runs.
inline const Collective& collective_of_task(const ExecGraph& g, int task) {
  return g.collectives[static_cast<size_t>(g.tasks[static_cast<size_t>(task)].collective)];
}

// The memory events task `task` of `g` applies (its shared list, task_mem; empty when none).
inline std::vector<MemEvent> task_mem_events(const ExecGraph& g, size_t task) {
  const int l = g.task_mem[task];
  if (l < 0) return {};
  return {g.mem_events.begin() + g.mem_list_offsets[static_cast<size_t>(l)],
          g.mem_events.begin() + g.mem_list_offsets[static_cast<size_t>(l) + 1]};
}

}  // namespace proteus::test
