// The launch-script reader's parts (core/src/import/shell_*.h): `$(( ))` arithmetic with
// bash's precedence and its failures (division by zero, unset names, malformed text), quoting
// as bash reads it (quotes inside quotes, escapes, adjacent segments in one word), and
// expansion with bash's field splitting. The expected words are what bash itself gives.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../core/src/import/shell_arithmetic.h"
#include "../core/src/import/shell_lexer.h"
#include "../core/src/import/shell_script.h"
#include "error_path.h"
#include "proteus/import.h"

using namespace proteus::import_detail;
using proteus::test::error_path;
using Words = std::vector<std::string>;

namespace {

std::optional<int64_t> arith(const std::string& expr, const std::map<std::string, std::string>& vars = {}) {
  return shell_arithmetic(expr, [&](const std::string& name) {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  });
}

// The words of the script's only command.
Words words(const std::string& script) {
  const ShellScript s = read_shell_script(script);
  REQUIRE(s.commands.size() == 1);
  return s.commands[0].words;
}

}  // namespace

TEST_CASE("shell arithmetic: precedence, associativity, unary minus and parentheses") {
  CHECK(arith("2+3*4") == 14);
  CHECK(arith("(2+3)*4") == 20);
  CHECK(arith("10-4-3") == 3);    // left to right, not 10-(4-3)
  CHECK(arith("64/4/2") == 8);    // left to right, not 64/(4/2)
  CHECK(arith("2+10%4*3") == 8);  // % binds like *: 2 + ((10 % 4) * 3)
  CHECK(arith("7/2") == 3);       // integer division truncates
  CHECK(arith("-7/2") == -3);     // toward zero, as in bash
  CHECK(arith("2*-3") == -6);
  CHECK(arith("-(1+2)*2") == -6);
  CHECK(arith("  1 +\t2 ") == 3);
}

TEST_CASE("shell arithmetic: variables with or without $") {
  const std::map<std::string, std::string> vars = {{"GPUS", "8"}, {"NODES", "16"}};
  CHECK(arith("$GPUS*NODES", vars) == 128);
  CHECK(arith("NODES/(GPUS-6)", vars) == 8);
}

TEST_CASE("shell arithmetic: division by zero and malformed text give no value") {
  CHECK_FALSE(arith("1/0").has_value());
  CHECK_FALSE(arith("5%0").has_value());
  CHECK_FALSE(arith("4/(2-2)").has_value());
  CHECK(arith("0*5") == 0);  // a zero factor is fine; only a zero divisor fails
  CHECK_FALSE(arith("UNSET+1").has_value());
  CHECK_FALSE(arith("X*2", {{"X", "eight"}}).has_value());
  CHECK_FALSE(arith("1+").has_value());
  CHECK_FALSE(arith("(1+2").has_value());
  CHECK_FALSE(arith("1 2").has_value());
  CHECK_FALSE(arith("").has_value());
}

TEST_CASE("shell arithmetic: a result outside 64 bits gives no value, a result at the edge does") {
  CHECK(arith("9223372036854775807") == INT64_MAX);
  CHECK(arith("-9223372036854775807 - 1") == INT64_MIN);
  CHECK_FALSE(arith("9223372036854775808").has_value());  // the literal itself
  CHECK_FALSE(arith("9223372036854775807 + 1").has_value());
  CHECK_FALSE(arith("-9223372036854775807 - 2").has_value());
  CHECK_FALSE(arith("4294967296 * 4294967296").has_value());
  CHECK_FALSE(arith("(-9223372036854775807 - 1) / -1").has_value());
  CHECK_FALSE(arith("(-9223372036854775807 - 1) % -1").has_value());
  CHECK_FALSE(arith("-(-9223372036854775807 - 1)").has_value());
  CHECK_FALSE(arith("N * 2", {{"N", "99999999999999999999"}}).has_value());  // a variable past 64 bits
  CHECK(arith("N * 2", {{"N", "4611686018427387903"}}) == INT64_MAX - 1);
}

