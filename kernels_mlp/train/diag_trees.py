#!/usr/bin/env python3
"""Diagnostic (not part of dtsim, not run by the tests): how far a tree ensemble gets on the conv2d
predictors' own validation split, as a yardstick for the MLPs. Needs python3-sklearn (Debian).

  build/dtsim-train-predictors --data validation/data/h100-sxm --files conv2d_graph.csv --validate \\
      --steps 10 --hidden 8 --joint conv2d --extra-features --loss l1 --dump /tmp/split.csv
  /usr/bin/python3 kernels_mlp/train/diag_trees.py /tmp/split.csv

The trainer's dump gives each row's part (train / validation; held-out shapes are not in it) and shape;
the few training steps only make it write the dump quickly. The features here are a plain re-derivation
of the MLPs' (log shape fields, FLOPs, bytes, intensity, the pass's implicit GEMM, power-of-two
alignment, 128x128 tiles and last-wave fill on 132 SMs). Gradient-boosted trees, absolute error in log
time, on log time itself and on log(time / roofline) as the MLPs are.
"""
import csv, math, sys
import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

PEAK_FLOPS = {"fp32": 494e12, "bf16": 989e12}  # H100 SXM dense TF32 / BF16 tensor-core datasheet figures
PEAK_BYTES_PER_S = 3.35e12                      # H100 SXM HBM3 datasheet bandwidth


def twos(x, cap=8):
    n = 0
    while x > 0 and x % 2 == 0 and n < cap:
        x //= 2
        n += 1
    return n


def features(key, shape):
    _, pas, dtype = key.split("/")
    n, c, h, w, k, r, s, sh, sw, ph, pw, dh, dw, g = map(int, shape.split())
    p = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
    q = (w + 2 * pw - dw * (s - 1) - 1) // sw + 1
    flops = 2.0 * n * k * p * q * (c // g) * r * s
    nbytes = (4 if dtype == "fp32" else 2) * (n * c * h * w + n * k * p * q + k * (c // g) * r * s)
    gm, gn, gk = {"fwd": (n * p * q, k, c // g * r * s), "bwd_data": (n * h * w, c, k // g * r * s),
                  "bwd_filter": (k, c // g * r * s, n * p * q)}[pas]
    tiles = math.ceil(gm / 128) * math.ceil(gn / 128)
    lg = lambda v: math.log2(max(v, 1e-9))
    f = [lg(n), lg(c), lg(h), lg(w), lg(k), r, s, sh, ph, dh, lg(g), lg(p), lg(q), lg(flops), lg(nbytes),
         lg(flops / nbytes), lg(gm), lg(gn), lg(gk), twos(c // g), twos(k // g), twos(h * w), twos(p * q),
         twos(n * p * q), twos(gm), twos(gn), twos(gk), ["fwd", "bwd_data", "bwd_filter"].index(pas),
         dtype == "bf16", g == c and g > 1, lg(tiles), (tiles % 132) / 132]
    roofline_s = max(flops / PEAK_FLOPS[dtype], nbytes / PEAK_BYTES_PER_S) + 2e-6
    return f, math.log(roofline_s)


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    fb = [features(r["key"], r["shape"]) for r in rows]
    x = np.array([f for f, _ in fb], dtype=float)
    base = np.array([b for _, b in fb])
    y = np.log(np.array([float(r["measured_s"]) for r in rows]))
    train = np.array([r["part"] == "train" for r in rows])
    keys = np.array([r["key"] for r in rows])
    for name, offset, params in [
            ("log time", np.zeros_like(y), dict(max_iter=2000, learning_rate=0.05, max_leaf_nodes=63, min_samples_leaf=10)),
            ("log time / roofline", base, dict(max_iter=3000, learning_rate=0.03, max_leaf_nodes=127, min_samples_leaf=8))]:
        model = HistGradientBoostingRegressor(loss="absolute_error", random_state=1, **params)
        model.fit(x[train], (y - offset)[train])
        ape = np.abs(np.exp(model.predict(x) + offset - y) - 1)
        per = {k: ape[~train & (keys == k)].mean() for k in sorted(set(keys))}
        print(f"{name}: train {ape[train].mean():.2%}, validation mean of the predictors {np.mean(list(per.values())):.2%}")
        for k, v in per.items():
            print(f"  {k:24s} {v:.2%}")


if __name__ == "__main__":
    main()
