"""docs/accuracy.md's tables and picture (and the README's summary of them), from the committed data."""
import csv
import io
import json
import os
import shutil
import statistics as st
import subprocess
import tempfile

from . import runs as R
from .engine import ROOT, Failure, block, files

# The project's targets (docs/accuracy.md, "Targets"): (label, rule over Stats, rule text).
MEAN5 = ("mean <= 5%", lambda s: s.mean <= 0.05)
MEDIAN5_MAX15 = ("median <= 5%, none > 15%", lambda s: s.median <= 0.05 and s.max <= 0.15)
MEDIAN10 = ("median <= 10%", lambda s: s.median <= 0.10)
MEDIAN8_MAX15 = ("median <= 8%, none > 15%", lambda s: s.median <= 0.08 and s.max <= 0.15)
MEDIAN5 = ("median <= 5%", lambda s: s.median <= 0.05)


def in_folders(rows, *folders):
    return [r for r in rows if r["folder"] in folders]


def dp(rows):
    return [r for r in rows if r.get("strategy", "dp") == "dp"]


def repeat_errors(h_runs):
    pred = {os.path.splitext(os.path.basename(r["file"]))[0]: r["predicted_s"] for r in h_runs}
    with open(os.path.join(ROOT, R.DATA, "h100-sxm", "runs_repeat_x2.csv"), encoding="utf-8") as f:
        rep = list(csv.DictReader(x for x in f if not x.startswith("#")))
    return [pred[r["run"]] / float(r["median_s_x2"]) - 1 for r in rep]


