#!/usr/bin/env python3
"""Scans dtsim for predictions that get faster as the batch grows.

For every cluster preset in configs/clusters, model, precision and batch 1, 2, 4, ... 256 (one GPU,
the default pytorch profile; bf16 is fp16 on V100), runs `dtsim predict --trace` and reports every batch doubling where
  - the step time (iteration_s) or the GPU compute time (compute_s) falls, and
  - a single kernel (same layer, kind, pass, variant and position in the trace) gets faster.
The optimizer's update kernels do not depend on the batch: they are counted apart (their times
wobble by up to 3e-8 of themselves with the batch: the multi-tensor step's share by parameters).

    scripts/scan_batch_monotone.py [--dtsim build/dtsim] [--jobs 2] [--models a,b] [--clusters a,b]
                                   [--examples N] [--json FILE]

Exit status 0 always; the counts are the output.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["alexnet", "resnet18", "resnet50", "vgg16", "mobilenet_v2", "densenet121", "googlenet", "inception_v3"]
BATCHES = [1 << i for i in range(9)]  # 1..256
NOISE = 1e-9  # relative: what tests/test_monotonic.cpp allows


def run_one(dtsim, cluster, model, precision, batch, tmp):
    if precision == "bf16" and cluster.startswith("v100"):
        precision = "fp16"  # 16-bit autocast as a GPU without bf16 runs it
    out = os.path.join(tmp, f"{cluster}-{model}-{precision}-{batch}.json")
    subprocess.run([dtsim, "predict", "--model", model, "--batch-per-gpu", str(batch), "--cluster", cluster,
                    "--precision", precision, "--trace", out, "--format", "json"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(out) as f:
        t = json.load(f)
    os.unlink(out)
    ev = t["traceEvents"] if isinstance(t, dict) else t
    step = next(e for e in ev if e.get("cat") == "phase" and e.get("name") == "iteration")["args"]
    kernels = {}
    seen = {}
    for e in ev:
        if e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        a = e.get("args", {})
        base = (e["name"], a.get("math", ""), a.get("variant", ""))
        n = seen.get(base, 0)
        seen[base] = n + 1
        kernels[base + (n,)] = e["dur"] * 1e-6
    return step["iteration_s"], step["compute_s"], kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtsim", default=str(ROOT / "build" / "dtsim"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--clusters", default="")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--examples", type=int, default=5)
    ap.add_argument("--json", help="write every break found to FILE")
    args = ap.parse_args()
    clusters = args.clusters.split(",") if args.clusters else sorted(p.stem for p in (ROOT / "configs" / "clusters").glob("*.json"))
    models = args.models.split(",")
    precisions = args.precisions.split(",")
    configs = [(c, m, p, b) for c in clusters for m in models for p in precisions for b in BATCHES]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(configs, pool.map(lambda x: run_one(args.dtsim, *x, tmp), configs)))
    step_breaks, compute_breaks, kernel_breaks, update_breaks = [], [], [], []
    kernel_pairs = 0
    for c in clusters:
        for m in models:
            for p in precisions:
                for b0, b1 in zip(BATCHES, BATCHES[1:]):
                    it0, gpu0, k0 = results[(c, m, p, b0)]
                    it1, gpu1, k1 = results[(c, m, p, b1)]
                    where = dict(cluster=c, model=m, precision=p, batch=[b0, b1])
                    if it1 < it0 * (1 - NOISE):
                        step_breaks.append(dict(where, what="iteration_s", s=[it0, it1], change=it1 / it0 - 1))
                    if gpu1 < gpu0 * (1 - NOISE):
                        compute_breaks.append(dict(where, what="compute_s", s=[gpu0, gpu1], change=gpu1 / gpu0 - 1))
                    for key, t0 in k0.items():
                        if key not in k1:
                            continue
                        kernel_pairs += 1
                        if k1[key] < t0 * (1 - NOISE):
                            into = update_breaks if "update" in key[0].split()[1:] else kernel_breaks
                            into.append(dict(where, what="kernel", kernel=" ".join(map(str, key)), s=[t0, k1[key]],
                                                      change=k1[key] / t0 - 1))
    step_configs = len(clusters) * len(models) * len(precisions) * (len(BATCHES) - 1)
    print(f"{len(configs)} predictions; {step_configs} batch doublings")
    print(f"step time falls: {len(step_breaks)}; GPU compute time falls: {len(compute_breaks)}; "
          f"step or GPU time (either): {len({(b['cluster'], b['model'], b['precision'], tuple(b['batch'])) for b in step_breaks + compute_breaks})}")
    print(f"kernel pairs compared: {kernel_pairs}; a kernel gets faster: {len(kernel_breaks)} "
          f"(and an optimizer update, which does not depend on the batch: {len(update_breaks)})")
    for name, breaks in (("step", step_breaks), ("compute", compute_breaks), ("kernel", kernel_breaks)):
        by_cluster = {}
        for b in breaks:
            by_cluster[b["cluster"]] = by_cluster.get(b["cluster"], 0) + 1
        if by_cluster:
            print(f"  {name} by cluster: " + ", ".join(f"{k} {v}" for k, v in sorted(by_cluster.items())))
        for b in sorted(breaks, key=lambda b: b["change"])[: args.examples]:
            print(f"    worst {name}: {b['cluster']} {b['model']} {b['precision']} batch {b['batch'][0]}->{b['batch'][1]} "
                  f"{b.get('kernel', '')} {b['s'][0] * 1e6:.2f} -> {b['s'][1] * 1e6:.2f} us ({100 * b['change']:+.2f}%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(step=step_breaks, compute=compute_breaks, kernel=kernel_breaks, update=update_breaks), f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
