// Identical config -> byte-identical result JSON, run after run in one process (DESIGN.md §1:
// every stage is a pure function; no globals, no randomness, no iteration over addresses).
// Checked over every scenario preset: the plain result, the result with the timeline, and the
// Chrome trace, each produced twice. stats.wall_ms is opt-in and left out, as results are by default.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include "proteus/api.h"
#include "proteus/presets.h"

namespace {

std::string scenario_config(const std::string& name) { return "{\"preset\": \"" + name + "\"}"; }

// The first line where two texts differ, for the failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t line_start = a.rfind('\n', i == 0 ? 0 : i - 1);
  const size_t from = line_start == std::string::npos ? 0 : line_start + 1;
  return "at byte " + std::to_string(i) + ": \"" + a.substr(from, 120) + "\" vs \"" + b.substr(from, 120) +
         "\"";
}

void check_same(const std::string& what, const std::string& a, const std::string& b) {
  INFO(what << " differs " << first_difference(a, b));
  CHECK(a.size() == b.size());
  CHECK(a == b);
}

}  // namespace

TEST_CASE("determinism: every scenario preset gives byte-identical results run after run") {
  int scenarios = 0;
  for (const proteus::Preset& preset : proteus::embedded_presets()) {
    if (preset.kind != proteus::PresetKind::Scenario) continue;
    ++scenarios;
    CAPTURE(preset.name);
    const std::string config = scenario_config(preset.name);
    proteus::SimulateOptions plain;
    const std::string first = proteus::simulate_json(config, plain);
    CHECK(first.find("\"ok\": true") != std::string::npos);
    CHECK(first.find("wall_ms") == std::string::npos);
    check_same(preset.name + " result", first, proteus::simulate_json(config, plain));

    proteus::SimulateOptions timeline;
    timeline.timeline = true;
    const std::string with_timeline = proteus::simulate_json(config, timeline);
    CHECK(with_timeline.find("\"timeline\"") != std::string::npos);
    check_same(preset.name + " result with timeline", with_timeline,
               proteus::simulate_json(config, timeline));
  }
  CHECK(scenarios >= 8);
}

TEST_CASE("determinism: the Chrome trace and the resolved config are byte-identical run after run") {
  for (const char* name : {"default", "mixtral-8x7b-ep", "alexnet-hybrid", "dlrm-table-parallel"}) {
    CAPTURE(name);
    const std::string config = scenario_config(name);
    check_same(std::string(name) + " trace", proteus::chrome_trace_json(config),
               proteus::chrome_trace_json(config));
    check_same(std::string(name) + " show", proteus::show_json(config), proteus::show_json(config));
  }
}

TEST_CASE("simulate_output: one run gives the same result and trace as simulating twice") {
  const std::string config = proteus::preset_text("scenario", "default");
  proteus::SimulateOptions o;
  o.chrome_trace = true;
  o.columns = true;
  const proteus::SimulationOutput out = proteus::simulate_output(config, o);
  CHECK(out.result == proteus::simulate_json(config, proteus::SimulateOptions{}));
  CHECK(out.chrome_trace == proteus::chrome_trace_json(config));
  CHECK(out.resolved == proteus::show_json(config));
  CHECK(out.timeline.size() > 0);
}

TEST_CASE("simulate_output: memory curves as columns hold the JSON's memory_curves, bit for bit") {
  // The page asks for the curves as columns (curve_columns): they must be exactly the
  // numbers the CLI writes in "memory_curves", and the result JSON must then leave them out.
  const std::string config = proteus::preset_text("scenario", "default");
  proteus::SimulateOptions with_json;
  with_json.memory_curve = true;
  const auto json = nlohmann::json::parse(proteus::simulate_json(config, with_json));
  proteus::SimulateOptions o;
  o.memory_curve = true;
  o.curve_columns = true;
  const proteus::SimulationOutput out = proteus::simulate_output(config, o);
  CHECK(out.result == proteus::simulate_json(config, proteus::SimulateOptions{}));
  const auto& curves = json.at("memory_curves");
  REQUIRE(out.memory_curves.size() == curves.size());
  REQUIRE(curves.size() > 0);
  for (size_t r = 0; r < curves.size(); ++r) {
    const proteus::MemoryCurveColumns& c = out.memory_curves[r];
    CHECK(c.rank == curves[r].at("rank").get<int>());
    REQUIRE(c.t_s.size() == curves[r].at("t_s").size());
    REQUIRE(c.GiB.size() == c.t_s.size());
    CHECK(c.t_s.size() > 2);
    for (size_t i = 0; i < c.t_s.size(); ++i) {
      CHECK(c.t_s[i] == curves[r].at("t_s")[i].get<double>());  // the JSON prints round-trip digits
      CHECK(c.GiB[i] == curves[r].at("GiB")[i].get<double>());
    }
  }
}
