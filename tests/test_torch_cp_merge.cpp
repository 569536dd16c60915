// PyTorch context parallelism's fp32 merge and gradient accumulation per step (framework fsdp;
// compile/torch_cp_merge.h, docs/fidelity.md "PyTorch CP's output merge and dK/dV ring"),
// counted by hand on a small model. Megatron's CP (Transformer Engine) has none of it.
#include <doctest/doctest.h>

#include <string>
#include "compile_fixtures.h"
#include "proteus/compile.h"

using namespace proteus;

namespace {

// 2 layers, hidden 512, 8 heads (MHA), seq 256, on one DGX A100: cp 2 x dp 4, one micro-batch.
std::string cp_config(const std::string& framework) {
  const std::string zero = framework == "fsdp" ? "3" : "1";
  return test::config_json(test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-a100-80g","nodes":1})", 4,
                           R"({"dp":4,"cp":2,"micro_batch":1,"cp_comm_type":"all_gather","zero":)" + zero +
                               R"(,"framework":")" + framework + "\"}");
}

struct Found {
  int count = 0;
  double bytes = 0;  // of one task
};

Found tasks(const CompiledModel& c, const std::string& label, Phase phase) {
  Found f;
  for (const Task& t : c.exec.tasks) {
    if (t.rank != 0 || t.phase != phase || c.exec.labels[t.label] != label) continue;
    CHECK(t.stream == Stream::Compute);
    ++f.count;
    f.bytes = c.exec.works[t.work].bytes;
  }
  return f;
}

}  // namespace

TEST_CASE("torch cp merge: fused fp32 merge and accumulation bytes, by hand, once per attention") {
  const CompiledModel c = test::compile_text(cp_config("fsdp"));
  // Per rank: 128 of the 256 tokens. Output (= query) 128 x 512 = 65,536 elements; K and V
  // 2 x 128 x 512 = 131,072. Per element: first step 2 + 4, one merge 4 + 2 + 4, cast back 4 + 2.
  const Found fwd = tasks(c, "cp_sdpa_merge", Phase::Forward);
  CHECK(fwd.count == 2);  // one attention per layer
  CHECK(fwd.bytes == doctest::Approx(65536.0 * (6 + 10 + 6)));
  const Found bwd = tasks(c, "cp_grad_accumulate", Phase::BackwardInput);
  CHECK(bwd.count == 2);
  CHECK(bwd.bytes == doctest::Approx((65536.0 + 131072.0) * (6 + 10 + 6)));
}

TEST_CASE("torch cp merge: Megatron's context parallelism has none") {
  const CompiledModel c = test::compile_text(cp_config("megatron"));
  CHECK(tasks(c, "cp_sdpa_merge", Phase::Forward).count == 0);
  CHECK(tasks(c, "cp_grad_accumulate", Phase::BackwardInput).count == 0);
}
