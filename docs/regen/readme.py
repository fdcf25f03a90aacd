"""The README's summary of docs/accuracy.md: a few rows of its tables, computed the same way."""
import json
import os

from . import accuracy as A
from . import runs as R
from .engine import ROOT, block


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
    body.append(["GEMM kernels, held out (H100 / H200)", "", f"{R.pct(manifest_mape('h100-sxm', 'gemm'))} / "
                 f"{R.pct(manifest_mape('h200-sxm', 'gemm'))} MAPE", "10%"])
    conv = "conv2d (cuDNN, NCHW)"
    body.append(["convolution kernels, held out (H100 / H200)", "", f"{R.pct(manifest_mape('h100-sxm', conv))} / "
                 f"{R.pct(manifest_mape('h200-sxm', conv))} MAPE", "10% (not met)"])
    body.append(["GEMMs and convolutions beyond the training range (H100 / H200)", "",
                 f"{R.pct(beyond['h100-sxm']['gemm'][1])} / {R.pct(beyond['h200-sxm']['gemm'][1])} and "
                 f"{R.pct(beyond['h100-sxm']['conv2d'][1])} / {R.pct(beyond['h200-sxm']['conv2d'][1])} MAPE", "10%"])
    return (R.table(["predicted against measured", "runs", "absolute error", "target (met)"], body, ["---", "---:", "---", "---"])
            + "\n\nEach row is a row of [docs/accuracy.md](docs/accuracy.md)'s tables, which say how each is measured, what "
            "is held out and what is known to miss.")
