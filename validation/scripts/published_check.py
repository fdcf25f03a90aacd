#!/usr/bin/env python3
"""Published training throughputs against dtsim: an independent check of the GPU presets.

Reads validation/data/published/throughputs.json (dtsim-published-throughputs/1), predicts every
entry with `dtsim predict ... --format json` in its own configuration (model, cluster preset, GPUs,
batch per GPU, precision), and prints published vs dtsim images/s and the signed error
(dtsim / published - 1), then the median absolute error per GPU generation and overall.

These figures are a check, never a target: no constant of dtsim may be tuned to them.

  python3 validation/scripts/published_check.py [--dtsim build/dtsim] [--data FILE]
      [--compute-model auto|mlp|roofline] [--format table|json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def predict(dtsim, e, compute_model):
    cmd = [dtsim, "predict", "--model", e["model"], "--cluster", e["gpu_preset"], "--gpus", str(e["gpus"]),
           "--batch-per-gpu", str(e["batch_per_gpu"]), "--precision", e["precision"], "--compute-model", compute_model,
           "--memory-format", e.get("memory_format", "contiguous"), "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("published_check: %s failed (exit %d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "dtsim"))
    ap.add_argument("--data", default=os.path.join(ROOT, "validation", "data", "published", "throughputs.json"))
    ap.add_argument("--compute-model", default="auto", choices=["auto", "mlp", "roofline"])
    ap.add_argument("--format", default="table", choices=["table", "json"])
    a = ap.parse_args()

    doc = json.load(open(a.data))
    if doc.get("format") != "dtsim-published-throughputs/1":
        raise SystemExit("published_check: %s: not a dtsim-published-throughputs/1 file" % a.data)
    rows = []
    for e in doc["entries"]:
        p = predict(a.dtsim, e, a.compute_model)
        got = p["throughput_samples_per_s"]
        rows.append({
            "model": e["model"], "gpu_preset": e["gpu_preset"], "generation": e["generation"], "gpus": e["gpus"],
            "batch_per_gpu": e["batch_per_gpu"], "precision": e["precision"], "published_precision": e["published_precision"],
            "published_images_per_s": e["images_per_s"], "dtsim_images_per_s": got,
            "signed_error": got / e["images_per_s"] - 1, "bottleneck": p["bottleneck"], "compute_model": p["compute_model"],
            "table": e["source"]["table"],
        })
    by_gen = {}
    for r in rows:
        by_gen.setdefault(r["generation"], []).append(abs(r["signed_error"]))
    summary = {g: {"entries": len(v), "median_abs_error": statistics.median(v)} for g, v in sorted(by_gen.items())}
    overall = statistics.median([abs(r["signed_error"]) for r in rows])

    if a.format == "json":
        json.dump({"compute_model": a.compute_model, "rows": rows, "median_abs_error_per_generation": summary,
                   "median_abs_error": overall}, sys.stdout, indent=2)
        print()
        return
    head = ("model", "preset", "GPUs", "batch", "precision", "published", "dtsim", "error", "dtsim bottleneck")
    body = [(r["model"], r["gpu_preset"], str(r["gpus"]), str(r["batch_per_gpu"]),
             "%s (%s)" % (r["precision"], r["published_precision"]), "%.0f" % r["published_images_per_s"],
             "%.0f" % r["dtsim_images_per_s"], "%+.1f%%" % (100 * r["signed_error"]), r["bottleneck"]) for r in rows]
    w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    line = lambda x: "  ".join(c.rjust(w[i]) if 2 <= i <= 7 else c.ljust(w[i]) for i, c in enumerate(x)).rstrip()
    print("published training throughput (images/s) vs dtsim predict --compute-model %s" % a.compute_model)
    print(line(head))
    print(line(tuple("-" * n for n in w)))
    for b in body:
        print(line(b))
    print()
    for g, s in summary.items():
        print("%s: median |error| %.1f%% over %d entries" % (g, 100 * s["median_abs_error"], s["entries"]))
    print("all: median |error| %.1f%% over %d entries" % (100 * overall, len(rows)))


if __name__ == "__main__":
    main()
