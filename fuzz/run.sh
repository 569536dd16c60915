#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs one for a given time.
#   bash fuzz/run.sh [SECONDS=600] [extra libFuzzer flags...]
#   PROTEUS_FUZZ_TARGET=fuzz_import bash fuzz/run.sh ...   (the importers; default fuzz_simulate)
# Installs clang-14 and libclang-rt-14-dev with apt-get when they are missing (CI runs as root).
# The seed corpus is fuzz/corpus (committed; fuzz/corpus-import for fuzz_import); new inputs go
# to fuzz/corpus-run (fuzz/corpus-import-run; both ignored by git);
# crashes, timeouts and leaks are written to build-fuzz/artifacts/. One process (no -jobs):
# leaves the other core free. Exits non-zero when the fuzzer reports a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true

if ! command -v clang++-14 >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq clang-14 libclang-rt-14-dev nlohmann-json3-dev cmake
fi

build=build-fuzz
CXX=clang++-14 cmake -S fuzz -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"${PROTEUS_FUZZ_BUILD_JOBS:-2}"

target="${PROTEUS_FUZZ_TARGET:-fuzz_simulate}"
case "$target" in
  fuzz_simulate) corpus=fuzz/corpus dict=fuzz/proteus.dict ;;
  fuzz_import) corpus=fuzz/corpus-import dict=fuzz/import.dict ;;
  *) echo "fuzz/run.sh: PROTEUS_FUZZ_TARGET is fuzz_simulate or fuzz_import, not '$target'" >&2; exit 2 ;;
esac
mkdir -p "$corpus-run" "$build/artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# -rss_limit_mb: an input that needs more memory than this is a finding (the limits should stop it).
# -timeout: one input running longer than this is a finding.
"$build/$target" "$corpus-run" "$corpus" \
  -dict="$dict" -max_total_time="$seconds" -max_len=16384 \
  -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$@"
