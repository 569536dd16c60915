// Uneven pipeline stages as Megatron-Core expresses them (pipeline_split.cpp):
//   --decoder-first/last-pipeline-num-layers (strategy.first_stage_layers / last_stage_layers)
//   --account-for-embedding/loss-in-pipeline-split
// Expected layer counts are worked out by hand from get_num_layers_to_build
// (megatron/core/transformer/transformer_block.py): with first/last set, the other ranks share
// what is left and must divide it; a rank's count is split evenly over its virtual stages; with
// the embedding/loss counted, layers + 1 (+ 1) is split over pp x vp chunks and the very first
// (last) chunk builds one transformer layer fewer.
#include <doctest/doctest.h>

#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/error.h"
#include "proteus/strategy_tree.h"

namespace {

using namespace proteus;

StrategySpec pipeline(int pp, Schedule schedule = Schedule::OneFOneB, int v = 1) {
  StrategySpec s;
  s.pp = pp;
  s.schedule = schedule;
  s.virtual_stages = v;
  return s;
}

// The JSON path of the error megatron_stage_layers throws (test::kNoError when it does not throw).
std::string error_path(const StrategySpec& s, int layers) {
  return test::error_path([&] { megatron_stage_layers(s, layers); });
}

}  // namespace

TEST_CASE("pipeline split: embedding and loss counted as layers (Llama 3 405B on 16 stages)") {
  StrategySpec s = pipeline(16);
  s.embedding_as_layer = s.loss_as_layer = true;
  // 126 layers + embedding + loss = 128 slots / 16 stages = 8; stage 0 gives one slot to the
  // embedding, stage 15 one to the loss: 7, 8 x 14, 7 (126 in all).
  std::vector<int> expect(16, 8);
  expect.front() = expect.back() = 7;
  CHECK(megatron_stage_layers(s, 126) == expect);
  // Interleaved, 2 chunks per stage: 128 / 32 chunks = 4 slots; only the very first chunk
  // (stage 0, vp 0) and the very last (stage 15, vp 1) are one layer lighter.
  StrategySpec v = pipeline(16, Schedule::Interleaved1F1B, 2);
  v.embedding_as_layer = v.loss_as_layer = true;
  std::vector<int> expect_v(32, 4);
  expect_v.front() = expect_v.back() = 3;
  CHECK(megatron_stage_layers(v, 126) == expect_v);
  // Only the embedding: 126 + 1 = 127 is odd, no split over 16: refused naming the option.
  s.loss_as_layer = false;
  CHECK(error_path(s, 126) == "strategy.account_for_embedding_in_pipeline_split");
  // Only the loss: 127 + 1 = 128 on 16: 8 x 15 then 7.
  s.embedding_as_layer = false;
  s.loss_as_layer = true;
  std::vector<int> expect_l(16, 8);
  expect_l.back() = 7;
  CHECK(megatron_stage_layers(s, 127) == expect_l);
}

TEST_CASE("pipeline split: first and last stage layer counts") {
  StrategySpec s = pipeline(8);
  // 30 layers, 2 on the first stage and 4 on the last: 24 left = 6 middle stages x 4.
  s.first_stage_layers = 2;
  s.last_stage_layers = 4;
  CHECK(megatron_stage_layers(s, 30) == std::vector<int>{2, 4, 4, 4, 4, 4, 4, 4});
  // Only the first set: 30 - 9 = 21 = 7 stages x 3 (the last stage is a middle one then).
  s.first_stage_layers = 9;
  s.last_stage_layers = 0;
  CHECK(megatron_stage_layers(s, 30) == std::vector<int>{9, 3, 3, 3, 3, 3, 3, 3});
  // 30 - 2 - 5 = 23 does not divide over 6 stages: Megatron-Core's assertion, naming the option.
  s.first_stage_layers = 2;
  s.last_stage_layers = 5;
  CHECK(error_path(s, 30) == "strategy.first_stage_layers");
  s.first_stage_layers = 0;
  CHECK(error_path(s, 30) == "strategy.last_stage_layers");  // 25 over 7 stages
  // More layers at the ends than the model has.
  s.first_stage_layers = 20;
  s.last_stage_layers = 20;
  CHECK(error_path(s, 30) == "strategy.first_stage_layers");
  // pp 2, both ends: no middle stage; the two counts must hold the whole model.
  StrategySpec two = pipeline(2);
  two.first_stage_layers = 5;
  two.last_stage_layers = 7;
  CHECK(megatron_stage_layers(two, 12) == std::vector<int>{5, 7});
  two.last_stage_layers = 6;
  CHECK(error_path(two, 12) == "strategy.first_stage_layers");
  // pp 1 has no first and last stage.
  StrategySpec one = pipeline(1);
  one.last_stage_layers = 3;
  CHECK(error_path(one, 12) == "strategy.last_stage_layers");
}

