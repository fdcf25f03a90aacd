#!/usr/bin/env python3
"""The copies torch.compile's cut of a DDP graph adds (FrameworkSpec::compiled_ddp_split_copies),
dtsim against torch.profiler: per model and batch, the direct_copy kernels of the compiled step with
DDPOptimizer's cut (`split/`) less those of the same step in one graph (`nosplit/`), against the time
dtsim gives its `graph_split_copy` kernels. Profiles whose step has no one-graph twin at the same batch
(the b256 CUDA-graph ones) are held out, their one-graph copies taken from the twin at another batch,
scaled by the batch.

  validation/scripts/split_copy_check.py --dtsim build/dtsim \
      --data validation/data/h200-sxm/pytorch_modes/graph_split [--also PROFILE.txt.gz ...] [--fit]

--fit prints the profile's bandwidth_fraction that makes the training pairs' copy time match in sum.
"""
import argparse, glob, gzip, json, os, re, subprocess, tempfile

NAME = re.compile(r"(?P<model>.+?)_b(?P<batch>\d+)_(?P<prec>bf16|fp16|fp32)_(?P<fmt>contiguous|channels_last)_(?P<opt>\w+?)_(?P<ex>compile(-cuda-graphs)?)\.txt(\.gz)?$")


def copy_us(path):
    """Sum of the direct_copy kernels' time per iteration in a mode_profile.py list."""
    total, on = 0.0, False
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            if line.startswith("## by name"):
                on = True
                continue
            if line.startswith("##"):
                on = False
            if on and "direct_copy" in line:
                total += float(line.split()[0])
    return total


def dtsim_copy_us(dtsim, m):
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.json")
        subprocess.run([dtsim, "predict", "--model", m["model"], "--batch-per-gpu", m["batch"], "--cluster", "h200-sxm",
                        "--precision", m["prec"], "--memory-format", m["fmt"], "--optimizer", m["opt"], "--execution", m["ex"],
                        "--trace", trace], check=True, capture_output=True)
        events = json.load(open(trace))["traceEvents"]
    return sum(e["dur"] for e in events if e.get("cat") == "kernel" and e.get("args", {}).get("variant") == "graph_split_copy")


def current_fraction():
    return json.load(open("configs/frameworks/pytorch.json"))["compiled_ddp_split_copies"]["bandwidth_fraction"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default="build/dtsim")
    ap.add_argument("--data", default="validation/data/h200-sxm/pytorch_modes/graph_split")
    ap.add_argument("--also", nargs="*", default=[], help="more split profiles, held out")
    ap.add_argument("--fit", action="store_true")
    a = ap.parse_args()
    one_graph = {}
    for p in glob.glob(os.path.join(a.data, "nosplit", "*.txt*")):
        m = NAME.search(os.path.basename(p))
        if m:
            one_graph[(m["model"], int(m["batch"]))] = copy_us(p)
    rows = []
    for p in sorted(glob.glob(os.path.join(a.data, "split", "*.txt*"))) + a.also:
        m = NAME.search(os.path.basename(p))
        if not m:
            continue
        model, batch = m["model"], int(m["batch"])
        if (model, batch) in one_graph:
            base, held_out = one_graph[(model, batch)], False
        else:
            twins = [(b, us) for (mm, b), us in one_graph.items() if mm == model]
            if not twins:
                continue
            b, us = twins[0]
            base, held_out = us * batch / b, True
        rows.append((model, batch, m["ex"], held_out, copy_us(p) - base, dtsim_copy_us(a.dtsim, m.groupdict())))
    print("| model | batch | execution | set | measured split copies us | dtsim us | error |")
    print("|---|---|---|---|---|---|---|")
    for model, batch, ex, held_out, meas, pred in rows:
        print(f"| {model} | {batch} | {ex} | {'held out' if held_out else 'fit'} | {meas:.0f} | {pred:.0f} | {100 * (pred / meas - 1):+.1f}% |")
    train = [(meas, pred) for *_, held_out, meas, pred in rows if not held_out]
    if a.fit and train:
        frac = current_fraction() * sum(p for _, p in train) / sum(m for m, _ in train)
        print(f"\nbandwidth_fraction that fits the {len(train)} training pairs in sum: {frac:.4f}")


if __name__ == "__main__":
    main()
