#!/usr/bin/env python3
"""dtsim collective against the public nccl-tests logs of validation/data/public_collectives.

For every row of every source at 64 MiB and more, runs `dtsim collective` on the source's preset with
that source's GPUs per node, NICs per node and line rate (a copy of the preset with those three
fields changed, in a temporary directory), its NCCL_ALGO (RING: --algo nccl-ring, TREE:
nccl-tree, else auto) and whether NVLS could run (the source's `nvls`: NCCL's default on NVSwitch
nodes unless NCCL_NVLS_ENABLE=0), and prints each row's error (predicted / measured - 1) and the median and
maximum |error| of the healthy rows, fitted and held out apart. Python 3 standard library only.

    python3 validation/scripts/public_collectives.py [--dtsim build/dtsim] [--json]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "validation", "data", "public_collectives")
MIN_BYTES = 64 << 20
ALGO = {"RING": "nccl-ring", "TREE": "nccl-tree"}


def rows_of(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("#") and l.strip()]
    return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(lines)]


def cluster_for(src, tmp):
    with open(os.path.join(ROOT, "configs", "clusters", src["preset"] + ".json")) as f:
        doc = json.load(f)
    doc["name"] = src["preset"] + "-" + src["id"]
    doc["gpus_per_node"] = src["gpus_per_node"]
    doc["nodes"] = max(doc.get("nodes", 1), src["nodes"])
    doc["inter_node"]["nics_per_node"] = src["nics_per_node"]
    doc["inter_node"]["nic_bandwidth_Gbps"] = src["nic_Gbps"]
    path = os.path.join(tmp, src["id"] + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def predict(dtsim, cluster, src, sizes):
    algo = ALGO.get(src.get("env", {}).get("NCCL_ALGO", "").upper(), "auto")
    cmd = [dtsim, "collective", "--cluster", cluster, "--gpus", str(src["gpus"]), "--op", src["op"],
           "--algo", algo, "--nvls", "on" if src.get("nvls") else "off", "--bytes", ",".join(str(int(n)) for n in sizes), "--format", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {int(r["bytes"]): r for r in json.loads(out)}


def evaluate(dtsim):
    with open(os.path.join(DATA, "index.json")) as f:
        index = json.load(f)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in index["sources"]:
            rows = [r for r in rows_of(os.path.join(DATA, src["file"])) if r["bytes"] >= MIN_BYTES]
            if not rows:
                continue
            pred = predict(dtsim, cluster_for(src, tmp), src, [r["bytes"] for r in rows])
            for r in rows:
                p = pred[int(r["bytes"])]
                measured = r["time_us"] * 1e-6
                results.append({"source": src["id"], "url": src["url"], "split": src["split"], "healthy": src["healthy"],
                                "gpus": src["gpus"], "nodes": src["nodes"], "bytes": int(r["bytes"]), "measured_s": measured,
                                "predicted_s": p["time_s"], "chosen": p["chosen_algo"] + "/" + str(p["protocol"]),
                                "error": p["time_s"] / measured - 1})
    return results


def summary(results, split):
    errs = [abs(r["error"]) for r in results if r["split"] == split and r["healthy"]]
    if not errs:
        return None
    return {"rows": len(errs), "sources": len({r["source"] for r in results if r["split"] == split and r["healthy"]}),
            "median_abs_error": statistics.median(errs), "max_abs_error": max(errs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "dtsim"))
    ap.add_argument("--json", action="store_true", help="print the rows and summaries as JSON")
    a = ap.parse_args()
    results = evaluate(a.dtsim)
    sums = {s: summary(results, s) for s in ("fitted", "held_out")}
    if a.json:
        print(json.dumps({"rows": results, "summary": sums}, indent=1))
        return 0
    print(f"{'source':<16} {'split':<9} {'healthy':<7} {'gpus':>4} {'nodes':>5} {'bytes':>11} {'measured':>10} {'dtsim':>10} {'error':>8}  chosen")
    for r in results:
        print(f"{r['source']:<16} {r['split']:<9} {str(r['healthy']):<7} {r['gpus']:>4} {r['nodes']:>5} {r['bytes']:>11} "
              f"{r['measured_s'] * 1e3:>8.3f}ms {r['predicted_s'] * 1e3:>8.3f}ms {r['error'] * 100:>+7.1f}%  {r['chosen']}")
    for s, v in sums.items():
        if v is None:
            print(f"{s}: no healthy rows")
        else:
            print(f"{s}: {v['rows']} healthy rows from {v['sources']} source(s) at >= 64 MiB: median |error| "
                  f"{v['median_abs_error'] * 100:.1f}%, max {v['max_abs_error'] * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
