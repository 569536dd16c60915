// The README's first example (`proteus simulate default`) prints the default scenario's summary;
// a cost-model change that moves the result must move the README with it (it had gone stale by
// 3% before this test).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include "proteus/api.h"

using namespace proteus;

namespace {

std::string readme_text() {
  std::ifstream f(std::string(PROTEUS_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// The number after `"key": ` in the README's example block.
double readme_figure(const std::string& text, const std::string& key) {
  std::smatch m;
  const std::regex pattern("\"" + key + "\": ([0-9.]+)");
  REQUIRE(std::regex_search(text, m, pattern));
  return std::stod(m[1].str());
}

}  // namespace

TEST_CASE("README: the simulate default example shows what the default scenario gives") {
  const std::string text = readme_text();
  REQUIRE(text.find("proteus simulate default") != std::string::npos);
  const nlohmann::json summary =
      nlohmann::json::parse(simulate_json(R"({"preset": "default"})", SimulateOptions{}))["summary"];
  // Printed to 3 decimals (seconds, fractions), whole numbers (tokens/s, TFLOP/s).
  CHECK(std::fabs(readme_figure(text, "iteration_time_s") - summary["iteration_time_s"].get<double>()) <=
        5e-4);
  CHECK(std::fabs(readme_figure(text, "mfu") - summary["mfu"].get<double>()) <= 5e-4);
  CHECK(std::fabs(readme_figure(text, "tokens_per_s") - summary["tokens_per_s"].get<double>()) <= 0.5);
  CHECK(std::fabs(readme_figure(text, "model_tflops_per_gpu") -
                  summary["model_tflops_per_gpu"].get<double>()) <= 0.5);
  CHECK(std::fabs(readme_figure(text, "compute_fraction") - summary["compute_fraction"].get<double>()) <=
        5e-4);
  CHECK(std::fabs(readme_figure(text, "exposed_comm_fraction") -
                  summary["exposed_comm_fraction"].get<double>()) <= 5e-4);
  CHECK(std::fabs(readme_figure(text, "bubble_fraction") - summary["bubble_fraction"].get<double>()) <= 5e-4);
}
