#!/usr/bin/env python3
"""docs/regenerate.py --check can fail: on a copy of README.md and docs/, a changed number in a
generated block, a marker without its pair, a link to a heading that does not exist and a README
command example that no longer runs must each make the check fail, and the untouched copy must pass
(a fast generator each: plan-example, and readme-commands for the command).

  tests/docs_check_selftest.py PATH/TO/dtsim
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTSIM = sys.argv[1]


def copy_docs(tmp):
    shutil.copyfile(os.path.join(ROOT, "README.md"), os.path.join(tmp, "README.md"))
    os.makedirs(os.path.join(tmp, "docs"))
    for name in os.listdir(os.path.join(ROOT, "docs")):
        if name.endswith(".md"):
            shutil.copyfile(os.path.join(ROOT, "docs", name), os.path.join(tmp, "docs", name))


def check(tmp, only="plan-example"):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "docs", "regenerate.py"), "--check", "--only", only,
                        "--dtsim", DTSIM, "--docs-root", tmp], capture_output=True, text=True)
    return r.returncode, r.stderr


def edit(tmp, rel, fn):
    path = os.path.join(tmp, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = fn(text)
    assert new != text, f"the self-test's edit of {rel} changed nothing"
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)


def expect(name, tmp, rc, words, only):
    got, err = check(tmp, only)
    if got != rc or any(w not in err for w in words):
        print(f"FAIL {name}: exit {got} (expected {rc}), stderr:\n{err}")
        return False
    print(f"ok   {name}: exit {got}")
    return True


def main():
    ok = True
    cases = [
        ("untouched copy passes", None, 0, []),
        ("a changed figure in a generated block fails", ("docs/plan.md", lambda t: re.sub(
            r"(<!-- regenerate.py: plan-example -->.*?)(\d+) configurations, (\d+) feasible",
            lambda m: f"{m.group(1)}{m.group(2)} configurations, {int(m.group(3)) + 1} feasible", t, count=1, flags=re.S)),
         1, ["block plan-example differs"]),
        ("a marker without its pair fails", ("docs/plan.md", lambda t: t.replace("<!-- /regenerate.py: plan-example -->", "", 1)),
         2, ["without its pair"]),
        ("a link to a missing heading fails", ("docs/plan.md", lambda t: t + "\n[gone](accuracy.md#no-such-heading)\n"),
         1, ["no such heading"]),
        ("a README command that does not run fails", ("README.md", lambda t: t.replace(
            "build/dtsim strategies\n", "build/dtsim strategies --no-such-flag\n", 1)), 1, ["exits 2"], "readme-commands"),
    ]
    for name, change, rc, words, *only in cases:
        tmp = tempfile.mkdtemp(prefix="dtsim-docs-selftest-")
        try:
            copy_docs(tmp)
            if change:
                edit(tmp, *change)
            ok &= expect(name, tmp, rc, words, only[0] if only else "plan-example")
        finally:
            shutil.rmtree(tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