def h100_only_rows(ctx):
    """The H200 runs with only h100-sxm's predictors visible (the what-if path)."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(ROOT, "kernels_mlp", "pretrained", "h100-sxm"), os.path.join(tmp, "h100-sxm"))
        rows, _ = R.validate(ctx, ["h200-sxm/runs", "h200-sxm/pytorch"], env={"DTSIM_PREDICTOR_DIR": tmp})
    return rows


def summary_rows(ctx):
    """(label, Stats, target label or "", met) per headline row."""
    rows, _ = R.default_rows(ctx)
    h_runs, h_pt = in_folders(rows, "h100-sxm/runs"), in_folders(rows, "h100-sxm/pytorch")
    g_runs, g_pt = in_folders(rows, "h200-sxm/runs"), in_folders(rows, "h200-sxm/pytorch")
    fit_h, fit_p = R.fit_runs("harness"), R.fit_runs("pytorch-ops")
    pt_all = dp([r for r in rows if r["framework"] == "pytorch"])
    trans = [r for r in pt_all if r["model"] in R.TRANSFORMERS]
    out = []

    def add(label, rs_or_errors, target=None):
        e = rs_or_errors if rs_or_errors and isinstance(rs_or_errors[0], float) else R.errors(rs_or_errors)
        s = R.Stats(e)
        out.append((label, s, target[0] if target else "", ("yes" if target[1](s) else "no") if target else ""))

    add("H100, dtsim-harness, 1-4 GPUs (`h100-sxm/runs`)", h_runs, MEAN5)
    add("of which held out from the harness profile's host-cost fit", [r for r in h_runs if r["file"] not in fit_h])
    add("the same 1-2 GPU configurations on a second H100 machine (`runs_repeat_x2.csv`)", repeat_errors(h_runs))
    add("H100, PyTorch DDP, 1-4 GPUs, 8 CNNs (`h100-sxm/pytorch`)", h_pt, MEDIAN5_MAX15)
    add("of which held out from the host-cost fit", [r for r in h_pt if r["file"] not in fit_p])
    add("of which GPU-paced", R.paced(h_pt))
    add("H200, dtsim-harness, 1-2 GPUs (`h200-sxm/runs`, the harness before its fixes)", g_runs)
    add("H200, PyTorch DDP, 1-2 GPUs (`h200-sxm/pytorch`)", g_pt)
    add("H200 runs above from the H100's predictors alone (the what-if path)", h100_only_rows(ctx), MEDIAN10)
    add("the same with the H200's own predictors", g_runs + g_pt)
    add("every PyTorch run outside the emulated clusters", pt_all)
    add("of which GPU-paced", R.paced(pt_all), MEDIAN5)
    add("of which host-paced", R.paced(pt_all, gpu=False))
    add("transformer runs (vit_b_16, gpt2_small, bert_base) that dtsim prices GPU-paced", R.paced(trans), MEDIAN8_MAX15)
    return out


@block("accuracy-summary")
def accuracy_summary(ctx):
    body = [(label, s.n, R.pct(s.mean), R.pct(s.median), R.pct(s.max), target, met)
            for label, s, target, met in summary_rows(ctx)]
    return R.table(["runs", "count", "mean abs error", "median", "max", "target", "met"], body,
                   ["---", "---:", "---:", "---:", "---:", "---", "---"])


@block("accuracy-modes")
def accuracy_modes(ctx):
    rows, _ = R.default_rows(ctx)
    groups = {}
    for r in dp(rows):
        key = (R.gpu_of(r), r["framework"], "transformers" if r["model"] in R.TRANSFORMERS else "CNNs", r["execution"],
               r["memory_format"], r["optimizer"])
        groups.setdefault(key, []).append(r)
    body, over5, over10 = [], [], []
    for key, rs in sorted(groups.items()):
        a, g, h = R.Stats(R.errors(rs)), R.Stats(R.errors(R.paced(rs))), R.Stats(R.errors(R.paced(rs, gpu=False)))
        body.append(list(key) + [a.n, R.pct(a.median), R.pct(a.max), g.n, R.pct(g.median), R.pct(g.max), h.n, R.pct(h.median)])
        name = f"{key[0]} {key[1]} {key[2]} {key[3]} {key[4]} {key[5]}"
        if g.n and g.median > 0.05:
            over5.append(f"{name} ({R.pct(g.median)} over {g.n})")
        if a.median > 0.10:
            over10.append(f"{name} ({R.pct(a.median)} over {a.n}, {h.n} of them host-paced)")
    said = lambda xs: "; ".join(xs) if xs else "none"
    return (R.table(["GPU", "program", "models", "execution", "memory format", "optimizer", "runs", "median", "max",
                     "GPU-paced runs", "median", "max", "host-paced runs", "median"], body, ["---"] * 6 + ["---:"] * 8)
            + f"\n\nAgainst the per-mode targets: GPU-paced median above 5%: {said(over5)}. Median above 10% over all its "
            f"runs: {said(over10)}.")


@block("accuracy-folders")
def accuracy_folders(ctx):
    rows, refused = R.default_rows(ctx)
    fitted = {}
    for r in R.pytorch_fitted_rows(ctx):
        fitted.setdefault(r["folder"], []).append(r)
    by = {}
    for r in rows:
        by.setdefault(r["folder"], []).append(r)
    fmt = lambda s: f"{R.pct(s.median)} / {R.pct(s.mean)} / {R.pct(s.max)}"
    body = []
    for folder, rs in sorted(by.items()):
        s, g = R.Stats(R.errors(rs)), R.Stats(R.errors(R.paced(rs)))
        f = fitted.get(folder)
        body.append([f"`{folder}`", rs[0]["framework"], s.n, fmt(s), f"{g.n}: {R.pct(g.median)}",
                     fmt(R.Stats(R.errors(f))) if f else ""])
    every = [r for r in rows if r["framework"] == "pytorch"]
    every_fitted = [r for rs in fitted.values() for r in rs]
    body.append(["every PyTorch folder", "pytorch", len(every), fmt(R.Stats(R.errors(every))),
                 f"{len(R.paced(every))}: {R.pct(R.Stats(R.errors(R.paced(every))).median)}", fmt(R.Stats(R.errors(every_fitted)))])
    return R.table(["folder", "program", "runs", "default profile: median / mean / max", "GPU-paced: runs, median",
                    "`pytorch` (fitted): median / mean / max"], body,
                   ["---", "---", "---:", "---", "---", "---"]) + R.refused_note(refused)


def weak_scaling_pp(rows, gpus):
    """|predicted - measured| weak-scaling efficiency t1/tN in percentage points, per pair."""
    by = {(r["model"], r["batch_per_gpu"], r["precision"], r["gpus"]): r for r in rows}
    out = []
    for (m, b, p, g), r in sorted(by.items()):
        one = by.get((m, b, p, 1))
        if g == gpus and one is not None:
            out.append(100 * abs(one["predicted_s"] / r["predicted_s"] - one["measured_s"] / r["measured_s"]))
    return out


@block("accuracy-weak-scaling")
def accuracy_weak_scaling(ctx):
    rows, _ = R.default_rows(ctx)
    body = []
    for label, folder in (("H100 harness", "h100-sxm/runs"), ("H100 PyTorch DDP", "h100-sxm/pytorch"),
                          ("H200 harness", "h200-sxm/runs"), ("H200 PyTorch DDP", "h200-sxm/pytorch")):
        for g in (2, 4):
            pp = weak_scaling_pp(in_folders(rows, folder), g)
            if pp:
                body.append([label, f"1 -> {g}", len(pp), f"{st.median(pp):.1f}", f"{st.mean(pp):.1f}", f"{max(pp):.1f}",
                             sum(x <= 3 for x in pp)])
    return R.table(["runs", "GPUs", "pairs", "median (points)", "mean", "max", "within 3 points"], body,
                   ["---", "---", "---:", "---:", "---:", "---:", "---:"])


@block("accuracy-transformers")
def accuracy_transformers(ctx):
    rows, _ = R.default_rows(ctx)
    by = {}
    for r in rows:
        if r["model"] in R.TRANSFORMERS:
            by.setdefault(r["folder"], []).append(r)
    body = []
    for folder, rs in sorted(by.items()):
        a, g, h = R.Stats(R.errors(rs)), R.Stats(R.errors(R.paced(rs))), R.Stats(R.errors(R.paced(rs, gpu=False)))
        body.append([f"`{folder}`", a.n, R.pct(a.median), R.pct(a.max), g.n, R.pct(g.median), R.pct(g.max), h.n, R.pct(h.median)])
    return R.table(["folder", "runs", "median", "max", "GPU-paced runs", "median", "max", "host-paced runs", "median"], body,
                   ["---"] + ["---:"] * 8)


@block("accuracy-memory")
def accuracy_memory(ctx):
    rows, _ = R.default_rows(ctx)
    by = {}
    for r in rows:
        if r.get("memory"):
            by.setdefault(r["folder"], []).append(r["memory"]["error"])
    body = [[f"`{f}`", len(e), R.pct(R.Stats(e).median), R.pct(R.Stats(e).max)] for f, e in sorted(by.items())]
    every = [x for e in by.values() for x in e]
    body.append(["all", len(every), R.pct(R.Stats(every).median), R.pct(R.Stats(every).max)])
    return R.table(["folder", "runs with a peak", "median abs error", "max"], body, ["---", "---:", "---:", "---:"])


def per_run(ctx, folder):
    rows, _ = R.validate(ctx, [folder])
    body = [[os.path.splitext(os.path.basename(r["file"]))[0], f"{1e3 * r['measured_s']:.2f}", f"{1e3 * r['predicted_s']:.2f}",
             R.signed(r["error"]), r["predicted_bound"]] for r in sorted(rows, key=lambda r: r["file"])]
    return R.table(["run", "measured ms", "predicted ms", "error", "predicted bound"], body, ["---", "---:", "---:", "---:", "---"])


@block("accuracy-runs-h100-harness")
def runs_h100_harness(ctx):
    return per_run(ctx, "h100-sxm/runs")


@block("accuracy-runs-h100-pytorch")
def runs_h100_pytorch(ctx):
    return per_run(ctx, "h100-sxm/pytorch")


@files("accuracy-picture")
def accuracy_picture(ctx, out):
    """docs/img/accuracy.csv (predicted against measured, every run of the three sets) and the
    picture drawn from it."""
    rows, _ = R.default_rows(ctx)
    sets = (("H100 dtsim-harness", ["h100-sxm/runs"]), ("H100 PyTorch DDP", ["h100-sxm/pytorch"]),
            ("H200 harness and PyTorch", ["h200-sxm/runs", "h200-sxm/pytorch"]))
    path = out("docs/img/accuracy.csv")
    with open(path, "w", encoding="utf-8") as f:
        f.write("set,run,measured_ms,predicted_ms\n")
        for label, folders in sets:
            for r in sorted(in_folders(rows, *folders), key=lambda r: r["file"]):
                f.write(f"{label},{os.path.basename(r['file'])[:-5]},{1e3 * r['measured_s']:.4f},{1e3 * r['predicted_s']:.4f}\n")
    if not ctx.pictures:
        return
    plots = ", ".join(f"\"<grep '^{label},' '{path}'\" using 3:4 with points pt {pt} ps 1.0 title \"{label}\""
                      for (label, _), pt in zip(sets, (7, 5, 9)))
    script = f"""set terminal pngcairo size 900,700 font ",11"
