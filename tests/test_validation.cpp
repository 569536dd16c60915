// Validation against published training runs (STYLE.md habit 7: beside the model, named after
// its sources, failing when wrong). tests/validation/published.json holds the runs with their
// sources; validate_json simulates each and compares (docs/fidelity/validation.md).
//   time:     mean absolute error <= 7%, no case beyond 15% (the file's "targets"), over the
//             gated cases; "reported_only" cases (H100 BF16/FP8, long sequences) are simulated and
//             reported per GPU type and precision; "needs" cases are listed with what they need
//   rankings: cases the sources rank (full vs selective recompute) keep their order
//   memory:   Korthikanti et al.'s per-GPU memory within 3%, except quantities with a
//             "known_issues" entry, which must still miss (so that fixing them is noticed)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "proteus/api.h"

namespace {

// The whole file is simulated once (about a minute in a release build) and shared by the cases.
const nlohmann::json& validation() {
  static const nlohmann::json result = [] {
    std::ifstream f(std::string(PROTEUS_SOURCE_DIR) + "/tests/validation/published.json", std::ios::binary);
    REQUIRE(f);
    std::stringstream text;
    text << f.rdbuf();
    return nlohmann::json::parse(proteus::validate_json(text.str()));
  }();
  return result;
}

}  // namespace

TEST_CASE("validation: iteration time of published Megatron runs within 7% mean, 15% worst") {
  const auto& v = validation();
  REQUIRE(v["time"]["cases"].get<int>() >= 16);
  for (const auto& c : v["cases"]) {
    if (!c["gated"].get<bool>()) continue;  // reported per group below, not yet within the targets
    CAPTURE(c["id"].get<std::string>());
    CHECK(std::fabs(c["error_pct"].get<double>()) <= v["time"]["target_max_pct"].get<double>());
  }
  CHECK(v["time"]["mape_pct"].get<double>() <= 7.0);
  CHECK(v["time"]["max_abs_error_pct"].get<double>() <= 15.0);
}

TEST_CASE("validation: strategies the sources rank keep their order (full vs selective recompute)") {
  const auto& v = validation();
  REQUIRE(v["rankings"].size() >= 4);
  for (const auto& r : v["rankings"]) {
    if (!r["gated"].get<bool>()) continue;
    CAPTURE(r["faster"].get<std::string>());
    CAPTURE(r["slower"].get<std::string>());
    CHECK(r["kept"] == true);
  }
}

TEST_CASE("validation: FP8 against BF16 of one source is a ranking too (TorchTitan's Float8 rows)") {
  // docs/performance.md Table 1: FSDP + torch.compile + Float8 8,532 tokens/s against FSDP +
  // torch.compile 6,667 and FSDP 5,762, on 8 GPUs (and on 128): the runs differ in precision.
  const auto& v = validation();
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& r : v["rankings"])
    pairs.insert({r["faster"].get<std::string>(), r["slower"].get<std::string>()});
  for (const std::string gpus : {"8", "128"}) {
    const std::string fp8 = "torchtitan-8b-" + gpus + "-fsdp-compile-fp8";
    CHECK(pairs.count({fp8, "torchtitan-8b-" + gpus + "-fsdp-compile"}) == 1);
    CHECK(pairs.count({fp8, "torchtitan-8b-" + gpus + "-fsdp"}) == 1);
  }
}

TEST_CASE("validation: NeMo's with-CP runs against the best without CP are checked (search_rankings)") {
  // performance_long_sequence.md: from 32K tokens the with-CP configuration beat the best
  // configuration without CP that fitted; each such row is a search ranking of its case.
  const auto& v = validation();
  REQUIRE(v["search_rankings"].size() == 6);
  for (const auto& r : v["search_rankings"]) {
    CAPTURE(r["id"].get<std::string>());
    CHECK(r["case"].get<std::string>().rfind("nemo-longseq-llama2-7b-", 0) == 0);
    CHECK(r["published_ratio"].get<double>() > 1);
    REQUIRE_FALSE(r["best"].is_null());  // a configuration without CP fits at every length
    CHECK(r["best"]["strategy"]["cp"] == 1);
    CHECK(r["best"]["strategy"]["tp"].get<int>() <= 8);
  }
}

TEST_CASE("validation: Korthikanti et al.'s per-GPU memory within 3%") {
  const auto& v = validation();
  int checked = 0;
  for (const auto& m : v["memory_cases"]) {
    if (m.contains("known_issue")) continue;
    CAPTURE(m["id"].get<std::string>());
    CAPTURE(m["quantity"].get<std::string>());
    CHECK(std::fabs(m["error_pct"].get<double>()) <= 3.0);
    ++checked;
  }
  CHECK(checked >= 8);
}

TEST_CASE("validation: known memory issues still miss (a fix must update the validation file)") {
  const auto& v = validation();
  for (const auto& m : v["memory_cases"]) {
    if (!m.contains("known_issue")) continue;
    CAPTURE(m["id"].get<std::string>());
    CAPTURE(m["quantity"].get<std::string>());
    CHECK(std::fabs(m["error_pct"].get<double>()) > 3.0);
  }
}

