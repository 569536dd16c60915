#!/usr/bin/env python3
"""The sail-sg/zero-bubble-pipeline-parallelism issue #21 comparison (issue 12).

Simulates the four zb-issue21 cases of tests/validation/published.json (their configs and the
source of every setting are there, written by tests/validation/derive_cases.py) and prints,
per schedule, samples/s and the peak memory of the fullest GPU beside the issue's figures,
then the two orderings the simulator should agree on. tests/test_zb_issue21.cpp asserts what
agrees. Run from the repository root after building: python3 scripts/zb_issue21.py [PROTEUS]
"""
import json
import subprocess
import sys

PROTEUS = sys.argv[1] if len(sys.argv) > 1 else "build/bin/proteus"
GB_PER_GiB = 2**30 / 1e9


def simulate(config):
    out = subprocess.run([PROTEUS, "simulate", "-"], input=json.dumps(config), capture_output=True, text=True,
                         check=True).stdout
    result = json.loads(out)
    if not result.get("ok"):
        raise SystemExit(json.dumps(result["error"]))
    return result


def main():
    with open("tests/validation/published.json") as f:
        cases = [c for c in json.load(f)["cases"] if c["id"].startswith("zb-issue21-")]
    rows = []
    for c in cases:
        r = simulate(c["config"])
        s = r["summary"]
        rows.append(dict(id=c["id"][len("zb-issue21-"):], sps=s["samples_per_s"], gb=s["peak_memory_GiB"] * GB_PER_GiB,
                         bubble=s["bubble_fraction"], pub_sps=c["published"]["samples_per_s"],
                         pub_gb=c["published"]["memory_GB"]))
    print(f"{'schedule':12s} {'samples/s':>9s} {'#21':>5s} {'error':>7s} {'peak GB':>8s} {'#21 GB':>7s} {'bubble':>7s}")
    for r in rows:
        err = 100 * (r["sps"] / r["pub_sps"] - 1)
        print(f"{r['id']:12s} {r['sps']:9.1f} {r['pub_sps']:5d} {err:+6.1f}% {r['gb']:8.1f} {r['pub_gb']:7d} "
              f"{r['bubble']:7.3f}")
    for key, pub, what in [("gb", "pub_gb", "memory"), ("sps", "pub_sps", "speed")]:
        ours = " < ".join(r["id"] for r in sorted(rows, key=lambda r: r[key]))
        theirs = " < ".join(r["id"] for r in sorted(rows, key=lambda r: r[pub]))
        print(f"{what}: simulated {ours}; #21 {theirs}: {'agrees' if ours == theirs else 'DIFFERS'}")


if __name__ == "__main__":
    main()
