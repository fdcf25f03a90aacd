#!/usr/bin/env python3
"""torch.compile's default mode against eager on the same host: every committed compiled run (no CUDA
graphs) beside its eager twin from the same folder, which one process measured minutes apart (same
model, batch, precision, layout, optimizer and GPUs; the file name without `_compile`).

For each pair it prints the measured compiled / eager step ratio, dtsim's ratio, and how far apart
they are, beside each step's absolute error and what dtsim says paces each step. Where the host paces,
a step's absolute error is mostly the host's speed, which moves between the lent VMs and within one
process (docs/accuracy.md, "The host's speed, not the compiled program"). Where dtsim prices both
steps as paced by the host, the ratio cancels that speed and says how well dtsim prices what
compiling changes; where the eager twin is GPU-paced it does not, and the summary keeps those apart.
Markdown on stdout.

  python3 validation/scripts/compile_eager_pairs.py [--dtsim build/dtsim] [--framework NAME] [FOLDER...]
"""
import argparse, json, os, statistics, subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every folder with default-mode compiled runs and their eager twins (h100-sxm's also holds
# compile-cuda-graphs runs, which are left out: their twin is not measured in the same way).
FOLDERS = ["validation/data/h200-sxm/pytorch_modes/host_paced", "validation/data/h200-sxm/pytorch_modes/compile_b16",
           "validation/data/h200-sxm/pytorch_modes/compile_b32", "validation/data/h200-sxm/pytorch_modes/compile_repeat",
           "validation/data/h100-sxm/pytorch_modes/compile"]


def validate(dtsim, folders, framework):
    args = [dtsim, "validate", "--format", "json"] + (["--framework", framework] if framework else [])
    for f in folders:
        args += ["--measured", os.path.join(ROOT, f)]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True, cwd=ROOT).stdout)["runs"]


def pairs(runs):
    """(compiled, eager) runs of one configuration from one folder."""
    by_file = {r["file"]: r for r in runs}
    out = []
    for r in runs:
        if r["execution"] != "compile" or not r["file"].endswith("_compile.json"):
            continue
        twin = by_file.get(r["file"][: -len("_compile.json")] + ".json")
        if twin is not None and twin["execution"] == "eager":
            out.append((r, twin))
    return sorted(out, key=lambda p: p[0]["file"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "dtsim"))
    ap.add_argument("--framework", default="", help="a framework profile for every run (default: each run's own)")
    ap.add_argument("folders", nargs="*", default=FOLDERS)
    a = ap.parse_args()
    ps = pairs(validate(a.dtsim, a.folders, a.framework))
    print("| folder | model | batch | precision | compiled ms | eager ms | measured ratio | dtsim ratio | ratio error "
          "| compiled error | eager error | dtsim: paced by |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    ratio_err, comp_err, eager_err, both_host = [], [], [], []
    for c, e in ps:
        measured = c["measured_s"] / e["measured_s"]
        predicted = c["predicted_s"] / e["predicted_s"]
        ratio_err.append(predicted / measured - 1)
        comp_err.append(c["error"])
        eager_err.append(e["error"])
        if c["predicted_bound"] == "host" and e["predicted_bound"] == "host":
            both_host.append(ratio_err[-1])
        folder = os.path.relpath(os.path.dirname(c["file"]), "validation/data")
        print(f"| {folder} | {c['model']} | {c['batch_per_gpu']} | {c['precision']} | {1e3 * c['measured_s']:.2f} "
              f"| {1e3 * e['measured_s']:.2f} | {measured:.3f} | {predicted:.3f} | {100 * ratio_err[-1]:+.1f}% "
              f"| {100 * c['error']:+.1f}% | {100 * e['error']:+.1f}% | {c['predicted_bound']} / {e['predicted_bound']} |")

    def med(xs):
        return 100 * statistics.median(abs(x) for x in xs)

    if both_host:
        print(f"\n{len(both_host)} pairs that dtsim prices as host-paced both ways: compiled/eager ratio median absolute "
              f"error {med(both_host):.1f}%, max {100 * max(abs(x) for x in both_host):.1f}%.")
    print(f"\n{len(ps)} pairs. Median absolute error: compiled/eager ratio {med(ratio_err):.1f}%, compiled steps "
          f"{med(comp_err):.1f}%, their eager twins {med(eager_err):.1f}%; signed median of the compiled steps "
          f"{100 * statistics.median(comp_err):+.1f}%, of the twins {100 * statistics.median(eager_err):+.1f}%.")


if __name__ == "__main__":
    main()
