// proteus_bench: times `simulate` (parse -> compile -> topology -> execute -> result JSON) on
// config files, in process, and prints per case the median wall time of several runs, the
// median of each phase, tasks, events, flows, events per second and the peak memory of the
// process. Built natively and for WebAssembly (run under Node, see bench/CMakeLists.txt and
// scripts/bench.sh, which also times the whole `proteus simulate` process).
//
//   proteus_bench [--runs N] [--json] CONFIG...
//
// Each CONFIG is a JSON file (bench/cases/*.json) or a scenario preset name. For the peak
// memory of one case, run it in a process of its own (scripts/bench.sh does).
#include <sys/resource.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#endif

#include "proteus/api.h"
#include "proteus/compile.h"
#include "proteus/config.h"
#include "proteus/error.h"
#include "proteus/presets.h"
#include "proteus/report.h"
#include "proteus/run.h"
#include "proteus/simulation.h"
#include "proteus/topology.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time of this process in ms: on a loaded machine wall time includes waiting for a core,
// CPU time does not (it still includes cache and memory-bandwidth interference).
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Peak memory of this process in MiB: the resident set natively, the linear memory (which
// only grows) under WebAssembly.
double peak_mib() {
#ifdef __EMSCRIPTEN__
  return static_cast<double>(emscripten_get_heap_size()) / (1024.0 * 1024.0);
#else
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
#endif
}

std::string read_config(const std::string& arg) {
  std::ifstream f(arg, std::ios::binary);
  if (f) {
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
  }
  if (proteus::find_preset(proteus::PresetKind::Scenario, arg)) return "{\"preset\": \"" + arg + "\"}";
  throw proteus::Error("invalid_request", "", "cannot read config '" + arg + "'");
}

struct Run {
  double parse_ms = 0, compile_ms = 0, topology_ms = 0, execute_ms = 0, report_ms = 0, total_ms = 0,
         cpu_ms = 0;
  int64_t tasks = 0, events = 0, flows = 0, gpus = 0, ranks = 0;
  double iteration_s = 0;
  size_t result_bytes = 0;
};

// What proteus::simulate_json does, phase by phase.
Run run_once(const std::string& text) {
  Run r;
  const double c0 = cpu_ms();
  const auto t0 = Clock::now();
  auto t = t0;
  const proteus::Config config = proteus::parse_config(text);
  r.parse_ms = ms_since(t);
  t = Clock::now();
  const proteus::Topology topology = proteus::build_topology(config.cluster);
  r.topology_ms = ms_since(t);
  // A zero-bubble schedule planned from pass times compiles and plays twice (run.h): both
  // counted as compile and execute, in one figure under execute.
  const bool planned = proteus::zb_profiled(config);
  t = Clock::now();
  proteus::ConfigRun run;
  if (!planned) run.compiled = proteus::compile(config);
  r.compile_ms = ms_since(t);
  t = Clock::now();
  if (planned)
    run = proteus::run_config(config, topology, proteus::exec_options_of(config, false));
  else
    run.trace = proteus::execute(run.compiled.exec, proteus::cost_model_of(config), topology,
                                 proteus::exec_options_of(config, false));
  r.execute_ms = ms_since(t);
  const proteus::CompiledModel& compiled = run.compiled;
  const proteus::Trace& trace = run.trace;
  t = Clock::now();
  const std::string json =
      proteus::result_json({config, compiled.exec, trace, 0.0}, proteus::SimulateOptions{});
  r.report_ms = ms_since(t);
  r.total_ms = ms_since(t0);
  r.cpu_ms = cpu_ms() - c0;
  r.tasks = static_cast<int64_t>(compiled.exec.tasks.size());
  r.events = trace.events;
  r.flows = trace.flows;
  r.gpus = compiled.exec.gpus;
  r.ranks = static_cast<int64_t>(compiled.exec.ranks.size());
  r.iteration_s = trace.iteration_time_s;
  r.result_bytes = json.size();
  return r;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = b.rfind(".json");
  if (dot != std::string::npos && dot + 5 == b.size()) b.resize(dot);
  return b;
}

// glibc's malloc moves its mmap threshold as blocks are freed (up to 32 MiB) and trims the heap
// top past 128 KiB, so whether a run's large buffers are mmapped and returned to the system
// between runs, and faulted in again by the next one, depends on the sizes the previous run
// freed. The runs' median then measured that: on the GPT-3 case a change that did the same work
// moved it from 209 to 253 ms (compile 28 -> 49 ms of page faults; one run alone, 275 against
// 270). Fixed thresholds keep freed memory in the heap for the next run, whatever the sizes.
void pin_malloc_thresholds() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  pin_malloc_thresholds();
  int runs = 5;
  bool json = false;
  std::vector<std::string> configs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--json") {
      json = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: proteus_bench [--runs N] [--json] CONFIG...\n");
      return 0;
    } else {
      configs.push_back(a);
    }
  }
  if (configs.empty()) {
    std::fprintf(stderr, "proteus_bench: no CONFIG given\n");
    return 2;
  }
