#include "shell_script.h"

#include <cctype>
#include <cstdint>

namespace proteus::import_detail {

namespace {

// ---------------------------------------------------------------------------------------------
// Lexing: words made of quoted and unquoted segments; separators; array parentheses.

struct Segment {
  std::string text;
  char quote = 0;  // 0 unquoted, '\'' single (literal), '"' double (expanded, not split)
};

struct Word {
  std::vector<Segment> segments;
  bool quoted() const {
    for (const Segment& s : segments)
      if (s.quote) return true;
    return false;
  }
  // The word's text when it is one plain unquoted piece (keywords, assignments).
  std::string plain() const {
    std::string out;
    for (const Segment& s : segments) {
      if (s.quote) return "";
      out += s.text;
    }
    return out;
  }
};

enum class TokenKind { Word, End, AndOr, LParen, RParen };

struct Token {
  TokenKind kind;
  Word word;
  int line;
};

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Copies `$...` starting at text[i] == '$' (with its braces or parentheses balanced) into out;
// returns the index after it.
size_t copy_dollar(const std::string& text, size_t i, std::string& out) {
  size_t start = i++;
  if (i < text.size() && (text[i] == '{' || text[i] == '(')) {
    const char open = text[i], close = open == '{' ? '}' : ')';
    int depth = 0;
    for (; i < text.size(); ++i) {
      if (text[i] == open) ++depth;
      if (text[i] == close && --depth == 0) {
        ++i;
        break;
      }
    }
  } else {
    while (i < text.size() && name_char(text[i])) ++i;
    if (i == start + 1 && i < text.size() && std::string("@*#?$!-").find(text[i]) != std::string::npos) ++i;
  }
  out += text.substr(start, i - start);
  return i;
}

class Lexer {
 public:
  explicit Lexer(const std::string& text) : t_(text) {}

  std::vector<Token> run(std::vector<std::string>& sbatch) {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\\' && i_ + 1 < t_.size() && (t_[i_ + 1] == '\n' || t_[i_ + 1] == '\r')) {
        i_ += t_[i_ + 1] == '\r' && i_ + 2 < t_.size() && t_[i_ + 2] == '\n' ? 3 : 2;
        ++line_;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        end_word();
        ++i_;
      } else if (c == '\n' || c == ';') {
        end_word();
        push(TokenKind::End);
        if (c == '\n') ++line_;
        ++i_;
      } else if (c == '&' || c == '|') {
        end_word();
        const bool doubled = i_ + 1 < t_.size() && t_[i_ + 1] == c;
        if (doubled) {
          push(TokenKind::AndOr);
          tokens_.back().word.segments.push_back({std::string(2, c), 0});
        } else {
          push(TokenKind::End);  // a pipe or a background job: the next command starts
        }
        i_ += doubled ? 2 : 1;
      } else if (c == '#' && !in_word_) {
        comment(sbatch);
      } else if (c == '(') {
        const bool array = in_word_ && !word_.segments.empty() && word_.segments.back().quote == 0 &&
                           !word_.segments.back().text.empty() && word_.segments.back().text.back() == '=';
        end_word();
        push(TokenKind::LParen);
        (void)array;
        ++i_;
      } else if (c == ')') {
        end_word();
        push(TokenKind::RParen);
        ++i_;
      } else if (c == '<' && placeholder_end() != std::string::npos) {
        // "<PATH TO DATA>": a placeholder in an example script, kept as one literal word.
        const size_t end = placeholder_end();
        add({t_.substr(i_, end + 1 - i_), '\''});
        i_ = end + 1;
      } else if ((c == '>' || c == '<') && !(c == '<' && i_ + 1 < t_.size() && t_[i_ + 1] == '(')) {
        redirection();
      } else if (c == '\'') {
        size_t end = t_.find('\'', i_ + 1);
        if (end == std::string::npos) end = t_.size();
        add({t_.substr(i_ + 1, end - i_ - 1), '\''});
        count_lines(i_, end);
        i_ = end + 1;
      } else if (c == '"') {
        double_quoted();
      } else if (c == '`') {
        size_t end = t_.find('`', i_ + 1);
        if (end == std::string::npos) end = t_.size();
        add({"$(" + t_.substr(i_ + 1, end - i_ - 1) + ")", 0});
        count_lines(i_, end);
        i_ = end + 1;
      } else if (c == '$') {
        std::string s;
        const size_t end = copy_dollar(t_, i_, s);
        count_lines(i_, end);
        i_ = end;
        add({s, 0});
      } else if (c == '\\' && i_ + 1 < t_.size()) {
        add({std::string(1, t_[i_ + 1]), '\''});  // an escaped character is literal
        i_ += 2;
      } else {
        add({std::string(1, c), 0});
        ++i_;
      }
    }
    end_word();
    push(TokenKind::End);
    return std::move(tokens_);
  }

