// `proteus search CONFIG [options]` and `proteus search --merge FILES...`: parses the options,
// calls core's search_json / merge_search_json and prints a table (or the JSON with --json).
// Knob flags (--tp 1,2,4 ...) and --memory-reserve are written into the config's "search"
// object, so they are checked exactly as the config's own lists are.
#include "search_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "proteus/error.h"
#include "proteus/search.h"

namespace proteus_cli {

namespace {

using Json = nlohmann::ordered_json;

const char* kSearchUsage =
    "usage: proteus search CONFIG [--json] [--top K] [--threads N] [--shard K/N] [--quiet] [-o FILE]\n"
    "                      [--tp LIST] [--pp LIST] [--dp LIST] [--cp LIST] [--ep LIST]\n"
    "                      [--virtual-stages LIST] [--micro-batch LIST] [--zero LIST]\n"
    "                      [--sequence-parallel LIST] [--recompute LIST] [--schedule LIST]\n"
    "                      [--recompute-modules SETS] [--expert-tp tp,1] [--memory-reserve FRACTION]\n"
    "       proteus search --merge FILE... [--json] [-o FILE]\n"
    "LIST is comma-separated (--tp 1,2,4,8 --recompute none,selective --sequence-parallel true).\n"
    "SETS are comma-separated sets of Megatron-Core recompute modules joined by '+'\n"
    "(--recompute-modules core_attn,core_attn+moe_act+layernorm).\n"
    "A search that runs longer than a few seconds reports its progress on stderr (--quiet: not).\n";

proteus::Error usage_error(const std::string& message) {
  return proteus::Error("invalid_request", "", message + "\n" + kSearchUsage);
}

int parse_int(const std::string& text, const std::string& flag) {
  try {
    size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {}
  throw usage_error(flag + " expects an integer, not '" + text + "'");
}

// "1,2,4" -> [1,2,4]; "true,false" -> [true,false]; "none,full" -> ["none","full"].
Json parse_list(const std::string& text) {
  Json list = Json::array();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == "true" || item == "false") {
      list.push_back(item == "true");
      continue;
    }
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used == item.size()) {
        list.push_back(v);
        continue;
      }
    } catch (const std::exception&) {}
    list.push_back(item);
  }
  return list;
}

// "core_attn,moe_act+layernorm" -> [["core_attn"], ["moe_act", "layernorm"]] (the config
// reader checks the names).
Json parse_module_sets(const std::string& text) {
  Json sets = Json::array();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    Json set = Json::array();
    std::stringstream names(item);
    std::string name;
    while (std::getline(names, name, '+')) set.push_back(name);
    sets.push_back(set);
  }
  return sets;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw proteus::Error("invalid_request", "", "cannot read '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

void print_table(const Json& r, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%4s %10s %6s %9s  %s\n", "rank", "iter_s", "MFU", "peak_GiB", "strategy");
  out << line;
  int rank = 0;
  for (const Json& c : r["ranked"]) {
    const std::string text = c["summary"].get<std::string>();
    std::snprintf(line, sizeof line, "%4d %10.4f %5.1f%% %9.1f  %s\n", ++rank,
                  c["iteration_time_s"].get<double>(), 100 * c["mfu"].get<double>(),
                  c["peak_memory_GiB"].get<double>(), text.c_str());
    out << line;
  }
  const Json& n = r["counts"];
  out << "candidates: " << n["enumerated"] << " enumerated, " << n["invalid"] << " invalid, "
      << n["no_fit_bound"] << " do not fit (memory bound), " << n["pruned_time"] << " pruned (time bound), "
      << n["simulated"] << " simulated (" << n["no_fit_simulated"] << " of them do not fit), " << n["failed"]
      << " failed; " << n["layer_bounds"] << " given layer bounds, " << n["compiled_bounds"]
      << " compiled bounds\n";
  out << "memory budget: " << fixed(r["memory_budget_GiB"].get<double>(), 1) << " GiB per GPU\n";
  for (const Json& i : r["invalid"])
    out << "invalid: " << i["count"] << " x " << i["path"].get<std::string>() << ": "
        << i["message"].get<std::string>() << " (first: #" << i["first_index"] << ")\n";
}

// Progress on stderr, at most every kProgressEvery_s and only once a search has run that long,
// so that a quick search prints nothing and a long one shows it is moving (and how far).
class ProgressPrinter {
 public:
  void operator()(const proteus::SearchProgress& p) {
    const double now_s = seconds_since(start_);
    if (now_s - last_s_ < kProgressEvery_s) return;
    last_s_ = now_s;
    char line[200];
    std::snprintf(
        line, sizeof line,
        "search: %.0f s, %lld of %lld candidates decided (%lld simulated), %lld waiting, %lld bounds "
        "computed",
        now_s, static_cast<long long>(p.decided), static_cast<long long>(p.candidates),
        static_cast<long long>(p.simulated), static_cast<long long>(p.queued),
        static_cast<long long>(p.bounds_tightened));
    std::cerr << line;
    if (p.best_s > 0) std::cerr << "; best so far " << fixed(p.best_s, 4) << " s: " << p.best;
    if (!told_)
      std::cerr
          << "\n  (a smaller space runs faster: --tp, --pp, --micro-batch, ... or the config's \"search\")";
    told_ = true;
    std::cerr << std::endl;
  }

 private:
  static constexpr double kProgressEvery_s = 5;
  using Clock = std::chrono::steady_clock;
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  Clock::time_point start_ = Clock::now();
  double last_s_ = 0;
  bool told_ = false;
};

void write(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) throw proteus::Error("invalid_request", "", "cannot write '" + path + "'");
  f << text;
}

}  // namespace

