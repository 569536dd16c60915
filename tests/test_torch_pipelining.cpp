// torch.distributed.pipelining as TorchTitan ran it (framework fsdp, pp > 1; PyTorch of late 2024,
// docs/frameworks/data-parallelism.md "FSDP2 under pipeline parallelism"):
// - ScheduleInterleaved1F1B is a PipelineScheduleMulti: one blocking exchange per time step of
//   its pipeline_order (core/src/compile/torch_lockstep_p2p.h);
// - FSDP2 reduces a stage's gradients only after the stage's last backward, one parameter group
//   after another, the compute stream waiting for each reduce-scatter before the next copy-in
//   (IterationTail::end_pass).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../core/src/compile/torch_lockstep_p2p.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"

using namespace proteus;

namespace {

// A GPT of 4 layers on 4 GPUs: pp 2 x dp 2, m micro-batches of 1.
std::string pipelined(const std::string& framework, const std::string& schedule, int micro_batches,
                      const std::string& extra = "") {
  return test::config_json(test::gpt_model(4, 1024, 16, 1024, 8192),
                           R"({"preset":"dgx-a100-80g","nodes":1,"gpus_per_node":4})", 2 * micro_batches,
                           R"({"tp":1,"pp":2,"dp":2,"micro_batch":1,"framework":")" + framework +
                               R"(","schedule":")" + schedule + "\"" + extra + "}");
}

struct Played {
  Config config;
  CompiledModel compiled;
  Trace trace;
  double start(int t) const { return trace.task_start_s[static_cast<size_t>(t)]; }
  double end(int t) const { return trace.task_end_s[static_cast<size_t>(t)]; }
};

Played play(const std::string& json) {
  Played p;
  p.config = parse_config(json);
  p.compiled = compile(p.config);
  p.trace = execute(p.compiled.exec, cost_model_of(p.config), build_topology(p.config.cluster),
                    exec_options_of(p.config, false));
  return p;
}

bool is_collective(const ExecGraph& g, const Task& t, CollectiveKind kind) {
  return t.kind == TaskKind::Collective && g.collectives[static_cast<size_t>(t.collective)].kind == kind;
}

// The compute tasks of one pass: rank, chunk (one layer per chunk here: its layer's ops),
// micro-batch, forward or backward.
std::vector<int> pass_compute(const ExecGraph& g, int rank, int chunk, int mb, bool backward) {
  const std::string layer = "layers." + std::to_string(chunk) + ".";
  std::vector<int> out;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const Task& task = g.tasks[t];
    if (task.kind != TaskKind::Compute || task.rank != rank || task.micro_batch != mb) continue;
    if (g.labels[static_cast<size_t>(task.label)].rfind(layer, 0) != 0) continue;
    if ((task.phase == Phase::Forward) != backward) out.push_back(static_cast<int>(t));
  }
  return out;
}

// The pipeline send of a forward pass: the rank's first activation send after the pass began.
int forward_send(const ExecGraph& g, int rank, int chunk, int mb) {
  const std::vector<int> pass = pass_compute(g, rank, chunk, mb, false);
  if (pass.empty()) return -1;
  for (size_t t = static_cast<size_t>(pass.front()); t < g.tasks.size(); ++t) {
    const Task& task = g.tasks[t];
    if (is_collective(g, task, CollectiveKind::SendRecv) && task.rank == rank && task.micro_batch == mb &&
        task.phase == Phase::Forward)
      return static_cast<int>(t);
  }
  return -1;
}

std::string steps_text(const std::vector<TorchStep>& order) {
  std::string s;
  for (const TorchStep& t : order) {
    if (!s.empty()) s += ' ';
    s += t.chunk < 0
             ? "_"
             : (t.kind == PassKind::F ? "F" : "B") + std::to_string(t.chunk) + std::to_string(t.micro_batch);
  }
  return s;
}

}  // namespace

TEST_CASE("torch pipelining: ScheduleInterleaved1F1B's pipeline_order, derived by hand") {
  // p 2, v 2, m 4: rounds = max(1, 4 / 2) = 2, 2 micro-batches per round.
  // Rank 0: warm-up min((2-1)·2 + 2·(2-1-0), 8) = 4 forwards (chunk (op / 2) % 2), empty steps up
  // to step v·p + 2(p-1-r) = 6, four F/B pairs (backward chunk 1 - ((op - 4) / 2) % 2), then
  // four (empty, B) pairs.
  CHECK(steps_text(torch_interleaved_order(2, 2, 4, 0)) ==
        "F00 F01 F10 F11 _ _ F02 B10 F03 B11 F12 B00 F13 B01 _ B12 _ B13 _ B02 _ B03");
  // Rank 1: one empty step first; warm-up 2 forwards; empty steps up to step 4; six pairs; two
  // (empty, B) pairs.
  CHECK(steps_text(torch_interleaved_order(2, 2, 4, 1)) ==
        "_ F00 F01 _ F10 B10 F11 B11 F02 B00 F03 B01 F12 B12 F13 B13 _ B02 _ B03");
}

