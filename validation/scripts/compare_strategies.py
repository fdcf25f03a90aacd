#!/usr/bin/env python3
"""Measured vs predicted for the runs of validation/scripts/run_strategies.sh.

usage: validation/scripts/compare_strategies.py OUT_OR_TAR [--dtsim build/dtsim] [--out FILE.md]

OUT_OR_TAR: the folder run_strategies.sh wrote (its strategies/ subfolder is used) or the .tar.gz it
packed (extracted to a temporary folder). Runs `dtsim validate --format json` on every measured-run
JSON (each run predicted with its own scheme: dp, hierarchical on the node cut into 2 x 2,
hierarchical-leader, local-sgd with tau = K; exit 2 from dtsim on an unknown scheme is passed on),
then prints one markdown table per model x batch x precision: per scheme the measured step (the
period's mean step for local SGD), dtsim's prediction, the signed error, measured and predicted
speed-up over dp in the same call, and the run's parameter check.
"""
import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

ORDER = ["dp", "hierarchical/2", "hierarchical-leader/2", "local-sgd/1", "local-sgd/4", "local-sgd/16"]


def scheme_of(run):
    st = run.get("strategy")
    if not st:
        return "dp"
    if st["name"] in ("hierarchical", "hierarchical-leader"):
        return f'{st["name"]}/{st["group_size"]}'
    if st["name"] == "local-sgd":
        return f'local-sgd/{st["average_every"]}'
    return st["name"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("measured")
    ap.add_argument("--dtsim", default="build/dtsim")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    src = a.measured
    tmp = None
    if os.path.isfile(src):
        tmp = tempfile.mkdtemp(prefix="dtsim_strategies_")
        with tarfile.open(src) as t:
            t.extractall(tmp)
        src = tmp
    folder = os.path.join(src, "strategies") if os.path.isdir(os.path.join(src, "strategies")) else src
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json"))
    if not files:
        sys.exit(f"compare_strategies.py: no measured-run JSON under {folder}")
    cmd = [a.dtsim, "validate", "--format", "json"]
    for f in files:
        cmd += ["--measured", f]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        sys.exit(r.returncode)
    pred = {os.path.basename(x["file"]): x for x in json.loads(r.stdout)["runs"]}

    groups = {}
    for f in files:
        run = json.load(open(f))
        key = (run["model"], run["batch_per_gpu"], run["precision"], run["gpus"])
        p = pred[os.path.basename(f)]
        st = run.get("strategy") or {}
        check = run["checks"]["params_identical_across_ranks"]
        groups.setdefault(key, {})[scheme_of(run)] = {
            "measured": p["measured_s"], "predicted": p["predicted_s"], "error": p["error"], "params_same": check,
            "drift": st.get("params_identical_before_final_average"), "file": os.path.basename(f),
            "gpu": run["provenance"]["gpu"].get("name", "?")}

    out = []
    gpus_seen = sorted({v["gpu"] for g in groups.values() for v in g.values()})
    out.append(f"Measured on: {', '.join(gpus_seen)}; dtsim: {a.dtsim} validate (auto compute model, --algo auto).\n")
    for key in sorted(groups):
        g = groups[key]
        model, batch, prec, gpus = key
        out.append(f"\n### {model}, batch {batch} per GPU, {prec}, {gpus} GPUs\n")
        out.append("| scheme | measured ms | predicted ms | error | measured vs dp | predicted vs dp | params identical |")
        out.append("|---|---|---|---|---|---|---|")
        dp = g.get("dp")
        for s in ORDER + sorted(set(g) - set(ORDER)):
            if s not in g:
                continue
            v = g[s]
            vs_m = f'{dp["measured"] / v["measured"]:.3f}x' if dp else "-"
            vs_p = f'{dp["predicted"] / v["predicted"]:.3f}x' if dp else "-"
            chk = "yes" if v["params_same"] else "NO"
            if v["drift"] is not None:
                chk += " (after a final average)" if v["drift"] is False else ""
            out.append(f'| {s} | {1e3 * v["measured"]:.3f} | {1e3 * v["predicted"]:.3f} | {100 * v["error"]:+.1f}% '
                       f'| {vs_m} | {vs_p} | {chk} |')
    errs = [abs(v["error"]) for g in groups.values() for v in g.values()]
    by = {}
    for g in groups.values():
        for s, v in g.items():
            by.setdefault(s, []).append(abs(v["error"]))
    out.append("\n| scheme | runs | mean abs error | max abs error |")
    out.append("|---|---|---|---|")
    for s in ORDER + sorted(set(by) - set(ORDER)):
        if s in by:
            e = by[s]
            out.append(f"| {s} | {len(e)} | {100 * sum(e) / len(e):.1f}% | {100 * max(e):.1f}% |")
    out.append(f"| all | {len(errs)} | {100 * sum(errs) / len(errs):.1f}% | {100 * max(errs):.1f}% |")
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
