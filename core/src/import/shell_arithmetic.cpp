#include "shell_arithmetic.h"

#include <cctype>
#include <cstdlib>

#include "shell_lexer.h"

namespace proteus::import_detail {

namespace {

// A recursive-descent parser: sum := product (('+'|'-') product)*,
// product := atom (('*'|'/'|'%') atom)*, atom := '(' sum ')' | '-' atom | digits | name.
class Arithmetic {
 public:
  Arithmetic(const std::string& s, const ShellLookup& variable) : s_(s), variable_(variable) {}
  bool eval(int64_t& out) {
    ok_ = true;
    out = sum();
    skip();
    return ok_ && i_ == s_.size();
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  int64_t sum() {
    int64_t v = product();
    for (skip(); i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'); skip()) {
      const char op = s_[i_++];
      const int64_t r = product();
      v = op == '+' ? v + r : v - r;
    }
    return v;
  }
  int64_t product() {
    int64_t v = atom();
    for (skip(); i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/' || s_[i_] == '%'); skip()) {
      const char op = s_[i_++];
      const int64_t r = atom();
      if (op != '*' && r == 0) {
        ok_ = false;
        return 0;
      }
      v = op == '*' ? v * r : op == '/' ? v / r : v % r;
    }
    return v;
  }
  int64_t atom() {
    skip();
    if (i_ >= s_.size()) {
      ok_ = false;
      return 0;
    }
    if (s_[i_] == '(') {
      ++i_;
      const int64_t v = sum();
      skip();
      if (i_ < s_.size() && s_[i_] == ')')
        ++i_;
      else
        ok_ = false;
      return v;
    }
    if (s_[i_] == '-') {
      ++i_;
      return -atom();
    }
    if (std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      int64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        v = v * 10 + (s_[i_++] - '0');
      return v;
    }
    size_t k = i_;
    if (s_[k] == '$') ++k;
    size_t start = k;
    while (k < s_.size() && name_char(s_[k])) ++k;
    if (k == start) {
      ok_ = false;
      return 0;
    }
    const std::string v = variable_(s_.substr(start, k - start));
    i_ = k;
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end) ok_ = false;
    return x;
  }

  const std::string& s_;
  const ShellLookup& variable_;
  size_t i_ = 0;
  bool ok_ = true;
};

}  // namespace

std::optional<int64_t> shell_arithmetic(const std::string& expr, const ShellLookup& variable) {
  int64_t v = 0;
  if (!Arithmetic(expr, variable).eval(v)) return std::nullopt;
  return v;
}

}  // namespace proteus::import_detail
