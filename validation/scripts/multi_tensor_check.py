#!/usr/bin/env python3
"""PyTorch's foreach optimizer step, torch.profiler against dtsim (configs/frameworks/pytorch.json,
"multi_tensor_optimizer"; sim/multi_tensor.hpp).

For every committed kernel list (mode_profile.py / kernel_profile.py output: "## by name" rows of
us per iteration, launches per iteration, kernel name) it sums the multi_tensor_apply kernels and
prints them beside dtsim's optimizer GPU time (`predict --format json`, optimizer_s) and launch
count for the same model, batch, precision, optimizer and GPU.

--fit also chooses launch_s and bandwidth_fraction: a step costs launches x launch_s + bytes /
(fraction x bandwidth), so two dtsim runs per profile (launch_s 0 and 1 us, fraction 1) give its
launch count and streaming time, and a grid search minimises the mean absolute error over the
profiles of the GPU named by --fit-gpu (the others are held out).

  validation/scripts/multi_tensor_check.py --dtsim build/dtsim [--fit --fit-gpu h100-sxm]
"""
import argparse, glob, gzip, json, os, re, statistics, subprocess, tempfile

GPUS = {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H200": "h200-sxm"}
PROFILES = ["validation/data/*/pytorch_modes/profiles/*.txt.gz", "validation/data/*/pytorch_modes/*/profiles/*.txt.gz",
            "validation/data/h100-sxm/kernel_profile/transformers/*.txt"]
HEAD = re.compile(r"# (\S+) b(\d+)(?: t(\d+))? (\S+) (\S+) (\S+) (\S+), .*?, (NVIDIA [^;]+);")


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    m = HEAD.match(text)
    if not m:
        return None
    model, batch, seq, precision, fmt, optimizer, execution, gpu = m.groups()
    if execution != "eager" or gpu not in GPUS or precision == "fp16":
        return None  # compiled steps add Inductor's multi-tensor copies, fp16 GradScaler's unscale (priced apart)
    us = launches = 0.0
    rows = text.split("## by name", 1)[1].split("\n## ", 1)[0]
    for line in rows.splitlines()[1:]:
        p = line.split(None, 2)
        if len(p) == 3 and "multi_tensor_apply_kernel" in p[2]:
            us += float(p[0])
            launches += float(p[1])
    return dict(path=path, model=model, batch=batch, seq=seq, precision=precision, fmt=fmt, optimizer=optimizer,
                gpu=GPUS[gpu], measured_us=us, measured_launches=round(launches))


def predict(dtsim, r, framework):
    args = [dtsim, "predict", "--model", r["model"], "--batch-per-gpu", r["batch"], "--precision", r["precision"],
            "--memory-format", r["fmt"], "--optimizer", r["optimizer"], "--cluster", r["gpu"], "--framework", framework,
            "--format", "json"]
    if r["seq"]:
        args += ["--seq-len", r["seq"]]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["optimizer_s"] * 1e6


def with_constants(base, launch_s, fraction):
    prof = json.load(open(base))
    prof["multi_tensor_optimizer"].update(launch_s=launch_s, bandwidth_fraction=fraction)
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(prof, f)
    f.close()
    return f.name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", required=True)
    ap.add_argument("--framework", default="configs/frameworks/pytorch.json")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--fit-gpu", default="h100-sxm")
    a = ap.parse_args()
    runs = [r for p in PROFILES for path in sorted(glob.glob(p)) for r in [read(path)] if r and r["measured_us"] > 0]
    # launches and streaming time per profile, from dtsim's own lowering and launch rule
    zero, one = with_constants(a.framework, 0.0, 1.0), with_constants(a.framework, 1e-6, 1.0)
    try:
        for r in runs:
            r["stream_us"] = predict(a.dtsim, r, zero)
            r["launches"] = round(predict(a.dtsim, r, one) - r["stream_us"])
    finally:
        os.unlink(zero)
        os.unlink(one)
    prof = json.load(open(a.framework))["multi_tensor_optimizer"]
    launch_us, fraction = prof["launch_s"] * 1e6, prof["bandwidth_fraction"]
    if a.fit:
        train = [r for r in runs if r["gpu"] == a.fit_gpu]
        grid = [(l / 4, f / 100) for l in range(0, 81) for f in range(50, 101)]
        err = lambda l, f: statistics.mean(abs((r["launches"] * l + r["stream_us"] / f) / r["measured_us"] - 1) for r in train)
        launch_us, fraction = min(grid, key=lambda g: err(*g))
        print(f"fit on {len(train)} {a.fit_gpu} profiles: launch_s {launch_us * 1e-6:.4g}, bandwidth_fraction {fraction:.2f}, "
              f"mean abs error {100 * err(launch_us, fraction):.1f}%")
    print("| profile | GPU | optimizer | launches measured / dtsim | measured us | dtsim us | error |")
    print("|---|---|---|---|---:|---:|---:|")
    for r in runs:
        t = r["launches"] * launch_us + r["stream_us"] / fraction
        print(f"| {os.path.basename(r['path']).split('.')[0]} | {r['gpu']} | {r['optimizer']} | {r['measured_launches']} / {r['launches']} | "
              f"{r['measured_us']:.0f} | {t:.0f} | {100 * (t / r['measured_us'] - 1):+.1f}% |")


if __name__ == "__main__":
    main()
