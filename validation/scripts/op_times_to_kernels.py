#!/usr/bin/env python3
"""PyTorch's channels_last batchnorm timed alone (validation/pytorch/op_times.py --memory-format
channels_last) as rows of the harness's kernel-CSV schema, with `layout` nhwc, for dtsim-train-predictors:
its NHWC batchnorm predictors (batchnorm/<pass>/<math>/nhwc) learn them per shape.

Why per shape: one time factor per key over the NCHW prediction (the framework profile's
channels_last_kernel_time_factors) mixed models whose NHWC batchnorm runs at 0.25-0.5 (mobilenet_v2),
0.41-0.68 (resnet50) and 0.86-1.24 (densenet121) of the NCHW prediction; resnet18's came out 49% slow.
Only fp32 and bf16 rows: dtsim keys fp16 kernels as bf16, and PyTorch runs fp16 batchnorm with other
kernels, so fp16 keeps a factor of its own over this predictor (framework profile).

--layout nchw: PyTorch's contiguous bf16 batchnorm (op_times.py's default memory format), which PyTorch
runs with its own kernels (batch_norm_collect_statistics / transform_input / backward), not cuDNN's as
the harness does: rows with impl `torch_native`, which dtsim-train-predictors keys
batchnorm/<pass>/bf16/native. fp32 and fp16 contiguous batchnorm run cuDNN's (the harness's predictors).

usage: op_times_to_kernels.py [--layout nhwc|nchw] OUT.csv OP_TIMES.csv [OP_TIMES.csv ...]
"""
import csv, os, sys

COLS = ["kind", "pass", "math_mode", "dtype", "N", "C", "H", "W", "impl", "layout", "time_median_s", "time_min_s", "source"]


def main():
    args = sys.argv[1:]
    layout = "nhwc"
    if args[:1] == ["--layout"] and len(args) > 1:
        layout, args = args[1], args[2:]
    if len(args) < 2 or layout not in ("nhwc", "nchw"):
        sys.exit(__doc__)
    maths = ("fp32", "bf16") if layout == "nhwc" else ("bf16",)
    impl = "torch_channels_last" if layout == "nhwc" else "torch_native"
    out, rows, seen = args[0], [], set()
    for path in args[1:]:
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["op"] != "batchnorm" or r["layout"] != layout or r["math_mode"] not in maths:
                    continue
                key = (r["pass"], r["math_mode"], r["N"], r["C"], r["H"], r["W"])
                if key in seen:  # a shape two models share: its first measurement
                    continue
                seen.add(key)
                rows.append({"kind": "batchnorm", "pass": r["pass"], "math_mode": r["math_mode"], "dtype": r["math_mode"],
                             "N": r["N"], "C": r["C"], "H": r["H"], "W": r["W"], "impl": impl, "layout": layout,
                             "time_median_s": r["time_median_s"], "time_min_s": r["time_min_s"],
                             "source": r["source"] + " (" + os.path.basename(path) + ")"})
    tmp = out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, COLS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out)
    print(f"{len(rows)} rows -> {out}")


if __name__ == "__main__":
    main()
