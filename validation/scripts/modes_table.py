#!/usr/bin/env python3
"""The training modes' accuracy tables: `dtsim validate` over the PyTorch runs per training mode (memory format,
optimizer, execution), and the channels_last / contiguous time ratio, predicted against measured, of
every (model, batch, precision, optimizer) measured both ways. Markdown on stdout, for docs/accuracy.md.

  validation/scripts/modes_table.py --dtsim build/dtsim [--framework pytorch] FOLDER...

"Where the GPU sets the pace": a run whose measured time is at least --paced-by-gpu (1.6) times that
of the same configuration at half its batch size, so doubling the work nearly doubled the time. Where
the host sets the pace the time barely moves with the batch, and identical runs scatter by tens of
percent (docs/accuracy.md). Runs without a half-batch sibling are not classified.
"""
import argparse, collections, json, os, statistics, subprocess


def validate(dtsim, folders, framework):
    args = [dtsim, "validate", "--format", "json"] + (["--framework", framework] if framework else [])
    for f in folders:
        args += ["--measured", f]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["runs"]


def stats(errs):
    a = sorted(abs(e) for e in errs)
    return f"{len(a)} | {100 * statistics.median(a):.1f}% | {100 * sum(a) / len(a):.1f}% | {100 * a[-1]:.1f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default="build/dtsim")
    ap.add_argument("--framework", default="", help="a framework profile for every run (default: each run's own)")
    ap.add_argument("--paced-by-gpu", type=float, default=1.6)
    ap.add_argument("folders", nargs="+")
    a = ap.parse_args()
    runs = validate(a.dtsim, a.folders, a.framework)
    by_config = {(r["gpu"], r["model"], r["precision"], r["memory_format"], r["optimizer"], r["execution"], r["gpus"],
                  r["batch_per_gpu"]): r for r in runs}

    def gpu_paced(r):
        half = by_config.get((r["gpu"], r["model"], r["precision"], r["memory_format"], r["optimizer"], r["execution"],
                              r["gpus"], r["batch_per_gpu"] // 2))
        return half is not None and r["measured_s"] >= a.paced_by_gpu * half["measured_s"]

    groups = collections.defaultdict(list)
    for r in runs:
        mode = (r["gpu"], r["memory_format"], r["optimizer"], r["execution"])
        groups[mode].append(r)
    print("| GPU | memory format | optimizer | execution | runs | median | mean | max | runs the GPU paces | median | mean | max |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode in sorted(groups):
        rs = groups[mode]
        big = [r["error"] for r in rs if gpu_paced(r)]
        print(f"| {' | '.join(mode)} | {stats([r['error'] for r in rs])} | {stats(big) if big else '0 | - | - | -'} |")
    # channels_last / contiguous, predicted against measured, on the same configuration.
    pairs = collections.defaultdict(dict)
    for r in runs:
        if r["execution"] != "eager":
            continue
        key = (r["gpu"], r["model"], r["batch_per_gpu"], r["precision"], r["optimizer"], r["gpus"])
        pairs[key][r["memory_format"]] = r
    print()
    print("| model | batch | precision | optimizer | measured cl/contiguous | predicted | difference |")
    print("|---|---|---|---|---|---|---|")
    diffs, diffs_big = [], []
    for key in sorted(pairs):
        p = pairs[key]
        if len(p) != 2:
            continue
        m = p["channels_last"]["measured_s"] / p["contiguous"]["measured_s"]
        q = p["channels_last"]["predicted_s"] / p["contiguous"]["predicted_s"]
        d = q / m - 1
        diffs.append(abs(d))
        paced = gpu_paced(p["channels_last"]) and gpu_paced(p["contiguous"])
        if paced:
            diffs_big.append(abs(d))
        print(f"| {key[1]} | {key[2]} | {key[3]} | {key[4]} | {m:.2f} | {q:.2f} | {100 * d:+.1f}%{' (GPU-paced)' if paced else ''} |")
    if diffs:
        print(f"\nRatio differences: median {100 * statistics.median(diffs):.1f}% over {len(diffs)} pairs"
              + (f"; where the GPU paces both: median {100 * statistics.median(diffs_big):.1f}%, "
                 f"max {100 * max(diffs_big):.1f}% over {len(diffs_big)}" if diffs_big else ""))


if __name__ == "__main__":
    main()
