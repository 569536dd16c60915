// Megatron-Core's blocking pipeline point-to-point (core/src/compile/blocking_p2p.h) and legacy
// Megatron-LM's scatter/gather of pipeline tensors (pass_derivation.cpp, p2p_layout): where the
// calls sit, what each send waits for, who waits for it, and the bytes on the wire.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../core/src/compile/blocking_p2p.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/import.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

const PassKind F = PassKind::F, B = PassKind::B;

// A small GPT on 2 GPUs of one DGX A100 node, pp 2, m micro-batches of 1.
std::string two_stage(int micro_batches, const std::string& strategy_extra = "", int tp = 1) {
  return test::config_json(
      test::gpt_model(4, 1024, 16, 1024, 8192),
      "{\"preset\":\"dgx-a100-80g\",\"nodes\":1,\"gpus_per_node\":" + std::to_string(2 * tp) + "}",
      micro_batches,
      "{\"tp\":" + std::to_string(tp) + ",\"pp\":2,\"dp\":1,\"micro_batch\":1" + strategy_extra + "}");
}

bool is_send(const ExecGraph& g, const Task& t) {
  return t.kind == TaskKind::Collective &&
         g.collectives[static_cast<size_t>(t.collective)].kind == CollectiveKind::SendRecv;
}

// The pipeline send of `rank` for micro-batch mb in the forward (activation) or backward (gradient).
int send_of(const ExecGraph& g, int rank, int mb, bool backward) {
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const Task& task = g.tasks[t];
    if (is_send(g, task) && task.rank == rank && task.micro_batch == mb &&
        (task.phase == Phase::BackwardInput) == backward)
      return static_cast<int>(t);
  }
  return -1;
}

// Compute tasks of one pass on `rank`: forward (Forward) or backward (Recompute, BackwardInput,
// BackwardWeight) of micro-batch mb, in id order.
std::vector<int> pass_tasks(const ExecGraph& g, int rank, int mb, bool backward) {
  std::vector<int> out;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const Task& task = g.tasks[t];
    if (task.kind != TaskKind::Compute || task.rank != rank || task.micro_batch != mb) continue;
    if ((task.phase == Phase::Forward) != backward) out.push_back(static_cast<int>(t));
  }
  return out;
}

std::vector<int> deps_of(const ExecGraph& g, int t) {
  return {g.deps.begin() + g.dep_offsets[static_cast<size_t>(t)],
          g.deps.begin() + g.dep_offsets[static_cast<size_t>(t) + 1]};
}

}  // namespace

TEST_CASE(
    "blocking p2p: Megatron's calls follow every pass of 1F1B, every pair of interleaved's steady state") {
  // forward_backward_pipelining_without_interleaving: a call after every forward and backward.
  CHECK(megatron_p2p_calls({F, F, B, F, B, B}, false) ==
        std::vector<bool>{true, true, true, true, true, true});
  // with_interleaving: warm-up forwards and cool-down backwards each have one; in the steady
  // state a forward and the backward after it share send_forward_backward_recv_forward_backward.
  CHECK(megatron_p2p_calls({F, F, F, B, F, B, B, B}, true) ==
        std::vector<bool>{true, true, false, true, false, true, true, true});
  // Every forward in the warm-up (all_warmup_microbatches): a call after each pass.
  CHECK(megatron_p2p_calls({F, F, F, F, B, B, B, B}, true) == std::vector<bool>(8, true));
}

