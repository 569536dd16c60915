#!/usr/bin/env bash
# Formats the C++ sources with the repository's .clang-format (clang-format 14, Debian 12).
#   scripts/format.sh          rewrite every tracked .cpp/.h in place
#   scripts/format.sh --check  list the files that differ and exit 1 (scripts/test.sh runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' 2>/dev/null || find core cli wasm tests bench fuzz -name '*.cpp' -o -name '*.h')
if [[ "${1:-}" == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    echo "format: ${#bad[@]} file(s) differ from .clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files match .clang-format"
else
  clang-format -i "${files[@]}"
fi
