"""What scripts/xla_matmul_table.py and scripts/xla_collective_table.py share.

Both turn one of XLA's measured textproto tables (a C++ header) into a compact data file that
the repository keeps instead of the header, and both are small command-line tools around that:
the same parser (the module's docstring as its help), the same `extract RAW.h [-o DATA.json]`
command, and the same one-entry-per-line layout of the data file's "gpus" object.
"""
import argparse
import json
import sys


def command_parser(doc):
    """The tool's parser, with its docstring as the help text, and its subcommands."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parser.add_subparsers(dest="command", required=True)


def add_extract_command(sub, *options):
    """`extract RAW [options] [-o OUTPUT]`; each option is a (flags, keyword arguments) pair."""
    ex = sub.add_parser("extract", help="textproto header -> compact data file")
    ex.add_argument("raw")
    for flags, kwargs in options:
        ex.add_argument(*flags, **kwargs)
    ex.add_argument("-o", "--output")
    return ex


def run_extract(args, to_data_text):
    """The extract command: the header's text through to_data_text, to args.output or stdout."""
    with open(args.raw) as f:
        text = to_data_text(f.read())
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def data_file_text(head_lines, table):
    """The compact data file: head_lines (its "source(s)" and "definition" members), then the
    "gpus" object {device key: [entries]} with one entry per line, so that diffs stay readable."""
    gpus = sorted(table)
    lines = ["{"] + head_lines + ['  "gpus": {']
    for i, gpu in enumerate(gpus):
        lines.append('    "%s": [' % gpu)
        rows = [json.dumps(e) for e in table[gpu]]
        lines += ["      %s%s" % (r, "," if j + 1 < len(rows) else "") for j, r in enumerate(rows)]
        lines.append("    ]%s" % ("," if i + 1 < len(gpus) else ""))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"