#ifdef __EMSCRIPTEN__
  const char* platform = "wasm";
#else
  const char* platform = "native";
#endif
  if (!json)
    std::printf("%-28s %6s %9s %9s %9s %9s %9s %9s %9s %10s %10s %11s %8s %14s\n", "case", "gpus",
                "median_ms", "cpu_ms", "parse", "compile", "topology", "execute", "report", "tasks", "events",
                "events/s", "peak_MiB", "iteration_s");
  for (const std::string& path : configs) {
    try {
      const std::string text = read_config(path);
      std::vector<Run> all;
      for (int i = 0; i < runs; ++i) all.push_back(run_once(text));
      auto med = [&](double Run::*field) {
        std::vector<double> v;
        for (const Run& r : all) v.push_back(r.*field);
        return median(v);
      };
      double min_ms = all[0].total_ms;
      for (const Run& r : all) min_ms = std::min(min_ms, r.total_ms);
      const Run& r0 = all[0];
      const double total = med(&Run::total_ms);
      const double exec = med(&Run::execute_ms);
      const double eps = exec > 0 ? static_cast<double>(r0.events) / (exec / 1000.0) : 0;
      const std::string name = base_name(path);
      if (json) {
        std::printf(
            "{\"case\":\"%s\",\"platform\":\"%s\",\"runs\":%d,\"gpus\":%lld,\"ranks\":%lld,\"median_ms\":%.3f,"
            "\"min_ms\":%.3f,\"cpu_ms\":%.3f,\"parse_ms\":%.3f,\"compile_ms\":%.3f,\"topology_ms\":%.3f,\"execute_ms\":%.3f,"
            "\"report_ms\":%.3f,\"tasks\":%lld,\"events\":%lld,\"flows\":%lld,\"events_per_s\":%.0f,"
            "\"peak_mib\":%.1f,\"iteration_s\":%.9g}\n",
            name.c_str(), platform, runs, static_cast<long long>(r0.gpus), static_cast<long long>(r0.ranks),
            total, min_ms, med(&Run::cpu_ms), med(&Run::parse_ms), med(&Run::compile_ms),
            med(&Run::topology_ms), exec, med(&Run::report_ms), static_cast<long long>(r0.tasks),
            static_cast<long long>(r0.events), static_cast<long long>(r0.flows), eps, peak_mib(),
            r0.iteration_s);
      } else {
        std::printf(
            "%-28s %6lld %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %10lld %10lld %11.3g %8.1f %14.9g\n",
            name.c_str(), static_cast<long long>(r0.gpus), total, med(&Run::cpu_ms), med(&Run::parse_ms),
            med(&Run::compile_ms), med(&Run::topology_ms), exec, med(&Run::report_ms),
            static_cast<long long>(r0.tasks), static_cast<long long>(r0.events), eps, peak_mib(),
            r0.iteration_s);
      }
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "proteus_bench: %s: %s\n", path.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}
