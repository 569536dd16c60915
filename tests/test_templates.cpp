// Per-stage micro-batch templates (core/src/compile/pass_replay.h): a pass instantiated from a
// template must be exactly the pass the op-by-op builder emits: same tasks, dependencies,
// memory events, queues, collectives and statistics, for every schedule, ZeRO stage,
// recompute mode and parallelism the compiler supports.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "proteus/compile.h"
#include "proteus/config.h"

namespace {

using namespace proteus;

bool same_work(const ComputeWork& x, const ComputeWork& y) {
  return x.op_kind == y.op_kind && x.flops == y.flops && x.bytes == y.bytes && x.gemm_m == y.gemm_m &&
         x.gemm_n == y.gemm_n && x.gemm_k == y.gemm_k && x.gemm_batch == y.gemm_batch &&
         x.kernels == y.kernels;
}

bool same_task(const ExecGraph& ga, const Task& a, const ExecGraph& gb, const Task& b) {
  const bool works_match = a.kind == TaskKind::Compute
                               ? b.kind == TaskKind::Compute && same_work(ga.work_of(a), gb.work_of(b))
                               : a.work == b.work;
  return a.kind == b.kind && a.phase == b.phase && a.stream == b.stream && a.rank == b.rank &&
         a.micro_batch == b.micro_batch && a.label == b.label && a.stage == b.stage &&
         a.collective == b.collective && works_match;
}

bool same_mem(const MemEvent& a, const MemEvent& b) {
  return a.category == b.category && a.at_end == b.at_end && a.bytes == b.bytes;
}

std::vector<MemEvent> mem_of(const ExecGraph& g, size_t task) {
  const int list = g.task_mem[task];
  if (list < 0) return {};
  return {g.mem_events.begin() + g.mem_list_offsets[static_cast<size_t>(list)],
          g.mem_events.begin() + g.mem_list_offsets[static_cast<size_t>(list) + 1]};
}

// Returns the number of passes built from templates.
int64_t check_same_graph(const std::string& config_text) {
  CAPTURE(config_text);
  const Config config = parse_config(config_text);
  const CompiledModel templated = compile(config, CompileOptions{true});
  const CompiledModel op_by_op = compile(config, CompileOptions{false});
  const ExecGraph& a = templated.exec;
  const ExecGraph& b = op_by_op.exec;
  CHECK(op_by_op.stats.passes_from_templates == 0);
  CHECK(templated.stats.passes == op_by_op.stats.passes);
  REQUIRE(a.tasks.size() == b.tasks.size());
  size_t task_mismatches = 0;
  for (size_t t = 0; t < a.tasks.size(); ++t)
    task_mismatches += same_task(a, a.tasks[t], b, b.tasks[t]) ? 0 : 1;
  CHECK(task_mismatches == 0);
  CHECK(a.dep_offsets == b.dep_offsets);
  CHECK(a.deps == b.deps);
  // Memory: the same events per task (the templated graph shares lists between instances).
  size_t mem_mismatches = 0;
  for (size_t t = 0; t < a.tasks.size(); ++t) {
    const std::vector<MemEvent> x = mem_of(a, t), y = mem_of(b, t);
    bool same = x.size() == y.size();
    for (size_t i = 0; same && i < x.size(); ++i) same = same_mem(x[i], y[i]);
    mem_mismatches += same ? 0 : 1;
  }
  CHECK(mem_mismatches == 0);
  CHECK(a.queues == b.queues);
  REQUIRE(a.collectives.size() == b.collectives.size());
  size_t coll_mismatches = 0;
  for (size_t c = 0; c < a.collectives.size(); ++c) {
    const Collective& x = a.collectives[c];
    const Collective& y = b.collectives[c];
    const bool same = x.kind == y.kind && x.bytes == y.bytes && x.axes == y.axes && x.group == y.group &&
                      x.member_tasks == y.member_tasks;
    coll_mismatches += same ? 0 : 1;
  }
  CHECK(coll_mismatches == 0);
  CHECK(a.labels == b.labels);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) CHECK(a.ranks[r].static_bytes == b.ranks[r].static_bytes);
  // The statistics `proteus compile` prints, but for the template counter.
  CompiledModel b_counted = op_by_op;
  b_counted.stats.passes_from_templates = templated.stats.passes_from_templates;
  CHECK(compile_stats_json(templated) == compile_stats_json(b_counted));
  return templated.stats.passes_from_templates;
}

