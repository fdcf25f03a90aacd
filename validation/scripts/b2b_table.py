#!/usr/bin/env python3
"""What one CUDA event between two kernels adds to a kernel's measured stream time.

Reads the kernel CSVs of `dtsim-harness kernels --back-to-back` (columns time_median_s: the median of
repeats with an event recorded after each; time_b2b_s: the same repeats enqueued with no event
between them, total / repeats) and prints, per band of kernel time, the median difference and its
quartiles, all kinds together and without convolutions (whose long kernels are noisier).

  validation/scripts/b2b_table.py validation/data/h200-sxm/kernels_b2b
  validation/scripts/b2b_table.py --host validation/data/h200-sxm/kernels_b2b/host_2026-11-28

--host: the host's wall time per call (host_enqueue_s, where the file has it), per kind, pass and math:
p10, median and p90 over the shapes.
"""
import csv, glob, gzip, os, statistics, sys

EDGES_US = [0, 3, 5, 8, 12, 20, 30, 50, 80, 120, 200, 400, 1000, 1e9]


def csv_rows(folder):
    """(kernel kind, row) for every row of the folder's kernel CSVs, plain or gzip-compressed."""
    for path in sorted(glob.glob(os.path.join(folder, "*.csv")) + glob.glob(os.path.join(folder, "*.csv.gz"))):
        kind = os.path.basename(path).split(".")[0]
        if kind == "skipped":
            continue
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            for r in csv.DictReader(f):
                yield kind, r


def host_table(folder):
    by = {}
    for kind, r in csv_rows(folder):
        by.setdefault((kind, r["pass"], r["math_mode"]), []).append(float(r["host_enqueue_s"]) * 1e6)
    print("| kind | pass | math | shapes | host per call, p10 / median / p90 (us) |")
    print("|---|---|---|---:|---|")
    for (kind, p, m), v in sorted(by.items()):
        v.sort()
        print(f"| {kind} | {p} | {m} | {len(v)} | {v[len(v) // 10]:.1f} / {statistics.median(v):.1f} / {v[9 * len(v) // 10]:.1f} |")


def rows(folder):
    for kind, r in csv_rows(folder):
        yield kind, float(r["time_median_s"]) * 1e6, float(r["time_b2b_s"]) * 1e6


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--host":
        return host_table(sys.argv[2])
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    data = list(rows(sys.argv[1]))
    print("| stream time (us) | kernels | event cost, median (us) | quartiles | without conv2d: kernels, median |")
    print("|---|---:|---:|---|---|")
    for lo, hi in zip(EDGES_US, EDGES_US[1:]):
        d = sorted(t - b for _, t, b in data if lo <= t < hi)
        dn = [t - b for k, t, b in data if lo <= t < hi and k != "conv2d"]
        if not d:
            continue
        band = f"{lo:g}-{hi:g}" if hi < 1e9 else f">= {lo:g}"
        print(f"| {band} | {len(d)} | {statistics.median(d):.2f} | {d[len(d) // 4]:.2f} .. {d[3 * len(d) // 4]:.2f} | "
              f"{len(dn)}, {statistics.median(dn):.2f} |" if dn else f"| {band} | {len(d)} | {statistics.median(d):.2f} | | |")


if __name__ == "__main__":
    main()
