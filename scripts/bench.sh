#!/usr/bin/env bash
# Simulation-speed benchmark (docs/performance.md): the cases in bench/cases, natively and as
# WebAssembly under Node.
#
#   scripts/bench.sh [--runs N] [--native-only] [--wasm-only] [--no-build] [CASE.json ...]
#
# For each case it prints
#   - proteus_bench in process: median wall ms of N runs (parse + compile + topology + execute
#     + result JSON), each phase, tasks, events, events/s, peak memory of a process running
#     only that case (native: resident set; wasm: the linear memory, which only grows);
#   - the whole `proteus simulate CASE` process as a user runs it (median of N, ms, and its
#     peak RSS from /usr/bin/time when available), natively; for WebAssembly, the whole
#     `node proteus_bench.js --runs 1 CASE` process (Node start, module compile, one run).
# Build folders: build-perf (native Release), build-wasm-bench (emcmake, bench/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
native=1
wasm=1
build=1
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --native-only) wasm=0; shift ;;
    --wasm-only) native=0; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) cases+=("$1"); shift ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=(bench/cases/*.json)
jobs="${PROTEUS_BUILD_JOBS:-2}"

if [ "$build" = 1 ] && [ "$native" = 1 ]; then
  cmake -S . -B build-perf -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-perf -j"$jobs" --target proteus proteus_bench >/dev/null
fi
if [ "$build" = 1 ] && [ "$wasm" = 1 ]; then
  export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"
  emcmake cmake -S bench -B build-wasm-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-wasm-bench -j"$jobs" >/dev/null
fi

# Median of whole-process wall times (ms) of a command, run N times; prints "median_ms max_rss_MiB".
process_ms() {
  local times=() rss=0 t0 t1 r
  for _ in $(seq "$runs"); do
    if [ -x /usr/bin/time ]; then
      t0=$(date +%s%N)
      r=$(/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1)
      t1=$(date +%s%N)
      [ "$r" -gt "$rss" ] 2>/dev/null && rss=$r
    else
      t0=$(date +%s%N)
      "$@" >/dev/null
      t1=$(date +%s%N)
    fi
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v rss="$rss" '{a[NR]=$1} END {m = NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.1f %.1f\n", m/1000, rss/1024}'
}

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$native" = 1 ]; then
  echo "## native (build-perf, in process, median of $runs)"
  build-perf/bin/proteus_bench --runs 1 --json "${cases[0]}" >/dev/null  # warm the file cache
  first=1
  for c in "${cases[@]}"; do
    if [ $first = 1 ]; then build-perf/bin/proteus_bench --runs "$runs" "$c"; first=0
    else build-perf/bin/proteus_bench --runs "$runs" "$c" | tail -n +2; fi
  done
  echo "## native: whole 'proteus simulate CASE' process (median of $runs, ms; peak RSS MiB)"
  for c in "${cases[@]}"; do
    printf '%-36s %s\n' "$(basename "$c" .json)" "$(process_ms build-perf/bin/proteus simulate "$c")"
  done
fi
if [ "$wasm" = 1 ]; then
  js=build-wasm-bench/bin/proteus_bench.js
  echo "## wasm under Node $(node --version) ($js, in process, median of $runs)"
  first=1
  for c in "${cases[@]}"; do
    if [ $first = 1 ]; then node "$js" --runs "$runs" "$c"; first=0
    else node "$js" --runs "$runs" "$c" | tail -n +2; fi
  done
  echo "## wasm: whole 'node proteus_bench.js --runs 1 CASE' process (median of $runs, ms; peak RSS MiB)"
  for c in "${cases[@]}"; do
    printf '%-36s %s\n' "$(basename "$c" .json)" "$(process_ms node "$js" --runs 1 "$c")"
  done
fi
