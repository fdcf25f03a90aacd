#!/usr/bin/env python3
"""Append harness kernel CSVs to a committed dataset, keeping the first measurement of each shape.

usage: merge_kernels.py DEST.csv NEW.csv [NEW.csv ...]
A row's key is every column up to (not including) the algorithm column: kind, pass, math mode,
dtype and the shape. Rows whose key is already in DEST (or earlier in the NEW files) are dropped,
so re-measured shapes never weigh twice in training. Headers must match DEST's exactly.
"""
import csv
import os
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    dest, news = sys.argv[1], sys.argv[2:]
    with open(dest, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    cut = header.index("algo")
    seen = {tuple(r[:cut]) for r in body}
    added = dropped = 0
    for path in news:
        with open(path, newline="") as f:
            r = list(csv.reader(f))
        if r[0] != header:
            sys.exit(f"{path}: header differs from {dest}'s")
        for row in r[1:]:
            k = tuple(row[:cut])
            if k in seen:
                dropped += 1
                continue
            seen.add(k)
            body.append(row)
            added += 1
    tmp = dest + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(body)
    os.replace(tmp, dest)
    print(f"{dest}: {added} rows added, {dropped} already measured, {len(body)} rows")


if __name__ == "__main__":
    main()
