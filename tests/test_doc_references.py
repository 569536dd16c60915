#!/usr/bin/env python3
"""Every reference to a section of the repository's documentation resolves.

Code, presets, scripts, tests and the docs themselves cite sections as
`docs/fidelity/gemm.md, 'Power limits'` (or "...", or a curly-quoted title, with or without the
comma; a reference may wrap onto the next line of a comment; further titles joined to the
first by "and" or "or" are read as titles of the same file). For each such reference the file
must exist and one of its headings, or a bold lead that opens a paragraph or list item as a
section label (`**Symmetry.**`), must start with the quoted title (case-sensitive, backticks and
double quotes ignored: a reference may quote only the start of a long heading). Relative
markdown links in the repository's .md files must point to existing files, and an #anchor to a
heading of the target (GitHub's anchors). A docs/ path that names a file of another project (its
source named before it: `pytorch/torchtitan docs/performance.md`) is not checked.

Run: python3 tests/test_doc_references.py (ctest runs it as python_test_doc_references). It reads
the tracked files (`git ls-files`), or walks the tree where there is no git checkout."""
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))

# Directories the tree walk skips (build outputs, dependencies), where `git ls-files` is not there.
SKIP_DIRS = {".git", "node_modules", "dist", "test-results", "corpus-run", "corpus-import-run"}

# docs/ paths of other projects the text cites as sources without naming their repository right
# before the path (e.g. "the launch command of torchtitan `docs/float8.md`"): not files here.
FOREIGN_DOCS = {
    "docs/float8.md",  # pytorch/torchtitan
    "docs/performance-summary.md",  # NVIDIA-NeMo/Megatron-Bridge
}

REF = re.compile(r"(?<![\w/.-])(docs/[\w/-]+\.md)(?![\w/-])")
# What precedes a reference to another project's file: its repository ("owner/name ") or name.
FOREIGN_BEFORE = re.compile(r"(?:(?:^|[\s(\"'`])[\w.-]+/[\w.-]+|torchtitan|TorchTitan)\s*`?$")
# The quoted section title after a reference: a comma or whitespace, then '...', "..." or a
# curly-quoted title. A single-quoted title ends at a quote not followed by a letter (so
# 'Megatron's fused kernels' is read whole).
TITLE = re.compile(r"""^`?(?:,\s*|\s+)(?:'(.+?)'(?![A-Za-z])|"(.+?)"|\u201c(.+?)\u201d)""")
# Further titles of the same file after the first: (the path), "A" and "B" (or ", or").
MORE_TITLE = re.compile(r"""^,?\s+(?:and|or)\s+(?:'(.+?)'(?![A-Za-z])|"(.+?)"|\u201c(.+?)\u201d)""")
COMMENT_LEAD = re.compile(r"^\s*(//+|#+(?=\s|$)|\*(?=\s|$))?\s*")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
BOLD_LEAD = re.compile(r"^\s*(?:\d+\.\s+|[-*]\s+)?\*\*(.+?)\*\*")


def tracked_files():
    """Repository-relative paths of the tracked files, or of every file where this is not a git
    checkout of its own (an unpacked copy, perhaps inside another repository)."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode("utf-8").strip()
        if os.path.realpath(top) == os.path.realpath(ROOT):
            out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
            files = [f for f in out.stdout.decode("utf-8").split("\0") if f]
            return [f for f in files if os.path.isfile(os.path.join(ROOT, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for top, dirs, names in os.walk(ROOT):
        rel_top = os.path.relpath(top, ROOT)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and not
                   (rel_top == "." and d.startswith("build"))]
        for n in names:
            files.append(os.path.normpath(os.path.join(rel_top, n)).replace(os.sep, "/"))
    return files


def read_text(rel):
    try:
        with open(os.path.join(ROOT, rel), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def strip_code(text):
    return text.replace("`", "")


def comparable(title):
    """A title as references quote it: no code spans' backticks, no inner double quotes."""
    return " ".join(re.sub("[`\"\u201c\u201d]", "", title).split())


def anchor(title):
    """GitHub's anchor of a heading: lowercase, punctuation but '-' and '_' dropped, spaces '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link in a heading: its text
    text = strip_code(text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_headings = {}


def headings(rel):
    """(titles, anchors) of a markdown file, outside fenced code blocks: the titles are its
    headings and its bold paragraph leads, the anchors its headings'."""
    if rel not in _headings:
        titles, anchors, seen = [], set(), {}
        text = read_text(rel) or ""
        fenced = False
        for line in text.splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            lead = BOLD_LEAD.match(line)
            if lead:
                titles.append(lead.group(1))
            m = HEADING.match(line)
            if not m:
                continue
            titles.append(m.group(2))
            a = anchor(m.group(2))
            n = seen.get(a, 0)
            seen[a] = n + 1
            anchors.add(a if n == 0 else "%s-%d" % (a, n))
        _headings[rel] = (titles, anchors)
    return _headings[rel]


def title_matches(rel, title):
    want = comparable(title)
    return any(comparable(h).startswith(want) for h in headings(rel)[0])


