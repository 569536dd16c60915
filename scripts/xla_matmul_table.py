#!/usr/bin/env python3
"""XLA's measured matmul table as a Proteus GEMM table (gpu.gemm_table, docs/fidelity.md).

Source: XLA's xla/backends/gpu/cost_model/matmul_interpolator_data.h (earlier
xla/service/gpu/model/), a textproto that XLA's matmul_perf_table_gen wrote on one GPU per
device key ("sm_90" = H100 SXM, "sm_100" = B200). Each entry is one dot of shape b x m x k times
b x k x n, with one measured throughput per dtype combination (ROCm/xla's copy names the
device keys "sm_100_B200" and the like):
    flops { key: "bf16xbf16->bf16" value: FLOP/s }          bf16 inputs, bf16 output
    flops { key: "f8e4m3fnxf8e4m3fn->bf16" value: FLOP/s }  FP8 e4m3 inputs, bf16 output
(also f32, and the mixed e4m3/e5m2 FP8 pairs, which Proteus has no precision for). FLOP/s is
2 b m n k / the measured runtime.

Proteus's table is batch 1 only (a batch counts as b x m rows, gemm_table.h), over the grid of
sizes XLA measured, in TFLOP/s = value / 1e12 rounded to one decimal: the conversion of the H100
preset's sm_90 table (core/presets/clusters/dgx-h100.json, "sources").

Subcommands:
    extract RAW.h -o DATA.json           the textproto (the .h file) -> compact data file: the
                                         batch-1 entries of the dtypes in DTYPES, raw FLOP/s
    preset DATA.json --gpu sm_100        the gemm_table object, formatted as in the presets
    preset DATA.json --gpu sm_100 --check PRESET.json
                                         exit 1 unless PRESET.json's gpu.gemm_table is exactly that
The repository keeps the compact file (tests/calibration/xla_matmul_table.json), not the
~317,000-character header; `extract` rebuilds it from the header at the recorded commit.
"""
import argparse
import json
import re
import sys

SOURCE = {
    "repo": "tensorflow/tensorflow",
    "path": "third_party/xla/xla/backends/gpu/cost_model/matmul_interpolator_data.h",
    "commit": "a305421c45a1ea5117c170b8d8a00a51f9dcee8f",
    "upstream": "openxla/xla xla/backends/gpu/cost_model/matmul_interpolator_data.h",
    "generator": "XLA's matmul_perf_table_gen (xla/tools)",
}
DEFINITION = ("FLOP/s = 2 b m n k / measured runtime of the dot on one GPU; entries with b = 1; "
              "bf16 = bf16 x bf16 -> bf16, fp8 = f8e4m3fn x f8e4m3fn -> bf16")
# XLA dtype key (compared case-insensitively: older copies spell BF16xBF16->BF16) -> Proteus precision.
DTYPES = {"bf16xbf16->bf16": "bf16", "f8e4m3fnxf8e4m3fn->bf16": "fp8"}
TFLOPS_DECIMALS = 1


def extract(text):
    """The textproto -> {gpu key: [{"m", "n", "k", precision: FLOP/s, ...}]}, batch 1, file order."""
    table, gpu, entry = {}, None, None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r'key: "(sm_\d+\w*)"$', line)  # "sm_100", or ROCm/xla's "sm_100_B200"
        if m:
            gpu = m.group(1)
            table.setdefault(gpu, [])
            continue
        if line == "entries {" and gpu is not None:
            entry = {}
            continue
        if entry is None:
            continue
        m = re.match(r"([bmnk]): (\d+)$", line)
        if m:
            entry[m.group(1)] = int(m.group(2))
            continue
        m = re.match(r'flops \{ key: "([^"]+)" value: (\d+) \}$', line)
        if m:
            precision = DTYPES.get(m.group(1).lower())
            if precision:
                entry[precision] = int(m.group(2))
            continue
        if line == "}":
            if entry.get("b") == 1 and any(p in entry for p in DTYPES.values()):
                table[gpu].append({key: entry[key] for key in ("m", "n", "k") + tuple(
                    p for p in DTYPES.values() if p in entry)})
            entry = None
    return {g: e for g, e in table.items() if e}


