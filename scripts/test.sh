#!/usr/bin/env bash
# Every test: native unit/integration tests (CTest + doctest), CLI tests, then the web
# module, unit, parity and browser tests, then the native suite again under AddressSanitizer
# and UndefinedBehaviorSanitizer (skip that last part with PROTEUS_SKIP_SANITIZE=1).
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --web
bash scripts/format.sh --check
bash scripts/build.sh
(cd build && ctest --output-on-failure)
(
  cd web
  npm ci --no-audit --no-fund
  npm run build
  npm test
)
if [[ "${PROTEUS_SKIP_SANITIZE:-0}" != 1 ]]; then
  bash scripts/sanitize.sh
fi
echo "test.sh: all tests passed"
