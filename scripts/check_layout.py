#!/usr/bin/env python3
"""Checks the library's shape (docs/design.md, "Layers"):

- no function longer than --max-function-lines (80), signature to closing brace;
- no library file longer than --max-file-lines (900);
- no library folder holding more than --max-folder-share (30%) of the library's lines.

    scripts/check_layout.py [--list N]     exit 1 and one line per breach; --list prints the N longest

The include rule between folders is CMake's (CMakeLists.txt, dtsim_check_includes). Functions are
found by braces after comments and string literals are blanked: a `{` whose statement ends in `)`
(optionally `const`, `override`, `noexcept`, a trailing return type or a constructor's initialiser
list) outside any function opens a function; everything up to its matching `}` belongs to it,
lambdas included.
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ["core", "workload", "hardware", "compute", "network", "sim", "study", "report"]

FUNCTION_TAIL = re.compile(
    r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>,\s*&]+)?$|\)\s*:\s*[\w:]+\s*[({].*[)}]\s*$",
    re.S)


def blank_comments_and_strings(text):
    """The source with comments, string and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of every function defined in a C++ file."""
    text = blank_comments_and_strings(path.read_text())
    found = []
    stack = []  # per open brace: ("function", start line, name) or ("block", ...)
    stmt_start = 0  # offset where the current statement (text since the last ; { }) begins
    for i, c in enumerate(text):
        if c == ";":
            stmt_start = i + 1
        elif c == "{":
            header = text[stmt_start:i].strip()
            in_function = any(kind == "function" for kind, _, _ in stack)
            if not in_function and FUNCTION_TAIL.search(header) and not re.match(r"(namespace|class|struct|enum|union)\b", header):
                first = stmt_start + (len(text[stmt_start:i]) - len(text[stmt_start:i].lstrip()))
                name = re.findall(r"([\w:~]+|operator\s*[^\s(]+)\s*\(", header)
                stack.append(("function", text.count("\n", 0, first) + 1, name[0] if name else "?"))
            else:
                stack.append(("block", 0, ""))
            stmt_start = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    found.append((name, start, text.count("\n", 0, i) + 1 - start + 1))
            stmt_start = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-function-lines", type=int, default=80)
    ap.add_argument("--max-file-lines", type=int, default=900)
    ap.add_argument("--max-folder-share", type=float, default=0.30)
    ap.add_argument("--list", type=int, default=0, help="print the N longest functions")
    args = ap.parse_args()

    breaches, all_functions, lines = [], [], {}
    for folder in LIBRARY:
        files = sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in (".cpp", ".hpp"))
        lines[folder] = sum(p.read_text().count("\n") for p in files)
        for p in files:
            n = p.read_text().count("\n")
            if n > args.max_file_lines:
                breaches.append(f"{p.relative_to(ROOT)} is {n} lines, more than {args.max_file_lines}")
            for name, start, count in functions(p):
                all_functions.append((count, f"{p.relative_to(ROOT)}:{start}", name))
    total = sum(lines.values())
    for folder, n in lines.items():
        if n > args.max_folder_share * total:
            breaches.append(f"{folder}/ holds {n} of the library's {total} lines ({n / total:.0%}), "
                            f"more than {args.max_folder_share:.0%}")
    for count, where, name in sorted(all_functions, reverse=True):
        if count > args.max_function_lines:
            breaches.append(f"{where}: {name} is {count} lines, more than {args.max_function_lines}")
    if args.list:
        for count, where, name in sorted(all_functions, reverse=True)[:args.list]:
            print(f"{count:5d}  {where}  {name}")
        print("lines per folder: " + ", ".join(f"{f} {n} ({n / total:.0%})" for f, n in lines.items()))
    for b in breaches:
        print(b)
    if not breaches:
        print(f"layout ok: {len(all_functions)} functions, none over {args.max_function_lines} lines; "
              f"largest folder {max(lines.values()) / total:.0%} of {total} lines")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
