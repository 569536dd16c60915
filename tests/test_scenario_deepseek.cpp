// The DeepSeek-V3 on H800 scenario (core/presets/scenarios/deepseek-v3-h800.json): the layout
// DeepSeek-V3's report states (section 3.2), reduced in depth with each GPU's shape kept, and
// it fits in an H800's memory.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "proteus/api.h"
#include "proteus/config.h"

using namespace proteus;

TEST_CASE("scenario deepseek-v3-h800: the report's per-GPU shape, and it fits in 80 GB") {
  const Config c = parse_config(R"({"preset": "deepseek-v3-h800"})");
  // Report section 3.2: 64-way EP over 8 nodes of 8 H800, ZeRO-1 data parallelism, no TP,
  // FP8, DualPipe (section 3.2.1: two copies of the parameters, each rank a stage of each
  // direction); section 4.2: sequences of 4096.
  CHECK(c.strategy.ep == 64);
  CHECK(c.cluster.gpus_per_node * 8 == 64);  // the EP group spans 8 nodes
  CHECK(c.strategy.tp == 1);
  CHECK(c.strategy.zero == 1);
  CHECK(c.strategy.schedule == Schedule::DualPipe);
  CHECK(c.training.precision == Precision::Fp8);
  CHECK(c.training.seq_len == 4096);
  CHECK(c.strategy.micro_batch == 1);
  // Per GPU as in the report: 256 routed experts / EP 64 = 4 experts; 61 layers / 16 stages
  // = 3.8 layers there, 16 layers / 4 stages = 4 here (per direction: each rank holds 4 of
  // one copy and 4 of the other, the 2x parameters of the report's Table 2).
  CHECK(c.model.moe.experts / c.strategy.ep == 4);
  CHECK(c.model.layers / c.strategy.pp == 4);
  CHECK(c.model.moe.first_dense_layers == 3);
  CHECK(c.model.mtp_layers == 1);
  // It fits: the H800's 80 GB (hgx-h800 preset) hold every stage's peak, with DualPipe's two
  // copies of the parameters (75.7 GiB on the first and last ranks).
  const nlohmann::json r = nlohmann::json::parse(simulate_json(R"({"preset": "deepseek-v3-h800"})", {}));
  CHECK(r["summary"]["oom"] == false);
  CHECK(r["summary"]["peak_memory_GiB"].get<double>() < r["summary"]["memory_capacity_GiB"].get<double>());
  CHECK(r["summary"]["memory_capacity_GiB"].get<double>() == doctest::Approx(80));
}
