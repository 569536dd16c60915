// proteus: the command-line front end. Thin: reads files, calls core/api, prints JSON.
// Exit codes: 0 success, 2 invalid input (the error JSON is printed on stdout), 1 other failures.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "proteus/api.h"
#include "proteus/import.h"
#include "proteus/presets.h"
#include "search_command.h"

namespace {

const char* kUsage =
    "usage: proteus <command> [args]\n"
    "  presets                         list the built-in models, clusters and scenarios\n"
    "  show CONFIG [--tree]            print the fully resolved config (or the strategy tree)\n"
    "  compile CONFIG                  print execution-graph statistics (params, FLOPs, collectives)\n"
    "  simulate CONFIG [--timeline] [--memory-curve] [--wall-time] [--no-fit-advice] [--trace FILE] [-o FILE]\n"
    "                                  simulate one training iteration and print the result JSON\n"
    "  search CONFIG [--json] [--top K] [--threads N] [--shard K/N] [--tp 1,2,..] ...\n"
    "                                  the fastest strategies that fit, ranked (docs/search.md)\n"
    "  search --merge FILES...         combine the --json results of the shards of one search\n"
    "  validate FILE [--json]          simulate every case of a validation file (tests/validation/published.json),\n"
    "                                  print predicted vs published and the mean error; exit 1 if targets are missed\n"
    "  import megatron|hf FILE|- [--cluster PRESET|JSON] [--nodes N]\n"
    "                                  print the config of a Megatron-LM launch script / arguments or of a\n"
    "                                  Hugging Face config.json (the model part); what is ignored goes to stderr\n"
    "  export megatron CONFIG          print the Megatron-LM command line of a config\n"
    "  version\n"
    "CONFIG is a JSON file, '-' for standard input, or the name of a scenario preset.\n";

std::string read_stream(std::istream& in) {
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file or stdin, refused before it is read whole when it is larger than any valid input
// (the config limit): a 100 MiB file is rejected without reading it.
std::string read_input(const std::string& arg) {
  const int64_t limit = proteus::max_input_bytes();
  auto too_big = [&](int64_t size) {
    return proteus::Error("invalid_json", "",
                          "the input is " + std::to_string(size) + " bytes or more; the limit is " +
                              std::to_string(limit) + " bytes (16 MiB)");
  };
  std::string text;
  if (arg == "-") {
    char buffer[1 << 16];
    while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
      text.append(buffer, static_cast<size_t>(std::cin.gcount()));
      if (static_cast<int64_t>(text.size()) > limit) throw too_big(static_cast<int64_t>(text.size()));
    }
    return text;
  }
  std::ifstream f(arg, std::ios::binary | std::ios::ate);
  if (!f) throw proteus::Error("invalid_request", "", "cannot read '" + arg + "': no such file");
  const std::streamoff size = f.tellg();
  if (size > limit) throw too_big(static_cast<int64_t>(size));
  f.seekg(0);
  return read_stream(f);
}

// A config argument: a file, stdin, or a scenario preset by name.
std::string read_config(const std::string& arg) {
  if (arg == "-") return read_input(arg);
  if (std::ifstream(arg, std::ios::binary)) return read_input(arg);
  if (proteus::find_preset(proteus::PresetKind::Scenario, arg)) return "{\"preset\": \"" + arg + "\"}";
  throw proteus::Error("invalid_request", "",
                       "cannot read config '" + arg + "': no such file or scenario preset");
}

void write_output(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    std::cout << text << "\n";
    return;
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) throw proteus::Error("invalid_request", "", "cannot write '" + path + "'");
  f << text << "\n";
}

