#!/usr/bin/env bash
# Native release build: build/bin/proteus and build/bin/proteus_tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