int search_command(const std::vector<std::string>& args) {
  proteus::SearchOptions options;
  options.threads = std::max(1u, std::thread::hardware_concurrency());
  bool json = false, merge = false, quiet = false;
  std::string out_path;
  std::vector<std::string> positional;
  Json knobs = Json::object();
  const std::vector<std::pair<std::string, std::string>> knob_flags = {
      {"--tp", "tp"},
      {"--pp", "pp"},
      {"--dp", "dp"},
      {"--cp", "cp"},
      {"--ep", "ep"},
      {"--virtual-stages", "virtual_stages"},
      {"--micro-batch", "micro_batch"},
      {"--zero", "zero"},
      {"--sequence-parallel", "sequence_parallel"},
      {"--recompute", "recompute"},
      {"--schedule", "schedule"},
      {"--expert-tp", "expert_tp"}};
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw usage_error(a + " needs a value");
      return args[++i];
    };
    bool knob = false;
    for (const auto& [flag, key] : knob_flags)
      if (a == flag) {
        knobs[key] = parse_list(value());
        knob = true;
      }
    if (knob) continue;
    if (a == "--json") {
      json = true;
    } else if (a == "--merge") {
      merge = true;
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "--top") {
      options.top = parse_int(value(), a);
    } else if (a == "--threads") {
      options.threads = parse_int(value(), a);
    } else if (a == "--shard") {
      const std::string v = value();
      const size_t slash = v.find('/');
      if (slash == std::string::npos) throw usage_error("--shard expects K/N, for example 0/4");
      options.shard = parse_int(v.substr(0, slash), a);
      options.shards = parse_int(v.substr(slash + 1), a);
    } else if (a == "--recompute-modules") {
      knobs["recompute_modules"] = parse_module_sets(value());
    } else if (a == "--memory-reserve") {
      try {
        knobs["memory_reserve"] = std::stod(value());
      } catch (const std::exception&) {
        throw usage_error("--memory-reserve expects a fraction such as 0.05");
      }
    } else if (a == "-o") {
      out_path = value();
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      throw usage_error("unknown option '" + a + "'");
    } else {
      positional.push_back(a);
    }
  }
  std::string result;
  if (merge) {
    if (positional.empty()) throw usage_error("--merge needs the shard result files");
    std::vector<std::string> texts;
    for (const std::string& p : positional) texts.push_back(read_file(p));
    result = proteus::merge_search_json(texts);
  } else {
    if (positional.size() != 1) throw usage_error("expects exactly one CONFIG");
    std::string config = read_config_arg(positional[0]);
    if (!knobs.empty()) {
      Json j = Json::parse(config, nullptr, false);
      if (!j.is_object()) throw proteus::Error("invalid_json", "", "the config is not a JSON object");
      if (!j.contains("search")) j["search"] = Json::object();
      if (!j["search"].is_object()) throw proteus::invalid_config("search", "search must be an object");
      for (auto& [key, v] : knobs.items()) j["search"][key] = v;
      config = j.dump();
    }
    if (!quiet) options.progress = ProgressPrinter();
    result = proteus::search_json(config, options);
  }
  if (json) {
    write(result + "\n", out_path);
  } else {
    std::ostringstream table;
    print_table(Json::parse(result), table);
    write(table.str(), out_path);
  }
  return 0;
}

}  // namespace proteus_cli
