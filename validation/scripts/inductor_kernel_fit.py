#!/usr/bin/env python3
"""torch.compile's generated (Triton) kernels, dtsim against torch.profiler, per pass.

Each profile (validation/pytorch/mode_profile.py's list of a compiled step) is read from its launch
sequence of the last iteration: the Triton kernels before the loss (nll_loss_forward) are the forward's,
those after it the backward's. They fall in three groups, each set against what dtsim prices for it:

- pooling: kernels that compute a max or average pooling with a window (their name holds max_pool2d or
  avg_pool2d), against dtsim's compiled pooling kernels (FrameworkSpec::compiled_pooling);
- casts: kernels that only cast (triton_*_fused__to_copy_N: autocast's weight casts), against dtsim's
  autocast kernels;
- fused runs: every other Triton kernel, against dtsim's inductor_pointwise and inductor_reduction
  kernels before the profile's channels_last_kernel_time_factors for them.

--fit: the factor per pass (eltwise/{fwd,bwd}/bf16/inductor_*) that makes the fused runs of the --train
profiles match in sum; the other profiles are held out and reported with it.

--contiguous: the transformers' generated kernels, which run on contiguous tensors and so take the
profile's kernel_time_factors rather than its channels_last table. Inductor fuses a transformer's
pointwise work into its reductions (layernorm with the residual add and dropout) and a linear
layer's bias gradient into them too, so per pass every Triton kernel but the casts is set against
every inductor_* kernel of dtsim's (pointwise, reduction and bias gradient together), and --fit gives
one factor per pass for all three keys.

  validation/scripts/inductor_kernel_fit.py --dtsim build/dtsim --train P.txt.gz ... [--check P.txt.gz ...] [--fit] [--contiguous]
"""
import argparse, gzip, json, os, re, subprocess, tempfile

NAME = re.compile(r"(?P<model>.+?)_b(?P<batch>\d+)(_t(?P<seq>\d+))?_(?P<prec>bf16|fp16|fp32)_(?P<fmt>contiguous|channels_last)_(?P<opt>\w+?)_(?P<ex>compile(-cuda-graphs)?)\.txt(\.gz)?$")
LAUNCH = re.compile(r"\s*([\d.]+)\s+([\d.]+)\s+(\S.*)$")
CAST = re.compile(r"^triton_\w+?_fused__to_copy_\d+$")
FACTOR_KEYS = [f"eltwise/{p}/bf16/inductor_{k}" for p in ("fwd", "bwd") for k in ("pointwise", "reduction")]


def group(name):
    if re.search(r"(max|avg)_pool2d", name.replace("adaptive_avg_pool2d", "")):
        return "pool"
    if CAST.match(name):
        return "cast"
    if "convolution_backward" in name and "batch_norm" not in name:
        return "bias_grad"
    return "pointwise" if name.startswith("triton_poi") else "reduction"


def measured(path):
    """(gpu, {pass: {group: us}}) from the launch sequence of the last profiled iteration."""
    out = {p: {"pool": 0.0, "cast": 0.0, "pointwise": 0.0, "reduction": 0.0, "bias_grad": 0.0} for p in ("fwd", "bwd")}
    gpu, on, pass_ = None, False, "fwd"
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            if line.startswith("# "):
                gpu = "h100-sxm" if "H100" in line else "h200-sxm" if "H200" in line else None
            if line.startswith("## launch sequence"):
                on = True
                continue
            if on and line.startswith("##"):
                break
            m = LAUNCH.match(line) if on else None
            if not m:
                continue
            name = m[3]
            if "nll_loss_forward" in name:
                pass_ = "bwd"
            if name.startswith("triton_"):
                out[pass_][group(name)] += float(m[2])
    return gpu, out


def dtsim_times(dtsim, m, gpu, framework):
    out = {p: {"pool": 0.0, "cast": 0.0, "pointwise": 0.0, "reduction": 0.0, "bias_grad": 0.0} for p in ("fwd", "bwd")}
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.json")
        subprocess.run([dtsim, "predict", "--model", m["model"], "--batch-per-gpu", m["batch"], "--cluster", gpu,
                        "--precision", m["prec"], "--memory-format", m["fmt"], "--optimizer", m["opt"], "--execution", m["ex"],
                        "--framework", framework, "--trace", trace] + (["--seq-len", m["seq"]] if m.get("seq") else []),
                       check=True, capture_output=True)
        events = json.load(open(trace))["traceEvents"]
    for e in events:
        a = e.get("args", {})
        if e.get("cat") != "kernel" or a.get("pass") not in ("fwd", "bwd"):
            continue
        v = a.get("variant", "")
        g = "pool" if v.startswith("inductor_") and a.get("kind") == "pool" else v[len("inductor_"):] if v.startswith("inductor_") else "cast" if v == "autocast" else None
        if g:
            out[a["pass"]][g] += e["dur"]
    return out