 private:
  void count_lines(size_t from, size_t to) {
    for (size_t k = from; k < to && k < t_.size(); ++k)
      if (t_[k] == '\n') ++line_;
  }
  void add(Segment s) {
    in_word_ = true;
    if (!word_.segments.empty() && word_.segments.back().quote == s.quote && s.quote == 0 &&
        s.text.find('$') == std::string::npos && word_.segments.back().text.find('$') == std::string::npos) {
      word_.segments.back().text += s.text;
    } else {
      word_.segments.push_back(std::move(s));
    }
  }
  void end_word() {
    if (!in_word_) return;
    tokens_.push_back({TokenKind::Word, std::move(word_), line_});
    word_ = Word{};
    in_word_ = false;
  }
  void push(TokenKind kind) { tokens_.push_back({kind, Word{}, line_}); }

  void comment(std::vector<std::string>& sbatch) {
    size_t end = t_.find('\n', i_);
    if (end == std::string::npos) end = t_.size();
    const std::string body = t_.substr(i_, end - i_);
    if (body.rfind("#SBATCH", 0) == 0) {
      std::string w;
      for (char ch : body.substr(7) + " ") {
        if (ch == ' ' || ch == '\t') {
          if (!w.empty()) sbatch.push_back(w);
          w.clear();
        } else {
          w += ch;
        }
      }
    }
    i_ = end;
  }

  // The '>' closing a "<...>" placeholder that starts at i_ on the same line, or npos.
  size_t placeholder_end() const {
    const size_t close = t_.find('>', i_ + 1), newline = t_.find('\n', i_ + 1);
    if (close == std::string::npos || (newline != std::string::npos && newline < close))
      return std::string::npos;
    if (close == i_ + 1 || t_[i_ + 1] == ' ' || t_[i_ + 1] == '<' || t_[i_ + 1] == '&')
      return std::string::npos;
    return close;
  }

  // `> file`, `2>&1`, `>> log`, `< input`: the redirection and its target are not arguments.
  void redirection() {
    if (in_word_ && word_.segments.size() == 1 && word_.segments[0].quote == 0) {
      const std::string& w = word_.segments[0].text;
      bool digits = !w.empty();
      for (char ch : w) digits = digits && std::isdigit(static_cast<unsigned char>(ch));
      if (digits) {
        word_ = Word{};
        in_word_ = false;
      }
    }
    end_word();
    ++i_;
    while (i_ < t_.size() && (t_[i_] == '>' || t_[i_] == '&')) {
      if (t_[i_] == '&') {
        ++i_;
        while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
        return;
      }
      ++i_;
    }
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
    if (t_.compare(i_, 2, "--") == 0) return;  // an option, not a file name
    // Skip the target word (possibly quoted).
    while (i_ < t_.size() && !std::isspace(static_cast<unsigned char>(t_[i_])) && t_[i_] != ';') {
      if (t_[i_] == '"' || t_[i_] == '\'') {
        size_t end = t_.find(t_[i_], i_ + 1);
        i_ = end == std::string::npos ? t_.size() : end + 1;
      } else {
        ++i_;
      }
    }
  }

  void double_quoted() {
    std::string s;
    size_t k = i_ + 1;
    while (k < t_.size() && t_[k] != '"') {
      if (t_[k] == '\\' && k + 1 < t_.size()) {
        const char n = t_[k + 1];
        if (n == '\n') {
          ++line_;
        } else if (n == '"' || n == '\\' || n == '$' || n == '`') {
          s += n == '$' ? std::string("\x01") : std::string(1, n);  // \x01: a literal '$'
        } else {
          s += '\\';
          s += n;
        }
        k += 2;
      } else if (t_[k] == '$') {
        k = copy_dollar(t_, k, s);
      } else if (t_[k] == '`') {
        size_t end = t_.find('`', k + 1);
        if (end == std::string::npos) end = t_.size();
        s += "$(" + t_.substr(k + 1, end - k - 1) + ")";
        k = end + 1;
      } else {
        if (t_[k] == '\n') ++line_;
        s += t_[k++];
      }
    }
    add({s, '"'});
    i_ = k + 1;
  }

