#!/usr/bin/env python3
"""Diagnostic (not part of dtsim, not run by the tests): how far a tree ensemble gets on the conv2d
predictors' own validation split, as a yardstick for the MLPs. Needs python3-sklearn (Debian).

  build/dtsim-train-predictors --data validation/data/h100-sxm --files conv2d_graph.csv --validate \\
      --steps 10 --hidden 8 --joint conv2d --extra-features --loss l1 --dump /tmp/split.csv
  /usr/bin/python3 tools/train_predictors/diag_trees.py /tmp/split.csv [validation/data/h100-sxm/kernels/conv2d_graph.csv]

The trainer's dump gives each row's part (train / validation; held-out shapes are not in it) and shape;
the few training steps only make it write the dump quickly. The features here are a plain re-derivation
of the MLPs' (log shape fields, FLOPs, bytes, intensity, the pass's implicit GEMM, power-of-two
alignment, 128x128 tiles and last-wave fill on 132 SMs). Gradient-boosted trees, absolute error in log
time, on log time itself and on log(time / roofline) as the MLPs are. Given the data file as well, also
with the engine the autotuner kept (its `algo` column) as an input, once as an oracle (the engine each
row measured) and once as predicted from the shape by a tree classifier (out-of-fold on the training
rows): how much of the error the engine choice explains, and how much of that the shape tells.
"""
import csv, math, sys
from collections import Counter

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.model_selection import cross_val_predict

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


def score(name, x, y, offset, train, keys, params, categorical=None):
    model = HistGradientBoostingRegressor(loss="absolute_error", random_state=1, categorical_features=categorical, **params)
    model.fit(x[train], (y - offset)[train])
    ape = np.abs(np.exp(model.predict(x) + offset - y) - 1)
    per = {k: ape[~train & (keys == k)].mean() for k in sorted(set(keys))}
    print(f"{name}: train {ape[train].mean():.2%}, validation mean of the predictors {np.mean(list(per.values())):.2%}")
    for k, v in per.items():
        print(f"  {k:24s} {v:.2%}")


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    fb = [features(r["key"], r["shape"]) for r in rows]
    x = np.array([f for f, _ in fb], dtype=float)
    base = np.array([b for _, b in fb])
    y = np.log(np.array([float(r["measured_s"]) for r in rows]))
    train = np.array([r["part"] == "train" for r in rows])
    keys = np.array([r["key"] for r in rows])
    small = dict(max_iter=2000, learning_rate=0.05, max_leaf_nodes=63, min_samples_leaf=10)
    large = dict(max_iter=3000, learning_rate=0.03, max_leaf_nodes=127, min_samples_leaf=8)
    score("log time", x, y, np.zeros_like(y), train, keys, small)
    score("log time / roofline", x, y, base, train, keys, large)
    if len(sys.argv) < 3:
        return
    fields = "N C H W K R S stride_h stride_w pad_h pad_w dil_h dil_w groups".split()
    algo = {}
    for r in csv.DictReader(open(sys.argv[2])):  # the first measurement of a shape, as the trainer reads it
        algo.setdefault((r["pass"], r["math_mode"], " ".join(r[f] for f in fields)), r["algo"])
    engine = [algo[(r["key"].split("/")[1], r["key"].split("/")[2], r["shape"])] for r in rows]
    names = sorted(set(engine))
    oracle = np.array([names.index(e) for e in engine], dtype=float)
    score(f"log time / roofline, the kept engine as input (oracle, {len(names)} engines)",
          np.column_stack([x, oracle]), y, base, train, keys, large, categorical=[x.shape[1]])
    common = [e for e, _ in Counter(engine).most_common(15)]
    label = np.array([common.index(e) if e in common else len(common) for e in engine])
    clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, max_leaf_nodes=63, random_state=1)
    prob = np.zeros((len(rows), len(common) + 1))
    prob[train] = cross_val_predict(clf, x[train], label[train], cv=3, method="predict_proba")
    clf.fit(x[train], label[train])
    prob[~train] = clf.predict_proba(x[~train])
    print(f"engine predicted from the shape (15 commonest and other): validation accuracy "
          f"{(prob[~train].argmax(1) == label[~train]).mean():.1%}")
    score("log time / roofline, the predicted engine's probabilities as inputs", np.column_stack([x, prob]), y, base,
          train, keys, large)


if __name__ == "__main__":
    main()
