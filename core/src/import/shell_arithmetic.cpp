#include "shell_arithmetic.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "shell_lexer.h"

namespace proteus::import_detail {

namespace {

// A recursive-descent parser: sum := product (('+'|'-') product)*,
// product := atom (('*'|'/'|'%') atom)*, atom := '(' sum ')' | '-' atom | digits | name.
// A result outside 64 bits is a failure (bash wraps it around; a wrapped layer count or batch
// size is nonsense, and in C++ it would be undefined behaviour), and so is nesting deeper than
// kMaxDepth parentheses or minus signs, which a recursive parser would otherwise follow until
// the stack runs out.
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
  static constexpr int kMaxDepth = 200;

  // Marks the expression failed; the value returned with it is never used.
  int64_t fail() {
    ok_ = false;
    return 0;
  }
  int64_t sum() {
    int64_t v = product();
    for (skip(); i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'); skip()) {
      const char op = s_[i_++];
      const int64_t r = product();
      if (op == '+' ? __builtin_add_overflow(v, r, &v) : __builtin_sub_overflow(v, r, &v)) return fail();
    }
    return v;
  }
  int64_t product() {
    int64_t v = atom();
    for (skip(); i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/' || s_[i_] == '%'); skip()) {
      const char op = s_[i_++];
      const int64_t r = atom();
      if (op == '*') {
        if (__builtin_mul_overflow(v, r, &v)) return fail();
        continue;
      }
      // Division by zero, and the one quotient outside 64 bits (the most negative / -1).
      if (r == 0 || (r == -1 && v == std::numeric_limits<int64_t>::min())) return fail();
      v = op == '/' ? v / r : v % r;
    }
    return v;
  }
  int64_t atom() {
    skip();
    if (i_ >= s_.size() || depth_ >= kMaxDepth) return fail();
    if (s_[i_] == '(') {
      ++i_;
      ++depth_;
      const int64_t v = sum();
      --depth_;
      skip();
      if (i_ < s_.size() && s_[i_] == ')')
        ++i_;
      else
        ok_ = false;
      return v;
    }
    if (s_[i_] == '-') {
      ++i_;
      ++depth_;
      const int64_t v = atom();
      --depth_;
      if (v == std::numeric_limits<int64_t>::min()) return fail();
      return -v;
    }
    if (std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      int64_t v = 0;
      for (; i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])); ++i_) {
        const int digit = s_[i_] - '0';
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v)) ok_ = false;
      }
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
    errno = 0;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || errno == ERANGE) ok_ = false;
    return x;
  }

  const std::string& s_;
  const ShellLookup& variable_;
  size_t i_ = 0;
  int depth_ = 0;
  bool ok_ = true;
};

}  // namespace

std::optional<int64_t> shell_arithmetic(const std::string& expr, const ShellLookup& variable) {
  int64_t v = 0;
  if (!Arithmetic(expr, variable).eval(v)) return std::nullopt;
  return v;
}

}  // namespace proteus::import_detail
