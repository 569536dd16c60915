#!/usr/bin/env python3
"""XLA's measured collective table (one node of 8 GPUs) as Proteus calibration data.

Source: openxla/xla xla/service/gpu/model/collective_interpolator_data.h, a textproto that XLA's
xla/tools/collective_perf_table_gen.cc wrote on one node of 8 GPUs per device ("sm_90" = Hopper
H100/H200 SXM, "sm_100" = B200). Each entry is one collective over F32 data:
    opcode        all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute
    dimensions    the instruction's F32 element count (its output shape)
    replica groups num_replica_groups x num_devices_per_group over the node's 8 GPUs (iota: the
                  groups are consecutive GPUs), all groups running at once
    pairs         collective-permute only: ring 0->1..7->0, mutual 0<->1,2<->3,..., or oneway
                  0->4,1->5,2->6,3->7 (BuildSourceTargetPairs in collective_perf_table_gen.cc)
    network_throughput_bytes_per_sec
                  tensor_size_bytes * 1e9 / median runtime in ns of 20 runs of the compiled
                  executable (GetNetworkThroughputBytesPerSec); for collective-permute the
                  runtime of a loop of 100 permutes divided by 100. tensor_size_bytes is the
                  size the generator asked for: the buffer for all-reduce, all-to-all and
                  collective-permute (dimensions x 4), the gathered output for all-gather
                  (dimensions x 4), the input for reduce-scatter (dimensions x 4 x devices per
                  group), i.e. exactly the S of Proteus's collectives (docs/fidelity/communication.md).

Subcommands:
    extract RAW.h -o DATA.json         the textproto (the .h file) -> compact data file
    points DATA.json --gpu sm_90 -o D  one points file per (collective, group shape) in the
                                       format scripts/measure_ops.py --fit-collectives reads
The repository keeps the compact file (tests/calibration/xla_collective_table.json), not the
~509,000-character header; `extract` rebuilds it from the header at the recorded commit.
"""
import json
import os
import re
import sys

import xla_table_cli

SOURCE = {
    "repo": "openxla/xla",
    "path": "xla/service/gpu/model/collective_interpolator_data.h",
    "commit": "040b3849aff88d770f0677110fb5efc58e366a95",
    "generator": "xla/tools/collective_perf_table_gen.cc (same commit)",
}
DEFINITION = ("throughput_Bps = S / t with t the median runtime of 20 runs of the XLA executable "
              "(collective-permute: a loop of 100 permutes / 100) and S = elements x 4 bytes (F32) for "
              "all-reduce, all-gather (the gathered output), all-to-all and collective-permute (per GPU), "
              "elements x 4 x group size for reduce-scatter (its input)")
# XLA opcode -> the collective kind of scripts/collective_sweep.py and the simulator.
KINDS = {"all-reduce": "all_reduce", "all-gather": "all_gather", "reduce-scatter": "reduce_scatter",
         "all-to-all": "all_to_all", "collective-permute": "send_recv"}
GPUS_PER_NODE = 8


