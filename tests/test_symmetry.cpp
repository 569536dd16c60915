// The symmetry reduction (DESIGN.md §3): simulating one rank per pipeline stage, with sibling
// flows as weights on the links, must give the same result as simulating every GPU.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "../core/src/exec/executor_plans.h"
#include "proteus/api.h"
#include "proteus/collective_flows.h"
#include "relative_approx.h"
#include "test_exec_helpers.h"

namespace {

nlohmann::json run(const std::string& scenario, bool symmetry, const std::string& extra = "") {
  const std::string cfg = "{\"preset\":\"" + scenario +
                          "\",\"simulation\":{\"symmetry\":" + (symmetry ? "true" : "false") + "}" + extra +
                          "}";
  return nlohmann::json::parse(proteus::simulate_json(cfg, {}));
}

void check_equal(const std::string& scenario, const std::string& extra = "", double rel = 1e-9) {
  CAPTURE(scenario);
  CAPTURE(extra);
  const auto reduced = run(scenario, true, extra);
  const auto full = run(scenario, false, extra);
  REQUIRE(reduced["ok"] == true);
  REQUIRE(full["ok"] == true);
  const double t_reduced = reduced["summary"]["iteration_time_s"];
  const double t_full = full["summary"]["iteration_time_s"];
  CHECK(t_reduced == doctest::Approx(t_full).epsilon(rel).scale(0));
  const double m_reduced = reduced["summary"]["peak_memory_GiB"];
  const double m_full = full["summary"]["peak_memory_GiB"];
  // Peak memory depends on timing only through transient buffers (gathered ZeRO-3 weights)
  // live at the peak: equal where the times are, within the same tolerance where they are not.
  CHECK(m_reduced == doctest::Approx(m_full).epsilon(rel).scale(0));
  // The reduced run simulates fewer ranks.
  CHECK(reduced["stats"]["simulated_ranks"] < full["stats"]["simulated_ranks"]);
  // Simulating every GPU has no siblings to stand for: nothing to watch.
  CHECK(full["stats"]["symmetry_uneven_overlaps"] == 0);
}

// In a full simulation of symmetric hardware, the ranks of one pipeline stage do the same work
// on images of the same links: they must end at the same instant and be busy as long.
void check_stages_uniform(const nlohmann::json& full) {
  std::map<int, nlohmann::json> first_of_stage;
  for (const auto& d : full["devices"]) {
    const int stage = d["stage"];
    const auto [it, first] = first_of_stage.emplace(stage, d);
    if (first) continue;
    CAPTURE(d["rank"]);
    CHECK(d["end_s"] == it->second["end_s"]);
    CHECK(d["busy_s"] == it->second["busy_s"]);
  }
  CHECK(first_of_stage.size() > 1);
}

}  // namespace

TEST_CASE("symmetry: reduced simulation equals simulating every rank (1e-9)") {
  // 32 GPUs on 4 DGX H100: TP4 x PP2 x DP4; each data-parallel group has 2 members per node.
  check_equal("default", R"(,"training":{"global_batch":16,"seq_len":2048})");
  // The same with computation slowed by 30% while a collective runs on its GPU (Proteus's
  // PCIe-cluster value): a slowdown that starts and ends midway through compute tasks.
  check_equal(
      "default",
      R"(,"training":{"global_batch":16,"seq_len":2048},"cluster":{"gpu":{"compute_slowdown_with_comm":1.3}})");
  // ZeRO-3 on the same machine: weight all-gathers per use.
  check_equal("default",
              R"(,"training":{"global_batch":16,"seq_len":2048},"strategy":{"zero":3,"framework":"fsdp"})");
  // Apex's DistributedFusedAdam: its hooks gather one bucket group at a time (apex_param_sync.h).
  check_equal("default", R"(,"training":{"global_batch":16,"seq_len":2048},"strategy":{"zero":1,)"
                         R"("overlap_param_gather":true,"distributed_optimizer":"apex"})");
  // 64 V100 on 8 DGX-1 (2 NICs): PP4 x TP4 x DP4, the original Proteus evaluation.
  check_equal("gpt2-1.5b-proteus");
  // Tensor parallelism across two DGX-1 nodes (TP16 x PP2 x DP2).
  check_equal("gpt2-1.5b-proteus", R"(,"strategy":{"tp":16,"pp":2,"dp":2,"micro_batch":1})");
  // 32 V100 on 4 DGX-1 with ONE NIC each: 8 data-parallel groups share every NIC.
  check_equal("gpt-12l-dp32");
  // Expert parallelism (all-to-all) on 16 H100.
  check_equal("mixtral-8x7b-ep", R"(,"training":{"global_batch":16,"seq_len":1024})");
  // The CNN hybrid: data-parallel convolutions, tensor-parallel classifier.
  check_equal("alexnet-hybrid");
}