TEST_CASE("torch pipelining: Proteus's interleaved order is PyTorch's on every rank") {
  for (const int p : {2, 3, 4, 8})
    for (const int v : {2, 3, 4})
      for (const int rounds : {1, 2, 3}) {
        const int m = rounds * p;
        std::vector<int> chunk_stage;
        for (int c = 0; c < p * v; ++c) chunk_stage.push_back(c % p);
        const PipelineSchedule s = make_schedule(Schedule::Interleaved1F1B, p, m, chunk_stage);
        for (int stage = 0; stage < p; ++stage) {
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          CAPTURE(stage);
          std::vector<int> steps;
          CHECK_NOTHROW(steps = torch_interleaved_steps(s, stage));
          CHECK(std::is_sorted(steps.begin(), steps.end()));
        }
      }
}

TEST_CASE("torch pipelining: an interleaved send waits for both ranks at its time step and holds both") {
  // Step 2: rank 0 runs F of chunk 2 (its local chunk 1) for micro-batch 0 and sends it to rank 1,
  // which runs F of chunk 1 for micro-batch 1 at that step.
  const Played p = play(pipelined("fsdp", "interleaved-1f1b", 4, R"(,"zero":2,"virtual_stages":2)"));
  const ExecGraph& g = p.compiled.exec;
  REQUIRE(p.compiled.tree.torch_lockstep_p2p);
  const int send = forward_send(g, 0, 2, 0);
  REQUIRE(send >= 0);
  const std::vector<int> sender_pass = pass_compute(g, 0, 2, 0, false);
  const std::vector<int> receiver_pass = pass_compute(g, 1, 1, 1, false);
  REQUIRE(!sender_pass.empty());
  REQUIRE(!receiver_pass.empty());
  CHECK(p.start(send) >= p.end(sender_pass.back()) - 1e-12);
  CHECK(p.start(send) >= p.end(receiver_pass.back()) - 1e-12);
  // Step 3 on rank 0 is F of chunk 2, micro-batch 1; step 4 on rank 1 is F of chunk 3, micro-batch 0
  // (step 3 is empty there): both wait for the exchange.
  CHECK(p.start(pass_compute(g, 0, 2, 1, false).front()) >= p.end(send) - 1e-12);
  CHECK(p.start(pass_compute(g, 1, 3, 0, false).front()) >= p.end(send) - 1e-12);
  // Megatron's overlapped interleaved schedule (overlap_p2p_comm) has no such exchange.
  CHECK_FALSE(
      compile(parse_config(pipelined("megatron", "interleaved-1f1b", 4, R"(,"zero":1,"virtual_stages":2)")))
          .tree.torch_lockstep_p2p);
}

TEST_CASE(
    "torch pipelining: FSDP2 reduces a stage's gradients after its last backward, one group at a time") {
  const Played p = play(pipelined("fsdp", "1f1b", 4, R"(,"zero":2)"));
  const ExecGraph& g = p.compiled.exec;
  for (int rank = 0; rank < 2; ++rank) {
    CAPTURE(rank);
    // Stage r holds layers 2r and 2r + 1; the backward ends with layer 2r (the embedding's
    // gradient, on stage 0, is not a layer's).
    const std::vector<int> last_backward = pass_compute(g, rank, 2 * rank, 3, true);
    REQUIRE(!last_backward.empty());
    std::vector<int> copy_ins, reductions;
    for (size_t t = 0; t < g.tasks.size(); ++t) {
      const Task& task = g.tasks[t];
      if (task.rank != rank) continue;
      if (task.kind == TaskKind::Compute &&
          g.labels[static_cast<size_t>(task.label)] == "fsdp_reduce_scatter_copy_in")
        copy_ins.push_back(static_cast<int>(t));
      if (is_collective(g, task, CollectiveKind::ReduceScatter) && task.stream == Stream::DpComm)
        reductions.push_back(static_cast<int>(t));
    }
    REQUIRE(reductions.size() >= 2);
    REQUIRE(copy_ins.size() == reductions.size());  // one gradient reduce-scatter per bucket here
    // Nothing is reduced before the stage's last backward has ended (no_sync on every micro-batch).
    for (const int c : copy_ins) CHECK(p.start(c) >= p.end(last_backward.back()) - 1e-12);
    // The chain: each copy-in waits for the previous group's reduce-scatter.
    for (size_t k = 1; k < copy_ins.size(); ++k)
      CHECK(p.start(copy_ins[k]) >= p.end(reductions[k - 1]) - 1e-12);
  }
  // Stage 1 sends its last input gradient after the post-backward chain it queued before it.
  int last_grad_send = -1;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const Task& task = g.tasks[t];
    if (is_collective(g, task, CollectiveKind::SendRecv) && task.rank == 1 && task.micro_batch == 3 &&
        task.phase != Phase::Forward)
      last_grad_send = static_cast<int>(t);
  }
  REQUIRE(last_grad_send >= 0);
  double last_copy_in_end = 0;
  for (size_t t = 0; t < g.tasks.size(); ++t)
    if (g.tasks[t].rank == 1 && g.tasks[t].kind == TaskKind::Compute &&
        g.labels[static_cast<size_t>(g.tasks[t].label)] == "fsdp_reduce_scatter_copy_in")
      last_copy_in_end = std::max(last_copy_in_end, p.end(static_cast<int>(t)));
  CHECK(p.start(last_grad_send) >= last_copy_in_end - 1e-12);
  // Megatron's distributed optimizer reduces a bucket as soon as its gradients are final, during
  // the last backward (buckets smaller than the stage's gradients, unlike Megatron's 40M-parameter
  // default on this small model).
  const Played m = play(pipelined("megatron", "1f1b", 4, R"(,"zero":1,"grad_bucket_MB":4)"));
  const std::vector<int> m_last = pass_compute(m.compiled.exec, 0, 0, 3, true);
  REQUIRE(!m_last.empty());
  bool overlapped = false;
  for (size_t t = 0; t < m.compiled.exec.tasks.size(); ++t) {
    const Task& task = m.compiled.exec.tasks[t];
    if (task.rank == 0 && is_collective(m.compiled.exec, task, CollectiveKind::ReduceScatter) &&
        task.stream == Stream::DpComm && m.start(static_cast<int>(t)) < m.end(m_last.back()))
      overlapped = true;
  }
  CHECK(overlapped);
}

