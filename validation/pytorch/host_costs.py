#!/usr/bin/env python3
"""Eager PyTorch's host time per layer, per pass, measured where the GPU is never the limit.

Layer kinds: the CNN's (conv, conv_bias, batchnorm, relu, maxpool, avgpool, add, linear, dropout) on
1 x 8 x 8 x 8 images (--channels, --size: 1 x C x S x S), and the transformer's (layernorm, gelu, attention: GPT-2's heads and
scaled_dot_product_attention, mha: nn.MultiheadAttention with its projections, linear_cast: a linear
layer fed and followed by FP32) on 1 x 16 x 64 tokens.

For each layer type, a DDP-wrapped chain of SHALLOW and DEEP identical layers on a tiny input (every
kernel a few microseconds of GPU work, so the host is the bottleneck) trains for ITERS iterations;
the host time of the forward, backward and optimizer step is read with perf_counter around each
phase, and the difference between the two depths divided by the number of extra layers is the host
time one more such layer costs, whatever the iteration's fixed costs. fp32 and bf16 autocast.

--optimizer adamw|adam prices the step with that torch.optim optimizer (foreach, as PyTorch's default)
instead of SGD with momentum. --execution compile (or --compile) wraps the DDP module in torch.compile
(default mode: Inductor, no CUDA graphs; the warm-up iterations compile it; --execution
compile-cuda-graphs: mode="reduce-overhead"), so the differences are the host time of one more
layer's generated kernels and library calls as the compiled wrapper issues them; the kind
conv_bn_relu (a convolution, batchnorm and ReLU, the block Inductor fuses around) is meant for it,
and measured eager as well it is the comparison.

Writes JSON: {"layers": {"conv": {"fp32": {"fwd_s": .., "bwd_s": .., "step_s": ..}, "bf16": {..}}, ..},
"provenance": {..}}. dtsim's framework profile turns it into per-kernel host costs
(validation/scripts/host_cost_profile.py).

  python3 validation/pytorch/host_costs.py --out host_costs.json [--gpus 2]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dist_launch  # noqa: E402


class AddConst(nn.Module):
    """A residual add's forward kernel (out + identity); its backward passes the gradient on."""

    def __init__(self, shape):
        super().__init__()
        self.register_buffer("c", torch.zeros(shape))

    def forward(self, x):
        return x + self.c


class SdpaHeads(nn.Module):
    """What GPT-2's attention does between its two linear layers (transformer_models.SelfAttention):
    split q, k, v into heads (views), causal scaled_dot_product_attention with dropout 0.1, and the
    heads merged back (a copy)."""

    def __init__(self, heads=4):
        super().__init__()
        self.heads = heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (x, x, x))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)
        return y.transpose(1, 2).reshape(b, t, c)


class Mha(nn.Module):
    """torchvision's ViT attention: nn.MultiheadAttention(batch_first=True), its two linear layers included."""

    def __init__(self, c=64, heads=4):
        super().__init__()
        self.mha = nn.MultiheadAttention(c, heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class LinearFp32Out(nn.Module):
    """A linear layer whose output is FP32 again (.float()), so that under autocast every such layer
    casts an FP32 input to 16 bits, as a transformer's linear layers fed by the FP32 residual stream do."""

    def __init__(self, c=64):
        super().__init__()
        self.lin = nn.Linear(c, c)

    def forward(self, x):
        return self.lin(x).float()


# Layer kinds of a transformer; they take B x T x C activations.
SEQUENCE_KINDS = ("layernorm", "gelu", "attention", "mha", "linear_cast")


# The CNN kinds' channels and image side (--channels, --size): 8 and 8 unless asked, as measured first.
CNN_SHAPE = {"channels": 8, "size": 8, "channels_last": False}


def layer(kind):
    c, hw = CNN_SHAPE["channels"], CNN_SHAPE["size"]
    return {
        "conv": lambda: nn.Conv2d(c, c, 3, padding=1, bias=False),
        "conv_bias": lambda: nn.Conv2d(c, c, 3, padding=1, bias=True),
        "batchnorm": lambda: nn.BatchNorm2d(c),
        "relu": lambda: nn.ReLU(),  # a chain of in-place ReLUs would overwrite what the backward needs
        "maxpool": lambda: nn.MaxPool2d(3, stride=1, padding=1),
        "avgpool": lambda: nn.AvgPool2d(3, stride=1, padding=1),
        "add": lambda: AddConst((1, c, hw, hw)),
        "linear": lambda: nn.Linear(64, 64),
        "dropout": lambda: nn.Dropout(0.5),
        "layernorm": lambda: nn.LayerNorm(64),
        "gelu": lambda: nn.GELU(approximate="tanh"),
        "attention": lambda: SdpaHeads(),
        "mha": lambda: Mha(),
        "linear_cast": lambda: LinearFp32Out(),
        "conv_bn_relu": lambda: nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()),
    }[kind]()


def make_optimizer(name, params):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-2)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    return torch.optim.SGD(params, lr=1e-3, momentum=0.9, weight_decay=1e-4)