def against_dtsim(a, table, keys):
    """(name, gpu, training?, measured, dtsim) per profile, dtsim priced with the framework's `table` left
    without `keys` (the factors being fitted)."""
    profile = json.load(open(a.framework))
    bare = dict(profile)
    bare[table] = {k: v for k, v in profile[table].items() if k not in keys}
    rows = []
    with tempfile.NamedTemporaryFile("w", suffix=".json") as tmp:
        json.dump(bare, tmp)
        tmp.flush()
        for path, train in [(p, True) for p in a.train] + [(p, False) for p in a.check]:
            m = NAME.search(os.path.basename(path))
            gpu, meas = measured(path)
            rows.append((os.path.basename(path).split(".txt")[0], gpu, train, meas, dtsim_times(a.dtsim, m.groupdict(), gpu, tmp.name)))
    return profile, rows


CONTIGUOUS_KEYS = [f"eltwise/{p}/bf16/inductor_{k}" for p in ("fwd", "bwd") for k in ("pointwise", "reduction")] + [
    "eltwise/bwd/bf16/inductor_bias_grad"]


def contiguous_main(a):
    """--contiguous: one factor per pass for the generated kernels of contiguous (transformer) steps."""
    profile, priced = against_dtsim(a, "kernel_time_factors", CONTIGUOUS_KEYS)
    shipped = {p: profile["kernel_time_factors"].get(f"eltwise/{p}/bf16/inductor_pointwise", 1.0) for p in ("fwd", "bwd")}
    rows = []
    for name, gpu, train, meas, pr in priced:
        me = {p: sum(v for g, v in meas[p].items() if g != "cast") for p in ("fwd", "bwd")}
        dt = {p: pr[p]["pointwise"] + pr[p]["reduction"] + pr[p]["bias_grad"] for p in ("fwd", "bwd")}
        rows.append((name, gpu, train, me, dt))
    fit = {p: (sum(me[p] for _, _, t, me, _ in rows if t) / sum(dt[p] for _, _, t, _, dt in rows if t)) if a.fit else shipped[p]
           for p in ("fwd", "bwd")}
    print(f"factors {'fitted on the training profiles' if a.fit else 'of ' + a.framework}: "
          f"fwd {fit['fwd']:.3f}, bwd {fit['bwd']:.3f}\n")
    print("| profile | GPU | set | pass | generated kernels us: measured / dtsim | dtsim before the factor |")
    print("|---|---|---|---|---|---|")
    for name, gpu, train, me, dt in rows:
        for p in ("fwd", "bwd"):
            y = dt[p] * fit[p]
            print(f"| {name} | {gpu} | {'fit' if train else 'held out'} | {p} | {me[p]:.0f} / {y:.0f} ({100 * (y / me[p] - 1):+.0f}%) "
                  f"| {dt[p]:.0f} |")
    if a.fit:
        print("\n" + json.dumps({k: round(fit[k.split("/")[1]], 3) for k in CONTIGUOUS_KEYS}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default="build/dtsim")
    ap.add_argument("--framework", default="configs/frameworks/pytorch.json")
    ap.add_argument("--train", nargs="+", required=True)
    ap.add_argument("--check", nargs="*", default=[])
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--contiguous", action="store_true", help="the transformers' generated kernels (kernel_time_factors)")
    a = ap.parse_args()
    if a.contiguous:
        return contiguous_main(a)
    profile, rows = against_dtsim(a, "channels_last_kernel_time_factors", FACTOR_KEYS)
    factors = {k: profile["channels_last_kernel_time_factors"].get(k, 1.0) for k in FACTOR_KEYS}
    fit = {}
    for p in ("fwd", "bwd"):
        for g in ("pointwise", "reduction"):
            tr = [(me[p][g], pr[p][g]) for _, _, train, me, pr in rows if train]
            fit[p, g] = sum(x for x, _ in tr) / sum(y for _, y in tr) if a.fit else factors[f"eltwise/{p}/bf16/inductor_{g}"]
    print(f"factors {'fitted on the training profiles' if a.fit else 'of ' + a.framework}: " +
          ", ".join(f"{p} {g} {fit[p, g]:.3f}" for p, g in fit) + "\n")
    print("| profile | GPU | set | pass | pointwise us: measured / dtsim | reductions us | both | pooling us | bias gradients us | casts us |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, gpu, train, me, pr in rows:
        for p in ("fwd", "bwd"):
            cells = []
            both = (me[p]["pointwise"] + me[p]["reduction"], pr[p]["pointwise"] * fit[p, "pointwise"] + pr[p]["reduction"] * fit[p, "reduction"])
            for x, y in [(me[p][g], pr[p][g] * fit[p, g]) for g in ("pointwise", "reduction")] + [both] + [(me[p][g], pr[p][g]) for g in ("pool", "bias_grad", "cast")]:
                cells.append(f"{x:.0f} / {y:.0f}" + (f" ({100 * (y / x - 1):+.0f}%)" if x > 0 else ""))
            print(f"| {name} | {gpu} | {'fit' if train else 'held out'} | {p} | " + " | ".join(cells) + " |")
    if a.fit:
        print("\n" + json.dumps({f"eltwise/{p}/bf16/inductor_{g}": round(fit[p, g], 3) for p, g in fit}))

if __name__ == "__main__":
    main()
