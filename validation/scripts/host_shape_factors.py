#!/usr/bin/env python3
"""A framework profile's host costs at the models' own sizes, and its fixed host cost per step.

host_costs.py measures one more layer's host cost on a 1 x 8 x 8 x 8 input. A convolution's host path
depends on its size (cuDNN picks other engines, some launching several kernels): the same host, the
same process, measured at 1 x 64 x 56 x 56 and 1 x 256 x 14 x 14 (host_costs.py --channels --size,
shapes of the zoo's ResNet stages) costs more. This writes, for the conv2d and batchnorm keys of
host_cost_s (the layers whose host path is a library's: cuDNN's engines, PyTorch's batchnorm
dispatch; ReLU, pooling and adds go through PyTorch's TensorIterator whatever their size), the ratio
of the mean over the model-sized chains to the tiny chain, as `host_cost_shape_factors` (dtsim
multiplies host_cost_s by them when it reads the profile; host_cost_s keeps what was measured).
--cl-tiny/--cl-sized: the same for chains in channels_last (host_costs.py --memory-format
channels_last), as `channels_last_host_cost_shape_factors`, which price channels_last kernels.

--fixed FILES: the step's fixed host cost (the loop, zero_grad, DDP's reducer, the optimizer's own
overhead): each shallow chain's whole step less its layers (shallow x per layer) and less its first
layer (a 1x1 convolution, or a linear layer for the linear chain), the median over the chains, as
`iteration_overhead_s`.

  validation/scripts/host_shape_factors.py --profile configs/frameworks/pytorch-ops.json \\
      --tiny DIR/chain_c8_s8.json --sized DIR/chain_c64_s56.json DIR/chain_c256_s14.json \\
      --fixed validation/data/h200-sxm/host_costs/host_costs_sgd.json DIR/chain_c8_s8.json
"""
import argparse
import json
import statistics

from profile_io import set_profile_field


# kind in host_costs.py -> (phase, the host_cost_s keys it prices)
KEYS = {"conv": (("fwd", ["conv2d/fwd"]), ("bwd", ["conv2d/bwd_data", "conv2d/bwd_filter"])),
        "batchnorm": (("fwd", ["batchnorm/fwd"]), ("bwd", ["batchnorm/bwd"]))}


def shape_factors(tiny_file, sized_files):
    tiny = json.load(open(tiny_file))["layers"]
    sized = [json.load(open(f))["layers"] for f in sized_files]
    factors = {}
    for kind, phases in KEYS.items():
        for m in ("fp32", "bf16"):
            for phase, keys in phases:
                r = statistics.mean(s[kind][m][phase + "_s"] for s in sized) / tiny[kind][m][phase + "_s"]
                for k in keys:
                    factors[f"{k}/{m}"] = round(r, 3)
    return factors


def note_of(tiny_file, sized_files):
    shapes = ", ".join(json.load(open(f))["method"].split(" input")[0].split("a ")[-1] for f in sized_files)
    return (f"validation/scripts/host_shape_factors.py: conv and batchnorm host costs on {shapes} over the tiny "
            f"input, measured on the same machine one after the other ({', '.join(sized_files + [tiny_file])}); the mean of the sized "
            f"chains over the tiny one")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True)
    ap.add_argument("--tiny", required=True, help="host_costs.py JSON on the default 1 x 8 x 8 x 8 input")
    ap.add_argument("--sized", nargs="+", required=True, help="host_costs.py JSONs of the same host at model sizes")
    ap.add_argument("--cl-tiny", help="host_costs.py JSON, channels_last, on the 1 x 8 x 8 x 8 input")
    ap.add_argument("--cl-sized", nargs="*", default=[], help="the same host's channels_last chains at model sizes")
    ap.add_argument("--fixed", nargs="*", default=[], help="host_costs.py JSONs with shallow_iteration_s")
    a = ap.parse_args()
    factors = shape_factors(a.tiny, a.sized)
    set_profile_field(a.profile, "host_cost_shape_factors", factors, note_of(a.tiny, a.sized))
    if a.cl_tiny:
        cl = shape_factors(a.cl_tiny, a.cl_sized)
        set_profile_field(a.profile, "channels_last_host_cost_shape_factors", cl, note_of(a.cl_tiny, a.cl_sized))
        print("channels_last", json.dumps(cl))
    fixed = []
    for f in a.fixed:
        doc = json.load(open(f))
        shallow = int(doc["method"].split("chains of ")[1].split()[0])
        L = doc["layers"]
        for kind, by_prec in L.items():
            for m, c in by_prec.items():
                if "shallow_iteration_s" not in c:
                    continue

                def per(k):
                    return sum(L[k][m][p] for p in ("fwd_s", "bwd_s", "step_s"))
                fixed.append(c["shallow_iteration_s"] - shallow * per(kind) - per("linear" if kind == "linear" else "conv"))
    if fixed:
        overhead = round(statistics.median(fixed), 6)
        note_fixed = (f"iteration_overhead_s: the median over {len(fixed)} shallow chains ({', '.join(a.fixed)}) of the "
                      f"whole step less its layers and its first layer ({min(fixed) * 1e3:.2f}-{max(fixed) * 1e3:.2f} ms)")
        set_profile_field(a.profile, "iteration_overhead_s", overhead, note_fixed)
    print(json.dumps(factors), f"iteration_overhead_s {overhead if fixed else '(kept)'}")


if __name__ == "__main__":
    main()
