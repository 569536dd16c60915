// proteus: the command-line front end. Thin: reads files, calls core/api, prints JSON.
// Exit codes: 0 success, 2 invalid input (the error JSON is printed on stdout), 1 other failures.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "proteus/api.h"
#include "proteus/presets.h"

namespace {

const char* kUsage =
    "usage: proteus <command> [args]\n"
    "  presets                         list the built-in models, clusters and scenarios\n"
    "  show CONFIG [--tree]            print the fully resolved config (or the strategy tree)\n"
    "  compile CONFIG                  print execution-graph statistics (params, FLOPs, collectives)\n"
    "  simulate CONFIG [--timeline] [--memory-curve] [--wall-time] [--trace FILE] [-o FILE]\n"
    "                                  simulate one training iteration and print the result JSON\n"
    "  version\n"
    "CONFIG is a JSON file, '-' for standard input, or the name of a scenario preset.\n";

std::string read_stream(std::istream& in) {
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A config argument: a file, stdin, or a scenario preset by name.
std::string read_config(const std::string& arg) {
  if (arg == "-") return read_stream(std::cin);
  std::ifstream f(arg, std::ios::binary);
  if (f) return read_stream(f);
  if (proteus::find_preset(proteus::PresetKind::Scenario, arg)) return "{\"preset\": \"" + arg + "\"}";
  throw proteus::Error("invalid_request", "", "cannot read config '" + arg + "': no such file or scenario preset");
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
  bool tree = false;
  proteus::SimulateOptions options;
  std::string out_path, trace_path;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--tree") tree = true;
    else if (a == "--timeline") options.timeline = true;
    else if (a == "--memory-curve") options.memory_curve = true;
    else if (a == "--wall-time") options.wall_time = true;
    else if ((a == "-o" || a == "--trace") && i + 1 < args.size()) (a == "-o" ? out_path : trace_path) = args[++i];
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
    write_output(proteus::simulate_json(config, options), out_path);
    if (!trace_path.empty()) write_output(proteus::chrome_trace_json(config), trace_path);
  } else {
    std::cerr << "proteus: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  }
  return 0;
}

}  // namespace

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
