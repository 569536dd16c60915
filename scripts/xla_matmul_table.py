#!/usr/bin/env python3
"""XLA's measured matmul table as a Proteus GEMM table (gpu.gemm_table, docs/fidelity/gemm.md).

Source: XLA's xla/backends/gpu/cost_model/matmul_interpolator_data.h (earlier
xla/service/gpu/model/), a textproto that XLA's matmul_perf_table_gen wrote on one GPU per
device key ("sm_90" = H100 SXM, "sm_100" = B200). Each entry is one dot of shape b x m x k times
b x k x n, with one measured throughput per dtype combination (ROCm/xla's copy names the
device keys "sm_100_B200" and the like):
    flops { key: "bf16xbf16->bf16" value: FLOP/s }          bf16 inputs, bf16 output
    flops { key: "f8e4m3fnxf8e4m3fn->bf16" value: FLOP/s }  FP8 e4m3 inputs, bf16 output
(also f32, and the mixed e4m3/e5m2 FP8 pairs, which Proteus has no precision for). FLOP/s is
2 b m n k / the measured runtime.

Proteus's table has one m axis in which a batch counts as b x m rows (gemm_table.h). Its rows
m = 256 .. 4096 are XLA's batch-1 entries; above them, XLA's batched entries at m = 4096 give the
rows b x m = 8192 (b 2) and 16384 (b 4): a batch of b independent m x n x k GEMMs launches one
CTA per output tile per batch member (CUTLASS's GemmBatchedIdentityThreadblockSwizzle: grid
ceil(m/tile_m) x ceil(n/tile_n) x b), the tile count and waves of one (b m) x n x k GEMM, with
b weight matrices to read instead of one (so, if anything, slower). TFLOP/s = value / 1e12
rounded to one decimal, the conversion of the H100 preset's first sm_90 table.

Each device's table comes from one copy of the header (SOURCES): the presets' sm_90 table from
tensorflow 372d578b, their sm_100 table from tensorflow a305421c (which re-measured sm_90).

Subcommands:
    extract RAW.h --gpu sm_90 [-o DATA.json]
                                         the textproto (the .h file) -> compact data file: the
                                         device's batch-1 entries and its b > 1 entries at
                                         m = BATCH_M, dtypes in DTYPES, raw FLOP/s; with -o, the
                                         device's part of DATA.json is replaced, others kept
    preset DATA.json --gpu sm_100        the gemm_table object, formatted as in the presets
    preset DATA.json --gpu sm_100 --check PRESET.json
                                         exit 1 unless PRESET.json's gpu.gemm_table is exactly that
The repository keeps the compact file (tests/calibration/xla_matmul_table.json), not the headers
(~79,000 and ~317,000 characters); `extract` rebuilds it from the headers at the recorded commits.
"""
import json
import os
import re
import sys

import xla_table_cli

# Device -> the copy of the header its table is taken from.
SOURCES = {
    "sm_90": {
        "repo": "tensorflow/tensorflow",
        "path": "third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h",
        "commit": "372d578bb861cc5804e56d37d93aec931a59762c",
        "upstream": "openxla/xla xla/service/gpu/model/matmul_interpolator_data.h",
        "generator": "XLA's matmul_perf_table_gen (xla/tools)",
    },
    "sm_100": {
        "repo": "tensorflow/tensorflow",
        "path": "third_party/xla/xla/backends/gpu/cost_model/matmul_interpolator_data.h",
        "commit": "a305421c45a1ea5117c170b8d8a00a51f9dcee8f",
        "upstream": "openxla/xla xla/backends/gpu/cost_model/matmul_interpolator_data.h",
        "generator": "XLA's matmul_perf_table_gen (xla/tools)",
    },
}
DEFINITION = ("FLOP/s = 2 b m n k / measured runtime of the dot on one GPU; entries with b = 1 (no \"b\" key) "
              "and b = 2, 4 at m = 4096; bf16 = bf16 x bf16 -> bf16, fp8 = f8e4m3fn x f8e4m3fn -> bf16")