TEST_CASE("symmetry: interleaved pipeline with ZeRO-3 agrees to 1e-5") {
  // Under framework fsdp with its default kernel, FlashAttention-2 (docs/frameworks/attention-and-kernels.md,
  // "Attention kernels"). The full simulation is itself symmetric: the 16 ranks of each stage
  // end at the same instant and are busy as long, to the last bit (checked below). So the
  // difference is not an asymmetry between ranks (an executor tie-break, a flow order) but the
  // reduction's approximation: siblings are weights on the representative's links
  // (executor_plans.h), and flows of different collectives that overlap only partly in time
  // share links a little differently than the 16 real flows do. The first task that differs
  // is stage 1's pipeline send of layers.15 (micro-batch 1, from 36.489 ms), beside stage 1's
  // ZeRO-3 gathers of layers.24 across nodes and stage 0's send the other way: it ends 1.3 us
  // later in the full run (36.6369 vs 36.6356 ms); the iteration 9.4e-7 later (0.28297962 vs
  // 0.28297936 s), peak memory equal. With cuDNN attention the two are equal. (At 39145e5,
  // with the costs of then, FlashAttention-2 gave 8.4e-4, and the case pinned cuDNN at 6e-4.)
  const std::string extra =
      R"(,"training":{"global_batch":16,"seq_len":2048},"strategy":{"zero":3,"framework":"fsdp","schedule":"interleaved-1f1b","virtual_stages":2})";
  check_equal("default", extra, 1e-5);
  check_stages_uniform(run("default", false, extra));
}

TEST_CASE("symmetry: where the hardware itself is asymmetric the reduction is an approximation") {
  // DGX-1 attaches each NIC under one PCIe switch, so GPUs of one stage reach their NIC over
  // different paths and their pipeline sends are not identical; simulating one of them for all
  // stays within 1% here (docs/design.md, "Symmetry"; 0.1% before ZeRO-3's prefetched gathers
  // ran on their own stream beside the pipeline sends, whose paths differ per GPU).
  check_equal("gpt2-1.5b-proteus",
              R"(,"strategy":{"tp":8,"pp":2,"dp":4,"micro_batch":1,"zero":3,"framework":"fsdp"})", 1e-2);
}

TEST_CASE("symmetry: NCCL's double binary tree over four nodes loads its interior nodes twice") {
  // dp 4 x tp 8 on 4 nodes of 8 GPUs, one NIC each: the data-parallel group {0, 8, 16, 24} has
  // one member per node. Small, its all-reduce runs NCCL's double binary tree (ncclGetDtree):
  // tree 0 is 0-2-{1,3} (root 0, its child 2, whose children are 1 and 3), tree 1 its mirror
  // 3-1-{2,0}. Every edge carries a flow up and a flow down, so nodes 1 and 2 (three edges in
  // one tree, one in the other) send four flows and nodes 0 and 3 two: the group's nodes are
  // not images of each other, and a rank of node 1 does not see node 0's contention.
  using namespace proteus;
  const Topology topo = build_topology(test::test_cluster(4, 8, 1));
  const Mesh mesh = test::make_mesh(1, 4, 8);
  Collective c;
  c.kind = CollectiveKind::AllReduce;
  c.axes = axis_bit(kAxisDp);
  c.bytes = 4096;
  c.group = mesh.group(0, c.axes);
  REQUIRE(c.group == std::vector<int>{0, 8, 16, 24});
  const CollectivePlan tree = plan_collective(topo, c.kind, c.group, c.bytes);
  REQUIRE(tree.algorithm == "tree");
  std::vector<int> leaving(4, 0);
  for (const FlowSpec& f : tree.flows)
    if (f.src_gpu / 8 != f.dst_gpu / 8) ++leaving[static_cast<size_t>(f.src_gpu / 8)];
  CHECK(leaving == std::vector<int>{2, 4, 4, 2});
  const exec::WeightedPlan reduced = exec::weighted_plan(topo, mesh, true, c);
  CHECK(reduced.uneven_nodes);
  CHECK(reduced.stands_for_siblings);  // the groups of the 7 other tensor-parallel ranks
  CHECK(reduced.nodes == std::vector<int>{0, 1, 2, 3});
  // Simulating every GPU watches nothing.
  const exec::WeightedPlan full = exec::weighted_plan(topo, mesh, false, c);
  CHECK_FALSE(full.uneven_nodes);
  CHECK_FALSE(full.stands_for_siblings);

  // A ring (large all-reduce) enters and leaves every node once per channel: even.
  c.bytes = 4e9;
  REQUIRE(plan_collective(topo, c.kind, c.group, c.bytes).algorithm == "ring");
  CHECK_FALSE(exec::weighted_plan(topo, mesh, true, c).uneven_nodes);
  // Over two nodes a tree has one edge and a ring one hop each way: both ends alike.
  const Mesh two = test::make_mesh(1, 2, 8);
  c.group = two.group(0, c.axes);
  const CollectiveShapes shapes = collective_shapes(topo, c.kind, c.group);
  REQUIRE(shapes.candidates.size() == 2);
  for (const PlanShape& shape : shapes.candidates) {
    CAPTURE(shape.algorithm);
    std::vector<int> out(2, 0);
    for (const FlowShape& f : shape.flows)
      if (f.src_gpu / 8 != f.dst_gpu / 8) ++out[static_cast<size_t>(f.src_gpu / 8)];
    CHECK(out[0] == out[1]);
  }
  for (double bytes : {4096.0, 4e9}) {
    c.bytes = bytes;
    CHECK_FALSE(exec::weighted_plan(topo, two, true, c).uneven_nodes);
  }
}

