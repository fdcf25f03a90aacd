"""docs/scaling-study.md's worked study: its tables, verdicts, trace and plots (docs/study/, docs/img/),
and the paragraphs that read numbers off them."""
import csv
import io

from .engine import Failure, block, files

STUDY, IMG = "docs/study", "docs/img"


def commands(pictures, out):
    """The study's commands, as docs/scaling-study.md shows them; pictures only when drawing."""
    plot = lambda *flags: list(flags) if pictures else []
    s = lambda name: out(f"{STUDY}/{name}")
    i = lambda name: out(f"{IMG}/{name}")
    return [
        ["sweep", "--sweep", "configs/sweeps/scaling-study.json"] + plot("--plot", i("scaling.png"), "--plot-breakdown", i("breakdown.png"))
        + ["--verdict", s("scaling-verdict.txt"), "--format", "csv", "--out", s("scaling.csv")],
        ["sweep", "--sweep", "configs/sweeps/link-whatif.json"] + plot("--plot", i("link-whatif.png"))
        + ["--verdict", s("link-whatif-verdict.txt"), "--format", "csv", "--out", s("link-whatif.csv")],
        ["sweep", "--sweep", "configs/sweeps/seed-study.json", "--verdict", s("seed-verdict.txt"), "--format", "csv", "--out", s("seed.csv")],
        ["roofline", "--model", "resnet50", "--cluster", "h100-sxm", "--batch-per-gpu", "64"] + plot("--plot", i("roofline-resnet50.png"))
        + ["--out", s("roofline-resnet50.txt")],
        ["roofline", "--model", "vgg16", "--cluster", "h100-sxm", "--batch-per-gpu", "64"] + plot("--plot", i("roofline-vgg16.png"))
        + ["--out", s("roofline-vgg16.txt")],
        ["predict", "--model", "resnet50", "--cluster", "h100-sxm", "--gpus", "256", "--batch-per-gpu", "64", "--algo", "auto",
         "--dataset-size", "1281167", "--epochs", "90", "--trace", s("resnet50-256gpus-trace.json"), "--out", s("resnet50-256gpus.txt")],
    ]


@block("scaling-commands")
def scaling_commands(ctx):
    lines = []
    for c in commands(True, lambda rel: rel):
        lines.append("build/dtsim " + " ".join(c))
    return "```sh\n" + "\n".join(lines) + "\n```"


@files("scaling-study")
def scaling_study(ctx, out):
    for c in commands(ctx.pictures, out):
        ctx.run(["dtsim"] + c)


