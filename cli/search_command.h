// `proteus search`: the strategy search on the command line (docs/search.md).
#pragma once
#include <string>
#include <vector>

namespace proteus_cli {

// args[0] == "search". Returns the exit code; throws proteus::Error for bad input.
int search_command(const std::vector<std::string>& args);
std::string read_config_arg(const std::string& arg);  // main.cpp: a file, '-' or a scenario name

}  // namespace proteus_cli