TEST_CASE("symmetry: beside an uneven tree a stage's ranks differ, and the reduced run says it may differ") {
  // gpt2-1.5b-proteus as TP16 x PP2 x DP2 on 8 DGX-1 (stage 1 on nodes 4-7; 2 NICs per node,
  // 12.5 GB/s at bus efficiency 0.9: C = 11.25e9 B/s), with compute_slowdown_with_comm 1.189
  // (Lee et al.'s average; the V100 preset keeps 1.1) and gradient buckets of 29 MB. Filled
  // from the back of stage 1 (the output layer's 20.1 MB shard first), its last bucket holds
  // layers 24-26 from the fc2 bias of layer 26 down: the replicated vectors among them (the
  // row-parallel biases and the LayerNorms, 6h = 9,600 fp32 each layer) are a 115,200 B
  // all-reduce over all 32 of the stage's GPUs (tensor x data parallel), NCCL's double binary
  // tree over nodes 4-7: nodes 5 and 6 send 4 flows per channel, nodes 4 and 7 two (test
  // above), each of S / 2c = 28,800 B. At this slowdown it starts while stage 1 sends its last
  // micro-batch's input gradient (6,553,600 B per GPU, GPUs 0-3 of a node through NIC 0). On
  // NIC 0 of nodes 4 and 7: 4 sends + 2 tree flows, C/6 each, and the tree flows end after
  // 28,800 / (C/6) = 15.36 us; on nodes 5 and 6: 4 + 4, C/8, for 20.48 us; then the sends run
  // at C/4. Over those 20.48 us a send of node 4 moves 28,800 + 14,400 B, one of node 5
  // 28,800 B: it ends 14,400 / (C/4) = 5.12 us later, and stage 0 waits for it. The buckets
  // are launched by the hooks as they fill (align_grad_reduce false: with Megatron-Core's default
  // stage 1 would launch them all after its last backward, grad_sync_points.h).
  const std::string extra = R"(,"strategy":{"tp":16,"pp":2,"dp":2,"micro_batch":1,"grad_bucket_MB":29,)"
                            R"("align_grad_reduce":false},)"
                            R"("cluster":{"gpu":{"compute_slowdown_with_comm":1.189}})";
  const auto full = run("gpt2-1.5b-proteus", false, extra);
  REQUIRE(full["ok"] == true);
  std::map<int, double> pp_comm_s;
  for (const auto& d : full["devices"]) pp_comm_s[d["rank"].get<int>()] = d["busy_s"]["pp_comm"];
  const double C = 12.5e9 * 0.9;
  CHECK(pp_comm_s.at(40) - pp_comm_s.at(32) == proteus::test::approx(14400 / (C / 4)).epsilon(1e-6));
  CHECK(pp_comm_s.at(48) == pp_comm_s.at(40));  // node 6, interior as node 5
  CHECK(pp_comm_s.at(56) == pp_comm_s.at(32));  // node 7, a root and a leaf as node 4
  CHECK(full["stats"]["symmetry_uneven_overlaps"] == 0);

  // The reduced run simulates node 4's rank for the whole stage (its siblings' flows are
  // weights on its own links), so it misses the later sends of nodes 5 and 6 (its iteration
  // comes out 1.7 us, 3.3e-7 of it, shorter than the full run's), and it counts the
  // collectives that started beside such a tree. The count says where the
  // result may differ, not that it does: at the preset's 1.1 the same trees run beside the
  // tensor-parallel rings, whose ends see mirrored loads, and the runs agree to the last bit
  // (the 1e-9 case above).
  const auto reduced = run("gpt2-1.5b-proteus", true, extra);
  REQUIRE(reduced["ok"] == true);
  const double t_full = full["summary"]["iteration_time_s"];
  const double t_reduced = reduced["summary"]["iteration_time_s"];
  CHECK(t_reduced == doctest::Approx(t_full).epsilon(1e-6).scale(0));
  CHECK(t_reduced != t_full);
  CHECK(reduced["stats"]["symmetry_uneven_overlaps"] > 0);
}
