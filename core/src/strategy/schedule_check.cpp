// Validation and unit-time playback of a pipeline schedule (schedule.h): both walk the stages'
// lists in order, running a pass once what it depends on has run, as the executor will.
#include <algorithm>
#include <string>

#include "proteus/error.h"
#include "proteus/schedule.h"

namespace proteus {
namespace {

constexpr double kNotRun = -1;

// Finish times of every (kind, chunk, micro-batch) pass, kNotRun until it has run.
struct Finished {
  int chunks = 0, micro_batches = 0;
  std::vector<double> end;
  Finished(int c, int m) : chunks(c), micro_batches(m), end(static_cast<size_t>(3 * c * m), kNotRun) {}
  double& at(PassKind k, int chunk, int mb) {
    return end[(static_cast<size_t>(k) * static_cast<size_t>(chunks) + static_cast<size_t>(chunk)) *
                   static_cast<size_t>(micro_batches) +
               static_cast<size_t>(mb)];
  }
};

// What a pass waits for, besides its stage being free: the forward of the chunk before, the
// backward of the chunk after (or the forward of the same chunk), the B before its W -- within
// the micro-batch's copy of the model (PipelineSchedule::copies), whose chunks are consecutive.
int dependencies(const PipelineSchedule& sc, PassKind kind, int chunk, int mb, PassKind* kinds, int* chunks) {
  int n = 0;
  const int per_copy = sc.chunks_per_copy();
  if (kind == PassKind::F) {
    if (chunk % per_copy > 0) kinds[n] = PassKind::F, chunks[n++] = chunk - 1;
  } else if (kind == PassKind::B) {
    kinds[n] = PassKind::F, chunks[n++] = chunk;
    if ((chunk + 1) % per_copy != 0) kinds[n] = PassKind::B, chunks[n++] = chunk + 1;
  } else {
    kinds[n] = PassKind::B, chunks[n++] = chunk;
  }
  (void)mb;
  return n;
}

// Whether the pass (kind, chunk, mb) is an earlier member of the group that starts at entry
// `first` of stage s and reaches entry `i` (W waiting for its B within an F&B group).
bool in_group(const PipelineSchedule& sc, int s, const std::vector<Pass>& order, size_t first, size_t i,
              PassKind kind, int chunk, int mb) {
  for (size_t k = first; k < i; ++k)
    if (order[k].kind == kind && order[k].micro_batch == mb && sc.global_chunk(s, order[k].chunk) == chunk)
      return true;
  return false;
}

std::string entry_path(const std::string& where, int s, size_t i) {
  return where + ".stages[" + std::to_string(s) + "][" + std::to_string(i) + "]";
}

// Where a stage stopped when nothing can run: its next entry and the pass it waits for.
struct Stuck {
  size_t entry = 0;
  PassKind waits_kind = PassKind::F;
  int waits_chunk = -1;  // -1: the stage is not stuck (finished, or not looked at)
};

// Plays the schedule; on a deadlock returns false with where each stage stopped.
bool play(const PipelineSchedule& sc, const ScheduleTimes& times, SchedulePlay* out,
          std::vector<Stuck>* stuck) {
  const int p = sc.stages;
  Finished done(sc.chunks(), sc.micro_batches);
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> free_at(static_cast<size_t>(p), 0), first(static_cast<size_t>(p), -1);
  out->busy.assign(static_cast<size_t>(p), 0);
  size_t remaining = 0;
  for (const auto& o : sc.order) remaining += o.size();
  while (remaining > 0) {
    bool progress = false;
    stuck->assign(static_cast<size_t>(p), Stuck{});
    for (int s = 0; s < p; ++s) {
      const auto su = static_cast<size_t>(s);
      while (next[su] < sc.order[su].size()) {
        // The entry and the ones overlapped with it (Pass::with_previous) start together, once
        // every one's inputs are there; a dependency inside the group is met within it.
        const auto& order = sc.order[su];
        size_t end = next[su] + 1;
        while (end < order.size() && order[end].with_previous) ++end;
        double start = free_at[su], t = 0;
        bool ready = true;
        for (size_t i = next[su]; i < end && ready; ++i) {
          const Pass& pass = order[i];
          PassKind kinds[2];
          int chunks[2];
          const int n =
              dependencies(sc, pass.kind, sc.global_chunk(s, pass.chunk), pass.micro_batch, kinds, chunks);
          for (int d = 0; d < n && ready; ++d) {
            if (in_group(sc, s, order, next[su], i, kinds[d], chunks[d], pass.micro_batch)) continue;
            const double e = done.at(kinds[d], chunks[d], pass.micro_batch);
            if (e == kNotRun) {
              ready = false;
              (*stuck)[su] = {i, kinds[d], chunks[d]};
            }
            start = std::max(start, e);
          }
          t += pass.kind == PassKind::F ? times.f : (pass.kind == PassKind::B ? times.b : times.w);
        }
        if (!ready) break;
        if (end - next[su] > 1 && times.overlapped_group > 0) t = times.overlapped_group;
        if (first[su] < 0) first[su] = start;
        for (size_t i = next[su]; i < end; ++i)
          done.at(order[i].kind, sc.global_chunk(s, order[i].chunk), order[i].micro_batch) = start + t;
        free_at[su] = start + t;
        out->busy[su] += t;
        remaining -= end - next[su];
        next[su] = end;
        progress = true;
      }
    }
    if (!progress) return false;
  }
  out->span_start = first;
  out->span_end = free_at;
  out->makespan = *std::max_element(free_at.begin(), free_at.end());
  // Activations: counted in issue order, which on one stage is time order.
  out->peak_in_flight.assign(static_cast<size_t>(p), 0);
  out->peak_held.assign(static_cast<size_t>(p), 0);
  out->peak_memory.assign(static_cast<size_t>(p), 0);
  for (int s = 0; s < p; ++s) {
    int in_flight = 0, held = 0;
    for (const Pass& pass : sc.order[static_cast<size_t>(s)]) {
      if (pass.kind == PassKind::F) {
        ++in_flight;
        ++held;
      } else if (pass.kind == PassKind::B) {
        --in_flight;
        if (!sc.split_backward) --held;
      } else {
        --held;
      }
      out->peak_in_flight[static_cast<size_t>(s)] =
          std::max(out->peak_in_flight[static_cast<size_t>(s)], in_flight);
      out->peak_held[static_cast<size_t>(s)] = std::max(out->peak_held[static_cast<size_t>(s)], held);
      const double memory = in_flight + sc.w_memory_fraction * (held - in_flight);
      out->peak_memory[static_cast<size_t>(s)] = std::max(out->peak_memory[static_cast<size_t>(s)], memory);
    }
  }
  return true;
}

// Follows the waits from the first stuck stage: the entry that waits for a pass listed after
// it on its own stage, or the first entry of a cycle of stages waiting on each other.
[[noreturn]] void deadlock_error(const PipelineSchedule& sc, const std::vector<Stuck>& stuck,
                                 const std::string& where) {
  int s = 0;
  while (stuck[static_cast<size_t>(s)].waits_chunk < 0) ++s;
  std::vector<bool> visited(stuck.size(), false);
  for (;;) {
    visited[static_cast<size_t>(s)] = true;
    const Stuck& st = stuck[static_cast<size_t>(s)];
    const int on = sc.chunk_stage[static_cast<size_t>(st.waits_chunk)];
    int local = 0;
    for (int c = 0; c < st.waits_chunk; ++c) local += sc.chunk_stage[static_cast<size_t>(c)] == on ? 1 : 0;
    const Pass& pass = sc.order[static_cast<size_t>(s)][st.entry];
    const std::string waits = "\"" + to_string(Pass{st.waits_kind, pass.micro_batch, local}) + "\"";
    const std::string head =
        "the schedule deadlocks: \"" + to_string(pass) + "\" on stage " + std::to_string(s);
    if (on == s)
      throw invalid_config(entry_path(where, s, st.entry),
                           head + " waits for " + waits + ", listed after it");
    if (visited[static_cast<size_t>(on)] || stuck[static_cast<size_t>(on)].waits_chunk < 0)
      throw invalid_config(entry_path(where, s, st.entry), head + " waits for " + waits + " on stage " +
                                                               std::to_string(on) +
                                                               ", which waits (through other stages) for it");
    s = on;
  }
}

}  // namespace

SchedulePlay play_schedule(const PipelineSchedule& schedule, const ScheduleTimes& times) {
  SchedulePlay out;
  std::vector<Stuck> stuck;
  if (!play(schedule, times, &out, &stuck)) throw Error("internal", "", "the schedule deadlocks");
  return out;
}

void validate_schedule(const PipelineSchedule& sc, const std::string& where) {
  const int p = sc.stages, m = sc.micro_batches, v = sc.chunks_per_stage;
  if (static_cast<int>(sc.order.size()) != p)
    throw invalid_config(where + ".stages", "has " + std::to_string(sc.order.size()) +
                                                " stage lists, but pp = " + std::to_string(p));
  if (sc.copies < 1 || sc.chunks() % sc.copies != 0 || m % sc.copies != 0)
    throw invalid_config(where, std::to_string(sc.copies) + " copies of the model need the " +
                                    std::to_string(sc.chunks()) + " chunks and " + std::to_string(m) +
                                    " micro-batches to split evenly among them");
  // A chunk runs the micro-batches of its copy only.
  const auto runs = [&](int s, int local, int mb) {
    return sc.copy_of_micro_batch(mb) == sc.copy_of_chunk(sc.global_chunk(s, local));
  };
  // Every pass exactly once: where each (kind, local chunk, micro-batch) of a stage was seen.
  for (int s = 0; s < p; ++s) {
    const auto& order = sc.order[static_cast<size_t>(s)];
    std::vector<int> seen(static_cast<size_t>(3 * v * m), -1);
    for (size_t i = 0; i < order.size(); ++i) {
      const Pass& pass = order[i];
      const std::string path = entry_path(where, s, i);
      if (pass.micro_batch < 0 || pass.micro_batch >= m)
        throw invalid_config(path, "\"" + to_string(pass) + "\": micro-batch " +
                                       std::to_string(pass.micro_batch) + " is outside 0.." +
                                       std::to_string(m - 1));
      if (pass.chunk < 0 || pass.chunk >= v)
        throw invalid_config(path, "\"" + to_string(pass) + "\": chunk " + std::to_string(pass.chunk) +
                                       " is outside 0.." + std::to_string(v - 1) + " (chunks per stage)");
      if (!runs(s, pass.chunk, pass.micro_batch))
        throw invalid_config(path, "\"" + to_string(pass) + "\": micro-batch " +
                                       std::to_string(pass.micro_batch) + " goes through copy " +
                                       std::to_string(sc.copy_of_micro_batch(pass.micro_batch)) +
                                       " of the model, chunk " + std::to_string(pass.chunk) + " of stage " +
                                       std::to_string(s) + " belongs to copy " +
                                       std::to_string(sc.copy_of_chunk(sc.global_chunk(s, pass.chunk))));
      if (pass.kind == PassKind::W && !sc.split_backward)
        throw invalid_config(path,
                             "\"" + to_string(pass) + "\": a W pass in a schedule without split backward");
      int& first =
          seen[(static_cast<size_t>(pass.kind) * static_cast<size_t>(v) + static_cast<size_t>(pass.chunk)) *
                   static_cast<size_t>(m) +
               static_cast<size_t>(pass.micro_batch)];
      if (first >= 0)
        throw invalid_config(path, "\"" + to_string(pass) + "\" appears twice on stage " + std::to_string(s) +
                                       " (first at entry " + std::to_string(first) + ")");
      first = static_cast<int>(i);
    }
    for (int k = 0; k < (sc.split_backward ? 3 : 2); ++k)
      for (int c = 0; c < v; ++c)
        for (int mb = 0; mb < m; ++mb)
          if (runs(s, c, mb) &&
              seen[(static_cast<size_t>(k) * static_cast<size_t>(v) + static_cast<size_t>(c)) *
                       static_cast<size_t>(m) +
                   static_cast<size_t>(mb)] < 0)
            throw invalid_config(
                where + ".stages[" + std::to_string(s) + "]",
                "stage " + std::to_string(s) + " never runs \"" + to_string(Pass{PassKind(k), mb, c}) + "\"");
  }
  SchedulePlay play_out;
  std::vector<Stuck> stuck;
  if (!play(sc, ScheduleTimes{}, &play_out, &stuck)) deadlock_error(sc, stuck, where);
  for (size_t s = 0; s < sc.max_in_flight.size() && s < static_cast<size_t>(p); ++s) {
    const int limit = sc.max_in_flight[s];
    if (limit > 0 && play_out.peak_in_flight[s] > limit)
      throw invalid_config(
          where + ".stages[" + std::to_string(s) + "]",
          "stage " + std::to_string(s) + " has " + std::to_string(play_out.peak_in_flight[s]) +
              " forwards in flight, more than the schedule's limit " + std::to_string(limit));
  }
}

}  // namespace proteus