TEST_CASE("blocking p2p: a 1F1B send starts at both calls and holds both stages until it ends") {
  // pp 2, 2 micro-batches: stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1.
  const Config config = parse_config(two_stage(2));
  const CompiledModel c = compile(config);
  REQUIRE(c.tree.blocking_p2p);
  const ExecGraph& g = c.exec;
  const Trace tr =
      execute(g, cost_model_of(config), build_topology(config.cluster), exec_options_of(config, false));
  auto start = [&](int t) { return tr.task_start_s[static_cast<size_t>(t)]; };
  auto end = [&](int t) { return tr.task_end_s[static_cast<size_t>(t)]; };
  const int act0 = send_of(g, 0, 0, false), act1 = send_of(g, 0, 1, false), grad0 = send_of(g, 1, 0, true);
  REQUIRE(act0 >= 0);
  REQUIRE(act1 >= 0);
  REQUIRE(grad0 >= 0);
  const std::vector<int> f0_s0 = pass_tasks(g, 0, 0, false), f1_s0 = pass_tasks(g, 0, 1, false);
  const std::vector<int> b0_s1 = pass_tasks(g, 1, 0, true), f1_s1 = pass_tasks(g, 1, 1, false);
  // Stage 1 posts F0's receive before its first pass: the send starts when F0 ends on stage 0.
  CHECK(start(act0) == proteus::test::approx(end(f0_s0.back())).epsilon(1e-12));
  // send_forward blocks: stage 0's F1 starts when the transfer has ended, not when F0 did.
  CHECK(end(act0) > end(f0_s0.back()));
  CHECK(start(f1_s0.front()) == proteus::test::approx(end(act0)).epsilon(1e-12));
  // Stage 1 receives F1's input in the call after its B0 (send_backward_recv_forward): the send
  // starts at the later of the two calls.
  CHECK(start(act1) == proteus::test::approx(std::max(end(f1_s0.back()), end(b0_s1.back()))).epsilon(1e-12));
  // Stage 1's F1 waits for both transfers of that call: its own gradient send and F1's input.
  CHECK(start(f1_s1.front()) == proteus::test::approx(std::max(end(grad0), end(act1))).epsilon(1e-12));
}

TEST_CASE(
    "blocking p2p: interleaved sends a steady-state forward's output after the backward paired with it") {
  // pp 2, v 2, 4 micro-batches. Without overlap_p2p_comm Megatron's steady state runs a forward,
  // a backward, then one call: some forward send on stage 0 waits for a backward compute task.
  auto waits_on_backward = [](const CompiledModel& c) {
    const ExecGraph& g = c.exec;
    for (size_t t = 0; t < g.tasks.size(); ++t) {
      if (!is_send(g, g.tasks[t]) || g.tasks[t].rank != 0 || g.tasks[t].phase != Phase::Forward) continue;
      for (int d : deps_of(g, static_cast<int>(t))) {
        const Task& dep = g.tasks[static_cast<size_t>(d)];
        if (dep.rank == 0 && dep.kind == TaskKind::Compute && dep.phase != Phase::Forward) return true;
      }
    }
    return false;
  };
  const std::string interleaved = ",\"schedule\":\"interleaved-1f1b\",\"virtual_stages\":2";
  const CompiledModel blocking =
      test::compile_text(two_stage(4, interleaved + ",\"overlap_p2p_comm\":false"));
  CHECK(blocking.tree.blocking_p2p);
  CHECK(waits_on_backward(blocking));
  // overlap_p2p_comm (the default): sends posted ahead, each waits only for its producer.
  const CompiledModel overlapped = test::compile_text(two_stage(4, interleaved));
  CHECK_FALSE(overlapped.tree.blocking_p2p);
  for (size_t t = 0; t < overlapped.exec.tasks.size(); ++t)
    if (is_send(overlapped.exec, overlapped.exec.tasks[t]))
      CHECK(deps_of(overlapped.exec, static_cast<int>(t)).size() == 1);
}

TEST_CASE("blocking p2p: Megatron's and DeepSpeed's schedules never deadlock, warm-up only or not") {
  for (int pp : {2, 3, 4}) {
    for (int m : {1, 2, 3, 5, 8}) {
      CAPTURE(pp);
      CAPTURE(m);
      const std::string cfg = test::config_json(
          test::gpt_model(2 * pp * 3, 512, 8, 512, 4096),
          "{\"preset\":\"dgx-a100-80g\",\"nodes\":1,\"gpus_per_node\":" + std::to_string(pp) + "}", m,
          "{\"tp\":1,\"pp\":" + std::to_string(pp) + ",\"dp\":1,\"micro_batch\":1}");
      const Config config = parse_config(cfg);
      const CompiledModel c = compile(config);
      CHECK_NOTHROW(execute(c.exec, cost_model_of(config), build_topology(config.cluster),
                            exec_options_of(config, false)));
      const Config ds = parse_config(test::config_json(
          test::gpt_model(2 * pp * 3, 512, 8, 512, 4096),
          "{\"preset\":\"dgx-a100-80g\",\"nodes\":1,\"gpus_per_node\":" + std::to_string(2 * pp) + "}", m,
          "{\"tp\":2,\"pp\":" + std::to_string(pp) +
              ",\"dp\":1,\"micro_batch\":1,\"framework\":\"deepspeed\"}"));
      const CompiledModel dc = compile(ds);
      CHECK_NOTHROW(
          execute(dc.exec, cost_model_of(ds), build_topology(ds.cluster), exec_options_of(ds, false)));
      if (m % pp != 0) continue;
      for (int v : {2, 3}) {
        CAPTURE(v);
        const Config ci = parse_config(test::config_json(
            test::gpt_model(2 * pp * 3, 512, 8, 512, 4096),
            "{\"preset\":\"dgx-a100-80g\",\"nodes\":1,\"gpus_per_node\":" + std::to_string(pp) + "}", m,
            "{\"tp\":1,\"pp\":" + std::to_string(pp) +
                ",\"dp\":1,\"micro_batch\":1,\"schedule\":\"interleaved-1f1b\","
                "\"virtual_stages\":" +
                std::to_string(v) + ",\"overlap_p2p_comm\":false}"));
        const CompiledModel ic = compile(ci);
        CHECK_NOTHROW(
            execute(ic.exec, cost_model_of(ci), build_topology(ci.cluster), exec_options_of(ci, false)));
      }
    }
  }
}

