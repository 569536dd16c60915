// MoE token dispatchers and expert tensor parallelism (strategy.moe_dispatcher, expert_tp;
// docs/frameworks/tensor-parallelism-and-moe.md "MoE token dispatch and expert TP"): the collectives
// Megatron-Core's token_dispatcher.py issues, with their bytes derived by hand.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/error.h"
#include "proteus/import.h"
#include "proteus/strategy_tree.h"

using namespace proteus;
using namespace proteus::test;

namespace {

// 4 experts, top-2, hidden 256, FFN 512 (SwiGLU), seq 128: routed slots per sample per expert
// c = ceil(1.0 * 128 * 2 / 4) = 64 (capacity = tokens * top_k / experts at load 1).
const std::string kTinyMoe =
    R"({"kind":"transformer","name":"tiny-moe","layers":2,"hidden":256,"heads":4,"kv_heads":4,
    "ffn_hidden":512,"seq_len":128,"vocab":1000,"mlp":"swiglu","norm":"rmsnorm","tied_embeddings":false,
    "bias":false,"dropout":false,"learned_positions":false,"moe":{"experts":4,"top_k":2}})";

}  // namespace

TEST_CASE(
    "all-gather dispatcher: tokens all-gathered over ep, outputs reduce-scattered, no token all-to-all") {
  // ep = 4 = dp on 4 GPUs, micro-batch 1: the micro-batch tensor holds 4 samples, one per rank.
  // Megatron-Core MoEAllGatherTokenDispatcher.token_permutation: gather_from_sequence_parallel_region
  // of the hidden states over the expert group -> every rank holds all 4 x 128 tokens:
  // 4 * 128 * 256 * 2 bytes = 262144 bytes gathered; token_unpermutation reduce-scatters the
  // [4 x 128, 256] partial outputs back (262144 bytes per rank before the scatter).
  const CompiledModel c =
      compile_text(config_json(kTinyMoe, R"({"preset":"dgx-h100","nodes":1,"gpus_per_node":4})", 8,
                               R"({"dp":4,"ep":4,"micro_batch":1,"moe_dispatcher":"allgather"})"));
  const AxisMask ep = axis_bit(kAxisEp);
  const CollCount gather = count_collectives(c, CollectiveKind::AllGather, ep, Phase::Forward, "layers.0.");
  CHECK(gather.count == 1);
  CHECK(gather.bytes == doctest::Approx(4.0 * 128 * 256 * 2));
  const CollCount scatter =
      count_collectives(c, CollectiveKind::ReduceScatter, ep, Phase::Forward, "layers.0.");
  CHECK(scatter.count == 1);
  CHECK(scatter.bytes == doctest::Approx(4.0 * 128 * 256 * 2));
  // Backward: the mirror images (gather's gradient is a reduce-scatter and vice versa).
  CHECK(count_collectives(c, CollectiveKind::ReduceScatter, ep, Phase::BackwardInput, "layers.0.").count ==
        1);
  CHECK(count_collectives(c, CollectiveKind::AllGather, ep, Phase::BackwardInput, "layers.0.").count == 1);
  // The routed tokens themselves never move: the only all-to-alls left carry the routing
  // probabilities [128 tokens, 4 experts] x 2 bytes = 1024 bytes per rank (Megatron gathers
  // them with the tokens; docs/frameworks/tensor-parallelism-and-moe.md notes the difference), far below the
  // 4 * 64 * 256 * 2 = 131072-byte token all-to-all of the all-to-all dispatcher.
  for (Phase phase : {Phase::Forward, Phase::BackwardInput}) {
    const CollCount a2a = count_collectives(c, CollectiveKind::AllToAll, ep, phase, "layers.0.");
    if (a2a.count > 0) CHECK(a2a.bytes == doctest::Approx(128.0 * 4 * 2));
  }
}

TEST_CASE("all-to-all dispatcher (the default) sends each token's top-k copies to their experts") {
  const CompiledModel c =
      compile_text(config_json(kTinyMoe, R"({"preset":"dgx-h100","nodes":1,"gpus_per_node":4})", 8,
                               R"({"dp":4,"ep":4,"micro_batch":1,"moe_dispatcher":"alltoall"})"));
  // MoEAlltoAllTokenDispatcher: per rank 128 tokens x top-2 = 256 rows = 4 experts x 64 slots
  // of 256 x 2 bytes = 131072 bytes, once to the experts and once back.
  const AxisMask ep = axis_bit(kAxisEp);
  const CollCount a2a = count_collectives(c, CollectiveKind::AllToAll, ep, Phase::Forward, "layers.0.");
  CHECK(a2a.count == 2);
  CHECK(a2a.bytes == doctest::Approx(4.0 * 64 * 256 * 2));
  CHECK(count_collectives(c, CollectiveKind::AllGather, ep, Phase::Forward, "layers.0.").count == 0);
}

