#!/usr/bin/env python3
"""Diagnostic (not part of dtsim, not run by the tests): would predicting each cuDNN engine's time and
taking the fastest beat predicting the fastest time directly? Needs python3-sklearn (Debian).

  /usr/bin/python3 tools/train_predictors/diag_engines.py validation/data/h100-sxm/conv_engines/conv2d_engines.csv.gz

The data: `dtsim-harness kernels --conv-api graph --log-engines` (validation/data/h100-sxm/conv_engines,
its README), every engine configuration the autotuner timed for each convolution. Prints how close the
runner-up engine is to the fastest, then, on a split by shape (CRC-32 of the shape mod 5 == 0 held out),
gradient-boosted trees (absolute error in log(time / roofline), the features of diag_trees.py) that
predict (a) the fastest time directly and (b) each engine's time with the engine as an input, the
prediction being the fastest over the shape's own candidate engines, over every engine seen for that
pass and math mode, or the engine the autotuner chose (an oracle).
"""
import collections, csv, gzip, statistics, sys, zlib

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from diag_trees import features

FIELDS = "N C H W K R S stride_h stride_w pad_h pad_w dil_h dil_w groups".split()


def main():
    rows = list(csv.DictReader(gzip.open(sys.argv[1], "rt")))
    kern = collections.defaultdict(list)
    for r in rows:
        if r["time_s"]:
            kern[(r["pass"], r["math_mode"], " ".join(r[f] for f in FIELDS))].append(r)
    fastest = {k: min(float(r["time_s"]) for r in v) for k, v in kern.items()}
    gaps = [sorted(float(r["time_s"]) for r in v)[1] / fastest[k] - 1 for k, v in kern.items() if len(v) > 1]
    print(f"{len(kern)} convolutions, {len(rows)} engine timings; runner-up over fastest: median "
          f"{statistics.median(gaps):.1%}, within 5% for {sum(g < 0.05 for g in gaps) / len(gaps):.0%}")
    fb = {k: features(f"conv2d/{k[0]}/{k[1]}", k[2]) for k in kern}
    train = [k for k in kern if zlib.crc32(k[2].encode()) % 5]
    test = [k for k in kern if not zlib.crc32(k[2].encode()) % 5]
    engines = {e: i for i, e in enumerate(sorted({r["engine"] for r in rows}))}
    params = dict(max_iter=1500, learning_rate=0.05, max_leaf_nodes=63, min_samples_leaf=8, loss="absolute_error",
                  random_state=1)
    direct = HistGradientBoostingRegressor(**params).fit(
        np.array([fb[k][0] for k in train]), np.array([np.log(fastest[k]) - fb[k][1] for k in train]))
    xe, ye = [], []
    for k in train:
        for r in kern[k]:
            xe.append(fb[k][0] + [engines[r["engine"]]])
            ye.append(np.log(float(r["time_s"])) - fb[k][1])
    per_engine = HistGradientBoostingRegressor(categorical_features=[len(xe[0]) - 1], **params).fit(np.array(xe), np.array(ye))
    seen = collections.defaultdict(set)
    for k in train:
        seen[k[:2]].update(r["engine"] for r in kern[k])

    def fastest_of(k, candidates):
        x = np.array([fb[k][0] + [engines[e]] for e in candidates])
        return np.exp(per_engine.predict(x).min() + fb[k][1])

    print(f"{len(train)} convolutions to train on, {len(test)} held out")
    for name, predict in [
            ("fastest time, directly", lambda k: np.exp(direct.predict(np.array([fb[k][0]]))[0] + fb[k][1])),
            ("per engine, fastest of the shape's own candidates", lambda k: fastest_of(k, {r["engine"] for r in kern[k]})),
            ("per engine, fastest of every engine seen for the pass", lambda k: fastest_of(k, seen[k[:2]])),
            ("per engine, the engine the autotuner chose (oracle)",
             lambda k: fastest_of(k, {r["engine"] for r in kern[k] if r["chosen"] == "1"}))]:
        ratio = [predict(k) / fastest[k] - 1 for k in test]
        print(f"  {name:55s} MAPE {np.mean(np.abs(ratio)):.2%}, median signed error {np.median(ratio):+.1%}")


if __name__ == "__main__":
    main()