  const std::string& t_;
  size_t i_ = 0;
  int line_ = 1;
  bool in_word_ = false;
  Word word_;
  std::vector<Token> tokens_;
};

// ---------------------------------------------------------------------------------------------
// Statements: the words up to a separator; an array assignment `NAME=( ... )` spans lines.

struct Statement {
  std::vector<Word> words;  // "&&" / "||" appear as plain words
  std::string array_name;   // non-empty: an array assignment
  bool array_append = false;
  std::vector<Word> elements;
  int line = 0;
};

std::vector<Statement> statements(const std::vector<Token>& tokens) {
  std::vector<Statement> out;
  Statement current;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& tok = tokens[i];
    if (current.words.empty() && current.array_name.empty()) current.line = tok.line;
    if (tok.kind == TokenKind::Word || tok.kind == TokenKind::AndOr) {
      current.words.push_back(tok.word);
    } else if (tok.kind == TokenKind::LParen) {
      std::string last = current.words.empty() ? "" : current.words.back().plain();
      if (last.size() > 1 && last.back() == '=') {
        current.words.pop_back();
        current.array_append = last.size() > 2 && last[last.size() - 2] == '+';
        current.array_name = last.substr(0, last.size() - (current.array_append ? 2 : 1));
        int depth = 1;
        for (++i; i < tokens.size(); ++i) {
          if (tokens[i].kind == TokenKind::LParen) ++depth;
          if (tokens[i].kind == TokenKind::RParen && --depth == 0) break;
          if (tokens[i].kind == TokenKind::Word) current.elements.push_back(tokens[i].word);
        }
      }
      // Other parentheses (subshells, function definitions) are passed over.
    } else if (tok.kind == TokenKind::End) {
      if (!current.words.empty() || !current.array_name.empty()) out.push_back(std::move(current));
      current = Statement{};
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Evaluation.

bool is_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!name_char(c)) return false;
  return true;
}

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

class Evaluator;

// The word of a ${X:-word} default with its quotes removed ("1" -> 1).
std::string without_quotes(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '"' && c != '\'') out += c;
  return out;
}

// Integer arithmetic of $(( )): + - * / % and parentheses over integers and variables.
class Arithmetic {
 public:
  Arithmetic(const std::string& s, const Evaluator& ev) : s_(s), ev_(ev) {}
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
  int64_t atom();

  const std::string& s_;
  const Evaluator& ev_;
  size_t i_ = 0;
  bool ok_ = true;
};

class Evaluator {
 public:
  std::vector<ShellCommand> commands;

  void run(const std::vector<Statement>& list) {
    for (const Statement& st : list) statement(st);
  }

  std::vector<std::string> value(const std::string& name) const {
    auto it = vars_.find(name);
    return it == vars_.end() ? std::vector<std::string>{} : it->second;
  }
  std::string scalar(const std::string& name) const {
    auto v = value(name);
    return v.empty() ? "" : v.front();
  }
  bool has(const std::string& name) const { return vars_.count(name) > 0; }

 private:
  struct Frame {
    bool parent_active, taken, active;
  };

  bool active() const { return frames_.empty() || frames_.back().active; }

  // `${...}` / `$NAME` / `$((...))` -> the expansion's fields (arrays give several; a quoted
  // scalar one).
  std::vector<std::string> expand_dollar(const std::string& d) const {
    if (d.rfind("$((", 0) == 0 && d.size() >= 5 && d.compare(d.size() - 2, 2, "))") == 0) {
      const std::string inner = expand_text(d.substr(3, d.size() - 5));
      int64_t v = 0;
      if (Arithmetic(inner, *this).eval(v)) return {std::to_string(v)};
      return {d};
    }
    if (d.rfind("$(", 0) == 0) return {d};  // command substitution: unknowable here
    std::string body = d.size() > 2 && d[1] == '{' ? d.substr(2, d.size() - 3) : d.substr(1);
    if (body.empty()) return {"$"};
    if (body == "@" || body == "*" || body == "#" || body == "?" || body == "$" || body == "!" ||
        body == "-" || std::isdigit(static_cast<unsigned char>(body[0]))) {
      return {};  // the script's own arguments and process state: none here
    }
    if (body[0] == '#') return {std::to_string(scalar(body.substr(1)).size())};
    size_t k = 0;
    while (k < body.size() && name_char(body[k])) ++k;
    const std::string name = body.substr(0, k);
    const std::string rest = body.substr(k);
    if (rest == "[@]" || rest == "[*]") return value(name);
    if (rest.empty()) return {scalar(name)};
    // ${X:-default} ${X-default} ${X:=default} ${X:+alt}
    const bool colon = rest[0] == ':';
    const std::string op = rest.substr(colon ? 1 : 0, 1);
    const std::string arg = rest.substr(colon ? 2 : 1);
    const bool set = has(name) && (!colon || !scalar(name).empty());
    if (op == "-" || op == "=") return {set ? scalar(name) : expand_text(without_quotes(arg))};
    if (op == "+") return {set ? expand_text(without_quotes(arg)) : ""};
    return {d};
  }

