#!/usr/bin/env python3
"""Fits a framework profile's `compiled_cuda_graphs_host` (what the host still pays when torch.compile's
mode="reduce-overhead" replays the module as CUDA graphs) from whole models' host time at batch 1.

The rows are `validation/pytorch/model_host_time.py --modes contiguous:sgd:compile-cuda-graphs`: the
host's own time per step, per phase (forward with zero_grad and the loss, backward, optimizer step),
with the GPU never holding the host back. For each row, dtsim prices the same step twice with the
profile's block set to zero and with 1 ms per layer: the first gives what dtsim already charges each
phase (the loss, DDP's gradient copies, the optimizer), the difference gives the number of layers that
run inside the compiled module in each pass, n_fwd and n_bwd. Then by least squares over the rows

  measured forward  - charged forward  = a_fwd + per_layer_fwd_s * n_fwd
  measured backward - charged backward = a_bwd + per_layer_bwd_s * n_bwd

and per_step_s = a_fwd + a_bwd - the profile's iteration_overhead_s (charged once a step already).

  validation/scripts/replay_host_fit.py --dtsim build/dtsim --framework pytorch-ops ROWS.json... [--write]

--write puts the block into configs/frameworks/<framework>.json. The rows fitted on are not the runs
the block is judged on: those are the committed compile-cuda-graphs runs (docs/accuracy.md).
"""
import argparse, collections, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK = "compiled_cuda_graphs_host"


def phase_host_s(dtsim, profile_path, row):
    """dtsim's host time per phase (fwd, bwd, update) of the row's step, from its trace."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.json")
        subprocess.run([dtsim, "predict", "--model", row["model"], "--batch-per-gpu", str(row["batch"]),
                        "--precision", row["precision"], "--memory-format", row["memory_format"],
                        "--optimizer", row["optimizer"], "--execution", row["execution"],
                        "--framework", profile_path, "--cluster", "h200-sxm", "--trace", trace],
                       check=True, capture_output=True, cwd=ROOT)
        events = json.load(open(trace))["traceEvents"]
    out = collections.Counter()
    for e in events:
        if e.get("cat") != "host" or e["name"] == "iteration overhead":
            continue
        last = e["name"].split()[-1]
        out["update" if last == "update" else "fwd" if last == "fwd" else "bwd"] += e["dur"] * 1e-6
    return out


def line_fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "dtsim"))
    ap.add_argument("--framework", default="pytorch-ops")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("rows", nargs="+")
    a = ap.parse_args()
    path = os.path.join(ROOT, "configs", "frameworks", a.framework + ".json")
    profile = json.load(open(path))
    rows = [r for f in a.rows for r in json.load(open(f))["rows"] if r["execution"] == "compile-cuda-graphs"]
    if len(rows) < 3:
        sys.exit("replay_host_fit.py: rows: at least 3 compile-cuda-graphs rows are needed")

    def with_block(fwd_s, bwd_s):
        p = dict(profile)
        p[BLOCK] = {"per_step_s": 0.0, "per_layer_fwd_s": fwd_s, "per_layer_bwd_s": bwd_s}
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(p, f)
        f.close()
        return f.name

    zero, unit = with_block(0.0, 0.0), with_block(1e-3, 1e-3)
    pts = []
    for r in rows:
        base, per = phase_host_s(a.dtsim, zero, r), phase_host_s(a.dtsim, unit, r)
        n_f, n_b = round((per["fwd"] - base["fwd"]) / 1e-3), round((per["bwd"] - base["bwd"]) / 1e-3)
        pts.append((r, n_f, n_b, r["host_fwd_s"] - base["fwd"], r["host_bwd_s"] - base["bwd"]))
    os.unlink(zero), os.unlink(unit)
    a_f, b_f = line_fit([p[1] for p in pts], [p[3] for p in pts])
    a_b, b_b = line_fit([p[2] for p in pts], [p[4] for p in pts])
    per_step = a_f + a_b - profile["iteration_overhead_s"]
    print(f"{'model':13s} {'prec':4s} n_fwd n_bwd  fwd left ms (fit)  bwd left ms (fit)")
    for r, n_f, n_b, y_f, y_b in pts:
        print(f"{r['model']:13s} {r['precision']:4s} {n_f:5d} {n_b:5d}  {y_f * 1e3:7.2f} ({(a_f + b_f * n_f) * 1e3:6.2f})"
              f"  {y_b * 1e3:7.2f} ({(a_b + b_b * n_b) * 1e3:6.2f})")
    print(f"per_layer_fwd_s {b_f:.4g}, per_layer_bwd_s {b_b:.4g}, intercepts {a_f * 1e3:.3f} + {a_b * 1e3:.3f} ms, "
          f"per_step_s {per_step:.4g} (after the profile's iteration_overhead_s {profile['iteration_overhead_s']:.4g})")
    if min(b_f, b_b) < 0:
        sys.exit("replay_host_fit.py: a negative cost per layer; not written")
    block = {"per_step_s": float(f"{max(per_step, 0.0):.4g}"), "per_layer_fwd_s": float(f"{b_f:.4g}"),
             "per_layer_bwd_s": float(f"{b_b:.4g}")}
    print(json.dumps({BLOCK: block}))
    if a.write:
        profile[BLOCK] = block
        with open(path, "w") as f:
            json.dump(profile, f, indent=2)
            f.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
