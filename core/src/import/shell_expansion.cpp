#include "shell_expansion.h"

#include <cctype>
#include <cstdint>

#include "shell_arithmetic.h"

namespace proteus::import_detail {

namespace {

// Unquoted text split at blanks (bash's default IFS).
std::vector<std::string> split_fields(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!w.empty()) out.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

// The word of a ${X:-word} default with its quotes removed ("1" -> 1).
std::string without_quotes(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '"' && c != '\'') out += c;
  return out;
}

// `${...}` / `$NAME` / `$((...))` -> the expansion's fields (arrays give several; a quoted
// scalar one).
std::vector<std::string> expand_dollar(const std::string& d, const ShellVariables& vars) {
  if (d.rfind("$((", 0) == 0 && d.size() >= 5 && d.compare(d.size() - 2, 2, "))") == 0) {
    const std::string inner = expand_text(d.substr(3, d.size() - 5), vars);
    const auto v = shell_arithmetic(inner, [&vars](const std::string& name) { return vars.scalar(name); });
    if (v) return {std::to_string(*v)};
    return {d};
  }
  if (d.rfind("$(", 0) == 0) return {d};  // command substitution: unknowable here
  std::string body = d.size() > 2 && d[1] == '{' ? d.substr(2, d.size() - 3) : d.substr(1);
  if (body.empty()) return {"$"};
  if (body == "@" || body == "*" || body == "#" || body == "?" || body == "$" || body == "!" || body == "-" ||
      std::isdigit(static_cast<unsigned char>(body[0]))) {
    return {};  // the script's own arguments and process state: none here
  }
  if (body[0] == '#') return {std::to_string(vars.scalar(body.substr(1)).size())};
  size_t k = 0;
  while (k < body.size() && name_char(body[k])) ++k;
  const std::string name = body.substr(0, k);
  const std::string rest = body.substr(k);
  if (rest == "[@]" || rest == "[*]") return vars.value(name);
  if (rest.empty()) return {vars.scalar(name)};
  // ${X:-default} ${X-default} ${X:=default} ${X:+alt}
  const bool colon = rest[0] == ':';
  if (colon && rest.size() < 2) return {d};  // `${X:}`: bash's "bad substitution"; kept as written
  const std::string op = rest.substr(colon ? 1 : 0, 1);
  const std::string arg = rest.substr(colon ? 2 : 1);
  const bool set = vars.has(name) && (!colon || !vars.scalar(name).empty());
  if (op == "-" || op == "=") return {set ? vars.scalar(name) : expand_text(without_quotes(arg), vars)};
  if (op == "+") return {set ? expand_text(without_quotes(arg), vars) : ""};
  return {d};
}

}  // namespace

std::string expand_text(const std::string& s, const ShellVariables& vars) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '$') {
      std::string d;
      i = copy_dollar(s, i, d);
      std::string joined;
      for (const std::string& f : expand_dollar(d, vars)) joined += (joined.empty() ? "" : " ") + f;
      out += joined;
    } else {
      out += s[i] == '\x01' ? '$' : s[i];
      ++i;
    }
  }
  return out;
}

std::vector<std::string> expand_word(const Word& w, const ShellVariables& vars) {
  std::vector<std::string> fields;
  std::string cur;
  bool have = w.quoted();
  auto append_split = [&](const std::string& v) {
    auto parts = split_fields(v);
    if (parts.empty()) return;
    const bool lead = std::isspace(static_cast<unsigned char>(v.front()));
    const bool trail = std::isspace(static_cast<unsigned char>(v.back()));
    for (size_t p = 0; p < parts.size(); ++p) {
      if (p > 0 || (lead && !cur.empty())) {
        if (have || !cur.empty()) fields.push_back(cur);
        cur.clear();
      }
      cur += parts[p];
      have = true;
    }
    if (trail) {
      fields.push_back(cur);
      cur.clear();
      have = false;
    }
  };
  for (const Segment& seg : w.segments) {
    if (seg.quote == '\'') {
      cur += seg.text;
      have = true;
      continue;
    }
    for (size_t i = 0; i < seg.text.size();) {
      if (seg.text[i] != '$') {
        cur += seg.text[i] == '\x01' ? '$' : seg.text[i];
        have = true;
        ++i;
        continue;
      }
      std::string d;
      i = copy_dollar(seg.text, i, d);
      const auto values = expand_dollar(d, vars);
      const bool array = d.find("[@]") != std::string::npos;
      if (seg.quote == '"') {
        for (size_t v = 0; v < values.size(); ++v) {
          if (v > 0 && array) {
            fields.push_back(cur);
            cur.clear();
          }
          cur += (v > 0 && !array ? " " : "") + values[v];
        }
        have = true;
      } else {
        for (const std::string& v : values) append_split(v + (array ? " " : ""));
      }
    }
  }
  if (have || !cur.empty()) fields.push_back(cur);
  return fields;
}

}  // namespace proteus::import_detail
