// Lexing of a launch script (shell_script.h): the text -> words made of quoted and unquoted
// segments, separators (`;`, newlines, pipes), `&&`/`||`, and parentheses. Quotes are kept as
// segment marks, `$...` expansions are kept as their source text for the evaluator, comments
// are dropped (but `#SBATCH` directives collected), redirections and their targets removed.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace proteus::import_detail {

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
  Word word;  // a Word's segments; an AndOr's "&&" or "||"
  int line;   // 1-based
};

// A letter, digit or underscore: a character of a variable name.
bool name_char(char c);

// Copies `$...` starting at text[i] == '$' (with its braces or parentheses balanced) into out;
// returns the index after it. In a double-quoted segment's text, "\x01" stands for a literal '$'.
size_t copy_dollar(const std::string& text, size_t i, std::string& out);

// The script's tokens, ending with an End; `#SBATCH` directives' words are appended to sbatch.
std::vector<Token> lex_shell(const std::string& text, std::vector<std::string>& sbatch);

}  // namespace proteus::import_detail
