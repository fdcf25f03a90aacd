#!/usr/bin/env python3
"""Regenerates every worked example, table and picture of README.md and docs/ from the current binary.

  python3 docs/regenerate.py [--dtsim build/dtsim] [--train-predictors build/dtsim-train-predictors]
  python3 docs/regenerate.py --check [...]      # exit 1 when the docs differ from what the binary prints
  python3 docs/regenerate.py --list             # the generators and the doc each writes into

Each generated block of a doc sits between `<!-- regenerate.py: NAME -->` and
`<!-- /regenerate.py: NAME -->`; the generator NAME (docs/regen/*.py) runs the commands it shows and
rewrites the block. File generators write the worked study's tables and traces (docs/study/) and the
data the pictures (docs/img/) are drawn from; pictures are redrawn (gnuplot) only without --check,
which compares their data instead. Checks (@check) run what the docs claim without rewriting it: the
README's command examples must run. The check also fails on a marker without a generator, a generator
whose block is in no doc, and a link or a named section ("docs/accuracy.md, "Title"") that does not
exist. The test suite runs the check (tests/CMakeLists.txt, docs_match_the_binary).
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from regen import engine  # noqa: E402
from regen import accuracy, collectives, layers, models, plan, readme, scaling, strategies  # noqa: E402,F401  (they register their generators)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on any difference")
    ap.add_argument("--dtsim", default=os.path.join(engine.ROOT, "build", "dtsim"))
    ap.add_argument("--train-predictors", default=os.path.join(engine.ROOT, "build", "dtsim-train-predictors"))
    ap.add_argument("--only", default="", help="comma-separated generator names (default: all)")
    ap.add_argument("--skip", default="", help="comma-separated generator names to leave alone (neither run nor compared)")
    ap.add_argument("--docs-root", default=engine.ROOT, help="the tree whose README.md and docs/ are checked or rewritten "
                    "(default: this repository; the commands always run here, on its data)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    try:
        engine.set_docs_root(a.docs_root)
        where = engine.doc_markers()
        if a.list:
            for name in sorted(engine.BLOCKS):
                print(f"{name:32s} block in {where.get(name, '(no doc)')}")
            for name in sorted(engine.FILES):
                print(f"{name:32s} files")
            for name in sorted(engine.CHECKS):
                print(f"{name:32s} check")
            return 0
        broken = [f"{doc}: marker {name} has no generator" for name, doc in sorted(where.items()) if name not in engine.BLOCKS]
        broken += [f"generator {name} has no block in any doc" for name in sorted(engine.BLOCKS) if name not in where]
        broken += engine.check_references()
        for path in (a.dtsim,):
            if not os.access(path, os.X_OK):
                raise engine.Failure(f"{path}: not an executable dtsim (build it, or pass --dtsim)")
        trainer = a.train_predictors if os.access(a.train_predictors, os.X_OK) else None
        only, skip = set(filter(None, a.only.split(","))), set(filter(None, a.skip.split(",")))
        every = sorted(engine.BLOCKS) + sorted(engine.FILES) + sorted(engine.CHECKS)
        names = [n for n in every if (not only or n in only) and n not in skip]
        unknown = (only | skip) - set(every)
        if unknown:
            raise engine.Failure(f"--only: no generator named {', '.join(sorted(unknown))} (--list lists them)")
        ctx = engine.Ctx(a.dtsim, trainer, pictures=not a.check)
        texts, staging, failed = engine.generate(ctx, names, a.jobs)
        broken += failed
        differ = engine.apply(texts, staging, a.check)
    except engine.Failure as e:
        print(f"regenerate.py: {e}", file=sys.stderr)
        return 2
    for p in differ + broken:
        print(p, file=sys.stderr)
    if differ and a.check:
        print(f"regenerate.py --check: {len(differ)} block(s) or file(s) differ from what the binary prints now; run "
              "python3 docs/regenerate.py and review the diff", file=sys.stderr)
    elif differ:
        print(f"regenerate.py: rewrote {len(differ)} block(s) or file(s)", file=sys.stderr)
    if broken:
        print(f"regenerate.py: {len(broken)} marker(s) or reference(s) to fix by hand", file=sys.stderr)
    return 1 if broken or (differ and a.check) else 0


if __name__ == "__main__":
    sys.exit(main())
