#!/usr/bin/env python3
"""Append harness kernel CSVs to a committed dataset, keeping the first measurement of each shape.

usage: merge_kernels.py DEST.csv NEW.csv [NEW.csv ...]
       merge_kernels.py --drop COL[,COL...] DEST.csv     (rewrite DEST without columns it does not need)
A row's key is every column of DEST up to (not including) the algorithm column: kind, pass, math mode
and the shape. Rows whose key is already in DEST (or earlier in the NEW files) are dropped, so
re-measured shapes never weigh twice in training. NEW files are read by column name and written in
DEST's columns: they must have every column DEST has (the harness's full header does); columns DEST
does not keep (conv2d_graph.csv drops dtype, P, Q and impl: equal to math_mode, derived from the shape,
and one value) are left out. Dropped columns' values are checked to be what DEST's rows imply where the
rule is known (dtype == math_mode), so nothing measured is lost silently.
A file stored gzip-compressed (NAME.csv.gz, as the repository keeps files past a few MB) is read and
written as such, named either way.
"""
import csv
import gzip
import os
import sys


def data_path(path):
    """path, or path.gz where only that exists (core/text_file.hpp reads them alike)."""
    return path if os.path.exists(path) or not os.path.exists(path + ".gz") else path + ".gz"


def open_text(path, mode="r"):
    path = data_path(path) if "r" in mode else path
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t", newline="")
    return open(path, mode, newline="")

# Columns that may be dropped because they carry nothing the other columns do not.
DERIVED = {"dtype", "P", "Q", "impl"}


def write_atomic(dest, header, body):
    dest = data_path(dest)
    tmp = dest + ".tmp" + (".gz" if dest.endswith(".gz") else "")
    with open_text(tmp, "w") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(body)
    os.replace(tmp, dest)


def check_dropped(path, row):
    if "dtype" in row and row["dtype"] != row["math_mode"]:
        sys.exit(f"{path}: dtype {row['dtype']} differs from math_mode {row['math_mode']}; keep the dtype column")


def drop(cols, dest):
    bad = [c for c in cols if c not in DERIVED]
    if bad:
        sys.exit(f"--drop: {', '.join(bad)} not derivable (droppable: {', '.join(sorted(DERIVED))})")
    with open_text(dest) as f:
        rows = list(csv.DictReader(f))
        header = [c for c in rows[0].keys() if c not in cols] if rows else []
    for r in rows:
        check_dropped(dest, r)
    write_atomic(dest, header, [[r[c] for c in header] for r in rows])
    print(f"{dest}: {len(rows)} rows, columns now {','.join(header)}")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--drop":
        return drop(sys.argv[2].split(","), sys.argv[3])
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    dest, news = sys.argv[1], sys.argv[2:]
    with open_text(dest) as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    cut = header.index("algo")
    seen = {tuple(r[:cut]) for r in body}
    added = dropped = 0
    for path in news:
        with open_text(path) as f:
            reader = csv.DictReader(f)
            missing = [c for c in header if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{path}: no column {', '.join(missing)} (DEST {dest} has them)")
            extra = [c for c in reader.fieldnames if c not in header and c not in DERIVED]
            if extra:
                sys.exit(f"{path}: column {', '.join(extra)} is not in {dest} and not derivable")
            for r in reader:
                check_dropped(path, r)
                row = [r[c] for c in header]
                k = tuple(row[:cut])
                if k in seen:
                    dropped += 1
                    continue
                seen.add(k)
                body.append(row)
                added += 1
    write_atomic(dest, header, body)
    print(f"{dest}: {added} rows added, {dropped} already measured, {len(body)} rows")


if __name__ == "__main__":
    main()