TEST_CASE("validation: published runs fit in the GPU's memory (they ran), but for the listed exceptions") {
  // A run that was measured fitted in memory; predicting it does not is a miss of the memory
  // model or of the case's settings. The NeMo 24.07 GPT-3 and Llama rows fit only with the
  // bf16 gradient buffer their launcher scripts set (grad_reduce_in_fp32 false; 94.0, 85.8 and
  // 83.1 GiB with fp32 gradients). Exceptions, each for a reason, must still miss (so that a
  // fix is noticed and the list shrinks):
  //   nemo-longseq-llama2-7b-4k: the long-sequence table's recipe is not published; with fp32
  //     gradients and the distributed optimizer over dp 4 it needs 83.3 GiB.
  //   nemo2407-nemotron-340b-128: no launcher script for it; dp 2 leaves 12 bytes of optimizer
  //     state per parameter half sharded: 83.6 GiB with the bf16 gradients and selective
  //     recompute of its launcher YAML at 24.07, whose PP 12, VP 8 are not the table's PP 8, VP 12
  //     (docs/fidelity/validation.md, "The NeMo 24.07 rows' unstated settings").
  const std::set<std::string> known = {"nemo-longseq-llama2-7b-4k", "nemo2407-nemotron-340b-128"};
  const auto& v = validation();
  for (const auto& c : v["cases"]) {
    const std::string id = c["id"].get<std::string>();
    CAPTURE(id);
    CAPTURE(c["peak_memory_GiB"].get<double>());
    CHECK(c["oom"].get<bool>() == (known.count(id) > 0));
  }
}

TEST_CASE("validation: the wider set is reported per GPU type and precision") {
  const auto& v = validation();
  // 16 A100 runs + 12 NeMo 24.07 H100 FP8 + 9 NeMo long-sequence + 18 TorchTitan + 4 zero-bubble.
  const size_t listed = v["cases"].size() + v["not_run"].size();
  CHECK(listed >= 45);
  // Issue 14 asks for at least 45 cases checked: all 59 simulate (the 4 zero-bubble rows since
  // their settings were found in the paper and the repository's example script, issue 12).
  CHECK(v["cases"].size() >= 45);
  CHECK(v["not_run"].size() <= 4);
  CHECK(v["all"]["cases"].get<size_t>() == v["cases"].size());
  for (const auto& c : v["not_run"]) {
    CAPTURE(c["id"].get<std::string>());
    CHECK(c["needs"].get<std::string>().size() > 20);  // says what is missing
  }
  // Every simulated case falls in exactly one group; the groups' case counts add up.
  int in_groups = 0;
  bool a100_fp16 = false, h100_fp8 = false, h100_bf16 = false;
  for (const auto& g : v["groups"]) {
    in_groups += g["cases"].get<int>();
    const std::string name = g["group"].get<std::string>();
    a100_fp16 = a100_fp16 || name == "A100 fp16";
    h100_fp8 = h100_fp8 || name == "H100 fp8";
    h100_bf16 = h100_bf16 || name == "H100 bf16";
  }
  CHECK(in_groups == v["all"]["cases"].get<int>());
  CHECK(a100_fp16);
  CHECK(h100_fp8);
  CHECK(h100_bf16);
}

TEST_CASE("validation: the wider set's expected times are what derive_cases.py derives from the tables") {
  // tests/validation/derive_cases.py holds each source table as published and the arithmetic
  // (tokens/s or TFLOP/s per GPU -> iteration time); the file must match it, so an edit to a
  // case's config or expected time without its table fails here.
  if (std::system("python3 -c pass > /dev/null 2>&1") != 0) {
    MESSAGE("python3 not found: skipped");
    return;
  }
  const std::string dir = PROTEUS_SOURCE_DIR;
  CHECK(std::system(("python3 " + dir + "/tests/validation/derive_cases.py --check --file " + dir +
                     "/tests/validation/published.json > /dev/null 2>&1")
                        .c_str()) == 0);
}

namespace {

// The README's "Results" rows: "| id (note) | GPUs | published | predicted | error |".
struct ReadmeRow {
  std::string id;
  double predicted_s = 0, error_pct = 0;
};

std::vector<ReadmeRow> readme_result_rows() {
  std::ifstream f(std::string(PROTEUS_SOURCE_DIR) + "/README.md");
  REQUIRE(f);
  std::vector<ReadmeRow> rows;
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream s(line.substr(1));
    for (std::string cell; std::getline(s, cell, '|');) cells.push_back(cell);
    if (cells.size() != 5) continue;
    std::string error = cells[4];
    const std::string minus = "\xE2\x88\x92";  // the README writes U+2212 for a negative error
    if (const size_t at = error.find(minus); at != std::string::npos) error.replace(at, minus.size(), "-");
    std::stringstream id(cells[0]);
    ReadmeRow r;
    id >> r.id;
    try {
      r.predicted_s = std::stod(cells[3]);
      r.error_pct = std::stod(error);
    } catch (const std::exception&) {
      continue;  // a header or another table
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("validation: the README's results table is what validate gives today") {
  // Its A100 table went stale once (session 13 moved every row; the README kept the old ones).
  const auto& v = validation();
  int checked = 0;
  for (const ReadmeRow& r : readme_result_rows()) {
    for (const auto& c : v["cases"]) {
      if (c["id"] != r.id) continue;
      CAPTURE(r.id);
      CHECK(std::fabs(r.predicted_s - c["predicted_s"].get<double>()) <= 0.00051);  // printed to 3 decimals
      CHECK(std::fabs(r.error_pct - c["error_pct"].get<double>()) <= 0.051);        // to 1 decimal
      ++checked;
    }
  }
  CHECK(checked == 16);  // the A100 table
}