TEST_CASE("torch pipelining: Megatron-Core's micro-batch group size is not PyTorch's knob") {
  // ScheduleInterleaved1F1B runs rounds of pp micro-batches; the lock-step order assumes them.
  const auto path = [](const std::string& group) {
    return test::error_path([&] {
      parse_config(pipelined("fsdp", "interleaved-1f1b", 4, R"(,"zero":2,"virtual_stages":2)" + group));
    });
  };
  CHECK(path(R"(,"microbatch_group_size":4)") == "strategy.microbatch_group_size");
  CHECK(path(R"(,"microbatch_group_size":2)") == test::kNoError);
  CHECK(path("") == test::kNoError);
}

TEST_CASE("torch pipelining: FSDP2 accumulates the unsharded gradients across micro-batches in fp32") {
  // Per element of a weight, m = 4 micro-batches: the first gradient cast to fp32 (2 + 4 bytes),
  // three added to the accumulator (4 + 2 + 4 each); the copy-in then reads the fp32 accumulator
  // (4 + 4). With bf16 reduction autograd adds the three later ones in place (2 + 2 + 2 each) and
  // the copy-in reads and writes bf16 (2 + 2).
  for (const bool fp32 : {true, false}) {
    CAPTURE(fp32);
    const std::string extra = std::string(R"(,"zero":2,"grad_reduce_in_fp32":)") + (fp32 ? "true" : "false");
    const CompiledModel c = compile(parse_config(pipelined("fsdp", "1f1b", 4, extra)));
    const ExecGraph& g = c.exec;
    double accumulate = 0, copy_in = 0;
    int accumulate_tasks = 0, copy_ins = 0;
    for (const Task& t : g.tasks) {
      if (t.rank != 0 || t.kind != TaskKind::Compute) continue;
      const std::string& label = g.labels[static_cast<size_t>(t.label)];
      const double bytes = g.works[static_cast<size_t>(t.work)].bytes;
      if (label == "fsdp_grad_accumulate") {
        accumulate += bytes;
        ++accumulate_tasks;
        CHECK(t.stream == Stream::Compute);
      }
      if (label == "fsdp_reduce_scatter_copy_in") {
        copy_in += bytes;
        ++copy_ins;
      }
    }
    REQUIRE(copy_in > 0);
    const double elements = copy_in / (fp32 ? 8 : 4);
    CHECK(accumulate == doctest::Approx(elements * (fp32 ? 6 + 3 * 10 : 3 * 6)));
    CHECK(accumulate_tasks % (fp32 ? 4 : 3) == 0);
  }
  // Without a pipeline FSDP2 reduces every micro-batch (outside no_sync): nothing accumulates.
  const CompiledModel flat = compile(parse_config(test::config_json(
      test::gpt_model(4, 1024, 16, 1024, 8192), R"({"preset":"dgx-a100-80g","nodes":1,"gpus_per_node":4})",
      16, R"({"tp":1,"pp":1,"dp":4,"micro_batch":1,"framework":"fsdp","zero":2})")));
  for (const Task& t : flat.exec.tasks)
    if (t.kind == TaskKind::Compute)
      CHECK(flat.exec.labels[static_cast<size_t>(t.label)] != "fsdp_grad_accumulate");
}