# XLA dtype key (compared case-insensitively: older copies spell BF16xBF16->BF16) -> Proteus precision.
DTYPES = {"bf16xbf16->bf16": "bf16", "f8e4m3fnxf8e4m3fn->bf16": "fp8"}
TFLOPS_DECIMALS = 1
# Batched entries kept: those at the batch-1 grid's largest m, i.e. rows b x 4096 above the grid
# (smaller batched shapes fall on rows the batch-1 entries measure directly).
BATCH_M = 4096
BATCHES = (1, 2, 4)


def keep(entry):
    """Whether an entry is one the table uses: batch 1, or b x BATCH_M rows above the grid."""
    b = entry.get("b")
    return b in BATCHES and (b == 1 or entry.get("m") == BATCH_M) and any(p in entry for p in DTYPES.values())


def compact(entry):
    """An entry as the data file keeps it: b (when above 1), m, n, k, FLOP/s per precision."""
    keys = (("b",) if entry["b"] > 1 else ()) + ("m", "n", "k") + tuple(p for p in DTYPES.values() if p in entry)
    return {key: entry[key] for key in keys}


def extract(text):
    """The textproto -> {gpu key: [entries]}, the ones keep() takes, ordered by b, m, k, n (the
    order of the sm_100 table; older copies list entries unordered)."""
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
            if keep(entry):
                table[gpu].append(compact(entry))
            entry = None
    order = lambda e: (e.get("b", 1), e["m"], e["k"], e["n"])  # noqa: E731
    return {g: sorted(e, key=order) for g, e in table.items() if e}


def grid_table(entries, gpu):
    """The entries of one device -> (m, n, k axes, {precision: [[[TFLOP/s per k] per n] per m]}).
    A batched entry is the row b x m (module docstring)."""
    by_shape = {}
    for e in entries:
        shape = (e.get("b", 1) * e["m"], e["n"], e["k"])
        if shape in by_shape:
            raise ValueError("%s: two measurements for the row m=%d n=%d k=%d" % ((gpu,) + shape))
        by_shape[shape] = e
    axes = [sorted({shape[d] for shape in by_shape}) for d in range(3)]
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
    """The compact data file (xla_table_cli.data_file_text), with the header copy of each device."""
    gpus = sorted(table)
    head = ['  "sources": {']
    head += ['    "%s": %s%s' % (g, json.dumps(SOURCES[g]), "," if i + 1 < len(gpus) else "")
             for i, g in enumerate(gpus)]
    head += ["  },", '  "definition": %s,' % json.dumps(DEFINITION)]
    return xla_table_cli.data_file_text(head, table)


def extract_into(text, gpu, data_path):
    """The data file's text with device gpu's part taken from the header text; the other
    devices' parts are kept from data_path when it exists."""
    if gpu not in SOURCES:
        raise ValueError("no recorded header copy for %r (SOURCES has %s)" % (gpu, ", ".join(sorted(SOURCES))))
    found = extract(text)
    if gpu not in found:
        raise ValueError("the header has no entries for %r (has %s)" % (gpu, ", ".join(sorted(found)) or "none"))
    table = {}
    if data_path and os.path.exists(data_path):
        with open(data_path) as f:
            table = json.load(f)["gpus"]
    table[gpu] = found[gpu]
    return dump_data(table)


def main(argv=None):
    parser, sub = xla_table_cli.command_parser(__doc__)
    xla_table_cli.add_extract_command(
        sub, (["--gpu"], {"required": True, "help": "device key, one of %s" % ", ".join(sorted(SOURCES))}))
    pr = sub.add_parser("preset", help="data file -> a preset's gpu.gemm_table")
    pr.add_argument("data")
    pr.add_argument("--gpu", default="sm_100")
    pr.add_argument("--check", metavar="PRESET", help="compare with this cluster preset's gpu.gemm_table")
    args = parser.parse_args(argv)
    try:
        if args.command == "extract":
            return xla_table_cli.run_extract(args, lambda text: extract_into(text, args.gpu, args.output))
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
