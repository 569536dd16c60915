// The optional "search" object: which values of each strategy knob the search may try
// (docs/search.md). Each list is checked like the strategy field it restricts.
#include "limits.h"
#include "readers.h"

namespace proteus::config_detail {

namespace {

namespace L = config_limits;

std::vector<int64_t> integer_list(const ObjectReader& in, const char* key, int64_t min, int64_t max) {
  if (!in.has(key)) return {};
  std::vector<int64_t> values = as_integer_array(in.at(key), in.path_of(key), 4096, min, max);
  if (values.empty()) throw invalid_config(in.path_of(key), "the list is empty: omit it to try every value");
  return values;
}

template <class E, size_t N>
std::vector<E> enum_list(const ObjectReader& in, const char* key, const E (&all)[N]) {
  if (!in.has(key)) return {};
  const Json& list = as_array(in.at(key), in.path_of(key), 64);
  if (list.empty()) throw invalid_config(in.path_of(key), "the list is empty: omit it to try every value");
  std::vector<E> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = index_path(in.path_of(key), i);
    const std::string text = as_string(list[i], path);
    std::string expected;
    bool found = false;
    for (E e : all) {
      if (text == to_string(e)) {
        out.push_back(e);
        found = true;
      }
      expected += (expected.empty() ? "" : ", ") + std::string(to_string(e));
    }
    if (!found) throw invalid_config(path, "\"" + text + "\" is not one of: " + expected);
  }
  return out;
}

// A list of module sets, each a list of Megatron-Core names: [["core_attn"], ["moe_act", "layernorm"]].
std::vector<RecomputeModules> module_sets(const ObjectReader& in, const char* key) {
  if (!in.has(key)) return {};
  const Json& list = as_array(in.at(key), in.path_of(key), 256);
  if (list.empty())
    throw invalid_config(in.path_of(key), "the list is empty: omit it to try the derived sets");
  std::vector<RecomputeModules> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = index_path(in.path_of(key), i);
    if (!list[i].is_array())
      throw invalid_config(path, "expected a list of module names such as [\"core_attn\", \"moe_act\"]");
    const RecomputeModules set = read_recompute_modules(list[i], path);
    if (set == 0)
      throw invalid_config(path, "the set is empty: selective recompute needs at least one module");
    out.push_back(set);
  }
  return out;
}

// MoE parallel folding per candidate: 1 (expert_tp 1, folded) or "tp" (expert_tp = tp), read as
// 1 and 0.
std::vector<int64_t> expert_tp_list(const ObjectReader& in) {
  if (!in.has("expert_tp")) return {};
  const Json& list = as_array(in.at("expert_tp"), in.path_of("expert_tp"), 2);
  if (list.empty()) throw invalid_config(in.path_of("expert_tp"), "the list is empty: omit it to try both");
  std::vector<int64_t> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& v = list[i];
    if (v.is_string() && v.get<std::string>() == "tp") {
      out.push_back(0);
    } else if (v.is_number_integer() && v.get<int64_t>() == 1) {
      out.push_back(1);
    } else {
      throw invalid_config(
          index_path(in.path_of("expert_tp"), i),
          "expected 1 (experts whole, the tp ranks folded into expert parallelism) or \"tp\" "
          "(experts split like the dense MLP), not " +
              v.dump());
    }
  }
  return out;
}

}  // namespace

SearchSpec read_search(const Json& value, const std::string& path) {
  ObjectReader in(value, path,
                  {"dp", "tp", "pp", "cp", "ep", "virtual_stages", "micro_batch", "sequence_parallel", "zero",
                   "recompute", "recompute_modules", "schedule", "memory_reserve", "expert_tp"});
  SearchSpec s;
  s.dp = integer_list(in, "dp", 1, L::kMaxParallel);
  s.tp = integer_list(in, "tp", 1, L::kMaxParallel);
  s.pp = integer_list(in, "pp", 1, L::kMaxParallel);
  s.cp = integer_list(in, "cp", 1, L::kMaxParallel);
  s.ep = integer_list(in, "ep", 1, L::kMaxParallel);
  s.virtual_stages = integer_list(in, "virtual_stages", 1, L::kMaxVirtualStages);
  s.micro_batch = integer_list(in, "micro_batch", 1, L::kMaxBatch);
  s.zero = integer_list(in, "zero", 0, 3);
  if (in.has("sequence_parallel")) {
    const Json& list = as_array(in.at("sequence_parallel"), in.path_of("sequence_parallel"), 2);
    if (list.empty())
      throw invalid_config(in.path_of("sequence_parallel"), "the list is empty: omit it to try both");
    for (size_t i = 0; i < list.size(); ++i)
      s.sequence_parallel.push_back(as_bool(list[i], index_path(in.path_of("sequence_parallel"), i)) ? 1 : 0);
  }
  s.recompute = enum_list(in, "recompute", kRecomputes);
  s.schedule = enum_list(in, "schedule", kSchedules);
  s.recompute_modules = module_sets(in, "recompute_modules");
  s.expert_tp = expert_tp_list(in);
  s.memory_reserve = in.number("memory_reserve", 0, 0, 0.9);
  return s;
}

}  // namespace proteus::config_detail