def measure(kind, depth, prec, iters, warmup, device, optimizer="sgd", execution="eager"):
    # A first layer with parameters keeps autograd running through parameter-free chains (relu, pool).
    seq = kind in SEQUENCE_KINDS
    c, hw = CNN_SHAPE["channels"], CNN_SHAPE["size"]
    first = nn.Linear(64, 64) if kind == "linear" or seq else nn.Conv2d(c, c, 1)
    model = nn.Sequential(first, *[layer(kind) for _ in range(depth)]).to(device)
    cl = CNN_SHAPE["channels_last"] and not seq and kind != "linear"
    if cl:
        model = model.to(memory_format=torch.channels_last)
    ddp = DDP(model, device_ids=[device.index])
    opt = make_optimizer(optimizer, ddp.parameters())
    if execution != "eager":
        torch._dynamo.reset()  # each depth compiles afresh
        ddp = torch.compile(ddp, mode="reduce-overhead" if execution == "compile-cuda-graphs" else "default")
    x = torch.randn((1, 16, 64) if seq else (1, 64) if kind == "linear" else (1, c, hw, hw), device=device)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    fwd, bwd, step = [], [], []
    for it in range(warmup + iters):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=prec == "bf16"):
            loss = ddp(x).float().sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if it >= warmup:
            fwd.append(t1 - t0), bwd.append(t2 - t1), step.append(t3 - t2)
        if it % 50 == 49:
            torch.cuda.synchronize()  # keep the launch queue short
    torch.cuda.synchronize()
    return statistics.median(fwd), statistics.median(bwd), statistics.median(step)


def run(rank, a):
    """One rank: every kind and precision, shallow and deep; rank 0 writes the JSON. With --gpus 2 or
    more, every rank's DDP reducer all-reduces its buckets, as a multi-GPU eager step does: the
    difference to --gpus 1 is the host time DDP adds per layer once there is someone to talk to."""
    device = dist_launch.init_rank(rank, a) if a.gpus > 1 else torch.device("cuda", 0)
    if a.gpus == 1:
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
    torch.backends.cudnn.benchmark = True
    out = {"layers": {}}
    for kind in a.kinds.split(","):
        out["layers"][kind] = {}
        for prec in a.precisions.split(","):
            s = measure(kind, a.shallow, prec, a.iters, a.warmup, device, a.optimizer, a.execution)
            d = measure(kind, a.deep, prec, a.iters, a.warmup, device, a.optimizer, a.execution)
            n = a.deep - a.shallow
            per = {k: (dv - sv) / n for k, sv, dv in zip(("fwd_s", "bwd_s", "step_s"), s, d)}
            out["layers"][kind][prec] = {k: float(f"{v:.4g}") for k, v in per.items()}
            # the shallow chain's whole iteration: the fixed costs a step pays whatever its depth
            out["layers"][kind][prec]["shallow_iteration_s"] = float(f"{sum(s):.4g}")
            if rank == 0:
                print(f"{kind:10s} {prec}  fwd {per['fwd_s'] * 1e6:7.1f} us  bwd {per['bwd_s'] * 1e6:7.1f} us  "
                      f"step {per['step_s'] * 1e6:6.1f} us per layer; shallow iteration {sum(s) * 1e6:7.1f} us", flush=True)
    dist.destroy_process_group()
    if rank != 0:
        return
    out["optimizer"] = a.optimizer
    out["execution"] = a.execution
    mode = {"eager": "", "compile": ", torch.compile default mode",
            "compile-cuda-graphs": ", torch.compile mode='reduce-overhead' (CUDA graphs)"}[a.execution]
    out["method"] = (f"DDP (world {a.gpus}, one process per GPU{mode}, "
                     f"torch.optim {a.optimizer} foreach) chains of {a.shallow} and {a.deep} identical layers on "
                     f"a 1 x {a.channels} x {a.size} x {a.size} {a.memory_format} input (CNN kinds), {a.iters} iterations after {a.warmup}; median host time (perf_counter) of forward "
                     f"(zero_grad + forward + loss), backward and optimizer step; per layer = (deep - shallow) "
                     f"/ {a.deep - a.shallow}; rank 0's figures")
    out["gpus"] = a.gpus
    out["provenance"] = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": os.environ.get("DTSIM_GIT_COMMIT", "unknown"),
        "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "gpu": torch.cuda.get_device_name(0), "host": platform.node(), "cpu": platform.processor(),
        "cpus": os.cpu_count(), "python": platform.python_version(),
        "environment": {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")},
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shallow", type=int, default=8)
    ap.add_argument("--deep", type=int, default=40)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--kinds", default="conv,conv_bias,batchnorm,relu,maxpool,avgpool,add,linear,dropout,"
                    + ",".join(SEQUENCE_KINDS))
    ap.add_argument("--gpus", type=int, default=1, help="ranks (one process per GPU); 1 as before 2026-11-28")
    ap.add_argument("--port", type=int, default=29561)
    ap.add_argument("--optimizer", default="sgd", choices=("sgd", "adamw", "adam"),
                    help="the step's optimizer (foreach); sgd is SGD with momentum 0.9 and weight decay, as before")
    ap.add_argument("--execution", default="eager", choices=("eager", "compile", "compile-cuda-graphs"),
                    help="eager, or torch.compile the DDP module: default mode (compile) or mode='reduce-overhead' "
                         "(compile-cuda-graphs: the compiled forward and backward replay as CUDA graphs, so what "
                         "one more layer costs is what stays on the host: its parameters' DDP and autograd work)")
    ap.add_argument("--compile", dest="execution", action="store_const", const="compile",
                    help="the same as --execution compile")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--channels", type=int, default=8, help="the CNN kinds' channels (a 1 x C x S x S input)")
    ap.add_argument("--size", type=int, default=8, help="the CNN kinds' image side S")
    ap.add_argument("--memory-format", default="contiguous", choices=("contiguous", "channels_last"),
                    help="the CNN kinds' model and input in this layout (PyTorch's names)")
    a = ap.parse_args()
    CNN_SHAPE.update(channels=a.channels, size=a.size, channels_last=a.memory_format == "channels_last")
    if a.gpus < 1:
        raise SystemExit(f"--gpus: at least 1, not {a.gpus}")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(a.port))
    if a.gpus == 1:
        run(0, a)
    else:
        dist_launch.run_ranks(run, a)


if __name__ == "__main__":
    main()
