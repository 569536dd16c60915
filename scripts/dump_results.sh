#!/usr/bin/env bash
# Saves what the simulator prints for every scenario preset, benchmark case and validation
# case (simulate; compile; a few timelines), so that a refactoring can be checked
# byte-identical:  scripts/dump_results.sh OUTDIR [PROTEUS]  then  diff -r OLD NEW.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: dump_results.sh OUTDIR [PROTEUS]}"
bin="${2:-build/bin/proteus}"
mkdir -p "$out"
scenarios=$("$bin" presets | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)["scenarios"]))')
n=0
for s in $scenarios; do
  "$bin" simulate "$s" >"$out/scenario-$s.sim.json" 2>&1 || true
  "$bin" compile "$s" >"$out/scenario-$s.compile.json" 2>&1 || true
  # Timelines of every other scenario (they are large).
  if [ $((n % 2)) = 0 ]; then "$bin" simulate "$s" --timeline --memory-curve >"$out/scenario-$s.timeline.json" 2>&1 || true; fi
  n=$((n + 1))
done
for c in bench/cases/*.json; do
  b=$(basename "$c" .json)
  "$bin" simulate "$c" >"$out/bench-$b.sim.json" 2>&1 || true
  "$bin" compile "$c" >"$out/bench-$b.compile.json" 2>&1 || true
done
# Variants of the default scenario: every schedule, ZeRO stage and overlap switch, recompute,
# and the full (non-symmetric) rank set.
python3 - "$out/variants" <<'PY'
import json, os, sys
os.makedirs(sys.argv[1], exist_ok=True)
base = {"schema": 1, "model": "gpt2-small", "cluster": {"preset": "dgx-h100", "nodes": 1},
        "training": {"global_batch": 16, "seq_len": 1024, "precision": "bf16", "optimizer": "adam"},
        "strategy": {"dp": 2, "tp": 1, "pp": 4, "micro_batch": 1, "schedule": "1f1b"}}
variants = {
  "gpipe": {"schedule": "gpipe"}, "zbh1": {"schedule": "zb-h1"},
  "interleaved": {"schedule": "interleaved-1f1b", "virtual_stages": 3},
  "zero1": {"zero": 1}, "zero2": {"zero": 2, "grad_bucket_MB": 5}, "zero3": {"zero": 3},
  "zero1-nooverlap": {"zero": 1, "overlap_grad_reduce": False, "overlap_param_gather": False},
  "full-recompute-tp2": {"recompute": "full", "tp": 2, "dp": 1, "sequence_parallel": True},
  "selective-zbh1": {"recompute": "selective", "schedule": "zb-h1", "zero": 1},
}
for name, over in variants.items():
    c = json.loads(json.dumps(base)); c["strategy"].update(over)
    json.dump(c, open(f"{sys.argv[1]}/{name}.json", "w"))
c = json.loads(json.dumps(base)); c["strategy"].update({"zero": 3, "tp": 2, "dp": 1}); c["simulation"] = {"symmetry": False}
json.dump(c, open(f"{sys.argv[1]}/nosym-zero3.json", "w"))
PY
for c in "$out"/variants/*.json; do
  b=$(basename "$c" .json)
  "$bin" simulate "$c" --timeline >"$out/variant-$b.sim.json" 2>&1 || true
  "$bin" compile "$c" >"$out/variant-$b.compile.json" 2>&1 || true
done
"$bin" validate tests/validation/published.json >"$out/validate.txt" 2>&1 || true
tmp=$(mktemp -d)
python3 - "$tmp" <<'PY'
import json, sys
d = json.load(open("tests/validation/published.json"))
for c in d["cases"]:
    if "config" not in c:  # a case kept with the reason it cannot be simulated ("needs")
        continue
    json.dump(c["config"], open(f"{sys.argv[1]}/{c['id']}.json", "w"))
PY
for c in "$tmp"/*.json; do
  "$bin" compile "$c" >"$out/validation-$(basename "$c" .json).compile.json" 2>&1 || true
done
rm -rf "$tmp"
echo "saved $(ls "$out" | wc -l) files in $out"