set output "{out('docs/img/accuracy.png')}"
set datafile separator ","
set logscale xy
set xlabel "measured iteration time (ms)"
set ylabel "predicted iteration time (ms)"
set title "dtsim against measured runs (H100: 1-4 GPUs; H200: 1-2 GPUs)"
set key top left
set grid
plot [1:200][1:200] {plots}, x with lines dt 1 lc "black" title "exact", \\
  1.05*x with lines dt 3 lc "gray" title "+-5%", 0.95*x with lines dt 3 lc "gray" notitle, \\
  1.15*x with lines dt 2 lc "gray" title "+-15%", 0.85*x with lines dt 2 lc "gray" notitle
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        raise Failure(f"gnuplot: {r.stderr.strip()[:300]}")


# Kernels --------------------------------------------------------------------------------------------

def kernel_group(key):
    kind, _, _, *variant = key.split("/")
    v = variant[0] if variant else ""
    if kind == "conv2d":
        return {"": "conv2d (cuDNN, NCHW)", "nhwc": "conv2d, channels_last (cuDNN, NHWC)",
                "native_depthwise": "conv2d, PyTorch's native depthwise"}[v]
    if kind == "batchnorm":
        return {"": "batchnorm (cuDNN)", "nhwc": "batchnorm, channels_last", "native": "batchnorm, PyTorch's own bf16"}[v]
    return kind


