#!/usr/bin/env python3
"""How far a PyTorch DDP configuration's iteration time moves between fresh processes on one machine
(validation/data/<gpu>/pytorch_repeats, from pytorch_repeat_sweep.sh), beside the committed run of the
same configuration (another machine, another day) and dtsim's prediction of it. Prints a markdown table
and the summary figures that docs/accuracy.md quotes.

  python3 validation/scripts/pytorch_repeat_table.py --dtsim build/dtsim \
      --repeats validation/data/h100-sxm/pytorch_repeats --committed validation/data/h100-sxm/pytorch
"""
import argparse, glob, json, math, os, statistics, subprocess


def predicted_ms(dtsim, path):
    out = subprocess.run([dtsim, "validate", "--format", "json", "--measured", path], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["runs"][0]["predicted_s"] * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtsim", required=True)
    ap.add_argument("--repeats", required=True, help="folder with round1/, round2/, ... of measured runs")
    ap.add_argument("--committed", required=True, help="folder of the committed runs of the same configurations")
    a = ap.parse_args()
    runs = {}  # configuration -> [(file, run JSON)], each file read once
    for f in sorted(glob.glob(os.path.join(a.repeats, "round*", "*.json"))):
        runs.setdefault(os.path.basename(f)[:-5], []).append((f, json.load(open(f))))
    ms_of = lambda run: run["iteration_time_s"]["median"] * 1e3
    print("| configuration | fresh processes (ms) | max/min - 1 | host probe conv2d (us) | committed run (ms) "
          "| dtsim (ms) | dtsim vs repeats | dtsim vs committed |")
    print("|---|---|---:|---|---:|---:|---|---:|")
    spreads, off, committed_off = [], 0, []
    for name, files in sorted(runs.items()):
        t = [ms_of(j) for _, j in files]
        probe = [j["host_probe_us"]["before"]["conv2d"] for _, j in files]
        spread = max(t) / min(t) - 1
        pred = predicted_ms(a.dtsim, files[0][0])
        errs = [pred / x - 1 for x in t]
        com = os.path.join(a.committed, name + ".json")
        c = ms_of(json.load(open(com))) if os.path.exists(com) else None
        if len(t) >= 3:
            spreads.append(spread)
            m = statistics.median(t)
            off += sum(abs(x / m - 1) > 0.15 for x in t)
        if c:
            committed_off.append(statistics.median(t) / c - 1)
        print(f"| {name} | {' / '.join(f'{x:.2f}' for x in t)} | {spread:.1%} | {' / '.join(f'{p:.1f}' for p in probe)} "
              f"| {c:.2f} | {pred:.2f} | {min(errs):+.0%} .. {max(errs):+.0%} | {pred / c - 1:+.0%} |" if c else
              f"| {name} | {' / '.join(f'{x:.2f}' for x in t)} | {spread:.1%} | | | {pred:.2f} | | |")
    n = sum(len(v) for v in runs.values() if len(v) >= 3)
    print(f"\nconfigurations with 3 or more processes: {len(spreads)}; max/min - 1: median {statistics.median(spreads):.1%}, "
          f"max {max(spreads):.1%}, above 15%: {sum(s > 0.15 for s in spreads)}; single runs more than 15% from their "
          f"configuration's median: {off} of {n}")
    # Does the process's host speed explain its time? Deviations from the configuration's mean (log), the
    # probe as the geometric mean of its before and after readings.
    dx, dy = [], []
    for files in runs.values():
        if len(files) < 3:
            continue
        js = [j for _, j in files]
        t = [math.log(j["iteration_time_s"]["median"]) for j in js]
        p = [0.5 * math.log(j["host_probe_us"]["before"]["conv2d"] * j["host_probe_us"]["after"]["conv2d"]) for j in js]
        dx += [v - sum(p) / len(p) for v in p]
        dy += [v - sum(t) / len(t) for v in t]
    print(f"correlation of a run's time with its host probe (conv2d), within configurations: "
          f"{statistics.correlation(dx, dy):.2f} over {len(dx)} runs")
    print(f"median of the repeats against the committed run: median {statistics.median(committed_off):+.1%}, "
          f"range {min(committed_off):+.1%} .. {max(committed_off):+.1%}")


if __name__ == "__main__":
    main()
