"""The committed measured runs as `dtsim validate` predicts them, and the statistics the tables print.

Every figure is `dtsim validate --format json` on committed folders of validation/data with the
shipped predictors and framework profiles (each run's program's default profile unless a profile is
named). A run counts as GPU-paced when dtsim's predicted bound is not the host.
"""
import json
import os
import re
import statistics as st

from .engine import ROOT, Failure

DATA = "validation/data"
TRANSFORMERS = {"gpt2_small", "bert_base", "vit_b_16"}
GPU_LABEL = {"h100-sxm": "H100", "h200-sxm": "H200"}


def measured_folders():
    """{folder under validation/data: program} for every folder holding measured runs."""
    out = {}
    for d, dirs, names in os.walk(os.path.join(ROOT, DATA)):
        dirs.sort()
        for n in sorted(names):
            if not n.endswith(".json"):
                continue
            try:
                with open(os.path.join(d, n), encoding="utf-8") as f:
                    doc = json.load(f)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(doc, dict) and "measured-run" in str(doc.get("schema", "")):
                out[os.path.relpath(d, os.path.join(ROOT, DATA))] = doc.get("framework", "")
                break
    return out


def emulated(folder):
    return "/emulated" in "/" + folder


def validate(ctx, folders, framework=None, env=None, cluster=None):
    """(rows, refused): every run of the folders predicted; a folder whose runs validate refuses
    (exit 2) is left out and returned in refused with dtsim's message."""
    folders, refused = list(folders), {}
    while folders:
        cmd = ["dtsim", "validate", "--format", "json"] + (["--framework", framework] if framework else [])
        cmd += ["--cluster", cluster] if cluster else []
        for f in folders:
            cmd += ["--measured", f"{DATA}/{f}"]
        rc, out, err = ctx.run_rc(cmd, env)
        if rc == 0:
            rows = json.loads(out)["runs"]
            for r in rows:
                r["folder"] = os.path.relpath(os.path.dirname(r["file"]), DATA)
            return rows, refused
        m = re.search(re.escape(DATA) + r"/(\S+)/[^/\s]+\.json", err)
        bad = m and m.group(1)
        if bad not in folders:
            raise Failure(f"dtsim validate refused a run outside the folders asked for: {err.strip()}")
        refused[bad] = err.strip().split("\n")[0]
        folders.remove(bad)
    return [], refused


def default_rows(ctx):
    """Every committed run outside the emulated clusters, each program's default profile."""
    folders = [f for f in measured_folders() if not emulated(f)]
    return validate(ctx, folders)


def pytorch_fitted_rows(ctx):
    folders = [f for f, p in measured_folders().items() if p == "pytorch" and not emulated(f)]
    return validate(ctx, folders, framework="pytorch")[0]


def fit_runs(profile):
    with open(os.path.join(ROOT, "configs", "frameworks", profile + ".json"), encoding="utf-8") as f:
        runs = json.load(f)["sources"]["training_runs"]
    return {os.path.normpath(r) for r in runs}


class Stats:
    def __init__(self, errors):
        e = sorted(abs(x) for x in errors)
        self.n = len(e)
        self.mean = st.mean(e) if e else float("nan")
        self.median = st.median(e) if e else float("nan")
        self.max = e[-1] if e else float("nan")


def pct(x, digits=1):
    return "-" if x != x else f"{100 * x:.{digits}f}%"


def signed(x):
    return f"{100 * x:+.1f}%"


def errors(rows):
    return [r["error"] for r in rows]


def paced(rows, gpu=True):
    return [r for r in rows if (r["predicted_bound"] != "host") == gpu]


def gpu_of(r):
    return GPU_LABEL.get(r["cluster"], r["cluster"])


def table(header, rows, align=None):
    align = align or ["---"] * len(header)
    line = lambda cells: "| " + " | ".join(str(c) for c in cells) + " |"
    return "\n".join([line(header), "|" + "|".join(align) + "|"] + [line(r) for r in rows])


def refused_note(refused):
    if not refused:
        return ""
    items = "; ".join(f"`{f}` ({msg.replace('dtsim: error: ', '')})" for f, msg in sorted(refused.items()))
    return f"\n\nNot in these tables, because `dtsim validate` refuses their runs: {items}."