TEST_CASE("pipeline split: first/last stages with virtual stages") {
  // 60 layers, pp 4, 2 chunks per stage, 14 first and 14 last: the middle ranks share 32 = 2 x 16.
  // Each rank's count splits over its 2 chunks (7 / 8 / 8 / 7), chunks round robin (chunk c on
  // stage c % 4): 7, 8, 8, 7, 7, 8, 8, 7.
  StrategySpec s = pipeline(4, Schedule::Interleaved1F1B, 2);
  s.first_stage_layers = s.last_stage_layers = 14;
  CHECK(megatron_stage_layers(s, 60) == std::vector<int>{7, 8, 8, 7, 7, 8, 8, 7});
  // 15 on the first stage does not split over its 2 chunks (Megatron-Core: "number of layers at
  // first stage ... must be divisible by virtual pipeline parallel degree").
  s.first_stage_layers = 15;
  s.last_stage_layers = 13;
  CHECK(error_path(s, 60) == "strategy.first_stage_layers");
  // 30 layers with 6 + 6 at the ends leave 9 per middle rank, odd: the middle ranks are at fault.
  s.first_stage_layers = s.last_stage_layers = 6;
  CHECK(error_path(s, 30) == "strategy.virtual_stages");
  // A V places the first and last chunks both on stage 0: refused (stage_layers can say it).
  StrategySpec zbv = pipeline(4, Schedule::ZbV);
  zbv.first_stage_layers = 2;
  CHECK(error_path(zbv, 30) == "strategy.first_stage_layers");
  // ... while counting the embedding and loss is per chunk and works on a V: 30 + 2 = 32 slots
  // over 8 chunks = 4; chunk 0 (stage 0) and chunk 7 (stage 0 again) one lighter.
  StrategySpec zbv_e = pipeline(4, Schedule::ZbV);
  zbv_e.embedding_as_layer = zbv_e.loss_as_layer = true;
  CHECK(megatron_stage_layers(zbv_e, 30) == std::vector<int>{3, 4, 4, 4, 4, 4, 4, 3});
}

TEST_CASE("pipeline split: through a config") {
  const auto config = [](const std::string& extra) {
    return R"({"model":"gpt2-small","cluster":{"preset":"dgx-h100","nodes":1},
              "training":{"global_batch":8,"precision":"bf16"},
              "strategy":{"pp":4,"dp":2)" +
           extra + "}}";
  };
  // gpt2-small has 12 layers: 2 first, 4 last, 6 left over 2 middle stages = 3 each.
  const CompiledModel m = test::compile_text(config(R"(,"first_stage_layers":2,"last_stage_layers":4)"));
  CHECK(m.tree.chunk_layers == std::vector<int>{2, 3, 3, 4});
  // 12 + 2 = 14 slots do not divide over 4 stages: the error names the option.
  CHECK_THROWS_WITH_AS(test::compile_text(config(R"(,"account_for_embedding_in_pipeline_split":true,
                                                    "account_for_loss_in_pipeline_split":true)")),
                       doctest::Contains("14 do not divide evenly into pp x chunks = 4"), Error);
  // Megatron-Core refuses the combination and counts below 1; stage_layers excludes them too.
  const auto path_of = [&](const std::string& extra) {
    return test::error_path([&] { test::compile_text(config(extra)); });
  };
  CHECK(path_of(R"(,"first_stage_layers":3,"account_for_loss_in_pipeline_split":true)") ==
        "strategy.account_for_loss_in_pipeline_split");
  CHECK(path_of(R"(,"first_stage_layers":0)") == "strategy.first_stage_layers");
  CHECK(path_of(R"(,"first_stage_layers":3,"stage_layers":[3,3,3,3])") == "strategy.stage_layers");
}

TEST_CASE("pipeline split: a chunk of only the embedding or only the loss (one slot per chunk)") {
  // The zero-bubble repository's interleaved run of its 6.2B GPT (30 layers, pp 8,
  // --num-layers-per-virtual-pipeline-stage 1, --allow-padding-num-layers): 30 layers + embedding
  // + loss = 32 slots over 8 x 4 chunks, one each, so chunk 0 holds the embedding and no layer and
  // chunk 31 the loss and no layer (Megatron-Core get_num_layers_to_build: num_layers_per_vp - 1).
  // The config check used to compare the 32 chunks with the 30 layers alone and refused it.
  const std::string cfg = R"({"model":"gpt2-small","cluster":{"preset":"dgx-h100","nodes":1},
      "training":{"global_batch":8,"precision":"bf16"},
      "strategy":{"pp":4,"dp":2,"schedule":"interleaved-1f1b","virtual_stages":%V,
                  "account_for_embedding_in_pipeline_split":true,"account_for_loss_in_pipeline_split":true}})";
  const auto with_v = [&](int v) {
    std::string out = cfg;
    out.replace(out.find("%V"), 2, std::to_string(v));
    return out;
  };
  // The same at gpt2-small's size: 12 layers + 2 = 14 slots over pp 2 x v 7 = 14 chunks of one
  // slot (the old check refused 14 chunks for 12 layers).
  std::string two = with_v(7);
  two.replace(two.find(R"("pp":4,"dp":2)"), 13, R"("pp":2,"dp":4)");
  const CompiledModel m = test::compile_text(two);
  std::vector<int> expected(14, 1);
  expected.front() = expected.back() = 0;
  CHECK(m.tree.chunk_layers == expected);
  // More chunks than slots is still refused, naming the knob and counting the slots.
  std::string too_many = with_v(4);  // pp 4 x v 4 = 16 chunks > 14 slots
  CHECK_THROWS_WITH_AS(
      test::compile_text(too_many),
      doctest::Contains("16 model chunks is more than the model's 12 layers + 2 (embedding/loss)"), Error);
  CHECK(test::error_path([&] { test::compile_text(too_many); }) == "strategy.virtual_stages");
}