// `validate FILE [--json]`: a table of predicted vs published per case, then the mean error
// (with --json, validate_json's result as it is, for scripts); exit 1 if the file's targets are
// missed.
int validate(const std::vector<std::string>& args) {
  const bool json = args.size() == 3 && args[2] == "--json";
  if (args.size() != 2 && !json) {
    std::cerr << "proteus validate: expects FILE [--json]\n" << kUsage;
    return 2;
  }
  std::ifstream f(args[1], std::ios::binary);
  if (!f) throw proteus::Error("invalid_request", "", "cannot read validation file '" + args[1] + "'");
  const std::string text = proteus::validate_json(read_stream(f));
  const auto r = nlohmann::json::parse(text);
  if (json) {
    std::cout << text << "\n";
    return r["targets_met"].get<bool>() ? 0 : 1;
  }
  char line[512];
  std::printf("%-36s %-10s %12s %12s %9s\n", "case", "group", "published_s", "predicted_s", "error");
  for (const auto& c : r["cases"]) {
    std::snprintf(line, sizeof line, "%-36s %-10s %12.3f %12.3f %+8.1f%%%s",
                  c["id"].get<std::string>().c_str(), c["group"].get<std::string>().c_str(),
                  c["published_s"].get<double>(), c["predicted_s"].get<double>(),
                  c["error_pct"].get<double>(), c["gated"].get<bool>() ? "" : "  (reported)");
    std::cout << line;
    // A published run ran: predicting that it does not fit is a memory-model miss worth seeing.
    if (c["oom"].get<bool>())
      std::printf("  (over memory: %.1f GiB predicted)", c["peak_memory_GiB"].get<double>());
    std::cout << "\n";
  }
  for (const auto& c : r["not_run"])
    std::cout << "not run: " << c["id"].get<std::string>() << ": " << c["needs"].get<std::string>() << "\n";
  for (const auto& g : r["groups"]) {
    std::snprintf(line, sizeof line, "group %-10s %3d cases, mean absolute error %6.2f%%, worst %6.2f%%",
                  g["group"].get<std::string>().c_str(), g["cases"].get<int>(), g["mape_pct"].get<double>(),
                  g["max_abs_error_pct"].get<double>());
    std::cout << line << "\n";
  }
  std::snprintf(line, sizeof line,
                "all: %d cases simulated, %d not run, mean absolute error %.2f%%, worst %.2f%%",
                r["all"]["cases"].get<int>(), static_cast<int>(r["not_run"].size()),
                r["all"]["mape_pct"].get<double>(), r["all"]["max_abs_error_pct"].get<double>());
  std::cout << line << "\n";
  const auto& t = r["time"];
  std::snprintf(
      line, sizeof line,
      "gated: %d cases, mean absolute error %.2f%% (target %.0f%%), worst %.2f%% %s (target %.0f%%)",
      t["cases"].get<int>(), t["mape_pct"].get<double>(), t["target_mape_pct"].get<double>(),
      t["max_abs_error_pct"].get<double>(), t["worst_case"].get<std::string>().c_str(),
      t["target_max_pct"].get<double>());
  std::cout << line << "\n";
  for (const auto& k : r["rankings"]) {
    std::cout << "ranking: " << k["faster"].get<std::string>() << " < " << k["slower"].get<std::string>()
              << (k["kept"].get<bool>() ? "  kept" : "  NOT KEPT")
              << (k["gated"].get<bool>() ? "" : "  (reported)") << "\n";
  }
  for (const auto& k : r["search_rankings"]) {
    std::cout << "search ranking: " << k["case"].get<std::string>() << " < the best of its space";
    if (k["best"].is_null()) {
      std::cout << " (nothing else fits)";
    } else {
      std::snprintf(line, sizeof line, " (published %.2fx, predicted %.2fx: %s)",
                    k["published_ratio"].get<double>(), k["predicted_ratio"].get<double>(),
                    k["best"]["summary"].get<std::string>().c_str());
      std::cout << line;
    }
    std::cout << (k["kept"].get<bool>() ? "  kept" : "  NOT KEPT")
              << (k["gated"].get<bool>() ? "" : "  (reported)") << "\n";
  }
  if (!r["memory_cases"].empty()) {
    std::printf("%-24s %-34s %5s %10s %10s %9s\n", "memory case", "quantity", "stage", "published",
                "predicted", "error");
    for (const auto& m : r["memory_cases"]) {
      std::snprintf(line, sizeof line, "%-24s %-34s %5d %8.2fGiB %8.2fGiB %+8.1f%%%s",
                    m["id"].get<std::string>().c_str(), m["quantity"].get<std::string>().c_str(),
                    m["stage"].get<int>(), m["published_GiB"].get<double>(), m["predicted_GiB"].get<double>(),
                    m["error_pct"].get<double>(), m.contains("known_issue") ? "  (known issue)" : "");
      std::cout << line << "\n";
    }
    std::snprintf(line, sizeof line, "memory: worst %.2f%% (target %.0f%%)",
                  r["memory"]["max_abs_error_pct"].get<double>(), r["memory"]["target_pct"].get<double>());
    std::cout << line << "\n";
  }
  const bool met = r["targets_met"].get<bool>();
  std::cout << (met ? "targets met" : "targets MISSED") << "\n";
  return met ? 0 : 1;
}

