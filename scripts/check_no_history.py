#!/usr/bin/env python3
"""The docs and tests describe the project as it is: no line of README.md, docs/, tests/,
bench/README.md, kernels_mlp/README.md or validation/README.md names a work session by its ordinal
("the 3rd session", spelled out or in digits) or number, nor one of the project's issues by number
("issue 12", "issues 4 and 7", a bare "#12"). Dates and commits say when something was measured;
the history of a measurement belongs in its data folder's README (validation/data/) and in git.

Another project's issue may be cited as owner/repo issue #N, repo-name #N (a name with a '-' or '/'),
or by its URL.

    scripts/check_no_history.py [--root DIR]     exit 1 and one line per hit (FILE:LINE: text),
                                                 exit 2 on a root that is not a folder
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Files and folders checked, relative to the root; folders recursively, every text file in them.
CHECKED = ["README.md", "docs", "tests", "bench/README.md", "kernels_mlp/README.md", "validation/README.md"]

_UNITS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth"
_ORDINAL = (rf"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ]?(?:{_UNITS})|{_UNITS}"
            r"|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth"
            r"|twentieth|thirtieth|fortieth|fiftieth|sixtieth|seventieth|eightieth|ninetieth"
            r"|\d+(?:st|nd|rd|th))")
SESSION_ORDINAL = re.compile(rf"\b{_ORDINAL}[- ]sessions?\b", re.I)
SESSION_NUMBER = re.compile(r"\bsessions?\s+#?\d+\b", re.I)
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\d+\b", re.I)
BARE_NUMBER = re.compile(r"(?:^|(?<=[\s(\[]))#\d+\b")
# Another project's issue: "owner/repo issue #N" (the name just before "issue" holds a '/'), or
# "owner/repo #N", "nccl-tests #N" (the name just before "#" holds a '/' or a '-').
FOREIGN_ISSUE = re.compile(r"[\w.-]*/[\w./-]*\s+$")
FOREIGN_BARE = re.compile(r"[\w.]*[/-][\w./-]*\s+$")


def hits_in_line(line):
    """The history references of one line, as (column, text) pairs."""
    found = []
    for rx in (SESSION_ORDINAL, SESSION_NUMBER):
        found += [(m.start(), m.group(0)) for m in rx.finditer(line)]
    issues = []  # every "issue N" span, cited or not: its "#N" is not a bare number
    for rx, foreign in ((ISSUE_NUMBER, FOREIGN_ISSUE), (BARE_NUMBER, FOREIGN_BARE)):
        for m in rx.finditer(line):
            inside = any(s <= m.start() < e for s, e in issues)
            if rx is ISSUE_NUMBER:
                issues.append(m.span())
            if not inside and not foreign.search(line[:m.start()]):
                found.append((m.start(), m.group(0)))
    return sorted(found)


def checked_files(root):
    for rel in CHECKED:
        p = root / rel
        if p.is_file():
            yield p
        elif p.is_dir():
            yield from sorted(q for q in p.rglob("*") if q.is_file())


def read_text(path):
    """The file's text, or None for a binary file (a NUL byte or not UTF-8)."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(ROOT), help="the tree to check (default: this checkout)")
    args = ap.parse_args()
    root = Path(args.root)
    if not root.is_dir():
        print(f"check_no_history: --root {args.root}: not a folder", file=sys.stderr)
        return 2
    hits = 0
    for path in checked_files(root):
        text = read_text(path)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            found = hits_in_line(line)
            if found:
                names = ", ".join(f"'{w}'" for _, w in found)
                col = found[0][0]
                around = ("..." if col > 60 else "") + line[max(0, col - 60):col + 100].strip()
                print(f"{path.relative_to(root)}:{n}: {names}: {around}")
                hits += 1
    if hits:
        print(f"check_no_history: {hits} line(s) name a session or an issue: say when with a date or a commit "
              "(history belongs in validation/data/**/README.md and git), or describe what is", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
