#!/usr/bin/env python3
"""Kernel time factors for the strided kernels nn.MultiheadAttention's layout causes.

validation/pytorch/strided_eltwise.py times each strided elementwise kernel of a ViT step beside its
contiguous twin of the same size. dtsim predicts the contiguous kernel; the framework profile scales
it by the median strided/contiguous time ratio over the shapes whose contiguous time is at least
--min-time-s. The keys (sim/schedule.cpp framework_kernel_key) are merged into the profile's
kernel_time_factors, the other keys kept:

  add/fwd/fp32/strided             add_mixed_permx / add_mixed   (a 16-bit operand read out of order)
  add/fwd/fp32/strided_wide        add_res_perm / add_mixed      (an FP32 operand read out of order)
  eltwise/*/fp32/permuted_stream_copy   copy_perm / copy         (LayerNorm's input made contiguous)
  eltwise/*/bf16/mha_input_transpose, mha_output_permute   transpose_in / copy_bf16
  eltwise/*/bf16/mha_qkv_contiguous     qkv_copy / copy_bf16

  validation/scripts/strided_factors.py --csv validation/data/h100-sxm/op_times/strided_eltwise.csv \
      --profile configs/frameworks/pytorch.json
"""
import argparse
import csv
import json
import statistics

from profile_io import set_profile_field

PAIRS = {
    "add/fwd/fp32/strided": ("add_mixed_permx", "add_mixed"),
    "add/fwd/fp32/strided_wide": ("add_res_perm", "add_mixed"),
    "eltwise/fwd/fp32/permuted_stream_copy": ("copy_perm", "copy"),
    "eltwise/bwd/fp32/permuted_stream_copy": ("copy_perm", "copy"),
    "eltwise/fwd/bf16/mha_input_transpose": ("transpose_in", "copy_bf16"),
    "eltwise/bwd/bf16/mha_input_transpose": ("transpose_in", "copy_bf16"),
    "eltwise/fwd/bf16/mha_output_permute": ("transpose_in", "copy_bf16"),
    "eltwise/bwd/bf16/mha_output_permute": ("transpose_in", "copy_bf16"),
    "eltwise/fwd/bf16/mha_qkv_contiguous": ("qkv_copy", "copy_bf16"),
    "eltwise/bwd/bf16/mha_qkv_contiguous": ("qkv_copy", "copy_bf16"),
}


def ratios(rows, strided, contiguous, min_time_s):
    t = {(r["op"], r["B"], r["T"], r["C"], r["elements"]): float(r["time_median_s"]) for r in rows}
    out = []
    for (op, *shape), v in t.items():
        twin = t.get((contiguous, *shape))
        if op == strided and twin and twin >= min_time_s:
            out.append(v / twin)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--profile", required=True, action="append")
    ap.add_argument("--min-time-s", type=float, default=20e-6)
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.csv)))
    factors, shapes = {}, {}
    for key, (s, c) in PAIRS.items():
        r = ratios(rows, s, c, a.min_time_s)
        if not r:
            raise SystemExit(f"{a.csv}: no {s} rows with a {c} twin of {a.min_time_s} s or more")
        factors[key], shapes[key] = round(statistics.median(r), 3), len(r)
    for path in a.profile:
        with open(path) as f:
            prof = json.load(f)
        merged = dict(sorted({**prof.get("kernel_time_factors", {}), **factors}.items()))
        note = prof.get("sources", {}).get("kernel_time_factors", "")
        note = note.split("; strided keys:")[0] + (
            f"; strided keys: validation/scripts/strided_factors.py --csv {a.csv} (median strided/contiguous "
            f"time ratio over shapes whose contiguous time is at least {a.min_time_s} s; shapes per key: {shapes})")
        set_profile_field(path, "kernel_time_factors", merged, note)
    for k, v in factors.items():
        print(f"{k:42s} {v:.3f}  ({shapes[k]} shapes)")


if __name__ == "__main__":
    main()
