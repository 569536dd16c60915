// The executor's progress hook (ExecOptions::progress, SimulateOptions::progress): the page's
// progress bar for long runs. It must observe only: the result is byte-identical with it.
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proteus/api.h"

namespace {

struct Call {
  int64_t done, total;
};

std::vector<Call> progress_of(const std::string& config, std::string* result) {
  std::vector<Call> calls;
  proteus::SimulateOptions o;
  o.progress = [&calls](int64_t done, int64_t total) { calls.push_back({done, total}); };
  *result = proteus::simulate_json(config, o);
  return calls;
}

}  // namespace

TEST_CASE("progress: rises to the task count in at most 101 calls and leaves the result as it is") {
  const std::string config = proteus::preset_text("scenario", "default");
  std::string result;
  const std::vector<Call> calls = progress_of(config, &result);
  CHECK(result == proteus::simulate_json(config, proteus::SimulateOptions{}));
  const int64_t tasks = nlohmann::json::parse(result)["stats"]["tasks"].get<int64_t>();
  REQUIRE(tasks >= 100);  // the default scenario has thousands of tasks
  REQUIRE(!calls.empty());
  // Called at the first task's end, then every ceil(tasks / 100) tasks, and at the last:
  // 1 + ceil((tasks - 1) / step) calls, step = ceil(tasks / 100).
  const int64_t step = (tasks + 99) / 100;
  CHECK(calls.size() == static_cast<size_t>(1 + (tasks - 1 + step - 1) / step));
  CHECK(calls.size() <= 101);
  CHECK(calls.front().done == 1);
  CHECK(calls.back().done == tasks);
  for (size_t i = 0; i < calls.size(); ++i) {
    CHECK(calls[i].total == tasks);
    if (i > 0) CHECK(calls[i].done > calls[i - 1].done);
  }
}

TEST_CASE("progress: a config that fails to parse reports nothing") {
  std::string result;
  proteus::SimulateOptions o;
  int called = 0;
  o.progress = [&called](int64_t, int64_t) { ++called; };
  CHECK_THROWS_AS(proteus::simulate_json(R"({"model": "no-such-model"})", o), proteus::Error);
  CHECK(called == 0);
}
