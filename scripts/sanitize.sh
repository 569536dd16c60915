#!/usr/bin/env bash
# The native test suite (doctest + CLI tests) under AddressSanitizer and UndefinedBehaviorSanitizer.
#   bash scripts/sanitize.sh
# Builds build-sanitize/ with -DPROTEUS_SANITIZE=ON (g++: -fsanitize=address,undefined, no
# recovery from UB) and -O1 -g, then runs ctest there. Any sanitizer report fails the run.
# Installs what it needs with apt-get when missing (CI runs as root on a clean Debian 12).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh
if [[ ! -e /usr/lib/gcc/x86_64-linux-gnu/12/libasan.so || ! -e /usr/lib/gcc/x86_64-linux-gnu/12/libubsan.so ]]; then
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq libgcc-12-dev >/dev/null
fi
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROTEUS_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build build-sanitize -j"${PROTEUS_SANITIZE_JOBS:-$(nproc)}"
built=$(date +%s)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
(cd build-sanitize && ctest --output-on-failure)
end=$(date +%s)
echo "sanitize: ok (build $((built - start)) s, tests $((end - built)) s)"
