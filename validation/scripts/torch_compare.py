#!/usr/bin/env python3
"""Times a sample of the harness's conv2d rows through PyTorch (cudnn.benchmark=True) and writes
both times side by side, so that predictors trained on the harness's cudnnFind data are known to
hold for PyTorch runs (docs/design.md §6, Measuring). With --bn-pool it does the same for batchnorm and
pooling rows (PyTorch may run those with its own kernels rather than cuDNN's) and prints the
names of the kernels PyTorch launched for one shape of each.

usage: torch_compare.py HARNESS_DIR/conv2d.csv OUT.csv [--n 150] [--seed 1] [--budget-s 120]
                             [--bn-pool N]   (also HARNESS_DIR/batchnorm.csv, pool.csv -> OUT_bn.csv, OUT_pool.csv)

fp32 rows run with torch.backends.cudnn.allow_tf32 = True (PyTorch's default); bf16 rows with bf16
tensors. Passes: fwd = F.conv2d; bwd_data / bwd_filter = aten.convolution_backward with the
output mask of that gradient alone. Each time: median of CUDA-event timed repeats after warm-up
(the first calls also run cudnn.benchmark's search).
"""
import argparse
import csv
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
from kernel_sweep import time_stream  # noqa: E402  (validation/pytorch, beside ddp_reference.py)


