// `proteus search`: the strategy search on the command line (docs/search.md).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace proteus_cli {

// args[0] == "search". Returns the exit code; throws proteus::Error for bad input.
int search_command(const std::vector<std::string>& args);
std::string read_config_arg(const std::string& arg);  // main.cpp: a file, '-' or a scenario name
// One line for a strategy of a search result ("dp=16 tp=4 pp=1 mb=1 1f1b sp zero=1 recompute=none").
std::string strategy_summary(const nlohmann::ordered_json& strategy);

}  // namespace proteus_cli