TEST_CASE("scatter/gather p2p: each tp rank sends 1/tp of the tensor, the receiver all-gathers it") {
  // tp 4, pp 2: the activation between the stages is b x s x h = 1 x 1024 x 1024 x 2 bytes.
  const double tensor_bytes = 1.0 * 1024 * 1024 * 2;
  const CompiledModel whole = test::compile_text(two_stage(2, "", 4));
  const CompiledModel sliced = test::compile_text(two_stage(2, ",\"scatter_gather_p2p\":true", 4));
  REQUIRE(whole.stats.p2p_bytes_per_boundary.size() == 1);
  CHECK(whole.stats.p2p_bytes_per_boundary[0] == doctest::Approx(tensor_bytes));
  CHECK(sliced.stats.p2p_bytes_per_boundary[0] == doctest::Approx(tensor_bytes / 4));
  // The receiving stage (rank 1) gathers the forward's input over tp, the whole tensor.
  const test::CollCount gathers =
      test::count_collectives(sliced, CollectiveKind::AllGather, axis_bit(kAxisTp), Phase::Forward, "", 1);
  CHECK(gathers.count >= 1);
  CHECK(test::count_collectives(whole, CollectiveKind::AllGather, axis_bit(kAxisTp), Phase::Forward, "", 1)
            .count < gathers.count);
  // Under sequence parallelism the tensor already travels as tp slices: no change.
  const CompiledModel sp = test::compile_text(two_stage(2, ",\"sequence_parallel\":true", 4));
  const CompiledModel sp_sliced =
      test::compile_text(two_stage(2, ",\"sequence_parallel\":true,\"scatter_gather_p2p\":true", 4));
  CHECK(sp_sliced.stats.p2p_bytes_per_boundary[0] == sp.stats.p2p_bytes_per_boundary[0]);
  CHECK(sp.stats.p2p_bytes_per_boundary[0] == doctest::Approx(tensor_bytes / 4));
}

TEST_CASE("blocking p2p: the options are errors where they do not apply") {
  // Megatron-LM's validate_args turns overlap off for the non-interleaved schedule, which always
  // waits: asking for it there is refused, naming the field.
  CHECK(test::error_path([] { parse_config(two_stage(2, ",\"overlap_p2p_comm\":true")); }) ==
        "strategy.overlap_p2p_comm");
  CHECK(test::error_path([] {
          parse_config(two_stage(2, ",\"framework\":\"fsdp\",\"zero\":3,\"scatter_gather_p2p\":true"));
        }) == "strategy.scatter_gather_p2p");
  CHECK(test::error_path([] {
          parse_config(two_stage(4,
                                 ",\"schedule\":\"interleaved-1f1b\",\"virtual_stages\":2,"
                                 "\"overlap_p2p_comm\":false"));
        }) == test::kNoError);
}

