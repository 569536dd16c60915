// A launch script as people paste it (a bash script, a torchrun line, bare arguments) read
// far enough to recover the training command's words. A small subset of bash, evaluated in
// order: variable and array assignments (`X=1`, `export X=1`, `A=( ... )`, `A+=( ... )`),
// expansions (`$X`, `${X}`, `${X:-default}`, `${A[@]}`, `$(( arithmetic ))`), quoting,
// comments, line continuations, `if/elif/else/fi` with `[ ]`/`[[ ]]` tests of strings and
// integers, and `sh -c "..."`. Anything else (functions, loops, command substitution) is
// passed over; a value that depended on it stays visibly unexpanded (`$(...)`), so the
// argument that receives it gets a clear error instead of a guess.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace proteus::import_detail {

struct ShellCommand {
  std::vector<std::string> words;  // expanded and split as bash would
  int line = 0;                    // 1-based line where the command starts
};

struct ShellScript {
  std::vector<ShellCommand> commands;  // every simple command run, in order
  // `#SBATCH --nodes=N`-style directives (Slurm reads them from comments).
  std::vector<std::string> sbatch_words;
};

ShellScript read_shell_script(const std::string& text);

}  // namespace proteus::import_detail
