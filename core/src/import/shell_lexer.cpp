#include "shell_lexer.h"

#include <cctype>
#include <utility>

namespace proteus::import_detail {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

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

namespace {

// One pass over the text, character by character, building the current word from segments.
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
        end_word();
        push(TokenKind::LParen);  // `NAME=(` is told from a subshell by the statements
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

}  // namespace

std::vector<Token> lex_shell(const std::string& text, std::vector<std::string>& sbatch) {
  return Lexer(text).run(sbatch);
}

}  // namespace proteus::import_detail