// `import megatron|hf FILE|- [--cluster C] [--nodes N]`: the config on stdout, what was
// ignored or assumed on stderr.
int import_command(const std::vector<std::string>& args) {
  if (args.size() < 3 || (args[1] != "megatron" && args[1] != "hf")) {
    std::cerr << "proteus import: expects megatron|hf FILE|-\n" << kUsage;
    return 2;
  }
  nlohmann::json options = nlohmann::json::object();
  for (size_t i = 3; i < args.size(); ++i) {
    if (args[i] == "--cluster" && i + 1 < args.size()) {
      options["cluster"] = args[++i];
    } else if (args[i] == "--nodes" && i + 1 < args.size()) {
      const std::string& n = args[++i];
      if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 6) {
        std::cerr << "proteus import: --nodes expects a positive integer, got '" << n << "'\n";
        return 2;
      }
      options["nodes"] = std::stoi(n);
    } else {
      std::cerr << "proteus import: unknown option '" << args[i] << "'\n" << kUsage;
      return 2;
    }
  }
  const std::string text = read_input(args[2]);
  const auto r = nlohmann::ordered_json::parse(proteus::import_json(args[1], text, options.dump()));
  std::cout << r["config"].dump(2) << "\n";
  for (const auto& s : r["ignored"]) std::cerr << "proteus import: ignored " << s.get<std::string>() << "\n";
  for (const auto& s : r["assumed"]) std::cerr << "proteus import: assumed " << s.get<std::string>() << "\n";
  return 0;
}

int run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string& cmd = args[0];
  if (cmd == "version") {
    std::cout << proteus::version() << "\n";
    return 0;
  }
  if (cmd == "presets") {
    std::cout << proteus::presets_json() << "\n";
    return 0;
  }
  if (args.size() < 2) {
    std::cerr << "proteus " << cmd << ": missing CONFIG\n" << kUsage;
    return 2;
  }
  if (cmd == "validate") return validate(args);
  if (cmd == "import") return import_command(args);
  if (cmd == "export") {
    if (args.size() != 3 || args[1] != "megatron") {
      std::cerr << "proteus export: expects megatron CONFIG\n" << kUsage;
      return 2;
    }
    std::cout << proteus::export_megatron_text(read_config(args[2]));
    return 0;
  }
  if (cmd == "search") return proteus_cli::search_command(args);
  bool tree = false;
  proteus::SimulateOptions options;
  options.fit_advice_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string out_path, trace_path;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--tree")
      tree = true;
    else if (a == "--timeline")
      options.timeline = true;
    else if (a == "--memory-curve")
      options.memory_curve = true;
    else if (a == "--wall-time")
      options.wall_time = true;
    else if (a == "--no-fit-advice")
      options.fit_advice = false;
    else if ((a == "-o" || a == "--trace") && i + 1 < args.size())
      (a == "-o" ? out_path : trace_path) = args[++i];
    else {
      std::cerr << "proteus " << cmd << ": unknown option '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  const std::string config = read_config(args[1]);
  if (cmd == "show") {
    write_output(tree ? proteus::tree_text(config) : proteus::show_json(config), out_path);
  } else if (cmd == "compile") {
    write_output(proteus::compile_json(config), out_path);
  } else if (cmd == "simulate") {
    // One simulation gives both the result and the trace.
    options.chrome_trace = !trace_path.empty();
    const proteus::SimulationOutput run = proteus::simulate_output(config, options);
    write_output(run.result, out_path);
    if (!trace_path.empty()) write_output(run.chrome_trace, trace_path);
  } else {
    std::cerr << "proteus: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  }
  return 0;
}

}  // namespace

// For `proteus search` (cli/search_command.cpp).
std::string proteus_cli::read_config_arg(const std::string& arg) { return read_config(arg); }

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return run(args);
  } catch (const proteus::Error& e) {
    std::cout << proteus::error_json(e) << "\n";
    std::cerr << "proteus: " << (e.path.empty() ? "" : e.path + ": ") << e.what() << "\n";
    return e.code == "internal" ? 1 : 2;
  } catch (const std::exception& e) {
    std::cout << proteus::error_json(proteus::Error("internal", "", e.what())) << "\n";
    std::cerr << "proteus: internal error: " << e.what() << "\n";
    return 1;
  }
}