def grid_table(entries, gpu):
    """The entries of one device -> (m, n, k axes, {precision: [[[TFLOP/s per k] per n] per m]})."""
    axes = [sorted({e[d] for e in entries}) for d in ("m", "n", "k")]
    by_shape = {(e["m"], e["n"], e["k"]): e for e in entries}
    precisions = [p for p in DTYPES.values() if any(p in e for e in entries)]
    values = {}
    for p in precisions:
        rows = []
        for m in axes[0]:
            rows.append([])
            for n in axes[1]:
                row = []
                for k in axes[2]:
                    e = by_shape.get((m, n, k))
                    if e is None or p not in e:
                        raise ValueError("%s: no %s measurement at m=%d n=%d k=%d: the grid is incomplete"
                                         % (gpu, p, m, n, k))
                    row.append(round(e[p] / 1e12, TFLOPS_DECIMALS))
                rows[-1].append(row)
        values[p] = rows
    return axes, values


def preset_table(data, gpu):
    """The gpu.gemm_table object of a preset, from the compact data file."""
    if gpu not in data["gpus"]:
        raise ValueError("no device %r in the data (has %s)" % (gpu, ", ".join(sorted(data["gpus"]))))
    (m, n, k), values = grid_table(data["gpus"][gpu], gpu)
    return {"m": m, "n": n, "k": k, "TFLOPS": values}


def format_table(table, indent=4):
    """The gemm_table object as the presets write it: axes and innermost rows on one line."""
    pad = " " * indent
    lines = ["{"]
    for axis in ("m", "n", "k"):
        lines.append('%s  "%s": %s,' % (pad, axis, json.dumps(table[axis])))
    lines.append('%s  "TFLOPS": {' % pad)
    precisions = list(table["TFLOPS"])
    for pi, p in enumerate(precisions):
        lines.append('%s    "%s": [' % (pad, p))
        per_m = table["TFLOPS"][p]
        for i, per_n in enumerate(per_m):
            lines.append("%s      [" % pad)
            for j, row in enumerate(per_n):
                lines.append("%s        %s%s" % (pad, json.dumps(row), "," if j + 1 < len(per_n) else ""))
            lines.append("%s      ]%s" % (pad, "," if i + 1 < len(per_m) else ""))
        lines.append("%s    ]%s" % (pad, "," if pi + 1 < len(precisions) else ""))
    lines += ["%s  }" % pad, "%s}" % pad]
    return "\n".join(lines)


def dump_data(table):
    """The compact data file: one entry per line, so that diffs stay readable."""
    lines = ["{", '  "source": %s,' % json.dumps(SOURCE), '  "definition": %s,' % json.dumps(DEFINITION),
             '  "gpus": {']
    gpus = sorted(table)
    for i, gpu in enumerate(gpus):
        lines.append('    "%s": [' % gpu)
        rows = [json.dumps(e) for e in table[gpu]]
        lines += ["      %s%s" % (r, "," if j + 1 < len(rows) else "") for j, r in enumerate(rows)]
        lines.append("    ]%s" % ("," if i + 1 < len(gpus) else ""))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract", help="textproto header -> compact data file")
    ex.add_argument("raw")
    ex.add_argument("-o", "--output")
    pr = sub.add_parser("preset", help="data file -> a preset's gpu.gemm_table")
    pr.add_argument("data")
    pr.add_argument("--gpu", default="sm_100")
    pr.add_argument("--check", metavar="PRESET", help="compare with this cluster preset's gpu.gemm_table")
    args = parser.parse_args(argv)
    try:
        if args.command == "extract":
            with open(args.raw) as f:
                text = dump_data(extract(f.read()))
            if args.output:
                with open(args.output, "w") as f:
                    f.write(text)
            else:
                sys.stdout.write(text)
            return 0
        with open(args.data) as f:
            table = preset_table(json.load(f), args.gpu)
        if args.check:
            with open(args.check) as f:
                on_file = json.load(f)["gpu"].get("gemm_table")
            same = on_file == table
            print("%s gpu.gemm_table %s %s of %s" % (args.check, "matches" if same else "DIFFERS FROM",
                                                    args.gpu, args.data), file=sys.stderr)
            return 0 if same else 1
        print(format_table(table))
        return 0
    except (KeyError, ValueError) as e:
        parser.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
