"""The README's summary of docs/accuracy.md: a few rows of its tables, computed the same way."""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from . import accuracy as A
from . import runs as R
from .engine import ROOT, block, check, read


def manifest_mape(gpu, group):
    with open(os.path.join(ROOT, "kernels_mlp", "pretrained", gpu, "manifest.json"), encoding="utf-8") as f:
        ps = [p["heldout"] for p in json.load(f)["predictors"] if A.kernel_group(p["key"]) == group]
    rows = sum(h["rows"] for h in ps)
    return sum(h["rows"] * h["mape"] for h in ps) / rows


@block("readme-accuracy")
def readme_accuracy(ctx):
    s = {label: (st, target, met) for label, st, target, met in A.summary_rows(ctx)}
    pick = lambda label: s[label]
    body = []
    for what, label, stat in (
            ("H100, the C++ harness, 1-4 GPUs", "H100, dtsim-harness, 1-4 GPUs (`h100-sxm/runs`)", "mean"),
            ("H100, PyTorch DDP, 1-4 GPUs", "H100, PyTorch DDP, 1-4 GPUs, 8 CNNs (`h100-sxm/pytorch`)", "median"),
            ("H200 runs from the H100's predictors alone", "H200 runs above from the H100's predictors alone (the what-if path)", "median"),
            ("every PyTorch run, GPU-paced", "of which GPU-paced", "median"),
            ("every PyTorch run, host-paced", "of which host-paced", "median"),
            ("transformers, GPU-paced", "transformer runs (vit_b_16, gpt2_small, bert_base) that dtsim prices GPU-paced", "median")):
        st, target, met = pick(label)
        body.append([what, st.n, f"{R.pct(getattr(st, stat))} {stat}, {R.pct(st.max)} max", f"{target} ({met})" if target else ""])
    beyond = {g: A.evaluate_beyond(ctx, g) for g in ("h100-sxm", "h200-sxm")}
    met = lambda *xs: "10% (" + ("yes" if all(x <= 0.10 for x in xs) else "no") + ")"
    gemm = [manifest_mape(g, "gemm") for g in ("h100-sxm", "h200-sxm")]
    body.append(["GEMM kernels, held out (H100 / H200)", "", f"{R.pct(gemm[0])} / {R.pct(gemm[1])} MAPE", met(*gemm)])
    conv = [manifest_mape(g, "conv2d (cuDNN, NCHW)") for g in ("h100-sxm", "h200-sxm")]
    body.append(["convolution kernels, held out (H100 / H200)", "", f"{R.pct(conv[0])} / {R.pct(conv[1])} MAPE", met(*conv)])
    far = [beyond[g][k][1] for k in ("gemm", "conv2d") for g in ("h100-sxm", "h200-sxm")]
    body.append(["GEMMs and convolutions beyond the training range (H100 / H200)", "",
                 f"{R.pct(far[0])} / {R.pct(far[1])} and {R.pct(far[2])} / {R.pct(far[3])} MAPE", met(*far)])
    return (R.table(["predicted against measured", "runs", "absolute error", "target (met)"], body, ["---", "---:", "---", "---"])
            + "\n\nEach row is a row of [docs/accuracy.md](docs/accuracy.md)'s tables, which say how each is measured, what "
            "is held out and what is known to miss.")


# The README's command examples: each must run as shown (its [optional] parts left out), writing what
# it writes into a temporary folder. train-predictors is only parsed (--help): training takes minutes,
# and the example's --out is the shipped predictors' folder. A build without the LibTorch trainer
# (the sanitizer build) cannot parse it at all, so there that one example is left to the full build.
OUTPUT_FLAGS = ("--out", "--plot", "--plot-breakdown", "--trace")


@check("readme-commands")
def readme_commands(ctx):
    text = read("README.md")
    body = text[text.index("## Commands"):]
    body = body[body.index("```sh\n") + 6:body.index("\n```", body.index("```sh\n"))]
    problems, outputs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for line in body.split("\n"):
            if not line.startswith("build/dtsim "):
                continue
            args = shlex.split(re.sub(r"\s*\[[^\]]*\]", "", line))[1:]
            if args[0] == "train-predictors":
                if not os.access(os.path.join(os.path.dirname(ctx.dtsim), "dtsim-train-predictors"), os.X_OK):
                    continue
                args = ["train-predictors", "--help"]
            for i, a in enumerate(args[:-1]):
                if a in OUTPUT_FLAGS:
                    args[i + 1] = outputs.setdefault(args[i + 1], os.path.join(tmp, os.path.basename(args[i + 1])))
                elif args[i + 1] in outputs:  # a file an earlier example wrote (validate --cluster sockets.json)
                    args[i + 1] = outputs[args[i + 1]]
            if not shutil.which("gnuplot") and any(a.startswith("--plot") for a in args):
                args = [a for i, a in enumerate(args) if not a.startswith("--plot") and not (i and args[i - 1].startswith("--plot"))]
            r = subprocess.run([ctx.dtsim] + args, cwd=ROOT, env=ctx.env, capture_output=True, text=True)
            if r.returncode != 0:
                problems.append(f"README.md: `{line}` exits {r.returncode}: {r.stderr.strip()[:300]}")
    return problems
