// Expansion of a launch script's words (shell_script.h): `$X`, `${X}`, `${A[@]}`, `${#X}`,
// `${X:-default}` `${X-default}` `${X:=default}` `${X:+alt}`, `$(( ))` (shell_arithmetic.h),
// and bash's splitting of unquoted expansions into fields. A command substitution `$(...)`
// stays as written; the script's own arguments and process state (`$1`, `$@`, `$?`) are empty.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "shell_lexer.h"

namespace proteus::import_detail {

// The script's variables so far; a scalar is an array of one element.
struct ShellVariables {
  std::map<std::string, std::vector<std::string>> values;

  std::vector<std::string> value(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? std::vector<std::string>{} : it->second;
  }
  std::string scalar(const std::string& name) const {
    auto v = value(name);
    return v.empty() ? "" : v.front();
  }
  bool has(const std::string& name) const { return values.count(name) > 0; }
};

// A double-quoted text with its expansions done (arrays joined by spaces).
std::string expand_text(const std::string& s, const ShellVariables& vars);

// A word -> fields, with bash's splitting of unquoted expansions.
std::vector<std::string> expand_word(const Word& w, const ShellVariables& vars);

}  // namespace proteus::import_detail
