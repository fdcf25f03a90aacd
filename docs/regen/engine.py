"""The machinery of docs/regenerate.py: generated blocks in the docs, generated files, and the checks.

A generated block sits in README.md or a file of docs/ between two marker comments,

    <!-- regenerate.py: NAME -->
    ...what the generator NAME printed...
    <!-- /regenerate.py: NAME -->

and a generator is a function registered under NAME with @block; it returns the block's text from
what the current binary prints. A file generator (@files) writes data files (and, when asked,
pictures drawn from them) under a staging root; `--check` compares the data files with the committed
ones and never draws: a picture is checked through the data it is drawn from.
"""
import concurrent.futures
import difflib
import os
import re
import shutil
import subprocess
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC_ROOT = ROOT  # where README.md and docs/ are read and written (--docs-root; the commands always run in ROOT)
DOCS = []


def set_docs_root(path):
    global DOC_ROOT
    DOC_ROOT = os.path.abspath(path)
    DOCS[:] = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(DOC_ROOT, "docs")) if f.endswith(".md"))


set_docs_root(ROOT)
PICTURES = (".png", ".svg")
BLOCKS = {}  # name -> function(ctx) -> str
FILES = {}   # name -> function(ctx, out) where out(relpath) gives the staging path to write
CHECKS = {}  # name -> function(ctx) -> [problems]: claims of the docs that are checked, not rewritten
MARKER = re.compile(r"<!-- regenerate\.py: ([A-Za-z0-9_-]+) -->\n(.*?)<!-- /regenerate\.py: \1 -->", re.S)
OPEN = re.compile(r"<!-- (/?)regenerate\.py: ([A-Za-z0-9_-]+) -->")


def block(name):
    def register(fn):
        assert name not in BLOCKS, name
        BLOCKS[name] = fn
        return fn
    return register


def files(name):
    def register(fn):
        assert name not in FILES, name
        FILES[name] = fn
        return fn
    return register


def check(name):
    def register(fn):
        assert name not in CHECKS, name
        CHECKS[name] = fn
        return fn
    return register


class Failure(Exception):
    """A generator found that the docs' words no longer hold (e.g. a claim its numbers contradict)."""


class Ctx:
    """What generators share: the binaries, a cache of command outputs, and whether to draw pictures."""

    def __init__(self, dtsim, trainer, pictures):
        self.dtsim, self.trainer, self.pictures = dtsim, trainer, pictures
        # The docs describe the shipped predictors and profiles: no DTSIM_* override leaks in.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DTSIM_")}
        self.env["LC_ALL"] = "C"
        self._cache, self._locks, self._lock = {}, {}, threading.Lock()

    def run(self, cmd, env=None, ok=(0,)):
        """stdout of cmd (run from the repository root; 'dtsim' and 'dtsim-train-predictors' name the
        binaries given), remembered per command line and environment."""
        exe = {"dtsim": self.dtsim, "dtsim-train-predictors": self.trainer}.get(cmd[0], cmd[0])
        if exe is None:
            raise Failure(f"{cmd[0]} is needed (pass --train-predictors PATH)")
        cmd = [exe] + [str(c) for c in cmd[1:]]
        key = (tuple(cmd), tuple(sorted((env or {}).items())))
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._cache:
                r = subprocess.run(cmd, cwd=ROOT, env=dict(self.env, **(env or {})), capture_output=True, text=True)
                if r.returncode not in ok:
                    raise Failure(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[:400]}")
                self._cache[key] = (r.returncode, r.stdout, r.stderr)
            return self._cache[key][1]

    def run_rc(self, cmd, env=None, ok=(0, 2)):
        """(exit status, stdout, stderr) of cmd, as run(), for commands that may refuse their input."""
        self.run(cmd, env, ok)
        exe = {"dtsim": self.dtsim, "dtsim-train-predictors": self.trainer}.get(cmd[0], cmd[0])
        key = (tuple([exe] + [str(c) for c in cmd[1:]]), tuple(sorted((env or {}).items())))
        return self._cache[key]


def read(rel):
    with open(os.path.join(DOC_ROOT, rel), encoding="utf-8") as f:
        return f.read()