@block("accuracy-kernels-heldout")
def kernels_heldout(ctx):
    gpus = ("h100-sxm", "h200-sxm")
    groups = {}
    for g in gpus:
        with open(os.path.join(ROOT, "kernels_mlp", "pretrained", g, "manifest.json"), encoding="utf-8") as f:
            for p in json.load(f)["predictors"]:
                h = p["heldout"]
                groups.setdefault(kernel_group(p["key"]), {}).setdefault(g, []).append((h["rows"], h["mape"], h["meets_target"]))
    body = []
    for name in sorted(groups):
        cells = [name]
        for g in gpus:
            ps = groups[name].get(g)
            if not ps:
                cells += ["-", "", "", ""]
                continue
            rows = sum(n for n, _, _ in ps)
            cells += [f"{len(ps)} ({sum(1 for *_, ok in ps if not ok)} below target)" if not all(ok for *_, ok in ps) else str(len(ps)),
                      rows, R.pct(sum(n * m for n, m, _ in ps) / rows), R.pct(max(m for _, m, _ in ps))]
        body.append(cells)
    return R.table(["kernels", "H100 predictors", "held-out rows", "MAPE", "worst predictor", "H200 predictors", "held-out rows",
                    "MAPE", "worst predictor"], body, ["---"] + ["---:"] * 8)


def evaluate_beyond(ctx, gpu):
    out = ctx.run(["dtsim-train-predictors", "--evaluate", "--data", f"{R.DATA}/{gpu}/kernels_beyond", "--gpu", gpu,
                   "--files", "gemm.csv,conv2d.csv", "--min-time-s", "20e-6"])
    res = {}
    for line in out.split("\n"):
        if line.startswith("beyond ") and "MAPE" in line:
            name, rest = line[len("beyond "):].split(" rows ", 1)
            parts = rest.split()
            res[name.strip()] = (int(parts[0]), float(parts[2].rstrip("%")) / 100, float(parts[-1].rstrip("%")) / 100)
    if not res:
        raise Failure(f"dtsim-train-predictors --evaluate printed no 'beyond' lines for {gpu}")
    return res


