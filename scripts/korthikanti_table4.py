#!/usr/bin/env python3
"""One 22B transformer layer against Korthikanti et al. 2022, Table 4.

Table 4 of "Reducing Activation Recomputation in Large Transformer Models" (arXiv 2205.05198)
times the forward and the backward of a single layer of its 22B GPT (hidden 6144, 64 heads,
sequence 2048, micro-batch 4, TP 8 on one DGX A100, fp16, attention without flash attention)
under five settings. It is a measurement of a part, the layer, so it checks the per-layer costs
(GEMMs, the unfused attention's kernels, the tensor-parallel collectives, the replays) apart
from any whole run; docs/fidelity/attention.md, "Attention without flash attention: the backward's own
kernels", has the figures. The layer's config is the korthikanti-22b case of
tests/validation/published.json with the setting changed; the span of one middle layer's
forward tasks and of its backward tasks (recompute included) on rank 0, first micro-batch.

Run from the repository root after building: python3 scripts/korthikanti_table4.py [PROTEUS]
"""
import json
import subprocess
import sys

PROTEUS = sys.argv[1] if len(sys.argv) > 1 else "build/bin/proteus"
LAYER = "layers.10."

# (setting, sequence_parallel, recompute, forward ms, backward ms) as Table 4 prints them; its
# overhead column (-3%, 39%, 7%, 4% over the 19.6 ms baseline) checks the sums.
TABLE4 = [
    ("baseline, no recompute", False, "none", 7.7, 11.9),
    ("sequence parallelism", True, "none", 7.2, 11.8),
    ("baseline with recompute", False, "full", 7.7, 19.5),
    ("selective recompute", False, "selective", 7.7, 13.2),
    ("selective + sequence", True, "selective", 7.2, 13.1),
]


def base_config():
    with open("tests/validation/published.json") as f:
        case = next(c for c in json.load(f)["cases"] if c["id"] == "korthikanti-22b-selective")
    return case["config"]


def layer_spans_ms(config):
    out = subprocess.run([PROTEUS, "simulate", "-", "--timeline"], input=json.dumps(config), capture_output=True,
                         text=True, check=True).stdout
    result = json.loads(out)
    if not result.get("ok"):
        raise SystemExit(json.dumps(result["error"]))
    tasks = [t for t in result["timeline"] if t["rank"] == 0 and t["mb"] == 0 and t["name"].startswith(LAYER)]

    def span(kinds):
        chosen = [t for t in tasks if t["kind"] in kinds]
        return 1e3 * (max(t["end_s"] for t in chosen) - min(t["start_s"] for t in chosen))

    return span({"forward"}), span({"backward_input", "backward_weight", "recompute"})


def main():
    base = base_config()
    print(f"{'setting':26s} {'fwd ms':>7s} {'Table 4':>7s} {'bwd ms':>7s} {'Table 4':>7s} {'sum':>6s} {'Table 4':>7s} {'error':>7s}")
    for name, sp, recompute, pub_f, pub_b in TABLE4:
        config = json.loads(json.dumps(base))
        config["strategy"].update({"sequence_parallel": sp, "recompute": recompute})
        f, b = layer_spans_ms(config)
        err = 100 * ((f + b) / (pub_f + pub_b) - 1)
        print(f"{name:26s} {f:7.2f} {pub_f:7.1f} {b:7.2f} {pub_b:7.1f} {f + b:6.2f} {pub_f + pub_b:7.1f} {err:+6.1f}%")


if __name__ == "__main__":
    main()
