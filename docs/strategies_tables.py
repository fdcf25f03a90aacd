#!/usr/bin/env python3
"""Print the dtsim tables of docs/strategies.md, regenerated with the commands each section shows.

usage: python3 docs/strategies_tables.py [--dtsim build/dtsim]

One function per section (DASO, EASGD family, Awan et al., Gholami et al.); each prints its tables in
the doc's columns, row order and formatting. Published figures and plain words are copied, not
computed. The commands run with --format json: full precision (the CSV has 6 significant digits), and
every row's strategy.comm_share, which the CSV leaves out for dp. The tables of "Measured on GPUs" are
not here: they hold measured runs, and validation/scripts/compare_strategies.py prints them.
"""
import argparse
import json
import subprocess

DTSIM = "build/dtsim"


def dtsim(*args):
    """Run dtsim with --format json and parse its output."""
    out = subprocess.run([DTSIM, *args, "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def table(header, rows):
    line = lambda cells: "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"
    return "\n".join([line(header), "|" + "---|" * len(header)] + [line(r) for r in rows])


def ms(s, digits=2):
    return f"{s * 1e3:.{digits}f} ms"


def pct(x):
    return f"{100 * x:.1f}%"


def comm_share(row):
    return row["strategy"]["comm_share"]


def daso():
    sweep = lambda s: dtsim("sweep", "--model", "resnet50", "--cluster", "a100-sxm", "--gpus", "64",
                            "--batch-per-gpu", "64", "--inter-node-bandwidth-scale", "1,0.25,0.05,0.01",
                            "--strategy", s)
    labels = ["x1 (200 GB/s per node)", "x0.25", "x0.05", "x0.01 (2 GB/s per node)"]
    published = ["up to 34%", "", "", ""]
    rows = []
    for label, dp, da, pub in zip(labels, sweep("dp"), sweep("daso"), published):
        saving = 1 - da["iteration_s"] / dp["iteration_s"]
        rows.append([label, ms(dp["iteration_s"]), pct(comm_share(dp)), ms(da["iteration_s"]),
                     pct(comm_share(da)), pct(saving), pub])
    print(table(["inter-node bandwidth", "dp iteration", "dp comm share", "daso iteration", "daso comm share",
                 "dtsim's saving", "published"], rows))


def easgd():
    sweep = lambda s: dtsim("sweep", "--model", "alexnet", "--cluster", "v100-sxm2", "--gpus", "8,16,64",
                            "--batch-per-gpu", "64", "--strategy", s)
    labels = ["8 (one node)", "16", "64"]
    published = ["87% -> 14%, 5.3x", "", ""]
    rows = []
    for label, a, s, pub in zip(labels, sweep("easgd-async"), sweep("easgd-sync"), published):
        speedup = a["iteration_s"] / s["iteration_s"]
        rows.append([label, pct(comm_share(a)), pct(comm_share(s)), f"{speedup:.2f}x", pub])
    print(table(["GPUs", "easgd-async comm share", "easgd-sync comm share", "sync speed-up over async",
                 "published"], rows))


def awan():
    sweep = lambda *extra: dtsim("sweep", "--model", "resnet50", "--cluster", "v100-sxm2", "--gpus", "8,16,64",
                                 "--batch-per-gpu", "64", *extra)[-1]  # the 64-GPU row
    cases = [("dp, NCCL (`--algo auto`)", ["--algo", "auto"], ""),
             ("dp, CUDA-aware MPI (`--algo mpi`)", ["--algo", "mpi"], "Horovod-MPI about 90%"),
             ("ps, one server per node (8)", ["--strategy", "ps"], "all-reduce wins in most configurations"),
             ("ps, 64 servers", ["--strategy", "ps", "--servers", "64"], "")]
    runs = [sweep(*extra) for _, extra, _ in cases]
    rows = [[label, ms(r["iteration_s"]), pct(r["scaling_efficiency"]), pub] for (label, _, pub), r in zip(cases, runs)]
    print(f"(one GPU: {runs[0]['single_gpu_iteration_s'] * 1e3:.1f} ms per iteration)\n")  # the prose's figure
    print(table(["64 GPUs", "iteration", "scaling efficiency", "published"], rows))

    coll = lambda algo: dtsim("collective", "--op", "allreduce", "--bytes", "4K,64K,1M,16M", "--gpus", "16",
                              "--cluster", "v100-sxm2", "--algo", algo)
    sizes = ["4 KiB", "64 KiB", "1 MiB", "16 MiB"]
    published = ["5-17x (small and medium)", "", "", ""]
    rows = []
    for size, n, m, pub in zip(sizes, coll("auto"), coll("mpi"), published):
        rows.append([size, f"{n['time_s'] * 1e6:.2f} us", f"{m['time_s'] * 1e6:.2f} us",
                     f"{n['time_s'] / m['time_s']:.1f}x", pub])
    print()
    print(table(["all-reduce, 16 GPUs on 2 nodes", "NCCL (`auto`)", "MPI", "MPI faster by", "published"], rows))


def gholami():
    grid = lambda gpus, *extra: dtsim("grid", "--model", "alexnet", "--cluster", "v100-sxm2", "--gpus", str(gpus),
                                      "--batch", "2048", *extra)["grid"]
    ms3 = lambda s: "0" if s == 0 else ms(s, 3)
    rows = []
    g512 = grid(512)
    for r in g512:
        best = r["best"]
        it = f"**{ms3(r['iteration_s'])}**" if best else ms3(r["iteration_s"])
        note = "best" if best else "pure batch" if r["pr"] == 1 else "pure model" if r["pc"] == 1 else ""
        rows.append([str(r["pr"]), str(r["pc"]), ms3(r["compute_s"]), ms3(r["activation_comm_s"]),
                     ms3(r["weight_comm_s"]), it, note])
    print(table(["Pr", "Pc", "compute", "activation comm", "weight comm", "iteration", ""], rows))

    def setup(label, rs, with_ms, vs_model, pub):
        best = next(r for r in rs if r["best"])
        t = best["iteration_s"]
        where = f"{best['pr']} x {best['pc']}" + (f" ({ms(t)})" if with_ms else "")
        batch = rs[0]["iteration_s"] / t  # Pr = 1
        model = rs[-1]["iteration_s"] / t  # Pc = 1
        return [label, where, f"{batch:.2f}x faster", f"{model:.1f}x faster" if vs_model else "", pub]

    rows = [setup("P = 512, model-parallel convolutions", g512, False, True, "best is interior"),
            setup("P = 512, `--domain` convolutions", grid(512, "--domain"), True, False, ""),
            setup("P = 64", grid(64), True, True, "")]
    print()
    print(table(["set-up", "dtsim's best Pr x Pc", "vs pure batch", "vs pure model", "published"], rows))


def main():
    global DTSIM
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtsim", default=DTSIM, help="the dtsim binary (default: build/dtsim)")
    DTSIM = ap.parse_args().dtsim
    for title, section in [("DASO (Coquelin et al., 2021/22)", daso),
                           ("EASGD family (You, Buluç, Demmel, SC'17)", easgd),
                           ("Parameter server vs all-reduce (Awan et al., 2019)", awan),
                           ("Integrated model/batch/domain parallelism (Gholami et al., SPAA'18)", gholami)]:
        print(f"## {title}\n")
        section()
        print()


if __name__ == "__main__":
    main()
