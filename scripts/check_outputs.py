#!/usr/bin/env python3
"""Write every output a refactor must leave unchanged, or compare two such folders byte for byte.

    scripts/check_outputs.py write OUT [--dtsim build/dtsim] [--kernel-stride 7]
    scripts/check_outputs.py compare BEFORE AFTER

`write` runs dtsim over: every committed validation set through `validate` (table with --layers,
CSV, JSON); the zoo sweep of bench/ (BM_ZooSweep: 13 models x batches 1..128 x GPUs 1..8192, with
its verdict); `kernel` on every --kernel-stride'th row of the committed kernel data (JSON and
table, auto and roofline); `collective` 4 B..1 GiB for every op, algorithm and GPU count;
`predict` under every strategy; `grid`; `roofline`; `models`; `strategies`; `calibrate`; a small
`plan`; every command's --help. Each command's stdout, stderr and exit status go to one file under OUT, so a changed
message or exit code shows as well as a changed number. `compare` lists the files that differ and
exits 1 if any do (a restructuring must not move a single byte).
"""
import argparse
import csv
import filecmp
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPUS_MEASURED = ["h100-sxm", "h200-sxm"]
ZOO = ["alexnet", "vgg11", "vgg16", "vgg19", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
       "resnext101_32x4d", "densenet121", "googlenet", "inception_v3", "mobilenet_v2"]
STRATEGIES = ["dp", "hierarchical", "daso", "easgd-sync", "easgd-async", "measgd-async", "hogwild-easgd", "ps",
              "grid", "hierarchical-leader", "local-sgd"]
ALGOS = ["auto", "nccl-ring", "nccl-tree", "ring", "tree", "recursive-doubling", "rabenseifner", "hierarchical",
         "mpi", "ps"]
OPS = ["allreduce", "reducescatter", "allgather", "broadcast", "reduce"]


def validation_sets():
    """Every folder of committed dtsim-measured-run/1 JSON (runs, pytorch, strategies, ...)."""
    folders = {f.parent for f in (ROOT / "validation" / "data").rglob("*.json")
               if "dtsim-measured-run/1" in f.read_text(errors="replace")}
    return sorted(folders)


