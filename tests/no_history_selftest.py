#!/usr/bin/env python3
"""scripts/check_no_history.py can fail: in a small tree of the checked files, a line that names a
work session by ordinal (in words or digits) or by number, or an issue by number ("issue N", a bare
"#N"), in each checked place, must make the check exit 1 and name FILE:LINE; a clean tree, with
another project's issues cited as owner/repo, repo-name #N or by URL, must pass; a root that is not
a folder exits 2. The history words are put together at run time, so that this file passes the
check itself.

  tests/no_history_selftest.py
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK = os.path.join(ROOT, "scripts", "check_no_history.py")
S = "sess" + "ion"
I = "iss" + "ue"
H = "#"

CLEAN = {
    "README.md": "# dtsim\n\nMeasured 2026-11-27 10:57 UTC at commit 65f27c1.\n"
                 f"NCCL on TCP moves 4-6 GB/s (NVIDIA/nccl {I} {H}450).\n",
    "docs/a.md": f"Published: [nccl-tests {H}119](https://github.com/NVIDIA/nccl-tests/{I}s/119), colour {H}1f77b4.\n",
    "tests/test_a.cpp": f"// A {S} of the user's is not the project's history.\nint main() {{ return 0; }}\n",
    "bench/README.md": "| budget | benchmark |\n|---|---|\n| at most 1 s | BM_ZooSweep |\n",
    "kernels_mlp/README.md": "## Transformer kernels\n",
    "validation/README.md": "### Other schemes\n",
}

# (name, file, the line put in it): each must fail the check, naming the file and its line.
BAD = [
    ("an ordinal in words", "docs/a.md", f"Measured 2026-12-01 (twenty-sixth {S})."),
    ("an ordinal in one word", "README.md", f"As the thirteenth {S} found, ..."),
    ("an ordinal in digits", "tests/test_a.cpp", f"// fixed in the 3rd {S}"),
    ("a numbered session", "kernels_mlp/README.md", f"Trained in {S} 12."),
    ("an issue number", "bench/README.md", f"| at most 1 s | {I} 7 | BM_ZooSweep |"),
    ("an issue number with #", "validation/README.md", f"### Other schemes ({I.capitalize()} {H}8)"),
    ("issues by number", "docs/a.md", f"The budgets of {I}s 4 and 7."),
    ("a bare #N", "kernels_mlp/README.md", f"## Transformer kernels ({H}25)"),
    ("in a folder below tests/", "tests/data/x/notes.txt", f"{I} 26's search"),
]


def write_tree(tmp, extra=None):
    for rel, text in CLEAN.items():
        path = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    if extra:
        rel, line = extra
        path = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        with open(path, encoding="utf-8") as f:
            return len(f.read().splitlines())
    return 0


def run(root):
    r = subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(tmp)
        rc, out = run(tmp)
        print(("ok  " if rc == 0 else "FAIL") + f" a clean tree passes: exit {rc}")
        ok &= rc == 0
        if rc != 0:
            print(out)
    for name, rel, line in BAD:
        with tempfile.TemporaryDirectory() as tmp:
            n = write_tree(tmp, (rel, line))
            rc, out = run(tmp)
            where = f"{rel}:{n}:"
            good = rc == 1 and where in out
            print(("ok  " if good else "FAIL") + f" {name} fails: exit {rc}, names {where} {where in out}")
            ok &= good
            if not good:
                print(out)
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = run(os.path.join(tmp, "missing"))
        good = rc == 2 and "not a folder" in out
        print(("ok  " if good else "FAIL") + f" a missing root is refused: exit {rc}")
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