def sweep_rows(ctx, name):
    """The rows of a study's CSV, as its sweep prints them now."""
    text = ctx.run(["dtsim", "sweep", "--sweep", f"configs/sweeps/{name}.json", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:
        for k in ("gpus", "batch_per_gpu"):
            r[k] = int(r[k])
        for k in ("throughput_samples_per_s", "scaling_efficiency", "iteration_s"):
            r[k] = float(r[k])
    return rows


def gain(rows, model, what_if, gpus, batch):
    base = next(r for r in rows if (r["model"], r["what_if"], r["gpus"], r["batch_per_gpu"]) == (model, "as specified", gpus, batch))
    other = next(r for r in rows if (r["model"], r["what_if"], r["gpus"], r["batch_per_gpu"]) == (model, what_if, gpus, batch))
    return other["throughput_samples_per_s"] / base["throughput_samples_per_s"] - 1


def pct(x):
    return f"{100 * x:+.0f}%" if abs(x) >= 0.01 else f"{100 * x:+.1f}%"


@block("scaling-how-far")
def scaling_how_far(ctx):
    rows = sweep_rows(ctx, "scaling-study")
    top = max(r["gpus"] for r in rows)
    at_top = [r for r in rows if r["gpus"] == top]
    worst = min(at_top, key=lambda r: r["scaling_efficiency"])
    low = min(r["scaling_efficiency"] for r in rows)
    per = {m: min(r["scaling_efficiency"] for r in at_top if r["model"] == m) for m in sorted({r["model"] for r in rows})}
    if low < 0.9:
        raise Failure("scaling-how-far: a configuration of the study falls below 90% efficiency; reword the paragraph")
    return (f"`docs/study/scaling-verdict.txt`: both models keep at least {100 * low:.1f}% weak-scaling efficiency up to {top} GPUs "
            f"at every batch size from 16 to 256 per GPU (at {top} GPUs: "
            + ", ".join(f"{m} {100 * e:.1f}% at worst" for m, e in per.items())
            + f"; the lowest, {100 * worst['scaling_efficiency']:.1f}%, is {worst['model']} at batch {worst['batch_per_gpu']}): NCCL's "
            f"tree all-reduce across nodes and the buckets' all-reduces hidden behind the backward pass leave little for the "
            f"network to take.")


@block("scaling-bounds")
def scaling_bounds(ctx):
    rows = sweep_rows(ctx, "scaling-study")
    top = max(r["gpus"] for r in rows)
    body = []
    for m in sorted({r["model"] for r in rows}):
        for b in sorted({r["batch_per_gpu"] for r in rows}):
            one = next(r for r in rows if (r["model"], r["batch_per_gpu"], r["gpus"]) == (m, b, 1))
            big = next(r for r in rows if (r["model"], r["batch_per_gpu"], r["gpus"]) == (m, b, top))
            body.append(f"| {m} | {b} | {1e3 * one['iteration_s']:.2f} ms | {one['bottleneck']} | {1e3 * big['iteration_s']:.2f} ms | "
                        f"{big['bottleneck']} |")
    return ("| model | batch per GPU | iteration, 1 GPU | bound | iteration, " + str(top) + " GPUs | bound |\n"
            "|---|---:|---:|---|---:|---|\n" + "\n".join(body))


@block("scaling-whatif")
def scaling_whatif(ctx):
    rows = sweep_rows(ctx, "link-whatif")
    top = max(r["gpus"] for r in rows)
    g = lambda m, w: gain(rows, m, w, top, 64)
    links = ["network x2 (800 Gb/s NICs)", "network x4", "NVLink x2", "latency x0.5"]
    best_link = max(abs(g(m, w)) for m in ("resnet50", "vgg16") for w in links)
    seed = sweep_rows(ctx, "seed-study")
    stop = max(r["gpus"] for r in seed)
    batches = sorted({r["batch_per_gpu"] for r in seed})
    hbm = [gain(seed, "resnet50", "HBM bw x2", stop, b) for b in batches]
    flops = [gain(seed, "resnet50", w, stop, b) for w in ("FLOP/s x2", "FLOP/s x4") for b in batches]
    below = [r for r in seed if r["scaling_efficiency"] < 0.9]
    if below:
        first = min(r["gpus"] for r in below)
        what = sorted({r["what_if"] for r in below})
        tail = (f"{len(below)} configurations fall below 90% efficiency, from {first} GPUs on, all of them with "
                + "; ".join(what) + f" and {', '.join(str(b) for b in sorted({r['batch_per_gpu'] for r in below}))} per GPU")
    else:
        tail = "no configuration of the grid falls below 90% efficiency"
    return (f"`docs/study/link-whatif-verdict.txt` (batch 64 per GPU, 8 to {top} GPUs): links are not what limits these two models "
            f"here: a network 4x slower (100 Gb/s NICs) changes ResNet-50's throughput at {top} GPUs by "
            f"{pct(g('resnet50', 'network x0.25 (100 Gb/s NICs)'))} and VGG-16's by {pct(g('vgg16', 'network x0.25 (100 Gb/s NICs)'))}; "
            f"a faster network, NVLink or lower latency moves either by {100 * best_link:.1f}% at most. The GPU is what matters: "
            f"twice the FLOP/s buys ResNet-50 {pct(g('resnet50', 'GPU FLOP/s x2'))} (it is memory-bound) and VGG-16 "
            f"{pct(g('vgg16', 'GPU FLOP/s x2'))}; twice the FLOP/s *and* twice the HBM bandwidth buys "
            f"{pct(g('resnet50', 'GPU FLOP/s x2 and HBM x2'))} and {pct(g('vgg16', 'GPU FLOP/s x2 and HBM x2'))}. The seed study's "
            f"grid (`docs/study/seed-verdict.txt`, batch 16 to 256, FLOP/s x1/x2/x4, HBM x1/x2, network x0.25/x1/x4) says the "
            f"same for ResNet-50 at {stop} GPUs: twice the HBM bandwidth buys {pct(min(hbm))} to {pct(max(hbm))} over the batch "
            f"sizes, FLOP/s alone {pct(min(flops))} to {pct(max(flops))}, and {tail}.")