def shape_args(row):
    """`dtsim kernel` flags for one row of a committed kernel CSV, or None for a kind it does not take."""
    kind = row["kind"]
    if "shape" in row:  # skipped.csv: shapes the harness could not run
        return None
    dtype = row.get("dtype") or row["math_mode"]
    if dtype == "any":
        dtype = "fp32"
    if kind == "conv2d":
        names = ["N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "groups"]
        shape, variant = {n: row[n] for n in names}, None
    elif kind == "gemm":
        shape = {"M": row["M"], "N": row["N"], "K": row["K"], "transA": int(row["transA"] == "T"),
                 "transB": int(row["transB"] == "T")}
        variant = None
    elif kind == "batchnorm":
        shape, variant = {n: row[n] for n in ["N", "C", "H", "W"]}, None
    elif kind == "pool":
        shape, variant = {n: row[n] for n in ["N", "C", "H", "W", "R", "S", "stride", "pad"]}, row["mode"]
    elif kind == "activation":
        shape, variant = {"elements": row["elements"]}, row["op"]
    elif kind == "add":
        shape, variant = {"elements": row["elements"]}, None
    elif kind == "softmax_ce":
        shape, variant = {"N": row["N"], "classes": row["classes"]}, None
    elif kind == "sgd_update":
        shape, variant = {"params": row["parameters"]}, None
    else:
        return None
    args = ["kernel", "--kind", kind, "--pass", row["pass"], "--dtype", dtype,
            "--shape", ",".join(f"{k}={v}" for k, v in shape.items())]
    if variant:
        args += ["--variant", variant]
    return args


def jobs(kernel_stride):
    """(file name, dtsim arguments) for every output."""
    out = []
    for d in validation_sets():
        tag = "validate_" + "_".join(d.relative_to(ROOT / "validation" / "data").parts)
        rel = str(d.relative_to(ROOT))  # relative: outputs must not depend on where the checkout is
        out.append((f"{tag}.table", ["validate", "--measured", rel, "--layers"]))
        out.append((f"{tag}.csv", ["validate", "--measured", rel, "--format", "csv"]))
        out.append((f"{tag}.json", ["validate", "--measured", rel, "--format", "json"]))
    zoo = ["--model", ",".join(ZOO), "--batch-per-gpu", "1..128:x2", "--gpus", "1..8192:x2", "--cluster-nodes", "1024"]
    for fmt in ["table", "csv", "json"]:
        out.append((f"sweep_zoo.{fmt}", ["sweep", *zoo, "--format", fmt]))
    out.append(("sweep_zoo_verdict.txt", ["sweep", *zoo, "--format", "csv", "--verdict", "/dev/stdout"]))
    out.append(("sweep_zoo_verdict.json", ["sweep", *zoo, "--format", "csv", "--verdict", "{file}.json"]))
    out.append(("sweep_scaling_study.json", ["sweep", "--sweep", "configs/sweeps/scaling-study.json", "--format", "json"]))
    for sweep in ["scaling-study", "link-whatif", "seed-study"]:
        out.append((f"sweep_{sweep}_verdict.json", ["sweep", "--sweep", f"configs/sweeps/{sweep}.json", "--format", "csv",
                                                     "--verdict", "{file}.json"]))
    out.append(("sweep_link_whatif.csv", ["sweep", "--sweep", "configs/sweeps/link-whatif.json", "--format", "csv"]))
    for gpu in GPUS_MEASURED:
        for folder in ["kernels", "kernels_beyond"]:
            for f in sorted((ROOT / "validation" / "data" / gpu / folder).glob("*.csv")):
                with open(f) as fh:
                    for i, row in enumerate(csv.DictReader(fh)):
                        if i % kernel_stride:
                            continue
                        args = shape_args(row)
                        if args is None:
                            continue
                        n = i // kernel_stride
                        model = "roofline" if n % 5 == 4 else "auto"
                        fmt = "json" if n % 2 == 0 else "table"
                        out.append((f"kernel_{gpu}_{folder}_{f.stem}_{i}.{fmt}",
                                    [*args, "--gpu", gpu, "--compute-model", model, "--format", fmt]))
    for cluster in ["h100-sxm", "h100-sxm-2x2", "v100-sxm2"]:
        for op in OPS:
            for gpus in ([2, 4] if cluster == "h100-sxm-2x2" else [2, 4, 8, 64]):
                for algo in ALGOS:
                    out.append((f"collective_{cluster}_{op}_{gpus}_{algo}.json",
                                ["collective", "--cluster", cluster, "--op", op, "--gpus", str(gpus), "--algo", algo,
                                 "--bytes", "4..1G:x2", "--format", "json"]))
        out.append((f"collective_{cluster}.table", ["collective", "--cluster", cluster, "--gpus", "16", "--bytes", "4..1G:x4"]))
    for s in STRATEGIES:
        for model, gpus in [("resnet50", "64"), ("vgg16", "16")]:
            base = ["predict", "--model", model, "--gpus", gpus, "--batch-per-gpu", "32", "--strategy", s]
            out.append((f"predict_{s}_{model}.table", base))
            out.append((f"predict_{s}_{model}.json", [*base, "--format", "json"]))
    out.append(("predict_whatif.json", ["predict", "--model", "resnet50", "--gpus", "64", "--batch-per-gpu", "64",
                                         "--nic-Gbps", "100", "--flops-scale", "2", "--precision", "bf16", "--format", "json"]))
    out.append(("predict_fp16.table", ["predict", "--model", "resnet50", "--gpus", "8", "--batch-per-gpu", "128",
                                        "--precision", "fp16", "--cluster", "a100-sxm"]))
    for model, gpus, batch in [("resnet50", 16, 512), ("vgg16", 64, 1024), ("alexnet", 8, 256)]:
        for fmt in ["table", "json"]:
            out.append((f"grid_{model}.{fmt}", ["grid", "--model", model, "--gpus", str(gpus), "--batch", str(batch), "--format", fmt]))
        out.append((f"grid_{model}_domain.csv", ["grid", "--model", model, "--gpus", str(gpus), "--batch", str(batch), "--domain", "--format", "csv"]))
    for model in ["resnet50", "vgg16", "mobilenet_v2"]:
        out.append((f"roofline_{model}.json", ["roofline", "--model", model, "--batch-per-gpu", "64", "--format", "json"]))
        out.append((f"roofline_{model}.table", ["roofline", "--model", model, "--batch-per-gpu", "64", "--precision", "bf16"]))
    out.append(("models.table", ["models"]))
    for m in ZOO:
        out.append((f"models_{m}.json", ["models", "--model", m, "--format", "json"]))
    for fmt in ["table", "csv", "json"]:
        out.append((f"strategies.{fmt}", ["strategies", "--format", fmt]))
    for gpus in [2, 4]:
        f = f"validation/data/h100-sxm/collective/allreduce_{gpus}gpu.json"
        out.append((f"calibrate_{gpus}.json", ["calibrate", "--measured", f, "--format", "json"]))
    out.append(("plan.json", ["plan", "--model", "resnet50", "--cluster", "h100-sxm,a100-sxm", "--gpus", "8..64:+8",
                              "--batch-per-gpu", "32,64", "--precision", "fp32,bf16", "--epochs", "1",
                              "--dataset-size", "1281167", "--format", "json"]))
    out.append(("help.txt", ["--help-all"]))
    # Not train-predictors: its help is the trainer's, a program of its own that prints its own path.
    for cmd in ["predict", "sweep", "plan", "strategies", "grid", "collective", "calibrate", "roofline", "kernel", "validate",
                "models"]:
        out.append((f"help_{cmd}.txt", [cmd, "--help"]))
    out.append(("bad_input.txt", ["predict", "--model", "resnet50", "--gpus", "0", "--batch-per-gpu", "32"]))
    return out


def run_one(dtsim, out_dir, name, args):
    """Runs one command; an argument "{file}.EXT" is a file it writes, appended to the output."""
    written = [a for a in args if a.startswith("{file}")]
    with tempfile.TemporaryDirectory() as tmp:
        run_args = [a.replace("{file}", os.path.join(tmp, "out")) for a in args]
        # argv[0] "dtsim": help texts print it, and they must not depend on where the binary is.
        p = subprocess.run(["dtsim", *run_args], executable=dtsim, cwd=ROOT, capture_output=True)
        files = b"".join(b"\n--- " + a.encode() + b"\n" + Path(a.replace("{file}", os.path.join(tmp, "out"))).read_bytes()
                         for a in written if os.path.exists(a.replace("{file}", os.path.join(tmp, "out"))))
    (out_dir / name).write_bytes(b"$ dtsim " + " ".join(args).encode() + b"\n" + p.stdout +
                                 b"\n--- stderr\n" + p.stderr + f"\n--- exit {p.returncode}\n".encode() + files)


def write(args):
    out_dir = Path(args.out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    dtsim = str(Path(args.dtsim).resolve())
    todo = jobs(args.kernel_stride)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda j: run_one(dtsim, out_dir, *j), todo))
    print(f"{len(todo)} outputs written to {out_dir}")
    return 0


def compare(args):
    a, b = Path(args.before), Path(args.after)
    names_a = {p.name for p in a.iterdir()}
    names_b = {p.name for p in b.iterdir()}
    bad = sorted(names_a ^ names_b)
    for n in sorted(names_a & names_b):
        if not filecmp.cmp(a / n, b / n, shallow=False):
            bad.append(n)
    for n in bad:
        print(f"differs: {n}")
    print(f"{len(names_a & names_b) - len(bad) + len(names_a ^ names_b)} of {len(names_a | names_b)} outputs identical"
          if bad else f"all {len(names_a)} outputs byte-identical")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out")
    w.add_argument("--dtsim", default=str(ROOT / "build" / "dtsim"))
    w.add_argument("--kernel-stride", type=int, default=7, help="take every Nth row of each kernel CSV")
    w.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args()
    return write(args) if args.cmd == "write" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