TEST_CASE("expert_tp 1 folds the tp ranks into expert parallelism (Megatron-Core MoE parallel folding)") {
  // 8 GPUs: tp 2 with sequence parallelism, dp 4, ep 4, expert_tp 1. Megatron-Core
  // (parallel_state.py, expert ranks ordered etp-ep-edp): each expert-parallel group is 4 ranks
  // = 2 tp ranks x 2 data-parallel ranks, expert data parallelism edp = tp*dp / (etp*ep) = 2.
  const CompiledModel c =
      compile_text(config_json(kTinyMoe, R"({"preset":"dgx-h100","nodes":1})", 8,
                               R"({"dp":4,"tp":2,"ep":4,"expert_tp":1,"sequence_parallel":true,
                                   "micro_batch":1,"moe_dispatcher":"alltoall"})"));
  // One all-to-all over the whole group (ep axis x tp axis): a rank holds 128 / 2 = 64 tokens
  // of its sample (sequence parallel), sends 64 x top-2 = 128 rows of 256 x 2 bytes = 65536 bytes.
  const AxisMask group = axis_bit(kAxisEp) | axis_bit(kAxisTp);
  const CollCount a2a = count_collectives(c, CollectiveKind::AllToAll, group, Phase::Forward, "layers.0.");
  CHECK(a2a.count == 2);
  CHECK(a2a.bytes == doctest::Approx(64.0 * 2 * 256 * 2));
  // Whole experts: no tp all-gather/reduce-scatter around the expert GEMMs.
  CHECK(count_collectives(c, CollectiveKind::AllGather, axis_bit(kAxisTp), Phase::Forward,
                          "layers.0.moe.experts")
            .count == 0);
  CHECK(count_collectives(c, CollectiveKind::ReduceScatter, axis_bit(kAxisTp), Phase::Forward,
                          "layers.0.moe.experts")
            .count == 0);
  // Expert gradients are reduced over edp = 2 ranks (the mesh's dp axis), dense ones over all
  // 4 data-parallel ranks (dp x ep axes).
  bool expert_grads = false, dense_grads = false;
  for (const CollectiveStat& s : c.stats.collectives) {
    if (s.purpose != "gradient") continue;
    if (s.axes == "dp") {
      CHECK(s.group_size == 2);
      expert_grads = true;
    }
    if (s.axes == "dp+ep") {
      CHECK(s.group_size == 4);
      dense_grads = true;
    }
  }
  CHECK(expert_grads);
  CHECK(dense_grads);
}

TEST_CASE("expert_tp and moe_dispatcher: what cannot be modelled is refused by name") {
  const std::string node = R"({"preset":"dgx-h100","nodes":1})";
  auto path = [&](const std::string& model, const std::string& strategy) {
    return error_path([&] { compile_text(config_json(model, node, 8, strategy)); });
  };
  CHECK(path(kTinyMoe, R"({"dp":2,"tp":4,"ep":2,"expert_tp":2,"sequence_parallel":true})") ==
        "strategy.expert_tp");
  CHECK(path(kTinyMoe, R"({"dp":4,"tp":2,"ep":1,"expert_tp":1,"sequence_parallel":true})") == "strategy.ep");
  CHECK(path(kTinyMoe, R"({"dp":8,"ep":4,"moe_dispatcher":"flex"})") == "strategy.moe_dispatcher");
  CHECK(path(gpt_model(2, 256, 4, 128, 1000), R"({"dp":8,"moe_dispatcher":"allgather"})") ==
        "strategy.moe_dispatcher");
  CHECK(path(kTinyMoe, R"({"dp":4,"tp":2,"ep":4,"expert_tp":1,"sequence_parallel":true})") == "<no error>");
  // allgather with experts split by tp: Megatron reduce-scatters the combined output over
  // tp x ep; the op graph would reduce every routed copy over tp, so it is refused.
  CHECK(path(kTinyMoe, R"({"dp":4,"tp":2,"ep":4,"sequence_parallel":true,"moe_dispatcher":"allgather"})") ==
        "strategy.moe_dispatcher");
  CHECK(path(kTinyMoe, R"({"dp":4,"tp":2,"ep":4,"expert_tp":1,"sequence_parallel":true,
                           "moe_dispatcher":"allgather"})") == "<no error>");
}

TEST_CASE("import: --expert-tensor-parallel-size and --moe-token-dispatcher-type, with Megatron's defaults") {
  const std::string base =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 "
      "--global-batch-size 8 --bf16 --num-experts 4 --moe-router-topk 2 --tensor-model-parallel-size 2 "
      "--sequence-parallel --expert-model-parallel-size 4 ";
  MegatronImportOptions o;
  o.cluster_json = "dgx-h100";
  o.nodes = 1;
  // arguments.py: --moe-token-dispatcher-type defaults to allgather, --expert-tensor-parallel-size
  // to tp; allgather with experts split by tp is refused by name (see above).
  CHECK(error_path([&] { import_megatron(base, o); }) == "--moe-token-dispatcher-type");
  const Config c = parse_config(import_megatron(base + "--expert-tensor-parallel-size 1", o).config_json);
  CHECK(c.strategy.moe_dispatcher == MoeDispatcher::AllGather);
  CHECK(expert_tp_of(c.strategy) == 1);
  const Config split =
      parse_config(import_megatron(base + "--moe-token-dispatcher-type alltoall", o).config_json);
  CHECK(split.strategy.moe_dispatcher == MoeDispatcher::AllToAll);
  CHECK(expert_tp_of(split.strategy) == 2);
  const Config folded = parse_config(
      import_megatron(base + "--expert-tensor-parallel-size 1 --moe-token-dispatcher-type alltoall", o)
          .config_json);
  CHECK(folded.strategy.moe_dispatcher == MoeDispatcher::AllToAll);
  CHECK(expert_tp_of(folded.strategy) == 1);
  CHECK(error_path([&] { import_megatron(base + "--moe-token-dispatcher-type flex", o); }) ==
        "--moe-token-dispatcher-type");
  // Exported and imported again: the same knobs.
  const Config back = parse_config(import_megatron(export_megatron(config_to_json(folded)), o).config_json);
  CHECK(back.strategy.moe_dispatcher == MoeDispatcher::AllToAll);
  CHECK(expert_tp_of(back.strategy) == 1);
}
