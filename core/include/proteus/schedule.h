// Pipeline schedules as data (DESIGN.md §7): for each physical stage, the ordered list of
// passes it runs -- F (forward), B (backward; the input gradient alone when the schedule
// splits W off) and W (weight gradient) of one micro-batch of one model chunk -- plus where
// each model chunk runs and the limits the order keeps. The compiler turns any valid
// schedule into tasks and never knows a schedule's name; generators make the lists:
//   gpipe             all forwards, then all backwards.
//   1f1b              p-s-1 warm-up forwards, then one forward / one backward, then the rest.
//   interleaved-1f1b  Megatron-Core's schedule over v chunks per stage (schedules.py,
//                     get_schedule_table: groups of `microbatch_group_size` micro-batches).
//   zb-h1, zb-h2      Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024) section 2:
//                     B and W split; W deferred into the bubbles, with 1F1B's in-flight limit
//                     (h1) or up to 2p-1 micro-batches in flight (h2).
//   zb-v              the same authors' V schedule: two chunks per stage in a V (stage s
//                     runs chunks s and 2p-1-s), 1F1B's activation memory, no bubble when
//                     T_F = T_B = T_W.
//   dualpipe-v        DualPipeV (deepseek-ai/DualPipe dualpipev.py): DeepSeek-V3's DualPipe
//                     cut in half onto a V (stage s runs chunks s and 2p-1-s, one copy of
//                     the parameters); in its steady state the forward of one micro-batch
//                     and the whole backward of another run as one overlapped F&B group, so
//                     that each one's communication hides behind the other's compute.
//   dualpipe          DualPipe itself (deepseek-ai/DualPipe dualpipe.py, DeepSeek-V3 section
//                     3.2.1): two copies of the model, each split into p stages; copy A runs
//                     stage s on rank s and takes the first half of the micro-batches from
//                     rank 0, copy B runs stage s on rank p-1-s and takes the second half
//                     from rank p-1; the same eight steps and F&B groups as dualpipe-v.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "proteus/strategy_spec.h"
#include "proteus/strategy_tree.h"

namespace proteus {

enum class PassKind : uint8_t { F, B, W };  // B = whole backward unless the schedule splits W

struct Pass {
  PassKind kind;
  int micro_batch;
  int chunk;  // this stage's model chunk, 0..chunks_per_stage-1 (in pipeline order)
  // Runs overlapped with the pass before it on the stage (DualPipe's F&B: a forward, then the
  // backward and weight gradient of another micro-batch, as one group). The group starts
  // once every member's inputs have arrived (dualpipe.py waits for both receives before the
  // pair); the compiler interleaves the members' tasks at communication points (overlap_groups.h).
  bool with_previous = false;
};

struct PipelineSchedule {
  int stages = 1;
  int chunks_per_stage = 1;
  int micro_batches = 1;
  // chunk_stage[c]: the stage that runs model chunk c, chunks in pipeline order (the forward
  // visits 0, 1, ..., stages * chunks_per_stage - 1). Megatron: c % stages; V: see zb-v.
  std::vector<int> chunk_stage;
  // Copies of the model (DualPipe: 2). The chunks form `copies` pipelines of equal length L =
  // chunks() / copies, copy k holding chunks kL .. kL + L - 1 (chunk kL + j runs the layers of
  // model chunk j), and the micro-batches as many equal runs: run k goes through copy k only
  // (its forward visits kL, ..., kL + L - 1). The copies' weight gradients are summed.
  int copies = 1;
  bool split_backward = false;           // W passes of their own (else B computes W too)
  std::vector<std::vector<Pass>> order;  // per stage, in issue order
  // The limit the order keeps: at most this many (micro-batch, chunk) forwards whose B has
  // not run, per stage (0: none stated). Checked by validate_schedule.
  std::vector<int> max_in_flight;
  // What a waiting W holds, as a fraction of what a chunk forward keeps (Qi et al.'s M_W / M_B):
  // the ZB-V generator counts it against max_in_flight, as the zero-bubble runtime's V
  // scheduler counts memory (see zb_w_memory_fraction). 0: a waiting W is not counted.
  double w_memory_fraction = 0;

