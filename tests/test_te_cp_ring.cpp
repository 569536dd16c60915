// Transformer Engine's context-parallel ring besides its attention kernels (cp_comm_type p2p
// and the ring of a2a+p2p; compile/te_cp_ring.h, docs/frameworks/context-parallelism.md "Context
// parallelism"): the K/V copies, output corrections and gradient accumulation of AttnFuncWithCP, counted by
// hand from its branches, and charged once per attention and direction after the ring.
#include <doctest/doctest.h>

#include <string>
#include "../core/src/compile/te_cp_ring.h"
#include "compile_fixtures.h"
#include "proteus/compile.h"

using namespace proteus;

namespace {

// 2 layers, hidden 512, 8 heads (MHA), seq 256, one DGX A100; `strategy` adds cp and the rest.
std::string cp_config(const std::string& strategy) {
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 4,
                           R"({"micro_batch":1,)" + strategy + "}");
}

}  // namespace

// Two ranks, O the output's bytes and KV the K and V shards' (per rank, 2-byte elements):
// forward, rank 0: cat(k, v) 2KV, out.zero_() O, its own step merged whole 3O, rank 1's
// half-masked step into out[1] 1.5O = 2KV + 5.5O; rank 1: 2KV + O, the received K/V's first
// half made contiguous KV, both steps merged whole 6O = 3KV + 7O. Mean 2.5KV + 6.25O.
// Backward, rank 0: K/V into the ring buffer 2KV; step 0 (its Q's second half against rank 1's
// K/V) cat(dk, dv) 2KV, dq[1].copy_ O, dkv.copy_ 2KV; step 1 (its own K/V) cat 2KV, dq[0] copied
// and dq[1] added 2.5O, dkv[0] added and dkv[1] copied 2.5KV = 10.5KV + 3.5O. Rank 1: 2KV;
// step 0 (rank 0's first K/V half) the half made contiguous KV, cat of half-sized dk, dv KV,
// dq.copy_ 2O, dkv[0].copy_ KV; step 1 cat 2KV, dq.add_ 3O, dkv.add_ 3KV = 10KV + 5O.
// Mean 10.25KV + 4.25O.
TEST_CASE("te cp ring: two ranks, every branch of AttnFuncWithCP counted by hand") {
  const double o = 1000, kv = 300;
  const TeCpRingBytes b = te_cp_ring_bytes(o, kv, 2);
  CHECK(b.forward == doctest::Approx(2.5 * kv + 6.25 * o));
  CHECK(b.backward == doctest::Approx(10.25 * kv + 4.25 * o));
}

// Forward of rank r over c ranks: 2KV + O + r (KV) + (r + 1) 3O + (c - 1 - r) 1.5O; the mean
// over r is (1.5 + c / 2) KV + (1.75 + 2.25 c) O: one more merge of the output per rank added.
TEST_CASE("te cp ring: the forward grows by one output merge per rank of the ring") {
  const double o = 1000, kv = 300;
  for (int c : {2, 4, 8, 16}) {
    CAPTURE(c);
    CHECK(te_cp_ring_bytes(o, kv, c).forward ==
          doctest::Approx((1.5 + c / 2.0) * kv + (1.75 + 2.25 * c) * o));
    CHECK(te_cp_ring_bytes(o, kv, 2 * c).backward > te_cp_ring_bytes(o, kv, c).backward);
  }
  CHECK(te_cp_ring_bytes(o, kv, 1).forward == 0);
  CHECK(te_cp_ring_bytes(o, kv, 1).backward == 0);
}

TEST_CASE("te cp ring: Megatron's p2p ring charges it once per attention and direction") {
  const CompiledModel c = test::compile_text(cp_config(R"("dp":4,"cp":2,"zero":1)"));
  // Per rank 128 of the 256 tokens: output 128 x 512 x 2 B = 131,072 B; K and V 262,144 B.
  const TeCpRingBytes expect = te_cp_ring_bytes(131072, 262144, 2);
  const test::CollCount fwd = test::count_compute_tasks(c, "cp_ring_out_correction", Phase::Forward);
  CHECK(fwd.count == 2);  // one attention per layer
  CHECK(fwd.bytes == doctest::Approx(expect.forward));
  CHECK(fwd.bytes == doctest::Approx(1474560.0));
  const test::CollCount bwd = test::count_compute_tasks(c, "cp_ring_grad_accumulate", Phase::BackwardInput);
  CHECK(bwd.count == 2);
  CHECK(bwd.bytes == doctest::Approx(expect.backward));
  CHECK(bwd.bytes == doctest::Approx(3244032.0));
}

TEST_CASE("te cp ring: a2a+p2p charges the ring across its a2a groups, PyTorch's CP its own merge") {
  // cp 4 as two all-to-all pairs and a ring of 2: after the all-to-all each rank holds twice
  // the tokens for half the heads, the same bytes, so the ring of 2 costs what cp 2 did.
  const CompiledModel h =
      test::compile_text(cp_config(R"("dp":2,"cp":4,"zero":1,"cp_comm_type":"a2a+p2p","cp_a2a_size":2)"));
  const TeCpRingBytes ring2 = te_cp_ring_bytes(65536, 131072, 2);
  CHECK(test::count_compute_tasks(h, "cp_ring_out_correction", Phase::Forward).bytes ==
        doctest::Approx(ring2.forward));
  CHECK(test::count_compute_tasks(h, "cp_ring_grad_accumulate", Phase::BackwardInput).bytes ==
        doctest::Approx(ring2.backward));
  // The all-gather flavour of TE and PyTorch's ring under framework fsdp have none of it.
  const CompiledModel ag =
      test::compile_text(cp_config(R"("dp":4,"cp":2,"zero":1,"cp_comm_type":"all_gather")"));
  CHECK(test::count_compute_tasks(ag, "cp_ring_out_correction", Phase::Forward).count == 0);
  const CompiledModel torch =
      test::compile_text(cp_config(R"("dp":4,"cp":2,"zero":3,"framework":"fsdp","cp_comm_type":"p2p")"));
  CHECK(test::count_compute_tasks(torch, "cp_ring_out_correction", Phase::Forward).count == 0);
}