TEST_CASE("shell arithmetic: nesting deeper than the parser follows gives no value, not a stack overflow") {
  const int deep = 100000;
  CHECK_FALSE(arith(std::string(deep, '(') + "1" + std::string(deep, ')')).has_value());
  auto minus = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "- ";  // spaced: "--" is bash's decrement, not two signs
    return s;
  };
  CHECK_FALSE(arith(minus(deep) + "1").has_value());
  CHECK(arith(std::string(50, '(') + "7" + std::string(50, ')')) == 7);
  CHECK(arith(minus(50) + "7") == 7);
}

TEST_CASE("shell script: a failed $(( )) stays visible and the argument that receives it is named") {
  CHECK(words("N=0\nrun $((8/N)) $((2*3))\n") == Words{"run", "$((8/N))", "6"});
  const std::string base =
      "--hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 --vocab-size 1000 ";
  proteus::MegatronImportOptions on;
  on.cluster_json = "dgx-h100";
  on.nodes = 1;
  CHECK(error_path([&] { proteus::import_megatron(base + "--num-layers $((4/0))", on); }) == "--num-layers");
}

TEST_CASE("shell lexer: quotes inside quotes, escapes and adjacent segments") {
  CHECK(words("echo \"it's\" 'say \"hi\"'\n") == Words{"echo", "it's", "say \"hi\""});
  CHECK(words("run --arg=\"x \\\"y\\\" z\"\n") == Words{"run", "--arg=x \"y\" z"});
  CHECK(words("run a'b c'\"d e\"f\n") == Words{"run", "ab cd ef"});
  CHECK(words("run 'no $X here' \"a \\$X\" \\$Y\n") == Words{"run", "no $X here", "a $X", "$Y"});
  CHECK(words("run \"\" ''\n") == Words{"run", "", ""});  // empty quotes are still words

  // The lexer's own view: one word of three segments with their quote kinds.
  std::vector<std::string> sbatch;
  const std::vector<Token> tokens = lex_shell("a'b'\"$C\"", sbatch);
  REQUIRE(tokens.size() == 2);
  CHECK(tokens[0].kind == TokenKind::Word);
  CHECK(tokens[1].kind == TokenKind::End);
  REQUIRE(tokens[0].word.segments.size() == 3);
  CHECK(tokens[0].word.segments[0].quote == 0);
  CHECK(tokens[0].word.segments[1].quote == '\'');
  CHECK(tokens[0].word.segments[2].quote == '"');
  CHECK(tokens[0].word.segments[2].text == "$C");
}

TEST_CASE("shell lexer: continuations, separators, comments, redirections, #SBATCH") {
  const ShellScript s = read_shell_script(
      "#!/bin/bash\n"
      "#SBATCH --nodes=4 --gpus-per-node 8\n"
      "a 1 \\\n  2  # a comment\n"
      "b; c && d 2>&1 | tee log.txt > out.txt\n");
  CHECK(s.sbatch_words == Words{"--nodes=4", "--gpus-per-node", "8"});
  REQUIRE(s.commands.size() == 5);
  CHECK(s.commands[0].words == Words{"a", "1", "2"});
  CHECK(s.commands[0].line == 3);
  CHECK(s.commands[1].words == Words{"b"});
  CHECK(s.commands[1].line == 5);
  CHECK(s.commands[2].words == Words{"c"});
  CHECK(s.commands[3].words == Words{"d"});
  CHECK(s.commands[4].words == Words{"tee", "log.txt"});  // "> out.txt" is no argument
}

TEST_CASE("shell expansion: defaults, arrays and field splitting as bash does them") {
  CHECK(words("X=\"a  b\"\nrun $X \"$X\" x${X}y\n") == Words{"run", "a", "b", "a  b", "xa", "by"});
  CHECK(words("A=(x \"y z\")\nA+=(w)\nrun \"${A[@]}\" ${#A}\n") == Words{"run", "x", "y z", "w", "1"});
  CHECK(words("A=(x \"y z\")\nrun ${A[@]}\n") == Words{"run", "x", "y", "z"});
  CHECK(words("E=\nrun ${E:-\"1\"} ${E-2} ${UNSET-3} ${E:+4} ${X:+5}\n") == Words{"run", "1", "3"});
  CHECK(words("G=8\nrun --n=$((G * ${NODES:-2}))\n") == Words{"run", "--n=16"});
}

