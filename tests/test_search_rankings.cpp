// validate_json's "search_rankings" (core/src/api/search_rankings.h): a case's configuration
// against the best the strategy search finds in a space, as NeMo's long-sequence table sets its
// with-CP configurations against "the best achievable performance" without CP.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"

using Json = nlohmann::json;

namespace {

// GPT-style, 2 layers, hidden 512, seq 256, one DGX H100 node, data parallel 8.
Json config(const std::string& recompute) {
  return Json::parse(proteus::test::config_json(
      proteus::test::gpt_model(2, 512, 8, 256, 8000), R"({"preset":"dgx-h100","nodes":1})", 64,
      R"({"dp":8,"micro_batch":1,"recompute":")" + recompute + "\"}"));
}

// One case and one search ranking of it against `space`.
Json validate(const std::string& recompute, const Json& space, const std::string& case_id = "case") {
  Json file;
  file["cases"] = Json::array({{{"id", "case"},
                                {"config", config(recompute)},
                                {"expect", {{"iteration_time_s", 1.0}}},
                                {"reported_only", "test"}}});
  file["search_rankings"] =
      Json::array({{{"id", "r"}, {"case", case_id}, {"search", space}, {"published_ratio", 1.3}}});
  return Json::parse(proteus::validate_json(file.dump()));
}

}  // namespace

TEST_CASE("search ranking: the case beats the best of a space of slower strategies") {
  // Everything but recompute fixed as the case's: full recompute replays the forward, so the
  // best of the space is slower by about a third (forward 1, backward 2, replay 1 more).
  const Json space = {{"dp", {8}}, {"tp", {1}}, {"pp", {1}}, {"micro_batch", {1}}, {"recompute", {"full"}}};
  const Json v = validate("none", space);
  REQUIRE(v["search_rankings"].size() == 1);
  const Json& r = v["search_rankings"][0];
  CHECK(r["kept"] == true);
  CHECK(r["best"]["strategy"]["recompute"] == "full");
  CHECK(r["predicted_ratio"].get<double>() > 1.1);
  CHECK(r["predicted_ratio"].get<double>() < 1.5);
  CHECK(r["predicted_ratio"].get<double>() == doctest::Approx(r["best"]["iteration_time_s"].get<double>() /
                                                              v["cases"][0]["predicted_s"].get<double>()));
  CHECK(r["published_ratio"] == 1.3);
}

TEST_CASE("search ranking: not kept when the space holds something faster than the case") {
  const Json space = {{"dp", {8}}, {"tp", {1}}, {"pp", {1}}, {"micro_batch", {1}}, {"recompute", {"none"}}};
  const Json r = validate("full", space)["search_rankings"][0];
  CHECK(r["kept"] == false);
  CHECK(r["predicted_ratio"].get<double>() < 1);
  // Reported-only cases leave the targets alone.
  CHECK(r["gated"] == false);
}

TEST_CASE("search ranking: a space where nothing fits leaves the case unbeaten") {
  // GPT-3 175B on one node: unsharded and without tensor parallelism its weights, gradients and
  // Adam states (18 bytes per parameter, 3 TB) fit no GPU, so the space has no fitting strategy.
  Json file;
  file["cases"] = Json::array(
      {{{"id", "case"},
        {"config", Json::parse(R"({"model":{"preset":"gpt3-175b"},"cluster":{"preset":"dgx-h100","nodes":1},)"
                               R"("training":{"global_batch":8,"precision":"bf16"},)"
                               R"("strategy":{"tp":8,"dp":1,"micro_batch":1,"recompute":"full"}})")},
        {"expect", {{"iteration_time_s", 1.0}}}}});
  file["search_rankings"] = Json::array({{{"id", "r"},
                                          {"case", "case"},
                                          {"search", {{"tp", {1}}, {"pp", {1}}, {"zero", {0}}}},
                                          {"published_ratio", 2.0}}});
  const Json r = Json::parse(proteus::validate_json(file.dump()))["search_rankings"][0];
  CHECK(r["kept"] == true);
  CHECK(r["best"].is_null());
}

TEST_CASE("search ranking: a space the search refuses is an error naming the entry's search") {
  // cp 3 divides neither the 8 GPUs nor the sequence: the space is empty.
  CHECK(proteus::test::error_path([] {
          validate("none", {{"cp", {3}}});
        }).rfind("search_rankings[0].search", 0) == 0);
}

TEST_CASE("search ranking: an unknown case or a bad ratio is an error naming the field") {
  CHECK(proteus::test::error_path([] { validate("none", Json::object(), "missing"); }) ==
        "search_rankings[0].case");
  Json file;
  file["cases"] =
      Json::array({{{"id", "case"}, {"config", config("none")}, {"expect", {{"iteration_time_s", 1.0}}}}});
  file["search_rankings"] =
      Json::array({{{"id", "r"}, {"case", "case"}, {"search", Json::object()}, {"published_ratio", -1}}});
  CHECK(proteus::test::error_path([&] { proteus::validate_json(file.dump()); }) ==
        "search_rankings[0].published_ratio");
}
