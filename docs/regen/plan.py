"""docs/plan.md's worked question: the search, what it prints, how to read it, and the front's picture."""
import json
import shlex

from .engine import Failure, block, files
from .runs import table

CLUSTERS = ["h100-sxm", "h200-sxm", "b200", "a100-sxm", "a100-40gb-sxm", "l40s"]
QUESTION = ["--model", "resnet50", "--dataset-size", "1281167", "--epochs", "90", "--deadline-h", "24",
            "--max-global-batch", "8192"]
AXES = ["--gpus", "8..1024:+8", "--batch-per-gpu", "32,64,128,256", "--precision", "fp32,bf16", "--bucket-mb", "5,25,100",
        "--objective", "cost"]
PICTURE = "docs/img/plan-front.png"


def replaced(args, flag, value):
    """args with flag's value replaced (value None: the flag dropped)."""
    i = args.index(flag)
    return args[:i] + ([flag, value] if value is not None else []) + args[i + 2:]


def search(ctx, clusters=CLUSTERS, extra=(), question=QUESTION, axes=AXES):
    args = ["plan"] + list(question) + ["--cluster", ",".join(clusters)] + list(axes) + list(extra)
    return json.loads(ctx.run(["dtsim"] + args + ["--format", "json"]))


def hours(s):
    return f"{s / 3600:.2f} h" if s >= 3600 else f"{s / 60:.1f} min"


def usd(x):
    return f"${x:,.2f}"


def config(c):
    return f"{c['gpus']} x batch {c['batch_per_gpu']}, {c['precision']}, {c['bucket_mb']:g} MiB buckets"


def shown_command():
    lines = ["build/dtsim plan " + " ".join(QUESTION[:6]) + " " + " ".join(QUESTION[6:]) + " \\",
             "  --cluster " + ",".join(CLUSTERS) + " " + " ".join(AXES[:2]) + " \\",
             "  " + " ".join(AXES[2:]) + " --top 5 \\",
             f"  --plot {PICTURE}"]
    return "\n".join(lines)


@block("plan-example")
def plan_example(ctx):
    out = ctx.run(["dtsim", "plan"] + QUESTION + ["--cluster", ",".join(CLUSTERS)] + AXES + ["--top", "5"])
    n = 1
    for flag in ("--gpus", "--batch-per-gpu", "--precision", "--bucket-mb"):
        from_list = AXES[AXES.index(flag) + 1]
        n *= 128 if flag == "--gpus" else len(from_list.split(","))
    return (f"```sh\n{shown_command()}\n```\n\n{n * len(CLUSTERS):,} configurations ({len(CLUSTERS)} clusters x 128 GPU counts x "
            f"4 batch sizes x 2 precisions x 3 bucket sizes):\n\n```text\n{out.rstrip()}\n```")


@files("plan-picture")
def plan_picture(ctx, out):
    """The front is drawn by the very command plan-example prints, so its data is checked there."""
    if ctx.pictures:
        ctx.run(["dtsim", "plan"] + QUESTION + ["--cluster", ",".join(CLUSTERS)] + AXES + ["--top", "5", "--plot", out(PICTURE)])


def predict(ctx, c, extra=()):
    args = ["predict", "--model", "resnet50", "--cluster", c["cluster"], "--gpus", c["gpus"], "--batch-per-gpu", c["batch_per_gpu"],
            "--precision", c["precision"], "--bucket-mb", f"{c['bucket_mb']:g}"] + list(extra)
    return json.loads(ctx.run(["dtsim"] + args + ["--format", "json"]))


def ordinal(i, n):
    return "the lowest" if i == 0 else "the highest" if i == n - 1 else f"the {['', 'second', 'third', 'fourth', 'fifth'][i]} lowest"