def permute_pattern(pairs):
    """Name of a collective-permute's source->target pairs (collective_perf_table_gen.cc)."""
    pairs = sorted(pairs)
    n = len(pairs)
    if pairs == [(i, (i + 1) % n) for i in range(n)]:
        return "ring"
    if n % 2 == 0 and pairs == sorted([(2 * i, 2 * i + 1) for i in range(n // 2)] +
                                      [(2 * i + 1, 2 * i) for i in range(n // 2)]):
        return "mutual"
    if pairs == [(i, i + n) for i in range(n)]:
        return "oneway"
    raise ValueError("unknown collective-permute pattern %r" % pairs)


def _entry(gpu, fields, pairs):
    opcode = fields.get("opcode")
    if opcode not in KINDS:
        raise ValueError("%s: unknown opcode %r" % (gpu, opcode))
    out = {"op": opcode}
    if opcode == "collective-permute":
        out["pairs"] = permute_pattern(pairs)
    else:
        out["groups"] = int(fields["num_replica_groups"])
        out["size"] = int(fields["num_devices_per_group"])
    out["elements"] = int(fields["elements"])
    out["Bps"] = int(fields["network_throughput_bytes_per_sec"])
    return out


def extract(text):
    """The textproto -> {gpu key: [entries]}, entries in file order."""
    table, gpu, fields, pairs, depth_shape = {}, None, None, [], False
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r'key: "(sm_\d+)"', line)
        if m:
            gpu = m.group(1)
            table.setdefault(gpu, [])
            continue
        if line == "instruction {":
            fields, pairs = {}, []
            continue
        if fields is None:
            continue
        if line == "shape {":
            depth_shape = True
        elif depth_shape and line == "}":
            depth_shape = False
        m = re.match(r"(\w+): (?:\"([^\"]*)\"|(-?\d+))$", line)
        if m:
            key, value = m.group(1), m.group(2) if m.group(2) is not None else m.group(3)
            if key == "dimensions" and depth_shape:
                fields["elements"] = value
            elif key != "dimensions":
                fields[key] = value
        m = re.match(r"source_target_pairs \{(?: source: (\d+))?(?: target: (\d+))? \}", line)
        if m:
            pairs.append((int(m.group(1) or 0), int(m.group(2) or 0)))
        if "network_throughput_bytes_per_sec" in fields:
            if gpu is None:
                raise ValueError("an entry before any device key")
            table[gpu].append(_entry(gpu, fields, pairs))
            fields = None
    return table


def collective_bytes(entry):
    """S of the entry as Proteus counts it (see DEFINITION)."""
    bytes_ = entry["elements"] * 4
    return bytes_ * entry["size"] if entry["op"] == "reduce-scatter" else bytes_


def group_size(entry):
    return 2 if entry["op"] == "collective-permute" else entry["size"]


def shape_name(entry):
    if entry["op"] == "collective-permute":
        return entry["pairs"]
    return "%dx%d" % (entry["groups"], entry["size"])


def point_sets(data, gpu):
    """{(kind, shape): points file dict} for one device key of the data file."""
    if gpu not in data["gpus"]:
        raise ValueError("no device %r in the data (has %s)" % (gpu, ", ".join(sorted(data["gpus"]))))
    sets = {}
    for e in data["gpus"][gpu]:
        key = (KINDS[e["op"]], shape_name(e))
        s = sets.setdefault(key, {
            "collective": key[0], "world": group_size(e), "gpus_per_node": GPUS_PER_NODE, "shape": key[1],
            "device": "%s, XLA collective table %s@%s" % (gpu, SOURCE["repo"], SOURCE["commit"][:8]),
            "points": []})
        s["points"].append([collective_bytes(e), collective_bytes(e) / e["Bps"] * 1e6])
    for s in sets.values():
        s["points"].sort()
    return sets


def dump_data(table):
    """The compact data file (xla_table_cli.data_file_text)."""
    return xla_table_cli.data_file_text(
        ['  "source": %s,' % json.dumps(SOURCE), '  "definition": %s,' % json.dumps(DEFINITION)], table)


def main(argv=None):
    parser, sub = xla_table_cli.command_parser(__doc__)
    xla_table_cli.add_extract_command(sub)
    pt = sub.add_parser("points", help="data file -> points files for measure_ops.py --fit-collectives")
    pt.add_argument("data")
    pt.add_argument("--gpu", default="sm_90")
    pt.add_argument("-o", "--output-dir", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "extract":
            return xla_table_cli.run_extract(args, lambda text: dump_data(extract(text)))
        with open(args.data) as f:
            sets = point_sets(json.load(f), args.gpu)
        os.makedirs(args.output_dir, exist_ok=True)
        for (kind, shape), s in sorted(sets.items()):
            with open(os.path.join(args.output_dir, "%s_%s_%s.json" % (args.gpu, kind, shape)), "w") as f:
                json.dump(s, f, indent=1)
                f.write("\n")
        return 0
    except (KeyError, ValueError) as e:
        parser.error(str(e))

if __name__ == "__main__":
    sys.exit(main())
