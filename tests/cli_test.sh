#!/usr/bin/env bash
# CLI behaviour: exit codes, error JSON on stdout, stdin input, scenario names.
set -uo pipefail
proteus="$1"
failures=0
passes=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $name"; failures=$((failures + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$proteus" presets >"$tmp/presets.json"
check "presets exits 0" test $? -eq 0
check "presets lists dgx-a100-80g" grep -q '"dgx-a100-80g"' "$tmp/presets.json"
check "presets lists gpt3-175b" grep -q '"gpt3-175b"' "$tmp/presets.json"

"$proteus" show default >"$tmp/show.json"
check "show default exits 0" test $? -eq 0
check "show resolves the cluster preset" grep -q '"gpus_per_node": 8' "$tmp/show.json"

"$proteus" show default --tree >"$tmp/tree.txt"
check "show --tree prints the mesh" grep -q 'mesh pp=2 dp=4' "$tmp/tree.txt"

echo '{"model": "gpt3-175b", "cluster": {"preset": "dgx-a100-80g", "nodes": 2},
       "training": {"global_batch": 16}, "strategy": {"tp": 3, "dp": 1}}' | "$proteus" compile - >"$tmp/err.json"
code=$?
check "invalid strategy exits 2" test $code -eq 2
check "error JSON has ok:false" grep -q '"ok": false' "$tmp/err.json"
check "error JSON names strategy path" grep -q '"path": "strategy' "$tmp/err.json"

echo '{"model": ' | "$proteus" show - >"$tmp/bad.json"
check "malformed JSON exits 2" test $? -eq 2
check "malformed JSON code" grep -q '"invalid_json"' "$tmp/bad.json"

"$proteus" simulate no-such-file.json >"$tmp/missing.json" 2>/dev/null
check "missing file exits 2" test $? -eq 2

"$proteus" compile default >"$tmp/compile.json"
check "compile default exits 0" test $? -eq 0
check "compile reports parameters" grep -q '"parameters": 80' "$tmp/compile.json"

"$proteus" simulate default -o "$tmp/result.json" --trace "$tmp/trace.json"
check "simulate default exits 0" test $? -eq 0
check "result is ok" grep -q '"ok": true' "$tmp/result.json"
check "chrome trace written" grep -q 'traceEvents' "$tmp/trace.json"
"$proteus" simulate default >"$tmp/result2.json"
check "simulate is deterministic" cmp -s "$tmp/result.json" "$tmp/result2.json"

"$proteus" frobnicate x >/dev/null 2>&1
check "unknown command exits 2" test $? -eq 2

echo "cli: $passes passed, $failures failed"
exit $((failures > 0))
