#!/usr/bin/env python3
"""Emulated network-bound clusters: dtsim against the runs of each socket setting.

For every setting folder sS (validation/scripts/run_emulated.sh), the runs are predicted on the
cluster calibrated from that setting's own collective measurements (h200-sockets-sS.json, made by
`dtsim calibrate --gpus-per-node 1`), and the 1-GPU baselines on the same cluster (one GPU: no
network). Settings sTxSnG emulate nodes of G GPUs (NVLink inside, sockets between; h200-sockets-sTxSnG.json made by
`dtsim calibrate --gpus-per-node G`). Prints per run the iteration error and the weak-scaling efficiency T(1 GPU) / T(2 GPUs),
measured and predicted, then a summary per framework and setting.

  validation/scripts/emulated_table.py --dtsim build/dtsim --data validation/data/h200-sxm/emulated [--markdown]
"""
import argparse, glob, json, os, statistics, subprocess


def validate(dtsim, cluster, folder):
    out = subprocess.run([dtsim, "validate", "--cluster", cluster, "--measured", folder, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return {(r["framework"], r["model"], r["batch_per_gpu"], r["precision"]): r for r in json.loads(out)["runs"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtsim", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rows = []
    for sdir in sorted(glob.glob(os.path.join(a.data, "s*x*"))):
        s = os.path.basename(sdir)
        cluster = os.path.join(a.data, f"h200-sockets-{s}.json")
        base = {}
        for fw in ("harness", "pytorch"):
            b = os.path.join(a.data, "baseline_1gpu", fw)
            if os.path.isdir(b):
                base.update(validate(a.dtsim, cluster, b))
        # harness_hier: the harness's hierarchical all-reduce (settings of nodes of G GPUs, sTxSnG);
        # its 1-GPU baseline is the harness's own
        for fw in ("harness", "harness_hier", "pytorch"):
            d = os.path.join(sdir, fw)
            if not os.path.isdir(d):
                continue
            for key, r in sorted(validate(a.dtsim, cluster, d).items()):
                b = base.get(key)
                eff_m = eff_p = None
                if b:
                    eff_m = b["measured_s"] / r["measured_s"]
                    eff_p = b["predicted_s"] / r["predicted_s"]
                rows.append(dict(setting=s, framework=fw, model=key[1], batch=key[2], precision=key[3],
                                 measured_ms=r["measured_s"] * 1e3, predicted_ms=r["predicted_s"] * 1e3, error=r["error"],
                                 exposed_ms=r.get("predicted_exposed_comm_s", 0) * 1e3, eff_m=eff_m, eff_p=eff_p))
    md = a.markdown
    head = ["setting", "framework", "model", "measured ms", "predicted ms", "error", "efficiency measured", "predicted", "diff (points)"]
    print(("| " + " | ".join(head) + " |\n|" + "---|" * len(head)) if md else "  ".join(f"{h:>12s}" for h in head))
    for r in rows:
        eff = ["-", "-", "-"] if r["eff_m"] is None else [f"{100 * r['eff_m']:.1f}%", f"{100 * r['eff_p']:.1f}%",
                                                          f"{100 * (r['eff_p'] - r['eff_m']):+.1f}"]
        cells = [r["setting"], r["framework"], f"{r['model']} b{r['batch']}", f"{r['measured_ms']:.2f}", f"{r['predicted_ms']:.2f}",
                 f"{100 * r['error']:+.1f}%"] + eff
        print(("| " + " | ".join(cells) + " |") if md else "  ".join(f"{c:>12s}" for c in cells))
    print()
    groups = {}
    for r in rows:
        groups.setdefault((r["framework"], r["setting"]), []).append(r)
    print("| framework | setting | runs | median abs error | max abs error | max efficiency diff (points) |\n|---|---|---|---|---|---|")
    for (fw, s), rs in sorted(groups.items()):
        errs = [abs(r["error"]) for r in rs]
        effd = [abs(r["eff_p"] - r["eff_m"]) for r in rs if r["eff_m"] is not None]
        print(f"| {fw} | {s} | {len(rs)} | {100 * statistics.median(errs):.1f}% | {100 * max(errs):.1f}% | "
              f"{(100 * max(effd)) if effd else float('nan'):.1f} |")


if __name__ == "__main__":
    main()
