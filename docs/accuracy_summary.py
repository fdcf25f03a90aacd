#!/usr/bin/env python3
"""Prints docs/accuracy.md's summary table and weak-scaling line from the committed measured runs.

Every figure is `dtsim validate` on a committed folder (shipped predictors and framework profiles);
the held-out rows leave out the runs a framework profile's host costs were fitted on (its
sources.training_runs), and the H200 "H100 predictors only" row hides h200-sxm's own predictors
(DTSIM_PREDICTOR_DIR pointing at a copy with h100-sxm alone).

  python3 docs/accuracy_summary.py [path/to/dtsim]          # the summary table and weak scaling
  python3 docs/accuracy_summary.py --runs [path/to/dtsim]   # the per-run tables of the H100 runs
  python3 docs/accuracy_summary.py --profiles [path/to/dtsim]  # every PyTorch folder under both PyTorch profiles
"""
import csv, io, json, os, shutil, statistics as st, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = [a for a in sys.argv[1:] if a not in ("--runs", "--profiles")]
DTSIM = ARGS[0] if ARGS else os.path.join(ROOT, "build", "dtsim")
DATA = os.path.join(ROOT, "validation", "data")


def validate(folders, env=None, framework=None):
    cmd = [DTSIM, "validate", "--format", "csv"] + (["--framework", framework] if framework else [])
    for f in folders:
        cmd += ["--measured", os.path.join(DATA, f)]
    out = subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def fit_runs(profile):
    with open(os.path.join(ROOT, "configs", "frameworks", profile + ".json")) as f:
        runs = json.load(f)["sources"]["training_runs"]
    return {os.path.splitext(os.path.basename(r))[0] for r in runs}


def row(label, errors, target="", met=""):
    e = [abs(x) for x in errors]
    print(f"| {label} | {len(e)} | {100 * st.mean(e):.1f}% | {100 * st.median(e):.1f}% | {100 * max(e):.1f}% "
          f"| {target} | {met} |")


def weak_scaling_pp(rows, gpus):
    """|predicted - measured| weak-scaling efficiency t1/tN in percentage points, per pair."""
    by = {(r["model"], r["batch"], r["precision"], r["gpus"]): r for r in rows}
    out = []
    for (m, b, p, g), r in by.items():
        one = by.get((m, b, p, "1"))
        if g != str(gpus) or one is None:
            continue
        meas = float(one["measured_ms"]) / float(r["measured_ms"])
        pred = float(one["predicted_ms"]) / float(r["predicted_ms"])
        out.append(100 * abs(pred - meas))
    return out


def per_run_tables():
    for folder in ("h100-sxm/runs", "h100-sxm/pytorch"):
        print(f"#### validation/data/{folder}\n")
        print("| run | measured ms | predicted ms | error | predicted bound |")
        print("|---|---:|---:|---:|---|")
        for r in sorted(validate([folder]), key=lambda r: r["run"]):
            print(f"| {r['run']} | {float(r['measured_ms']):.2f} | {float(r['predicted_ms']):.2f} "
                  f"| {100 * float(r['error']):+.1f}% | {r['predicted_bound']} |")
        print()


def pytorch_folders():
    """Every folder under validation/data that holds measured PyTorch runs (emulated clusters left out:
    they are predicted on their calibrated clusters, docs/accuracy.md)."""
    out = set()
    for d, _, files in os.walk(DATA):
        if "emulated" in d:
            continue
        for name in files:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(d, name)) as f:
                    doc = json.load(f)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(doc, dict) and "measured-run" in doc.get("schema", "") and doc.get("framework") == "pytorch":
                out.add(os.path.relpath(d, DATA))
                break
    return sorted(out)


