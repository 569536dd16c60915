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

# search: a small space, its shards merged, knob flags and the error when nothing remains.
cat >"$tmp/search.json" <<'JSON'
{"model": {"preset": "gpt3-1.3b", "layers": 4, "hidden": 1024, "heads": 16, "seq_len": 512},
 "cluster": {"preset": "dgx-a100-80g", "nodes": 1}, "training": {"global_batch": 16, "seq_len": 512},
 "search": {"micro_batch": [1, 2], "zero": [0, 1]}}
JSON
"$proteus" search "$tmp/search.json" --json --threads 2 >"$tmp/s_all.json"
check "search exits 0" test $? -eq 0
"$proteus" search "$tmp/search.json" --json --shard 0/2 -o "$tmp/s_0.json" &&
  "$proteus" search "$tmp/search.json" --json --shard 1/2 -o "$tmp/s_1.json"
check "search shards exit 0" test $? -eq 0
"$proteus" search --merge "$tmp/s_1.json" "$tmp/s_0.json" --json >"$tmp/s_merged.json"
check "search --merge exits 0" test $? -eq 0
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a['ranked']!=b['ranked'] or a['invalid']!=b['invalid'])" "$tmp/s_all.json" "$tmp/s_merged.json"
check "merged shards rank like one machine" test $? -eq 0
"$proteus" search "$tmp/search.json" --top 2 --tp 2 >"$tmp/s_table.txt" 2>"$tmp/s_table.err"
check "a search of a second prints no progress on stderr" test ! -s "$tmp/s_table.err"
"$proteus" search "$tmp/search.json" --top 2 --tp 2 --quiet >"$tmp/s_quiet.txt"
check "search --quiet prints the same table" cmp -s "$tmp/s_table.txt" "$tmp/s_quiet.txt"
check "search table lists the top 2 with tp 2" test "$(grep -c ' tp=2 ' "$tmp/s_table.txt")" -eq 2
"$proteus" search "$tmp/search.json" --tp 3 >"$tmp/s_empty.json" 2>/dev/null
check "search with nothing valid exits 2" test $? -eq 2
check "search error names the constraint" grep -q 'leaves no listed dp' "$tmp/s_empty.json"
# --recompute-modules: sets joined by '+', the table names them; a bad name is the config's error.
cat >"$tmp/search_moe.json" <<'JSON'
{"model": {"preset": "mixtral-8x7b", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 8, "ffn_hidden": 2048,
           "seq_len": 1024},
 "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"global_batch": 16, "seq_len": 1024},
 "search": {"tp": [1], "pp": [1], "micro_batch": [1], "zero": [1], "recompute": ["selective"]}}
JSON
"$proteus" search "$tmp/search_moe.json" --top 1 --recompute-modules moe_act+layernorm >"$tmp/s_moe.txt"
check "search --recompute-modules names the set in the table" grep -q 'recompute=selective(moe_act+layernorm)' "$tmp/s_moe.txt"
"$proteus" search "$tmp/search_moe.json" --recompute-modules core_attn,moe_actt >"$tmp/s_moe_bad.json" 2>/dev/null
check "search --recompute-modules with an unknown module exits 2" test $? -eq 2
check "search --recompute-modules error names the entry" grep -q 'search.recompute_modules\[1\]\[0\]' "$tmp/s_moe_bad.json"
# --expert-tp: MoE parallel folding; tp 2 x ep 8 on 8 GPUs exists only folded.
"$proteus" search "$tmp/search_moe.json" --tp 2 --ep 8 --recompute none --expert-tp 1 --top 1 >"$tmp/s_etp.txt"
check "search --expert-tp 1 ranks a folded layout" grep -q 'tp=2 pp=1 ep=8 etp=1' "$tmp/s_etp.txt"
"$proteus" search "$tmp/search_moe.json" --expert-tp 2 >"$tmp/s_etp_bad.json" 2>/dev/null
check "search --expert-tp with a value other than tp or 1 exits 2" test $? -eq 2
check "search --expert-tp error names the entry" grep -q 'search.expert_tp\[0\]' "$tmp/s_etp_bad.json"

"$proteus" frobnicate x >/dev/null 2>&1
check "unknown command exits 2" test $? -eq 2

