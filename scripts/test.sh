#!/usr/bin/env bash
# Every test: native unit/integration tests (CTest + doctest), CLI tests, then the web
# module, unit, parity and browser tests, then the native suite again under AddressSanitizer
# and UndefinedBehaviorSanitizer (skip that last part with PROTEUS_SKIP_SANITIZE=1).
# Exits non-zero on the first failure, and when the tests changed the checkout: tests write
# only to ignored folders (build*/, web/test-results/); docs/images is rewritten only by
# `cd web && npm run screenshot`. Changes made before the run (a developer's own) do not count.
set -euo pipefail
cd "$(dirname "$0")/.."

# The checkout as git sees it: each changed or untracked (not ignored) path, and the content of
# the changes, so that a test writing to a file the developer had already changed is caught too.
checkout_state() {
  git status --porcelain --untracked-files=all
  echo "content of the changes to tracked files: $(git diff HEAD --binary | sha256sum | cut -d' ' -f1)"
  git ls-files -z --others --exclude-standard | xargs -0 -r sha256sum
}

# Fails, naming what changed, when the checkout differs from `before` (taken before the tests).
check_unchanged() {
  [[ -n "$before" ]] || return 0
  local after
  after=$(checkout_state)
  if [[ "$after" != "$before" ]]; then
    echo "test.sh: the tests (through $1) changed the checkout. Tests write only to ignored folders" >&2
    echo "(web/test-results/, build*/); docs/images is written by \`cd web && npm run screenshot\`. Before (<) and after (>):" >&2
    diff <(echo "$before") <(echo "$after") | grep '^[<>]' >&2 || true
    echo "test.sh: git status --porcelain now:" >&2
    git status --porcelain --untracked-files=all >&2
    exit 1
  fi
}

bash scripts/setup.sh --web
bash scripts/format.sh --check
bash scripts/build.sh
before=""
# (the checkout's own repository: not one that merely contains an unpacked copy)
if command -v git >/dev/null && [[ "$(git rev-parse --show-toplevel 2>/dev/null)" == "$(pwd -P)" ]]; then
  before=$(checkout_state)
else
  echo "test.sh: not a git checkout: the check that the tests leave the checkout unchanged is skipped"
fi
(cd build && ctest --output-on-failure)
(
  cd web
  npm ci --no-audit --no-fund
  npm run build
  npm test
)
check_unchanged "the web suite"
if [[ "${PROTEUS_SKIP_SANITIZE:-0}" != 1 ]]; then
  bash scripts/sanitize.sh
  check_unchanged "the sanitizer suite"
fi
echo "test.sh: all tests passed"