TEST_CASE("blocking p2p: Megatron-LM's p2p arguments on import and export") {
  const std::string args =
      "torchrun pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
      "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8 --bf16 "
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 ";
  MegatronImportOptions o;
  o.cluster_json = R"({"preset": "dgx-a100-80g", "nodes": 1})";
  const std::string interleaved = args + "--num-layers-per-virtual-pipeline-stage 2 ";
  const ImportResult off = import_megatron(interleaved + "--no-overlap-p2p-communication", o);
  CHECK_FALSE(parse_config(off.config_json).strategy.overlap_p2p_comm);
  const ImportResult on = import_megatron(interleaved + "--overlap-p2p-communication", o);
  CHECK(parse_config(on.config_json).strategy.overlap_p2p_comm);
  // 1F1B: Megatron-LM's validate_args turns the overlap off; the importer says it ignored it.
  const ImportResult plain = import_megatron(args + "--overlap-p2p-communication", o);
  CHECK(std::any_of(plain.ignored.begin(), plain.ignored.end(), [](const std::string& line) {
    return line.rfind("--overlap-p2p-communication", 0) == 0;
  }));
  CHECK_FALSE(parse_config(plain.config_json).strategy.overlap_p2p_comm_given);
  // Export writes the blocking interleaved schedule back as --no-overlap-p2p-communication.
  CHECK(export_megatron(off.config_json).find("--no-overlap-p2p-communication") != std::string::npos);
  CHECK(export_megatron(on.config_json).find("overlap-p2p") == std::string::npos);
}

TEST_CASE("blocking p2p: DeepSpeed's pipeline engine blocks and partitions what it sends over tp") {
  // deepspeed/runtime/pipe/engine.py: blocking p2p.send / p2p.recv, and with model parallelism
  // is_pipe_partitioned (PartitionedTensor, full() after the receive).
  const CompiledModel ds = test::compile_text(two_stage(2, ",\"framework\":\"deepspeed\",\"zero\":1", 4));
  CHECK(ds.tree.blocking_p2p);
  CHECK(ds.tree.scatter_gather_p2p);
  CHECK(ds.stats.p2p_bytes_per_boundary[0] == doctest::Approx(1.0 * 1024 * 1024 * 2 / 4));
}

TEST_CASE(
    "blocking p2p: PyTorch's Schedule1F1B waits on its fused steady-state calls, Interleaved1F1B does not") {
  // torch.distributed.pipelining Schedule1F1B._step_microbatches: fwd_sends + bwd_recvs in one
  // _batch_p2p, waited before the backward; bwd_sends + fwd_recvs, waited before the forward.
  const Config config = parse_config(two_stage(2, ",\"framework\":\"fsdp\",\"zero\":2"));
  const CompiledModel c = compile(config);
  CHECK(c.tree.blocking_p2p);
  CHECK_FALSE(c.tree.scatter_gather_p2p);  // whole tensors, as PipelineStage sends them
  const ExecGraph& g = c.exec;
  const Trace tr =
      execute(g, cost_model_of(config), build_topology(config.cluster), exec_options_of(config, false));
  auto start = [&](int t) { return tr.task_start_s[static_cast<size_t>(t)]; };
  auto end = [&](int t) { return tr.task_end_s[static_cast<size_t>(t)]; };
  // pp 2, 2 micro-batches: stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1. Stage 1 receives F1's
  // input in the call after its B0 (bwd_sends + fwd_recvs): the send starts at the later of the
  // two calls, and stage 1's F1 waits for both transfers of that call.
  const int act1 = send_of(g, 0, 1, false), grad0 = send_of(g, 1, 0, true);
  REQUIRE(act1 >= 0);
  REQUIRE(grad0 >= 0);
  const std::vector<int> f1_s0 = pass_tasks(g, 0, 1, false), b0_s1 = pass_tasks(g, 1, 0, true);
  const std::vector<int> f1_s1 = pass_tasks(g, 1, 1, false);
  CHECK(start(act1) == proteus::test::approx(std::max(end(f1_s0.back()), end(b0_s1.back()))).epsilon(1e-12));
  CHECK(start(f1_s1.front()) == proteus::test::approx(std::max(end(grad0), end(act1))).epsilon(1e-12));
  // ScheduleInterleaved1F1B (a _PipelineScheduleRuntime) waits receives before their compute only.
  CHECK_FALSE(
      test::compile_text(two_stage(4,
                                   ",\"framework\":\"fsdp\",\"zero\":2,\"schedule\":\"interleaved-1f1b\","
                                   "\"virtual_stages\":2"))
          .tree.blocking_p2p);
  // Never a deadlock, warm-up only or not.
  for (int m : {1, 2, 3, 5, 8}) {
    CAPTURE(m);
    const Config c = parse_config(two_stage(m, ",\"framework\":\"fsdp\",\"zero\":2"));
    CHECK_NOTHROW(
        execute(compile(c).exec, cost_model_of(c), build_topology(c.cluster), exec_options_of(c, false)));
  }
}