def doc_markers():
    """{name: doc} for every marker pair; raises on a marker without its pair or used twice."""
    where = {}
    for doc in DOCS:
        text = read(doc)
        opened = [m.group(2) for m in OPEN.finditer(text) if not m.group(1)]
        closed = [m.group(2) for m in OPEN.finditer(text) if m.group(1)]
        pairs = [m.group(1) for m in MARKER.finditer(text)]
        if sorted(opened) != sorted(pairs) or sorted(closed) != sorted(pairs):
            raise Failure(f"{doc}: a regenerate.py marker without its pair (opened {opened}, closed {closed})")
        for name in pairs:
            if name in where:
                raise Failure(f"block {name} appears in {where[name]} and {doc}")
            where[name] = doc
    return where


def heading_slugs(text):
    """GitHub's anchors of a markdown file's headings, and the headings' plain titles."""
    slugs, titles = set(), set()
    for line in text.split("\n"):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            title = m.group(1).strip()
            titles.add(title)
            slugs.add(re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-"))
    return slugs, titles


def check_references():
    """Every link to a heading of a doc (`](file.md#anchor)`) and every section named in prose
    (`file.md, "Title"` or `file.md ("Title")`) must exist; returns the problems found."""
    problems = []
    headings = {}
    for doc in DOCS:
        headings[doc] = heading_slugs(read(doc))
    for doc in DOCS:
        base = os.path.dirname(doc)
        text = read(doc)
        for m in re.finditer(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)", text):
            target = os.path.normpath(os.path.join(base, m.group(1))) if m.group(1) else doc
            if target in headings and m.group(2) not in headings[target][0]:
                problems.append(f"{doc}: link to {target}#{m.group(2)}: no such heading")
        for m in re.finditer(r"([\w./-]+\.md),? \(?\"([^\"]+)\"", text):
            name = m.group(1)
            target = next((t for t in (os.path.normpath(os.path.join(base, name)), os.path.normpath(name)) if t in headings), None)
            title = " ".join(m.group(2).split())
            if target and not any(t == title or t.startswith(title) for t in headings[target][1]):
                problems.append(f'{doc}: names section "{title}" of {target}: no such heading')
    return problems


def generate(ctx, names, jobs):
    """Runs the generators named (blocks and files) concurrently; returns ({name: text}, staging)."""
    staging = tempfile.mkdtemp(prefix="dtsim-regen-")

    def out(rel):
        path = os.path.join(staging, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def one(name):
        if name in BLOCKS:
            return name, BLOCKS[name](ctx).strip("\n")
        if name in CHECKS:
            return name, CHECKS[name](ctx)
        FILES[name](ctx, out)
        return name, None

    texts, problems = {}, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, result in pool.map(one, names):
            if isinstance(result, list):
                problems += result
            elif result is not None:
                texts[name] = result
    return texts, staging, problems


def staged_files(staging):
    for d, _, names in os.walk(staging):
        for n in sorted(names):
            yield os.path.relpath(os.path.join(d, n), staging)


def diff(old, new, label, limit=40):
    lines = list(difflib.unified_diff(old.split("\n"), new.split("\n"), f"{label} (committed)", f"{label} (binary now)", lineterm="", n=1))
    return "\n".join(lines[:limit] + ([f"... {len(lines) - limit} more diff lines"] if len(lines) > limit else []))


def apply(texts, staging, check):
    """Writes (or, with check, compares) every block and staged file; returns the differences found."""
    found = []
    for doc in DOCS:
        text = read(doc)

        def replace(m):
            name = m.group(1)
            if name not in texts:
                return m.group(0)
            new = f"<!-- regenerate.py: {name} -->\n\n{texts[name]}\n\n<!-- /regenerate.py: {name} -->"
            if new != m.group(0):
                found.append(f"{doc}: block {name} differs from what the binary prints now\n"
                             + diff(m.group(2).strip("\n"), texts[name], f"{doc} [{name}]"))
            return new

        updated = MARKER.sub(replace, text)
        if not check and updated != text:
            with open(os.path.join(DOC_ROOT, doc), "w", encoding="utf-8") as f:
                f.write(updated)
    for rel in staged_files(staging):
        src, dst = os.path.join(staging, rel), os.path.join(DOC_ROOT, rel)
        if rel.endswith(PICTURES):
            if not check:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
            continue
        with open(src, encoding="utf-8") as f:
            new = f.read()
        old = read(rel) if os.path.exists(dst) else None
        if old != new:
            found.append(f"{rel}: differs from what the binary writes now\n" + (diff(old, new, rel) if old is not None else "(not committed)"))
            if not check:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
    shutil.rmtree(staging)
    return found