@block("accuracy-kernels-beyond")
def kernels_beyond(ctx):
    body = []
    labels = (("gemm", "GEMMs"), ("conv2d, cuDNN's", "convolutions, cuDNN's"),
              ("conv2d, PyTorch's native depthwise", "convolutions, PyTorch's native depthwise"), ("conv2d", "convolutions, all"))
    ev = {g: evaluate_beyond(ctx, g) for g in ("h100-sxm", "h200-sxm")}
    for key, label in labels:
        cells = [label]
        for g in ("h100-sxm", "h200-sxm"):
            n, stream, graph = ev[g][key]
            cells += [n, R.pct(stream), R.pct(graph)]
        body.append(cells)
    return R.table(["kernels of 20 us and more beyond the training range", "H100 rows", "stream time MAPE", "GPU time MAPE",
                    "H200 rows", "stream time MAPE", "GPU time MAPE"], body, ["---"] + ["---:"] * 6)


# Networks -------------------------------------------------------------------------------------------

def size(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def collective_errors(ctx, preset, path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        m = json.load(f)
    rows = [r for r in m["rows"] if "time_s" in r]  # a size too small to split over the GPUs is "skipped"
    sizes = [r["bytes"] for r in rows]
    pred = ctx.run(["dtsim", "collective", "--op", m["op"], "--bytes", ",".join(map(str, sizes)), "--gpus", m["gpus"],
                    "--cluster", preset, "--format", "json"])
    t = {r["bytes"]: r["time_s"] for r in json.loads(pred)}
    return m["op"], m["gpus"], [(r["bytes"], t[r["bytes"]] / r["time_s"] - 1) for r in rows]


@block("accuracy-collectives")
def accuracy_collectives(ctx):
    body = []
    for preset in ("h100-sxm", "h200-sxm"):
        d = os.path.join(R.DATA, preset, "collective")
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if not name.endswith("gpu.json"):  # allreduce_2gpu_nonblocking.json: another communicator, same sizes
                continue
            op, gpus, e = collective_errors(ctx, preset, f"{d}/{name}")
            inside = [x for b, x in e if 4096 <= b <= 1 << 30]
            worst = max(e, key=lambda be: abs(be[1]))
            body.append([preset, op, gpus, f"{len(e)}, {size(e[0][0])} - {size(e[-1][0])}", R.pct(R.Stats(inside).median),
                         R.pct(R.Stats(inside).max), f"{R.signed(worst[1])} at {size(worst[0])}"])
    return R.table(["preset", "collective", "GPUs", "sizes measured", "median abs error, 4 KiB - 1 GiB", "max, 4 KiB - 1 GiB",
                    "worst size"], body, ["---", "---", "---:", "---", "---:", "---:", "---"])


def emulated_rows(ctx, data):
    """Every emulated run of one emulation folder, predicted on its setting's calibrated cluster, with
    its weak-scaling efficiency against the 1-GPU baseline on the same cluster (one validate call per
    setting: the baselines and the setting's runs together)."""
    out = []
    rel = lambda *p: os.path.relpath(os.path.join(data, *p), R.DATA)
    bases = [rel("baseline_1gpu", fw) for fw in ("harness", "pytorch") if os.path.isdir(os.path.join(ROOT, data, "baseline_1gpu", fw))]
    for s in sorted(os.listdir(os.path.join(ROOT, data))):
        cluster = os.path.join(data, f"h200-sockets-{s}.json")
        if not (s.startswith("s") and os.path.isdir(os.path.join(ROOT, data, s)) and os.path.exists(os.path.join(ROOT, cluster))):
            continue
        runs = [rel(s, fw) for fw in ("harness", "harness_hier", "pytorch") if os.path.isdir(os.path.join(ROOT, data, s, fw))]
        rows, refused = R.validate(ctx, bases + runs, cluster=cluster)
        if refused:
            raise Failure(f"dtsim validate refused emulated runs: {refused}")
        base = {(r["framework"], r["model"], r["batch_per_gpu"], r["precision"]): r for r in rows if r["folder"] in bases}
        for r in rows:
            if r["folder"] in bases:
                continue
            b = base.get((r["framework"], r["model"], r["batch_per_gpu"], r["precision"]))
            eff = None if b is None else b["predicted_s"] / r["predicted_s"] - b["measured_s"] / r["measured_s"]
            out.append((s, os.path.basename(r["folder"]), r, eff))
    return out


@block("accuracy-emulated")
def accuracy_emulated(ctx):
    body = []
    for data, label in (("emulated", "2 GPUs, b32"), ("emulated/large_batch", "2 GPUs, GPU-paced batches"),
                        ("emulated/gpu4", "4 GPUs, b32"), ("emulated/gpu4_large", "4 GPUs, GPU-paced batches")):
        groups = {}
        for s, fw, r, eff in emulated_rows(ctx, f"{R.DATA}/h200-sxm/{data}"):
            groups.setdefault((s, fw), []).append((r["error"], eff))
        for (s, fw), es in sorted(groups.items()):
            e = R.Stats([x for x, _ in es])
            eff = [abs(y) for _, y in es if y is not None]
            body.append([f"`{data}`", label, s, fw, e.n, R.pct(e.median), R.pct(e.max),
                         f"{100 * st.median(eff):.1f}" if eff else "-", f"{100 * max(eff):.1f}" if eff else "-"])
    meets = [f"{r[0]} {r[2]} {r[3]}" for r in body if float(r[5].rstrip("%")) <= 5 and float(r[6].rstrip("%")) <= 12]
    return (R.table(["folder", "runs", "socket setting", "program", "count", "median abs error", "max",
                     "efficiency, median diff (points)", "max"], body, ["---"] * 4 + ["---:"] * 5)
            + f"\n\nWithin the target's 5% median and 12% worst case: {'; '.join(meets) if meets else 'none'} "
            f"({len(meets)} of {len(body)} sets).")


@block("accuracy-published")
def accuracy_published(ctx):
    res = json.loads(ctx.run(["python3", "validation/scripts/published_check.py", "--dtsim", ctx.dtsim, "--format", "json"]))
    body = [[e["model"], e["gpu_preset"], e["gpus"], e["batch_per_gpu"], f"{e['precision']} ({e['published_precision']})",
             e["published_images_per_s"], f"{e['dtsim_images_per_s']:.0f}", R.signed(e["signed_error"]), e["bottleneck"]]
            for e in res["rows"]]
    one = {(e["model"], e["gpu_preset"], e["precision"], e["published_images_per_s"]): e for e in res["rows"] if e["gpus"] == 1}
    pub, ours = [], []
    for e in res["rows"]:
        if e["gpus"] == 8 and e["precision"] == "fp16":
            base = [b for (m, p, pr, _), b in one.items() if (m, p, pr) == (e["model"], e["gpu_preset"], e["precision"])
                    and b["table"] == e["table"]]
            if base:
                pub.append(e["published_images_per_s"] / base[0]["published_images_per_s"])
                ours.append(e["dtsim_images_per_s"] / base[0]["dtsim_images_per_s"])
    span = lambda xs: f"{min(xs):.1f}x" if f"{min(xs):.1f}" == f"{max(xs):.1f}" else f"{min(xs):.1f}-{max(xs):.1f}x"
    scaling = f" 8 GPUs over 1, the AMP entries: published {span(pub)}, dtsim {span(ours)}." if pub else ""
    per = res["median_abs_error_per_generation"]
    tail = "; ".join(f"{g} {R.pct(v['median_abs_error'])} over {v['entries']}" for g, v in sorted(per.items()))
    return (R.table(["model", "preset", "GPUs", "batch", "precision (published)", "published img/s", "dtsim img/s", "error",
                     "dtsim's bound"], body, ["---", "---", "---:", "---:", "---", "---:", "---:", "---:", "---"])
            + f"\n\nMedian absolute error: {tail}; all {R.pct(res['median_abs_error'])} over {len(res['rows'])}.{scaling}")