 public:
  // A double-quoted text with its expansions done (arrays joined by spaces).
  std::string expand_text(const std::string& s) const {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      if (s[i] == '$') {
        std::string d;
        i = copy_dollar(s, i, d);
        std::string joined;
        for (const std::string& f : expand_dollar(d)) joined += (joined.empty() ? "" : " ") + f;
        out += joined;
      } else {
        out += s[i] == '\x01' ? '$' : s[i];
        ++i;
      }
    }
    return out;
  }

  // A word -> fields, with bash's splitting of unquoted expansions.
  std::vector<std::string> expand_word(const Word& w) const {
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
        const auto values = expand_dollar(d);
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

 private:
  // `NAME=value` words at the start of a statement; returns how many there were.
  size_t assignments(const Statement& st, size_t from, bool apply) {
    size_t i = from;
    for (; i < st.words.size(); ++i) {
      const Word& w = st.words[i];
      if (w.segments.empty() || w.segments[0].quote != 0) break;
      const std::string& first = w.segments[0].text;
      const size_t eq = first.find('=');
      if (eq == std::string::npos || eq == 0) break;
      const bool append = first[eq - 1] == '+';
      const std::string name = first.substr(0, append ? eq - 1 : eq);
      if (!is_name(name)) break;
      if (!apply) continue;
      Word rhs = w;
      rhs.segments[0].text = first.substr(eq + 1);
      std::string v;
      for (const std::string& f : expand_word(rhs)) v += (v.empty() ? "" : " ") + f;
      if (append)
        vars_[name] = {scalar(name) + v};
      else
        vars_[name] = {v};
    }
    return i - from;
  }

  bool test(const std::vector<std::string>& t) const {
    if (t.empty()) return false;
    if (t[0] == "!") return !test({t.begin() + 1, t.end()});
    if (t.size() == 1) return !t[0].empty();
    if (t.size() == 2) {
      if (t[0] == "-z") return t[1].empty();
      if (t[0] == "-n") return !t[1].empty();
      return false;  // file tests and the like: unknowable, taken as false
    }
    if (t.size() == 3) {
      const std::string &a = t[0], &op = t[1], &b = t[2];
      if (op == "=" || op == "==") return a == b;
      if (op == "!=") return a != b;
      char* end_a = nullptr;
      char* end_b = nullptr;
      const long long x = std::strtoll(a.c_str(), &end_a, 10), y = std::strtoll(b.c_str(), &end_b, 10);
      if (a.empty() || b.empty() || *end_a || *end_b) return false;
      if (op == "-eq") return x == y;
      if (op == "-ne") return x != y;
      if (op == "-gt") return x > y;
      if (op == "-ge") return x >= y;
      if (op == "-lt") return x < y;
      if (op == "-le") return x <= y;
    }
    return false;
  }

  // `[ a = b ] && [[ -n $c ]] || ...` left to right, as bash does.
  bool condition(const Statement& st, size_t from) const {
    bool result = false;
    std::string pending = "";
    std::vector<std::string> current;
    auto finish = [&]() {
      bool value = false;
      if (!current.empty() && (current.front() == "[" || current.front() == "[[")) {
        std::vector<std::string> inner(current.begin() + 1, current.end());
        if (!inner.empty() && (inner.back() == "]" || inner.back() == "]]")) inner.pop_back();
        value = test(inner);
      } else if (!current.empty() && current.front() == "true") {
        value = true;
      }
      if (pending.empty())
        result = value;
      else if (pending == "&&")
        result = result && value;
      else
        result = result || value;
      current.clear();
    };
    for (size_t i = from; i < st.words.size(); ++i) {
      const std::string p = st.words[i].plain();
      if (p == "&&" || p == "||") {
        finish();
        pending = p;
        continue;
      }
      if (p == "then") break;
      // Inside a test every word is one operand, quoted or not (an empty "" stays).
      auto f = expand_word(st.words[i]);
      if (f.empty() && st.words[i].quoted()) f.push_back("");
      for (auto& x : f) current.push_back(x);
    }
    finish();
    return result;
  }

  void statement(const Statement& st) {
    if (!st.array_name.empty()) {
      if (!active()) return;
      std::vector<std::string> elements;
      for (const Word& w : st.elements)
        for (auto& f : expand_word(w)) elements.push_back(f);
      auto& target = vars_[st.array_name];
      if (!st.array_append) target.clear();
      target.insert(target.end(), elements.begin(), elements.end());
      return;
    }
    const std::string head = st.words.empty() ? "" : st.words[0].plain();
    if (skip_depth_ > 0) {
      if (head == "for" || head == "while" || head == "until" || head == "case") ++skip_depth_;
      if (head == "done" || head == "esac") --skip_depth_;
      return;
    }
    if (head == "for" || head == "while" || head == "until" || head == "case" || head == "select") {
      skip_depth_ = 1;  // loop and case bodies are not run
      return;
    }
    if (head == "if") {
      const bool parent = active();
      const bool c = parent && condition(st, 1);
      frames_.push_back({parent, c, c});
      return;
    }
    if (head == "elif" && !frames_.empty()) {
      Frame& f = frames_.back();
      const bool c = f.parent_active && !f.taken && condition(st, 1);
      f.active = c;
      f.taken = f.taken || c;
      return;
    }
    if (head == "else" && !frames_.empty()) {
      Frame& f = frames_.back();
      f.active = f.parent_active && !f.taken;
      f.taken = true;
      if (st.words.size() > 1) command_words(st, 1);
      return;
    }
    if (head == "fi") {
      if (!frames_.empty()) frames_.pop_back();
      return;
    }
    if (!active()) return;
    if (head == "then" || head == "do") {
      if (st.words.size() > 1) command_words(st, 1);
      return;
    }
    if (head == "export" || head == "local" || head == "declare" || head == "readonly") {
      assignments(st, 1, true);
      return;
    }
    command_words(st, 0);
  }

  void command_words(const Statement& st, size_t from) {
    // `a && b || c`: each command runs (the usual `mkdir -p x && cd x` or `cmd || exit`).
    size_t start = from;
    for (size_t i = from; i <= st.words.size(); ++i) {
      const bool end = i == st.words.size();
      const std::string p = end ? "" : st.words[i].plain();
      if (!end && p != "&&" && p != "||") continue;
      Statement part;
      part.line = st.line;
      part.words.assign(st.words.begin() + static_cast<long>(start), st.words.begin() + static_cast<long>(i));
      simple_command(part);
      start = i + 1;
    }
  }

  void simple_command(const Statement& st) {
    const size_t n = assignments(st, 0, true);
    if (n == st.words.size()) return;
    ShellCommand cmd;
    cmd.line = st.line;
    for (size_t i = n; i < st.words.size(); ++i)
      for (auto& f : expand_word(st.words[i])) cmd.words.push_back(f);
    if (cmd.words.empty()) return;
    // `sh -c "python train.py ..."` (srun and docker wrappers): read the string as a script.
    for (size_t i = 0; i + 1 < cmd.words.size(); ++i) {
      const std::string& w = cmd.words[i];
      if ((w == "sh" || w == "bash" || (w.size() > 3 && w.compare(w.size() - 3, 3, "/sh") == 0)) &&
          cmd.words[i + 1] == "-c" && i + 2 < cmd.words.size()) {
        Lexer lexer(cmd.words[i + 2]);
        std::vector<std::string> ignored;
        Evaluator inner = *this;
        inner.commands.clear();
        inner.run(statements(lexer.run(ignored)));
        for (auto& c : inner.commands) {
          c.line = st.line;
          commands.push_back(std::move(c));
        }
        return;
      }
    }
    commands.push_back(std::move(cmd));
  }

  std::map<std::string, std::vector<std::string>> vars_;
  std::vector<Frame> frames_;
  int skip_depth_ = 0;
};

int64_t Arithmetic::atom() {
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
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) v = v * 10 + (s_[i_++] - '0');
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
  const std::string v = ev_.scalar(s_.substr(start, k - start));
  i_ = k;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end) ok_ = false;
  return x;
}

}  // namespace

ShellScript read_shell_script(const std::string& text) {
  ShellScript script;
  Lexer lexer(text);
  const auto tokens = lexer.run(script.sbatch_words);
  Evaluator ev;
  ev.run(statements(tokens));
  script.commands = std::move(ev.commands);
  return script;
}

}  // namespace proteus::import_detail
