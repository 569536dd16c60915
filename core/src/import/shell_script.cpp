// read_shell_script (shell_script.h): the tokens of shell_lexer.h grouped into statements,
// then run in order by an evaluator that keeps the variables and `if` frames, expands words
// (shell_expansion.h) and records the simple commands.
#include "shell_script.h"

#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "proteus/error.h"
#include "shell_expansion.h"
#include "shell_lexer.h"

namespace proteus::import_detail {

namespace {

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
// Evaluation: statements run in order; loops and case bodies skipped, `if` branches chosen.

bool is_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!name_char(c)) return false;
  return true;
}

constexpr int kMaxShellStrings = 256;

// Runs the statements in order: assignments, `if` frames, and the simple commands it records.
class Evaluator {
 public:
  std::vector<ShellCommand> commands;

  void run(const std::vector<Statement>& list) {
    for (const Statement& st : list) statement(st);
  }

 private:
  struct Frame {
    bool parent_active, taken, active;
  };

  bool active() const { return frames_.empty() || frames_.back().active; }

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
      for (const std::string& f : expand_word(rhs, vars_)) v += (v.empty() ? "" : " ") + f;
      if (append)
        vars_.values[name] = {vars_.scalar(name) + v};
      else
        vars_.values[name] = {v};
      check_size(name, st.line);
    }
    return i - from;
  }

  // A value that doubles itself (X="$X$X") would grow until memory runs out; a launch
  // script's values are command-line text, far below kMaxValueBytes.
  void check_size(const std::string& name, int line) const {
    size_t bytes = 0;
    for (const std::string& e : vars_.value(name)) bytes += e.size() + 1;
    if (bytes > kMaxValueBytes)
      throw Error("invalid_config", name,
                  "line " + std::to_string(line) + ": the value of " + name + " grows past " +
                      std::to_string(kMaxValueBytes >> 20) +
                      " MiB (a launch script's values are command-line text)");
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
      auto f = expand_word(st.words[i], vars_);
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
        for (auto& f : expand_word(w, vars_)) elements.push_back(f);
      auto& target = vars_.values[st.array_name];
      if (!st.array_append) target.clear();
      target.insert(target.end(), elements.begin(), elements.end());
      check_size(st.array_name, st.line);
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
    size_t bytes = 0;
    for (size_t i = n; i < st.words.size(); ++i)
      for (auto& f : expand_word(st.words[i], vars_)) {
        bytes += f.size() + 1;
        cmd.words.push_back(f);
      }
    if (bytes > kMaxValueBytes)
      throw Error("invalid_config", "line " + std::to_string(st.line),
                  "the command at line " + std::to_string(st.line) + " expands past " +
                      std::to_string(kMaxValueBytes >> 20) + " MiB");
    if (cmd.words.empty()) return;
    // `sh -c "python train.py ..."` (srun and docker wrappers): read the string as a script,
    // up to kMaxShellDepth levels and kMaxShellStrings strings in all; beyond (a script that
    // runs itself: X='sh -c "$X"', or twice per level: X='sh -c "$X; $X"') the command stays
    // as written, which names no training script.
    for (size_t i = 0; sh_depth_<kMaxShellDepth&& * sh_strings_left_> 0 && i + 1 < cmd.words.size(); ++i) {
      const std::string& w = cmd.words[i];
      if ((w == "sh" || w == "bash" || (w.size() > 3 && w.compare(w.size() - 3, 3, "/sh") == 0)) &&
          cmd.words[i + 1] == "-c" && i + 2 < cmd.words.size()) {
        std::vector<std::string> ignored;
        Evaluator inner = *this;
        inner.commands.clear();
        ++inner.sh_depth_;
        --*sh_strings_left_;
        inner.run(statements(lex_shell(cmd.words[i + 2], ignored)));
        for (auto& c : inner.commands) {
          c.line = st.line;
          commands.push_back(std::move(c));
        }
        return;
      }
    }
    commands.push_back(std::move(cmd));
  }

  static constexpr int kMaxShellDepth = 16;
  static constexpr size_t kMaxValueBytes = size_t{1} << 20;

  ShellVariables vars_;
  std::vector<Frame> frames_;
  int skip_depth_ = 0;
  int sh_depth_ = 0;  // how many `sh -c` strings this evaluator is inside
  // `sh -c` strings the whole script may still read (kMaxShellStrings at the start), shared by
  // the copies that read them.
  std::shared_ptr<int> sh_strings_left_ = std::make_shared<int>(kMaxShellStrings);
};

}  // namespace

ShellScript read_shell_script(const std::string& text) {
  ShellScript script;
  const auto tokens = lex_shell(text, script.sbatch_words);
  Evaluator ev;
  ev.run(statements(tokens));
  script.commands = std::move(ev.commands);
  return script;
}

}  // namespace proteus::import_detail