  int chunks() const { return stages * chunks_per_stage; }
  int chunks_per_copy() const { return chunks() / copies; }
  int copy_of_chunk(int chunk) const { return chunk / chunks_per_copy(); }
  int copy_of_micro_batch(int mb) const { return mb / (micro_batches / copies); }
  // Global chunk of a stage's local chunk k: its k-th chunk in pipeline order.
  int global_chunk(int stage, int local) const;
};

// The generator of a named schedule over chunks placed as `chunk_stage` says (the strategy
// tree's). `microbatch_group_size` is Megatron-Core's microbatch_group_size_per_vp_stage (0:
// the number of stages).
// `w_memory_fraction`: PipelineSchedule::w_memory_fraction (used by ZB-V).
PipelineSchedule make_schedule(Schedule kind, int stages, int micro_batches,
                               const std::vector<int>& chunk_stage, int microbatch_group_size = 0,
                               double w_memory_fraction = 0);
// M_W / M_B as the zero-bubble runtime estimates it for its schedulers
// (sail-sg/zero-bubble-pipeline-parallelism, get_zero_bubble_forward_backward_func in
// megatron/core/pipeline_parallel/zb_schedules.py): per token of a transformer layer, a forward
// keeps 34 h + 5 a s bytes (Korthikanti et al.'s count, 16-bit, no flash attention: the runtime
// uses it either way) and B leaves 32 h for W (f_mem_approx, w_mem_approx there). Returns
// 32 h / (34 h + 5 a s); 0 where hidden, heads or seq_len is not positive.
double zb_w_memory_fraction(int64_t hidden, int64_t heads, int64_t seq_len);
// The strategy's schedule: generated, or the config's explicit order (parsed and validated;
// errors name "strategy.schedule.stages[s][i]").
PipelineSchedule schedule_of(const StrategySpec& spec, const StrategyTree& tree,
                             double w_memory_fraction = 0);
// What the zero-bubble runtime's timers measure between --zero-bubble-pipeline-timers-start-iter
// and -end-iter (zerobubble/runtime.py, ScheduleTimers): per stage, each pass kind's mean time
// over its micro-batches (and, for ZB-V, its two chunks), one pipeline send, and the
// activation memory a forward leaves and a W frees.
struct PassProfile {
  std::vector<double> f_s, b_s, w_s;  // per stage
  double send_s = 0;
  std::vector<double> f_bytes, w_bytes;  // per stage; w_bytes <= 0
};
// The zero-bubble runtime's second plan (after its timer iterations) of a zb-h1, zb-h2 or zb-v
// schedule: `unit` (the generated schedule) with each stage's order planned from `profile`
// (zb_planner.h): ZB-H1 and ZB-2P with the median of the stages' times for every stage and a
// memory limit of p (zb-h1) or 2p (zb-h2) forwards of the larger of stages 0 and 1; ZB-V with
// the medians of the stages' averages and the model's memory approximations
// (`v_w_memory_fraction`: zb_w_memory_fraction). Other schedules are returned unchanged.
PipelineSchedule plan_zero_bubble(const PipelineSchedule& unit, Schedule kind, const PassProfile& profile,
                                  double v_w_memory_fraction);
// One stage's order of a named schedule (tests, `proteus compile`).
std::vector<Pass> stage_schedule(Schedule kind, int stages, int micro_batches, int virtual_stages, int stage);

// "F0", "B3", "W2", "F0.1" (micro-batch 0, chunk 1); false when `text` is none of those.
bool parse_pass(const std::string& text, Pass* out);
std::string to_string(const Pass& pass);
// "F0 F1 B0 ..."; an overlapped group is joined by '&': "F5&B0.1&W0.1".
std::string to_string(const std::vector<Pass>& passes);

// Checks that every pass appears exactly once, that the order can run (dependencies F before
// B before W per chunk, the forward down the chunks, the backward up; no deadlock) and that it
// keeps its stated limits. Throws invalid_config naming `where` + ".stages[s][i]" (the entry).
void validate_schedule(const PipelineSchedule& schedule, const std::string& where);

// The schedule played with fixed pass times (no communication): what the papers' figures
// count. Times of one chunk's F, B (input gradient alone if split, else the whole backward)
// and W.
struct ScheduleTimes {
  double f = 1, b = 1, w = 1;
  // An overlapped group (Pass::with_previous) takes this long (DeepSeek's F&B); 0: the sum of
  // its members' times (no overlap).
  double overlapped_group = 0;
};
// A stage's bubble is its idle time between its first pass and its last, as Qi et al. count
// it (the stagger before a stage's first pass overlaps the previous iteration's optimizer
// step under their post-validation); for 1F1B and ZB-H1 the first stage spans the makespan.
struct SchedulePlay {
  double makespan = 0;
  std::vector<double> busy, span_start, span_end;  // per stage
  std::vector<int> peak_in_flight;                 // per stage: forwards whose B has not run
  std::vector<int> peak_held;                      // ... whose W (or whole backward) has not run
  // Per stage: forwards whose B has not run + w_memory_fraction x waiting W (chunk units).
  std::vector<double> peak_memory;
  double bubble(int stage) const {
    const auto s = static_cast<size_t>(stage);
    return span_end[s] - span_start[s] - busy[s];
  }
  double max_bubble() const {
    double b = 0;
    for (size_t s = 0; s < busy.size(); ++s) b = std::max(b, bubble(static_cast<int>(s)));
    return b;
  }
};
SchedulePlay play_schedule(const PipelineSchedule& schedule, const ScheduleTimes& times);

}  // namespace proteus
