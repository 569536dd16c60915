// Integer arithmetic of `$(( ))` in a launch script (shell_script.h): + - * / % with the usual
// precedence, unary minus and parentheses, over decimal integers and variables (`X` or `$X`).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace proteus::import_detail {

// A variable's value by name ("" when unset).
using ShellLookup = std::function<std::string(const std::string& name)>;

// The value of expr (the text between `$((` and `))`, its other expansions done), or nothing
// when it is not such an expression, names a variable that is unset or not an integer, or
// divides by zero: the caller then leaves `$((...))` unexpanded for the argument's own error.
std::optional<int64_t> shell_arithmetic(const std::string& expr, const ShellLookup& variable);

}  // namespace proteus::import_detail