def timeit(fn, target_s=0.01, min_rep=5, max_rep=30):
    """Median and minimum of the harness's back-to-back timing (kernel_sweep.py's), two warm-up calls."""
    med, mn, _, _, _ = time_stream(fn, target_s, min_rep, max_rep, warmup=2, long_min_rep=min_rep)
    return med, mn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("conv_csv")
    ap.add_argument("out_csv")
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget-s", type=float, default=120)
    ap.add_argument("--bn-pool", type=int, default=0, help="also compare this many batchnorm and pool rows")
    a = ap.parse_args()
    if a.bn_pool:
        compare_bn_pool(a)

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = [r for r in csv.DictReader(open(a.conv_csv)) if r["source"] != "sanity"]
    random.Random(a.seed).shuffle(rows)
    rows = rows[: a.n]
    dev = torch.device("cuda")
    out = open(a.out_csv, "w", newline="")
    w = csv.writer(out)
    w.writerow(["pass", "math_mode", "N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_h", "pad_w",
                "dil_h", "dil_w", "groups", "harness_algo", "harness_time_s", "torch_time_s", "torch_min_s",
                "torch_over_harness", "source"])
    t_start = time.time()
    ratios = {}
    for r in rows:
        if time.time() - t_start > a.budget_s:
            break
        g = {k: int(r[k]) for k in ["N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_h", "pad_w",
                                    "dil_h", "dil_w", "groups"]}
        dt = torch.bfloat16 if r["math_mode"] == "bf16" else torch.float32
        try:
            x = torch.randn(g["N"], g["C"], g["H"], g["W"], device=dev, dtype=dt)
            wt = torch.randn(g["K"], g["C"] // g["groups"], g["R"], g["S"], device=dev, dtype=dt)
            st, pd, dl = (g["stride_h"], g["stride_w"]), (g["pad_h"], g["pad_w"]), (g["dil_h"], g["dil_w"])
            y = F.conv2d(x, wt, None, st, pd, dl, g["groups"])
            dy = torch.randn_like(y)
            if r["pass"] == "fwd":
                fn = lambda: F.conv2d(x, wt, None, st, pd, dl, g["groups"])
            else:
                mask = [r["pass"] == "bwd_data", r["pass"] == "bwd_filter", False]
                fn = lambda: torch.ops.aten.convolution_backward(dy, x, wt, None, st, pd, dl, False, [0, 0],
                                                                 g["groups"], mask)
            tm, tmin = timeit(fn)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            continue
        h = float(r["time_median_s"])
        ratio = tm / h if h > 0 else float("nan")
        ratios.setdefault((r["pass"], r["math_mode"]), []).append(ratio)
        w.writerow([r["pass"], r["math_mode"]] + [g[k] for k in ["N", "C", "H", "W", "K", "R", "S", "stride_h",
                                                                  "stride_w", "pad_h", "pad_w", "dil_h", "dil_w",
                                                                  "groups"]]
                   + [r["algo"], f"{h:.4g}", f"{tm:.4g}", f"{tmin:.4g}", f"{ratio:.4g}", r["source"]])
        out.flush()
        del x, wt, y, dy
    out.close()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{sum(len(v) for v in ratios.values())} shapes in {time.time() - t_start:.0f} s")
    for k, v in sorted(ratios.items()):
        v = sorted(v)
        print(f"torch/harness {k[0]:10s} {k[1]}: n={len(v):3d} median {statistics.median(v):.3f}  "
              f"p10 {v[len(v) // 10]:.3f}  p90 {v[(9 * len(v)) // 10]:.3f}")
    return 0


def kernel_names(fn):
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name[:80] for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def compare_bn_pool(a):
    d = os.path.dirname(a.conv_csv)
    dev = torch.device("cuda")
    base = a.out_csv[:-4] if a.out_csv.endswith(".csv") else a.out_csv
    for kind in ["batchnorm", "pool"]:
        rows = [r for r in csv.DictReader(open(os.path.join(d, kind + ".csv"))) if r["source"] != "sanity"]
        random.Random(a.seed).shuffle(rows)
        rows = rows[: a.bn_pool]
        ratios, shown = {}, set()
        with open(f"{base}_{kind}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["pass", "math_mode", "shape", "harness_time_s", "torch_time_s", "torch_over_harness", "source"])
            for r in rows:
                dt = torch.bfloat16 if r["math_mode"] == "bf16" else torch.float32
                N, C, H, W = (int(r[k]) for k in "NCHW")
                try:
                    x = torch.randn(N, C, H, W, device=dev, dtype=dt, requires_grad=True)
                    if kind == "batchnorm":
                        wt = torch.rand(C, device=dev, requires_grad=True)
                        b = torch.rand(C, device=dev, requires_grad=True)
                        rm, rv = torch.zeros(C, device=dev), torch.ones(C, device=dev)
                        fwd = lambda: F.batch_norm(x, rm, rv, wt, b, True, 0.1, 1e-5)
                        params = [x, wt, b]
                        shape = f"N={N};C={C};H={H};W={W}"
                    else:
                        R, st, pd = int(r["R"]), int(r["stride"]), int(r["pad"])
                        if r["mode"] == "max":
                            fwd = lambda: F.max_pool2d(x, R, st, pd)
                        else:
                            fwd = lambda: F.avg_pool2d(x, R, st, pd)
                        params = [x]
                        shape = f"{r['mode']};N={N};C={C};H={H};W={W};R={R};stride={st};pad={pd}"
                    y = fwd()
                    dy = torch.randn_like(y)
                    fn = fwd if r["pass"] == "fwd" else (lambda: torch.autograd.grad(y, params, dy, retain_graph=True))
                    with torch.no_grad() if r["pass"] == "fwd" else torch.enable_grad():
                        tm, _ = timeit(fn)
                    key = (r["pass"], r["math_mode"])
                    if key not in shown and N * C * H * W > 1e6:
                        shown.add(key)
                        print(f"torch {kind} {key[0]} {key[1]} kernels: {kernel_names(fn)}")
                except (torch.OutOfMemoryError, RuntimeError) as e:
                    print(f"{kind} {r['pass']} skipped: {str(e)[:100]}")
                    torch.cuda.empty_cache()
                    continue
                h = float(r["time_median_s"])
                ratios.setdefault((r["pass"], r["math_mode"]), []).append(tm / h)
                w.writerow([r["pass"], r["math_mode"], shape, f"{h:.4g}", f"{tm:.4g}", f"{tm / h:.4g}", r["source"]])
        for k, v in sorted(ratios.items()):
            v = sorted(v)
            print(f"torch/harness {kind:9s} {k[0]:4s} {k[1]}: n={len(v):3d} median {statistics.median(v):.3f}  "
                  f"p10 {v[len(v) // 10]:.3f}  p90 {v[(9 * len(v)) // 10]:.3f}")


if __name__ == "__main__":
    sys.exit(main())
