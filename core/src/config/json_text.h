// Config text -> JSON value, with the input limits (size, nesting) and "invalid_json" errors
// that give a line and column. Also rejects duplicate keys, which JSON parsers silently merge.
#pragma once
#include <string>
#include "json_reader.h"

namespace proteus::config_detail {

// `what` names the text in messages ("the config", "preset \"llama3-8b\"").
Json parse_json_text(const std::string& text, const std::string& what);

}  // namespace proteus::config_detail