@block("plan-reading")
def plan_reading(ctx):
    r = search(ctx)
    cheap, fast = r["cheapest"], r["fastest"]
    per = {c: search(ctx, [c]) for c in CLUSTERS}
    prices = sorted((per[c]["cheapest"]["price_per_gpu_hour"], c) for c in CLUSTERS)
    rank = [c for _, c in prices].index(cheap["cluster"])
    lines = []
    deadline = ("The 24-hour deadline does not bind: none of the "
                f"{r['feasible']:,} configurations within the global-batch cap takes longer." if r["skipped"]["over_deadline"] == 0
                else f"{r['skipped']['over_deadline']:,} configurations take longer than the 24-hour deadline.")
    lines.append(f"- **The cheapest** is {cheap['cluster']} with {config(cheap)}: {hours(cheap['time_to_train_s'])} and "
                 f"{usd(cheap['cost'])}. {deadline} Its price per GPU-hour is {ordinal(rank, len(prices))} of the six, and it "
                 f"processes {cheap['batch_per_gpu'] / cheap['iteration_s']:,.0f} images/s per GPU in this configuration.")
    # Along the cheapest cluster's part of the front, at the cheapest batch and precision.
    part = sorted((c for c in r["pareto"] if c["cluster"] == cheap["cluster"] and c["batch_per_gpu"] == cheap["batch_per_gpu"]
                   and c["precision"] == cheap["precision"]), key=lambda c: c["gpus"])
    spread = part[-1]["cost"] / part[0]["cost"] - 1
    if len(part) < 2 or spread > 0.05:
        raise Failure("plan-reading: the cheapest cluster's front no longer costs nearly the same at every GPU count; reword it")
    last = predict(ctx, part[-1])
    exposed = last["exposed_comm_s"] / last["iteration_s"]
    hidden = ("hidden behind the backward pass" if exposed < 0.01 else f"exposed for {100 * exposed:.0f}% of the step")
    lines.append(f"- **Cost barely depends on the GPU count.** Along {cheap['cluster']}'s part of the front at that batch, "
                 f"{part[0]['gpus']} to {part[-1]['gpus']} GPUs cost {usd(part[0]['cost'])} to {usd(part[-1]['cost'])}: on "
                 f"{part[-1]['gpus']} GPUs the all-reduce is {hidden}, so GPU-hours stay nearly constant and more GPUs finish "
                 f"sooner. With whole nodes paid for, \"how many GPUs\" is answered by the deadline: {part[-1]['gpus']} GPUs "
                 f"finish in {hours(part[-1]['time_to_train_s'])} for {100 * spread:.1f}% more.")
    wide = dict(fast, gpus=fast["gpus"] * 2, batch_per_gpu=fast["batch_per_gpu"] // 2)
    p = predict(ctx, wide)
    if p["iteration_s"] < fast["iteration_s"]:
        raise Failure("plan-reading: twice the GPUs at half the batch now train faster than the fastest; reword it")
    lines.append(f"- **What it takes to be fast.** The fastest is {fast['cluster']} with {config(fast)}: "
                 f"{hours(fast['time_to_train_s'])} for {usd(fast['cost'])}, {fast['cost'] / cheap['cost']:.1f} times the cheapest. "
                 f"It is at the global-batch cap ({fast['gpus'] * fast['batch_per_gpu']:,} images a step), so more GPUs would take "
                 f"smaller batches for the same number of steps, and the step would not get shorter: {wide['gpus']} GPUs at "
                 f"batch {wide['batch_per_gpu']} take {1e3 * p['iteration_s']:.2f} ms a step ({p['bottleneck']}-bound), against "
                 f"{1e3 * fast['iteration_s']:.2f} ms at batch {fast['batch_per_gpu']}.")
    body = []
    for c in sorted(CLUSTERS, key=lambda c: per[c]["cheapest"]["cost"]):
        ch, fa = per[c]["cheapest"], per[c]["fastest"]
        body.append([c, f"{ch['price_per_gpu_hour']:g}", f"{ch['gpus']} x {ch['batch_per_gpu']} {ch['precision']}, {ch['bucket_mb']:g} MiB",
                     hours(ch["time_to_train_s"]), f"{ch['cost']:.2f}", f"{fa['gpus']} x {fa['batch_per_gpu']} {fa['precision']}",
                     hours(fa["time_to_train_s"]), f"{fa['cost']:.2f}"])
    second = sorted(CLUSTERS, key=lambda c: per[c]["cheapest"]["cost"])[1]
    lines.append("- **Per cluster** (the same search with one `--cluster` each):\n\n" + "\n".join(
        "  " + l for l in table(["cluster", "price per GPU-hour (USD)", "cheapest (GPUs x batch, precision, bucket)", "time", "cost",
                                 "fastest (GPUs x batch, precision)", "time", "cost"], body).split("\n"))
                 + f"\n\n  Without {cheap['cluster']}, {second} is the cheapest ({usd(per[second]['cheapest']['cost'])}).")
    big = search(ctx, axes=replaced(AXES, "--bucket-mb", "25"))["cheapest"]
    lines.append(f"- **Buckets.** {cheap['bucket_mb']:g} MiB buckets give the cheapest configuration; with PyTorch's default 25 MiB "
                 f"the same search's cheapest costs {usd(big['cost'])} ({config(big)} on {big['cluster']}) instead of "
                 f"{usd(cheap['cost'])}: smaller buckets start the all-reduce earlier, so less of it is left after the backward pass.")
    tight = search(ctx, question=replaced(QUESTION, "--deadline-h", "0.25"))
    budget = search(ctx, question=replaced(QUESTION, "--deadline-h", None), extra=["--budget", "100"])
    t, b = tight["cheapest"], budget["fastest"]
    if t is None or b is None:
        raise Failure("plan-reading: the tighter goals (--deadline-h 0.25, --budget 100) leave nothing feasible; pick others")
    lines.append(f"- A tighter goal changes the answer: `--deadline-h 0.25` (15 minutes) leaves {tight['feasible']:,} feasible "
                 f"configurations, the cheapest {t['cluster']} with {config(t)} ({hours(t['time_to_train_s'])}, {usd(t['cost'])}); "
                 f"`--budget 100` with no deadline makes the fastest {b['cluster']} with {config(b)} "
                 f"({hours(b['time_to_train_s'])}, {usd(b['cost'])}).")
    check = predict(ctx, cheap, ["--dataset-size", "1281167", "--epochs", "90", "--price-per-gpu-hour", f"{cheap['price_per_gpu_hour']:g}"])
    if abs(check["train"]["time_s"] - cheap["time_to_train_s"]) > 1e-9 * cheap["time_to_train_s"]:
        raise Failure("plan-reading: predict's time to train differs from plan's for the cheapest configuration")
    cmd = ["build/dtsim", "predict", "--model", "resnet50", "--cluster", cheap["cluster"], "--gpus", str(cheap["gpus"]),
           "--batch-per-gpu", str(cheap["batch_per_gpu"]), "--precision", cheap["precision"], "--bucket-mb", f"{cheap['bucket_mb']:g}"]
    tail = ["--dataset-size", "1281167", "--epochs", "90", "--price-per-gpu-hour", f"{cheap['price_per_gpu_hour']:g}"]
    lines.append(f"\nEvery number above is `dtsim predict`'s for that configuration, e.g. the cheapest:\n\n```sh\n"
                 f"{shlex.join(cmd)} \\\n  {shlex.join(tail)}\n```")
    return "\n".join(lines)
