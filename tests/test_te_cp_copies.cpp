// Transformer Engine's all_gather and a2a context parallelism beside their attention kernels
// (compile/te_cp_copies.h; docs/frameworks/context-parallelism.md "Context parallelism"): the copies of
// AttnFuncWithCPAndKVAllGather and flash_attn_a2a_communicate counted by hand, charged once per
// attention and direction, and the a2a backward's exchange of the saved output.
#include <doctest/doctest.h>

#include <string>
#include "../core/src/compile/te_cp_copies.h"
#include "../core/src/compile/ulysses_copies.h"
#include "compile_fixtures.h"
#include "proteus/compile.h"

using namespace proteus;

namespace {

// 2 layers, hidden 512, 8 heads (MHA), seq 256, one DGX A100; `strategy` adds cp and the rest.
std::string cp_config(const std::string& strategy) {
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 4,
                           R"({"micro_batch":1,"dp":4,"cp":2,)" + strategy + "}");
}

}  // namespace

// Two ranks; Q and O of 1000 bytes, the K and V shards 300 (the gathered K/V 600). Forward: the
// gathered K and V reordered (read 600, write 600), the two steps' outputs copied into out (read
// and write 1000). Backward: dk, dv zero-filled (600), K and V gathered and reordered again
// (1200), dQ's halves copied (2000), the steps' dK, dV added into their key ranges (rank 0: 1 and
// 4 of the 4 chunks, rank 1: 2 and 3: 5 chunks of 150, read both and write: 2250), dK, dV
// reordered back (1200).
TEST_CASE("te cp copies: all_gather at two ranks, by hand") {
  const TeCpCopyBytes b = te_cp_all_gather_copy_bytes(1000, 1000, 300, 2);
  CHECK(b.forward == doctest::Approx(1200 + 2000));
  CHECK(b.backward == doctest::Approx(600 + 1200 + 2000 + 2250 + 1200));
  // The closed form (8 cp + 1.5) KV + 2 Q of the backward, at every size.
  for (int cp : {2, 4, 8})
    CHECK(te_cp_all_gather_copy_bytes(1000, 1000, 300, cp).backward ==
          doctest::Approx((8.0 * cp + 1.5) * 300 + 2000));
  CHECK(te_cp_all_gather_copy_bytes(1000, 1000, 300, 1).forward == 0);
  // One all-to-all exchange: .contiguous() to [cp, ...] and index_select, each read and write.
  CHECK(te_cp_a2a_exchange_copy_bytes(1000) == 4000);
}

TEST_CASE("te cp copies: Megatron's all_gather and a2a charge them once per attention and direction") {
  // Per rank 128 of the 256 tokens: Q and O 128 x 512 x 2 B = 131,072 B each, K and V 262,144 B.
  const double q = 131072, kv = 262144;
  const CompiledModel ag = test::compile_text(cp_config(R"("zero":1,"cp_comm_type":"all_gather")"));
  const TeCpCopyBytes expect = te_cp_all_gather_copy_bytes(q, q, kv, 2);
  const test::CollCount fwd = test::count_compute_tasks(ag, "cp_all_gather_copies", Phase::Forward);
  const test::CollCount bwd = test::count_compute_tasks(ag, "cp_all_gather_copies", Phase::BackwardInput);
  CHECK(fwd.count == 2);  // one attention per layer
  CHECK(fwd.bytes == doctest::Approx(expect.forward));
  CHECK(bwd.count == 2);
  CHECK(bwd.bytes == doctest::Approx(expect.backward));
  // a2a: forward Q, K, V before and O after; backward O and dO before, dQ, dK, dV after.
  const CompiledModel a2a = test::compile_text(cp_config(R"("zero":1,"cp_comm_type":"a2a")"));
  CHECK(test::count_compute_tasks(a2a, "cp_a2a_copies", Phase::Forward).bytes ==
        doctest::Approx(te_cp_a2a_exchange_copy_bytes(q + kv) + te_cp_a2a_exchange_copy_bytes(q)));
  CHECK(test::count_compute_tasks(a2a, "cp_a2a_copies", Phase::BackwardInput).bytes ==
        doctest::Approx(te_cp_a2a_exchange_copy_bytes(q + kv) + 2 * te_cp_a2a_exchange_copy_bytes(q)));
  // The backward exchanges the saved output to the head split beside dO: two all-to-alls over cp
  // before the attention's backward, dO's and O's, of the output's bytes.
  const test::CollCount a2a_bwd = test::count_collectives(a2a, CollectiveKind::AllToAll, axis_bit(kAxisCp),
                                                          Phase::BackwardInput, "layers.0.attention.attn");
  const test::CollCount a2a_fwd = test::count_collectives(a2a, CollectiveKind::AllToAll, axis_bit(kAxisCp),
                                                          Phase::Forward, "layers.0.attention.attn");
  CHECK(a2a_fwd.count == 1);  // the output back to the sequence split (Q, K, V: their producers')
  CHECK(a2a_bwd.count == a2a_fwd.count + 1);
  // PyTorch's context parallelism (framework fsdp) has none of these.
  const CompiledModel torch_cp =
      test::compile_text(cp_config(R"("cp_comm_type":"all_gather","framework":"fsdp","zero":3)"));
  CHECK(test::count_compute_tasks(torch_cp, "cp_all_gather_copies", Phase::Forward).count == 0);
}

TEST_CASE("ulysses: DeepSpeed's DistributedAttention copies once per exchange and sends dO alone") {
  // deepspeed/sequence/layer.py single_all_to_all: one .contiguous() per exchange (before it when
  // heads are scattered, after it when the sequence is); no chunk reordering, and the local
  // attention saved its head-split output, so the backward exchanges dO only. Sizes as above.
  const double q = 131072, kv = 262144;
  CHECK(ulysses_exchange_copy_bytes(1000) == 2000);
  const CompiledModel ds = test::compile_text(cp_config(R"("framework":"deepspeed","zero":1)"));
  CHECK(test::count_compute_tasks(ds, "cp_a2a_copies", Phase::Forward).count == 0);
  const test::CollCount fwd = test::count_compute_tasks(ds, "cp_ulysses_copies", Phase::Forward);
  const test::CollCount bwd = test::count_compute_tasks(ds, "cp_ulysses_copies", Phase::BackwardInput);
  CHECK(fwd.count == 2);                                      // one attention per layer
  CHECK(fwd.bytes == doctest::Approx(2 * (q + kv) + 2 * q));  // Q, K, V before; O after
  CHECK(bwd.bytes == doctest::Approx(2 * q + 2 * (q + kv)));  // dO before; dQ, dK, dV after
  const auto exchanges = [](const CompiledModel& m, Phase phase) {
    return test::count_collectives(m, CollectiveKind::AllToAll, axis_bit(kAxisCp), phase,
                                   "layers.0.attention.attn");
  };
  // The attention's own exchanges (Q, K, V belong to their producers): O forward, dO backward.
  CHECK(exchanges(ds, Phase::Forward).count == 1);
  CHECK(exchanges(ds, Phase::BackwardInput).count == 1);
  CHECK(exchanges(ds, Phase::BackwardInput).bytes == exchanges(ds, Phase::Forward).bytes);
  // Transformer Engine's a2a under Megatron moves the saved output once more.
  const CompiledModel te = test::compile_text(cp_config(R"("zero":1,"cp_comm_type":"a2a")"));
  CHECK(exchanges(te, Phase::BackwardInput).count == 2);
}
