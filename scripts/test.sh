#!/usr/bin/env bash
# Every test: native unit/integration tests (CTest + doctest), CLI tests, then the web
# module, unit and browser tests. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --web
bash scripts/build.sh
(cd build && ctest --output-on-failure)
cd web
npm ci --no-audit --no-fund
npm run build
npm test