TEST_CASE("shell script: sh -c is read 16 levels deep; a script that runs itself stays as written") {
  // Found by fuzz/fuzz_import.cpp: X='sh -c "$X"' recursed until the stack overflowed.
  const ShellScript self = read_shell_script("X='sh -c \"$X\"'\nsh -c \"$X\"\n");
  REQUIRE(self.commands.size() == 1);
  CHECK(self.commands[0].words == Words{"sh", "-c", "sh -c \"$X\""});
  // L0 is the command, L<k> runs L<k-1> through sh -c: `sh -c "$L<n-1>"` nests n levels.
  auto nested = [](int levels) {
    std::string script = "L0='python pretrain_gpt.py --num-layers 4'\n";
    for (int k = 1; k < levels; ++k)
      script += "L" + std::to_string(k) + "='sh -c \"$L" + std::to_string(k - 1) + "\"'\n";
    return read_shell_script(script + "sh -c \"$L" + std::to_string(levels - 1) + "\"\n").commands;
  };
  const auto sixteen = nested(16);
  REQUIRE(sixteen.size() == 1);
  CHECK(sixteen[0].words == Words{"python", "pretrain_gpt.py", "--num-layers", "4"});
  const auto seventeen = nested(17);
  REQUIRE(seventeen.size() == 1);
  CHECK(seventeen[0].words == Words{"sh", "-c", "python pretrain_gpt.py --num-layers 4"});
}

TEST_CASE("shell script: sh -c strings that multiply are read 256 times at most") {
  // Found by fuzz/fuzz_import.cpp (a timeout): each level ran the next one twice, 2^16 times.
  const ShellScript s = read_shell_script("X='sh -c \"$X; $X\"'\nsh -c \"$X\"\n");
  CHECK(s.commands.size() <= 2 * 256);
  CHECK(s.commands.size() >= 2);
}

TEST_CASE("shell script: a value that doubles itself stops at 1 MiB with an error naming it") {
  // X="$X$X" forty times asked for a terabyte: std::bad_alloc, an internal error.
  std::string doubling = "X=abcdefgh\n";
  for (int i = 0; i < 40; ++i) doubling += "X=\"$X$X\"\n";
  CHECK(error_path([&] { read_shell_script(doubling + "run $X\n"); }) == "X");
  std::string array = "A=(abcdefgh)\n";
  for (int i = 0; i < 40; ++i) array += "A+=(\"${A[@]}\")\n";
  CHECK(error_path([&] { read_shell_script(array + "run\n"); }) == "A");
  std::string wide = "X=" + std::string(4096, 'x') + "\nrun";
  for (int i = 0; i < 300; ++i) wide += " $X";
  CHECK(error_path([&] { read_shell_script(wide + "\n"); }) == "line 2");
  // Ordinary values are untouched.
  CHECK(words("X=" + std::string(100000, 'y') + "\nrun $X\n") == Words{"run", std::string(100000, 'y')});
}

TEST_CASE("shell expansion: a malformed ${X:} stays as written (it threw std::out_of_range)") {
  // Found by fuzz/fuzz_import.cpp: the operator after ':' was read past the end.
  CHECK(words("N=2\nrun --num-layers ${N:}\n") == Words{"run", "--num-layers", "${N:}"});
  proteus::MegatronImportOptions options;
  options.cluster_json = "dgx-h100";
  options.nodes = 1;
  CHECK(error_path([&] { proteus::import_megatron("pretrain_gpt.py --num-layers ${N:}", options); }) ==
        "--num-layers");
}

TEST_CASE("shell lexer: an example script's <PLACEHOLDER> stays one literal word, not a redirection") {
  // Megatron-LM's examples write "<PATH TO ...>" and "#SBATCH <SLURM OPTIONS>" where a user fills
  // in a value (tests/import/megatron-gpt3-175b.sh).
  CHECK(words("run --data-path <PATH TO DATA> --num-layers 2\n") ==
        Words{"run", "--data-path", "<PATH TO DATA>", "--num-layers", "2"});
  // A '<' without its '>' on the line is still bash's input redirection: the file name is not a word.
  CHECK(words("run --num-layers 2 < args.txt\n") == Words{"run", "--num-layers", "2"});
}