def section_references(files):
    """(file, line number, docs path, quoted title or None) of every docs/ reference."""
    refs = []
    for rel in files:
        text = read_text(rel)
        if text is None or "docs/" not in text:
            continue
        lines = text.splitlines()
        for i, line in enumerate(lines):
            for m in REF.finditer(line):
                path = m.group(1)
                if path in FOREIGN_DOCS or FOREIGN_BEFORE.search(line[:m.start()]):
                    continue
                rest = line[m.end():].replace('\\"', '"')
                t = TITLE.match(rest)
                if t is None and i + 1 < len(lines):
                    # the title (or its end) on the next line of a wrapped paragraph, of a
                    # comment that goes on (the next line opens with the same comment marker),
                    # or of a string literal continued on the next line ("... 'Power " "limits'")
                    marker = COMMENT_LEAD.match(line).group(1)
                    nxt = COMMENT_LEAD.match(lines[i + 1])
                    if marker is None or nxt.group(1) == marker:
                        more = lines[i + 1][nxt.end():].replace('\\"', '"')
                        if rest.rstrip().endswith('"') and more.startswith('"'):
                            rest = rest.rstrip()[:-1] + more[1:]
                        else:
                            rest = rest.rstrip() + " " + more
                        t = TITLE.match(rest)
                refs.extend((rel, i + 1, path, title) for title in quoted_titles(rest, t))
    return refs


def quoted_titles(rest, first):
    """The titles quoted after a reference (TITLE's match `first` on `rest`), the first and any
    joined to it by "and"/"or"; [None] when none is quoted."""
    if first is None:
        return [None]
    titles, end = [], 0
    m = first
    while m is not None:
        titles.append(next(g for g in m.groups() if g is not None))
        end += m.end()
        m = MORE_TITLE.match(rest[end:])
    return titles


def link_problems(files):
    """Broken relative links (file, anchor) in the repository's markdown files."""
    problems = []
    md = [f for f in files if f.endswith(".md")]
    for rel in md:
        text = read_text(rel)
        if text is None:
            continue
        fenced = False
        for i, line in enumerate(text.splitlines()):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
                    continue  # a URL, or an absolute path
                path, _, frag = target.partition("#")
                dest = rel
                if path:
                    dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)).replace(os.sep, "/")
                where = "%s:%d: link %s" % (rel, i + 1, target)
                if dest.startswith("../") or not os.path.exists(os.path.join(ROOT, dest)):
                    problems.append(where + ": no file " + dest)
                elif frag and dest.endswith(".md") and frag not in headings(dest)[1]:
                    problems.append(where + ": no heading with anchor #" + frag + " in " + dest)
    return problems


class DocReferences(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = tracked_files()

    def test_found_the_repository(self):
        self.assertIn("docs/fidelity.md", self.files)
        self.assertGreater(len(section_references(self.files)), 50)

    def test_section_references_resolve(self):
        problems = []
        for rel, line, path, title in section_references(self.files):
            if not os.path.isfile(os.path.join(ROOT, path)):
                problems.append("%s:%d: %s does not exist" % (rel, line, path))
            elif title is not None and not title_matches(path, title):
                problems.append("%s:%d: no heading of %s starts with %r" % (rel, line, path, title))
        if problems:
            self.fail("%d broken:\n%s" % (len(problems), "\n".join(problems)))

    def test_markdown_links_resolve(self):
        problems = link_problems(self.files)
        if problems:
            self.fail("%d broken:\n%s" % (len(problems), "\n".join(problems)))


class Parsing(unittest.TestCase):
    def test_anchor(self):
        self.assertEqual(anchor("Power limits (`gpu.compute_throughput_fraction`, session 11)"),
                         "power-limits-gpucompute_throughput_fraction-session-11")
        self.assertEqual(anchor("MI300X and MI355X: published measurements (`mi300x-8`, `mi355x-8`)"),
                         "mi300x-and-mi355x-published-measurements-mi300x-8-mi355x-8")

    def test_title(self):
        for rest, want in ((", 'Power limits')", "Power limits"),
                           (' "Attention by kernel"', "Attention by kernel"),
                           (", 'Megatron's fused kernels'.", "Megatron's fused kernels"),
                           (", \u201cRows above 4096\u201d", "Rows above 4096"), ("`, \"FP8\"", "FP8")):
            m = TITLE.match(rest)
            self.assertIsNotNone(m, rest)
            self.assertEqual(next(g for g in m.groups() if g is not None), want)
        self.assertIsNone(TITLE.match("'s \"Versions used\""))
        rest = ', "Framework overheads" and "The zero-bubble comparison", say which'
        self.assertEqual(quoted_titles(rest, TITLE.match(rest)), ["Framework overheads", "The zero-bubble comparison"])
        rest = ', "Framework overheads", and docs/fidelity/validation.md, "The zero-bubble comparison"'
        self.assertEqual(quoted_titles(rest, TITLE.match(rest)), ["Framework overheads"])
        self.assertEqual(quoted_titles(" says nothing", None), [None])
        self.assertIsNone(TITLE.match(" says \"We used\""))


if __name__ == "__main__":
    unittest.main(verbosity=1 if len(sys.argv) == 1 else 2)