def profiles_table():
    """Median / mean / max absolute error of every PyTorch folder under `pytorch` and `pytorch-ops`."""
    print("| folder | runs | pytorch: median / mean / max | pytorch-ops (default): median / mean / max |")
    print("|---|---:|---|---|")
    every = {"pytorch": [], "pytorch-ops": []}
    fmt = lambda e: f"{100 * st.median(e):.1f}% / {100 * st.mean(e):.1f}% / {100 * max(e):.1f}%"
    for folder in pytorch_folders():
        cells = []
        for fw in ("pytorch", "pytorch-ops"):
            e = [abs(float(r["error"])) for r in validate([folder], framework=fw)]
            every[fw] += e
            cells.append(fmt(e))
        print(f"| {folder} | {len(e)} | {cells[0]} | {cells[1]} |")
    print(f"| all | {len(every['pytorch'])} | {fmt(every['pytorch'])} | {fmt(every['pytorch-ops'])} |")


def main():
    if "--runs" in sys.argv[1:]:
        return per_run_tables()
    if "--profiles" in sys.argv[1:]:
        return profiles_table()
    h_runs = validate(["h100-sxm/runs"])
    h_pt = validate(["h100-sxm/pytorch"])
    h_settled = validate(["h100-sxm/pytorch_settled"])
    g_runs = validate(["h200-sxm/runs"])
    g_pt = validate(["h200-sxm/pytorch"])
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(ROOT, "kernels_mlp", "pretrained", "h100-sxm"), os.path.join(tmp, "h100-sxm"))
        env = dict(os.environ, DTSIM_PREDICTOR_DIR=tmp)
        g_h100_only = validate(["h200-sxm/runs", "h200-sxm/pytorch"], env)

    err = lambda rows: [float(r["error"]) for r in rows]
    fit_h, fit_p = fit_runs("harness"), fit_runs("pytorch-ops")  # PyTorch's default profile
    pred = {r["run"]: float(r["predicted_ms"]) for r in h_runs}
    with open(os.path.join(DATA, "h100-sxm", "runs_repeat_x2.csv")) as f:
        rep = [r for r in csv.DictReader(x for x in f if not x.startswith("#"))]
    rep_err = [pred[r["run"]] / (1e3 * float(r["median_s_x2"])) - 1 for r in rep]

    print("| runs | count | mean abs error | median | max | target | met |")
    print("|---|---:|---:|---:|---:|---|---|")
    e = err(h_runs)
    row("H100 dtsim-harness (1, 2, 4 GPUs)", e, "mean <= 5%", "yes" if st.mean(map(abs, e)) <= 0.05 else "no")
    row("of which held out from the host-cost fit", err(r for r in h_runs if r["run"] not in fit_h))
    row("the same 36 1-2 GPU configurations repeated on a second H100 machine", rep_err)
    e = err(h_pt)
    met = st.median(map(abs, e)) <= 0.05 and max(map(abs, e)) <= 0.15
    row("H100 PyTorch DDP (1, 2, 4 GPUs; 8 models)", e, "median <= 5%, none > 15%", "yes" if met else "no")
    row("of which held out from the host-cost fit", err(r for r in h_pt if r["run"] not in fit_p))
    row("H100 PyTorch DDP, 1 GPU, settled peaks (pytorch_settled)", err(h_settled))
    row("H200 dtsim-harness (harness before its fixes, see below)", err(g_runs))
    row("H200 PyTorch DDP", err(g_pt))
    e = err(g_h100_only)
    row(f"H200, H100 predictors only (what-if path), all {len(e)}", e, "median <= 10%",
        "yes" if st.median(map(abs, e)) <= 0.10 else "no")
    row(f"H200, own predictors where measured (conv2d from H100), all {len(g_runs) + len(g_pt)}", err(g_runs + g_pt))

    print()
    for label, rows in (("H100 harness", h_runs), ("H100 PyTorch", h_pt), ("H200 harness", g_runs),
                        ("H200 PyTorch", g_pt)):
        for g in (2, 4):
            pp = weak_scaling_pp(rows, g)
            if pp:
                print(f"weak scaling {label} 1->{g} GPUs: {len(pp)} pairs, mean {st.mean(pp):.1f} pp, median "
                      f"{st.median(pp):.1f}, max {max(pp):.1f}, {sum(x <= 3 for x in pp)} within 3 pp")


if __name__ == "__main__":
    main()
