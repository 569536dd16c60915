// PyTorch context parallelism's fp32 merge and gradient accumulation per step (framework fsdp;
// compile/torch_cp_merge.h, docs/fidelity/overheads.md "PyTorch CP's output merge and dK/dV ring"),
// counted by hand on a small model. Megatron's CP (Transformer Engine) has none of it (its ring
// has its own: test_te_cp_ring.cpp).
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include "compile_fixtures.h"
#include "proteus/compile.h"
#include "proteus/error.h"

using namespace proteus;

namespace {

// 2 layers, hidden 512, 8 heads (MHA), seq 256, on one DGX A100: cp 2 x dp 4, one micro-batch.
std::string cp_config(const std::string& framework) {
  const std::string zero = framework == "fsdp" ? "3" : "1";
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 4,
                           R"({"dp":4,"cp":2,"micro_batch":1,"cp_comm_type":"all_gather","zero":)" + zero +
                               R"(,"framework":")" + framework + "\"}");
}

}  // namespace

TEST_CASE("torch cp merge: fused fp32 merge and accumulation bytes, by hand, once per attention") {
  const CompiledModel c = test::compile_text(cp_config("fsdp"));
  // Per rank: 128 of the 256 tokens. Output (= query) 128 x 512 = 65,536 elements; K and V
  // 2 x 128 x 512 = 131,072. Per element: first step 2 + 4, one merge 4 + 2 + 4, cast back 4 + 2.
  const test::CollCount fwd = test::count_compute_tasks(c, "cp_sdpa_merge", Phase::Forward);
  CHECK(fwd.count == 2);  // one attention per layer
  CHECK(fwd.bytes == doctest::Approx(65536.0 * (6 + 10 + 6)));
  const test::CollCount bwd = test::count_compute_tasks(c, "cp_grad_accumulate", Phase::BackwardInput);
  CHECK(bwd.count == 2);
  CHECK(bwd.bytes == doctest::Approx((65536.0 + 131072.0) * (6 + 10 + 6)));
}

TEST_CASE("torch cp merge: Megatron's context parallelism has none") {
  const CompiledModel c = test::compile_text(cp_config("megatron"));
  CHECK(test::count_compute_tasks(c, "cp_sdpa_merge", Phase::Forward).count == 0);
  CHECK(test::count_compute_tasks(c, "cp_grad_accumulate", Phase::BackwardInput).count == 0);
}

// _templated_ring_attention merges the same whichever way K/V travel: PyTorch's all-to-all
// rotation (cp_comm_type p2p) pays what its all-gather does, for the same local shards.
TEST_CASE("torch cp merge: the p2p rotation merges and accumulates as the all-gather does") {
  const CompiledModel ag = test::compile_text(cp_config("fsdp"));
  std::string p2p_config = cp_config("fsdp");
  p2p_config.replace(p2p_config.find("all_gather"), std::string("all_gather").size(), "p2p");
  const CompiledModel p2p = test::compile_text(p2p_config);
  for (const auto& [label, phase] :
       {std::pair{"cp_sdpa_merge", Phase::Forward}, std::pair{"cp_grad_accumulate", Phase::BackwardInput}}) {
    CAPTURE(label);
    const test::CollCount a = test::count_compute_tasks(ag, label, phase),
                          r = test::count_compute_tasks(p2p, label, phase);
    CHECK(r.count == 2);
    CHECK(r.bytes == doctest::Approx(a.bytes));
  }
}

TEST_CASE("torch cp merge: TE's all-to-all flavours are an error under framework fsdp") {
  for (const char* type : {"a2a", "a2a+p2p"}) {
    CAPTURE(type);
    std::string config = cp_config("fsdp");
    config.replace(config.find("all_gather"), std::string("all_gather").size(), type);
    try {
      test::compile_text(config);
      FAIL("parsed");
    } catch (const Error& e) {
      CHECK(e.path == "strategy.cp_comm_type");
    }
  }
}