std::string preset(const std::string& scenario, const std::string& extra = "") {
  return "{\"preset\":\"" + scenario + "\"" + extra + "}";
}

}  // namespace

TEST_CASE("templates: every schedule, ZeRO stage, recompute mode and SP gives the op-by-op graph") {
  // GPT-2 1.5B on 64 V100, PP4 x TP4 x DP4, 8 micro-batches.
  const char* schedules[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"};
  const char* recomputes[] = {"none", "selective", "full"};
  for (const char* schedule : schedules)
    for (int zero = 0; zero <= 3; ++zero)
      for (const char* recompute : recomputes)
        for (bool sp : {false, true}) {
          const std::string vs = std::string(schedule) == "interleaved-1f1b" ? ",\"virtual_stages\":2" : "";
          const std::string strategy = std::string(",\"strategy\":{\"schedule\":\"") + schedule + "\"" + vs +
                                       ",\"zero\":" + std::to_string(zero) +
                                       // ZeRO-2/3 under a pipeline: FSDP2 with torch pipelining.
                                       (zero >= 2 ? ",\"framework\":\"fsdp\"" : "") + ",\"recompute\":\"" +
                                       recompute + "\",\"sequence_parallel\":" + (sp ? "true" : "false") +
                                       "}";
          const int64_t templated = check_same_graph(preset("gpt2-1.5b-proteus", strategy));
          // ZeRO-3 prefetches each op's weights after the previous op, across passes of other
          // micro-batches: those passes stay op by op. Everything else uses templates.
          if (zero < 3) CHECK(templated > 0);
        }
}

TEST_CASE("templates: every rank simulated, overlap switched off, uneven stages") {
  CHECK(check_same_graph(preset("gpt2-1.5b-proteus", R"(,"simulation":{"symmetry":false})")) > 0);
  CHECK(check_same_graph(preset(
            "gpt2-1.5b-proteus",
            R"(,"strategy":{"zero":1,"overlap_grad_reduce":false,"overlap_param_gather":false})")) > 0);
  CHECK(
      check_same_graph(preset(
          "gpt2-1.5b-proteus",
          R"(,"strategy":{"schedule":"interleaved-1f1b","virtual_stages":2,"stage_layers":[5,7,6,6,6,6,6,6]})")) >
      0);
  CHECK(check_same_graph(
            preset("gpt2-1.5b-proteus",
                   R"(,"strategy":{"schedule":"interleaved-1f1b","virtual_stages":3,"micro_batch":1})")) > 0);
  // The zero-bubble schedules: W passes of their own, deferred; ZB-V's chunks in a V (the loss
  // on stage 0).
  CHECK(check_same_graph(preset("gpt2-1.5b-proteus", R"(,"strategy":{"schedule":"zb-h2","zero":1})")) > 0);
  CHECK(check_same_graph(
            preset("gpt2-1.5b-proteus", R"(,"strategy":{"schedule":"zb-v","recompute":"selective"})")) > 0);
  // DualPipeV: F&B groups re-ordered on every queue after their passes are emitted, alike
  // whether the passes came from templates or op by op.
  CHECK(check_same_graph(preset("gpt2-1.5b-proteus", R"(,"strategy":{"schedule":"dualpipe-v"})")) > 0);
  // DualPipe: two copies, each a template of its own per rank; each copy's last micro-batch
  // (not the iteration's) completes its weights' gradients, so it is built op by op.
  CHECK(check_same_graph(preset("gpt2-1.5b-proteus", R"(,"strategy":{"schedule":"dualpipe"})")) > 0);
  CHECK(check_same_graph(preset("gpt2-1.5b-proteus", R"(,"strategy":{"schedule":"dualpipe","zero":1})")) > 0);
}

TEST_CASE("templates: the other scenarios (MoE, CNN hybrid, DLRM, data parallel, Llama)") {
  check_same_graph(preset("default"));
  check_same_graph(preset("gpt-12l-dp32"));
  check_same_graph(preset("mixtral-8x7b-ep", R"(,"training":{"global_batch":16,"seq_len":1024})"));
  // Selective recompute by module: checkpoint and output-discarding groups, pipelined.
  for (const char* modules : {R"(["layernorm","moe_act"])", R"(["moe","layernorm","core_attn"])"})
    CHECK(check_same_graph(preset("mixtral-8x7b-ep",
                                  std::string(R"(,"training":{"global_batch":16,"seq_len":1024},)") +
                                      R"("strategy":{"dp":4,"tp":2,"pp":2,"ep":4,"sequence_parallel":true,)" +
                                      R"("zero":1,"recompute":"selective","recompute_modules":)" + modules +
                                      "}")) > 0);
  check_same_graph(preset("alexnet-hybrid"));
  check_same_graph(preset("dlrm-table-parallel"));
  CHECK(check_same_graph(preset("gpt3-175b-megatron", R"(,"training":{"global_batch":64})")) > 0);
}

TEST_CASE("templates: FP8 weight casts, once per iteration (Transformer Engine) or every forward") {
  // Transformer Engine casts the weights in the first micro-batch's forward
  // (compile/fp8_weight_casts.h): that micro-batch's passes are built op by op, the later ones
  // from templates, on every schedule; torchao (framework fsdp) and ZeRO-3 cast in every forward.
  const std::string fp8 = R"(,"training":{"global_batch":64,"precision":"fp8")";
  for (const char* strategy : {R"("schedule":"1f1b")", R"("schedule":"interleaved-1f1b","virtual_stages":2)",
                               R"("schedule":"zb-v")", R"("schedule":"dualpipe")"})
    CHECK(check_same_graph(preset("default", fp8 + "},\"strategy\":{" + strategy + "}")) > 0);
  // ZeRO-3 prefetches across passes: built op by op, as without FP8.
  check_same_graph(
      preset("default", fp8 + R"(,"fp8_recipe":"current"},"strategy":{"pp":1,"dp":8,"zero":3})"));
  CHECK(
      check_same_graph(preset(
          "default",
          fp8 + R"(,"fp8_recipe":"current"},"strategy":{"framework":"fsdp","zero":2,"recompute":"full"})")) >
      0);
}

TEST_CASE("collective signatures: equal signature means equal kind, axes, bytes and group") {
  // The executor plans a signature once (Collective::signature); a signature shared by two
  // different collectives would give one of them the other's flows.
  for (const std::string& config :
       {preset("gpt3-175b-megatron", R"(,"training":{"global_batch":64})"),
        preset("gpt2-1.5b-proteus", R"(,"simulation":{"symmetry":false})"),
        preset("mixtral-8x7b-ep", R"(,"training":{"global_batch":16,"seq_len":1024})")}) {
    CAPTURE(config);
    const CompiledModel m = compile(parse_config(config));
    std::vector<int> first(m.exec.collectives.size(), -1);
    size_t signed_collectives = 0, mismatches = 0;
    for (size_t c = 0; c < m.exec.collectives.size(); ++c) {
      const Collective& x = m.exec.collectives[c];
      if (x.signature < 0) continue;
      ++signed_collectives;
      REQUIRE(static_cast<size_t>(x.signature) < first.size());
      int& f = first[static_cast<size_t>(x.signature)];
      if (f < 0) {
        f = static_cast<int>(c);
        continue;
      }
      const Collective& y = m.exec.collectives[static_cast<size_t>(f)];
      mismatches +=
          (x.kind == y.kind && x.axes == y.axes && x.bytes == y.bytes && x.group == y.group) ? 0 : 1;
    }
    CHECK(signed_collectives > 0);
    CHECK(mismatches == 0);
  }
}