# Importers and the exporter (docs/import.md).
src="$(dirname "$0")"
"$proteus" import megatron "$src/import/megatron-gpt3-175b.sh" --cluster dgx-a100-80g >"$tmp/gpt3.json" 2>"$tmp/gpt3.err"
check "import megatron exits 0" test $? -eq 0
check "import megatron reads TP 8" grep -q '"tp": 8' "$tmp/gpt3.json"
check "import megatron lists ignored arguments" grep -q 'ignored --lr' "$tmp/gpt3.err"
"$proteus" show "$tmp/gpt3.json" >/dev/null
check "imported config parses" test $? -eq 0
echo '--num-layer 2 --hidden-size 64' | "$proteus" import megatron - --cluster dgx-h100 --nodes 1 >"$tmp/imp_err.json" 2>/dev/null
check "unknown Megatron argument exits 2" test $? -eq 2
check "unknown Megatron argument is named" grep -q '"path": "--num-layer"' "$tmp/imp_err.json"
echo '{"architectures": ["FalconForCausalLM"]}' | "$proteus" import hf - >"$tmp/hf_err.json" 2>/dev/null
check "unsupported HF architecture exits 2" test $? -eq 2
check "unsupported HF architecture is named" grep -q '"path": "architectures\[0\]"' "$tmp/hf_err.json"
"$proteus" import hf "$src/import/hf-qwen3-8b.json" >"$tmp/qwen.json" 2>/dev/null
check "import hf gives the model" grep -q '"qk_norm": true' "$tmp/qwen.json"
"$proteus" export megatron default >"$tmp/default.sh"
check "export megatron exits 0" test $? -eq 0
check "export names the layers" grep -q -- '--num-layers 32' "$tmp/default.sh"
"$proteus" import megatron "$tmp/default.sh" --cluster dgx-h100 >"$tmp/back.json" 2>/dev/null
"$proteus" show "$tmp/back.json" | grep -v '"name"' >"$tmp/back_show.json"
"$proteus" show default | grep -v '"name"' >"$tmp/default_show.json"
check "export -> import is the identity on the default scenario" cmp -s "$tmp/back_show.json" "$tmp/default_show.json"

# Input over the size limit is refused before it is read (a 100 MiB file: well under 0.5 s).
head -c 104857600 /dev/zero | tr '\0' ' ' >"$tmp/huge.json"
start=$(date +%s%N)
"$proteus" show "$tmp/huge.json" >"$tmp/huge_err.json" 2>/dev/null
code=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
check "100 MiB config refused with exit 2" test $code -eq 2
check "100 MiB config refused by size" grep -q 'the limit is 16777216 bytes' "$tmp/huge_err.json"
check "100 MiB config refused in under 0.5 s (took ${elapsed_ms} ms)" test $elapsed_ms -lt 500
start=$(date +%s%N)
"$proteus" show - <"$tmp/huge.json" >/dev/null 2>&1
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
check "100 MiB on stdin refused in under 0.5 s (took ${elapsed_ms} ms)" test $elapsed_ms -lt 500
rm -f "$tmp/huge.json"

# validate: the table, or validate_json's result with --json; exit 1 when a target is missed
# (this one case, 1 s published, simulates in milliseconds).
cat >"$tmp/validation.json" <<'JSON'
{"cases": [{"id": "tiny", "source": "cli test", "gpu": "A100",
  "config": {"model": {"preset": "gpt3-1.3b", "layers": 2, "hidden": 1024, "heads": 16, "seq_len": 512},
             "cluster": {"preset": "dgx-a100-80g", "nodes": 1}, "training": {"global_batch": 8, "seq_len": 512},
             "strategy": {"dp": 8}},
  "expect": {"iteration_time_s": 1.0}}]}
JSON
"$proteus" validate "$tmp/validation.json" >"$tmp/validate.txt"
check "validate exits 1 when the targets are missed" test $? -eq 1
check "validate prints the case row" grep -q '^tiny ' "$tmp/validate.txt"
check "validate says the targets are missed" grep -q 'targets MISSED' "$tmp/validate.txt"
"$proteus" validate "$tmp/validation.json" --json >"$tmp/validate.json"
check "validate --json exits 1 when the targets are missed" test $? -eq 1
check "validate --json prints the result JSON" grep -q '"targets_met": false' "$tmp/validate.json"
check "validate --json has the case" grep -q '"id": "tiny"' "$tmp/validate.json"
"$proteus" validate "$tmp/validation.json" --csv >/dev/null 2>&1
check "validate with an unknown option exits 2" test $? -eq 2

echo "cli: $passes passed, $failures failed"
exit $((failures > 0))
