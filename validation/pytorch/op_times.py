#!/usr/bin/env python3
"""Times PyTorch's own (non-cuDNN, non-cuBLAS) kernels on the shapes the validated networks run them.

dtsim prices every kernel from the harness's measurements (cuDNN pooling and activations, its own
bias kernels); eager PyTorch runs some of them with its own ATen kernels, which can be much slower or
faster (the vgg16 b32 bf16 torch.profiler listing in data/<gpu>/kernel_profile: bias add 1.40 ms,
max-pool backward 1.87 ms). This script measures those kernels alone, so that the framework profile's
`kernel_time_factors` are ratios of kernel times measured here to dtsim's kernel predictions
(validation/scripts/framework_kernel_factors.py --op-times), never fitted to iteration times.

Shapes: every max/avg pooling, ReLU/ReLU6 and biased convolution that a forward pass of each model
dispatches (aten level, so functional calls such as inception's F.max_pool2d count too), at each batch
size, de-duplicated. Ops, as eager autograd runs them:
  bias_add   fwd  out.add_(bias.view(1, K, 1, 1))       (cudnn_convolution leaves the bias out)
  bias_grad  bwd  grad.sum((0, 2, 3))
  pool max   fwd  max_pool2d_with_indices               bwd  max_pool2d_with_indices_backward
  pool avg   fwd  avg_pool2d                            bwd  avg_pool2d_backward
  relu/relu6 fwd  relu_ / hardtanh_(0, 6)               bwd  threshold_backward / hardtanh_backward
fp32 and bf16 tensors (autocast runs these ops in bf16). Each time: median of CUDA-event timed
repeats after warm-up, the GPU kept busy while the host enqueues (torch_compare.timeit).

  python3 validation/pytorch/op_times.py --out op_times.csv [--models alexnet,vgg16] [--batches 16,32]

Writes CSV: op,pass,math_mode,variant,N,C,H,W,R,S,stride,pad,P,Q,elements,time_median_s,time_min_s,source
and OUT.provenance.json beside it.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import sys
import time

import torch
import torchvision
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from torch_compare import timeit  # noqa: E402

aten = torch.ops.aten
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
MODELS = "alexnet,vgg16,resnet18,resnet50,resnet101,densenet121,mobilenet_v2,inception_v3"


def pair(v, default=None):
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        v = default
    return (v, v) if isinstance(v, int) else tuple(v)


class ShapeRecorder(TorchDispatchMode):
    """Records the shapes of the ops above as a forward pass dispatches them."""

    def __init__(self, model, batch):
        super().__init__()
        self.rows, self.tag = [], f"{model}/b{batch}"

    def add(self, op, variant, n, c, h, w, r=0, s=0, stride=0, pad=0, p=0, q=0):
        self.rows.append(dict(op=op, variant=variant, N=n, C=c, H=h, W=w, R=r, S=s, stride=stride, pad=pad, P=p, Q=q,
                              elements=n * c * h * w, source=self.tag))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        x = args[0] if args else None
        pkt = func._overloadpacket
        if pkt is aten.convolution and args[2] is not None:
            n, k, p, q = out.shape
            self.add("bias", "bias", n, k, p, q)
        elif pkt in (aten.max_pool2d_with_indices, aten.max_pool2d, aten.avg_pool2d):
            kr = pair(args[1])
            st = pair(args[2] if len(args) > 2 else None, kr)
            pd = pair(args[3] if len(args) > 3 else 0)
            ceil_at = 4 if pkt is aten.avg_pool2d else 5  # ceil_mode's position in the aten signatures
            ceil = len(args) > ceil_at and args[ceil_at]
            y = out[0] if isinstance(out, tuple) else out
            if kr[0] == kr[1] and st[0] == st[1] and pd[0] == pd[1] and not ceil:
                n, c, h, w = x.shape
                self.add("pool", "avg" if pkt is aten.avg_pool2d else "max", n, c, h, w, kr[0], kr[1], st[0], pd[0],
                         y.shape[2], y.shape[3])
        elif "batch_norm" in pkt.__name__ and x is not None and x.dim() == 4:
            self.add("batchnorm", "bn", *x.shape)
        elif pkt in (aten.add, aten.add_) and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                and args[1].shape == x.shape and x.dim() == 4:
            self.add("add", "add", *x.shape)
        elif pkt in (aten.relu, aten.relu_):
            self.add("activation", "relu", *(list(x.shape) + [1, 1, 1])[:4])
        elif pkt in (aten.hardtanh, aten.hardtanh_):
            self.add("activation", "relu6", *(list(x.shape) + [1, 1, 1])[:4])
        return out


def shapes_of(name, batch, device):
    model = getattr(torchvision.models, name)(weights=None, **({"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}))
    model = model.to(device).eval()
    size = 299 if name == "inception_v3" else 224
    x = torch.randn(batch, 3, size, size, device=device)
    rec = ShapeRecorder(name, batch)
    with torch.no_grad(), rec:
        model(x)
    del model, x
    torch.cuda.empty_cache()
    return rec.rows


def op_fns(r, dt, device, fmt=torch.contiguous_format):
    """(pass, fn) pairs timing the row's forward and backward kernels."""
    n, c, h, w = r["N"], r["C"], r["H"], r["W"]
    x = torch.randn(n, c, h, w, device=device, dtype=dt).contiguous(memory_format=fmt)
    if r["op"] == "batchnorm":
        # Training batchnorm as autocast runs it: activations in dt, FP32 weight, bias and running
        # statistics; the backward pass computes dx, dweight and dbias. F.batch_norm picks cuDNN or
        # PyTorch's native kernels as the training step does.
        wt = torch.ones(c, device=device, requires_grad=True)
        bs = torch.zeros(c, device=device, requires_grad=True)
        rm, rv = torch.zeros(c, device=device), torch.ones(c, device=device)
        xg = x.detach().requires_grad_(True)
        with torch.enable_grad():
            y = torch.nn.functional.batch_norm(xg, rm, rv, wt, bs, training=True)
        gy = torch.randn_like(y)
        return [("fwd", lambda: torch.nn.functional.batch_norm(x, rm, rv, wt, bs, training=True)),
                ("bwd", lambda: torch.autograd.grad(y, (xg, wt, bs), gy, retain_graph=True))]
    if r["op"] == "add":  # a residual add, and autograd's accumulation of a gradient that fans out
        z = torch.randn_like(x)
        return [("fwd", lambda: torch.add(x, z)), ("bwd", lambda: x.add_(z))]
    if r["op"] == "bias":
        b = torch.randn(c, device=device, dtype=dt).view(1, c, 1, 1)
        return [("fwd", lambda: x.add_(b)), ("bwd", lambda: x.sum((0, 2, 3)))]
    if r["op"] == "pool":
        k, s, p = [r["R"]] * 2, [r["stride"]] * 2, [r["pad"]] * 2
        if r["variant"] == "max":
            y, idx = aten.max_pool2d_with_indices(x, k, s, p)
            gy = torch.randn_like(y)
            return [("fwd", lambda: aten.max_pool2d_with_indices(x, k, s, p)),
                    ("bwd", lambda: aten.max_pool2d_with_indices_backward(gy, x, k, s, p, [1, 1], False, idx))]
        y = aten.avg_pool2d(x, k, s, p)
        gy = torch.randn_like(y)
        return [("fwd", lambda: aten.avg_pool2d(x, k, s, p)),
                ("bwd", lambda: aten.avg_pool2d_backward(gy, x, k, s, p, False, True, None))]
    gy = torch.randn_like(x)
    if r["variant"] == "relu":
        return [("fwd", lambda: x.relu_()), ("bwd", lambda: aten.threshold_backward(gy, x, 0))]
    return [("fwd", lambda: aten.hardtanh_(x, 0.0, 6.0)), ("bwd", lambda: aten.hardtanh_backward(gy, x, 0.0, 6.0))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--batches", default="16,32,64,128,256")
    ap.add_argument("--memory-format", default="contiguous", choices=["contiguous", "channels_last"],
                    help="the tensors' layout (torch.channels_last for NHWC); the CSV's layout column says which")
    ap.add_argument("--ops", default="bias,pool,activation,batchnorm,add", help="which ops to time")
    ap.add_argument("--budget-s", type=float, default=400, help="stop timing (rows so far are kept) after this long")
    ap.add_argument("--dtypes", default="fp32,bf16", help="tensor types to time, of fp32, bf16, fp16 (fp16 autocast "
                    "runs these ops in float16, with kernels of their own: e.g. channels_last batchnorm)")
    a = ap.parse_args()
    dtypes = a.dtypes.split(",")
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"--dtypes: unknown {d!r} (known: fp32, bf16, fp16)")
    device = torch.device("cuda", 0)
    torch.backends.cudnn.benchmark = True
    t0 = time.time()
    rows, seen = [], set()
    for name in a.models.split(","):
        for b in (int(v) for v in a.batches.split(",")):
            for r in shapes_of(name, b, device):
                key = tuple(r[k] for k in ("op", "variant", "N", "C", "H", "W", "R", "stride", "pad"))
                if key not in seen and r["op"] in a.ops.split(","):
                    seen.add(key)
                    rows.append(r)
    print(f"{len(rows)} distinct shapes from {a.models} at batches {a.batches} ({time.time() - t0:.0f} s)", flush=True)
    fmt = torch.channels_last if a.memory_format == "channels_last" else torch.contiguous_format
    layout = "nhwc" if a.memory_format == "channels_last" else "nchw"
    fields = ["op", "pass", "math_mode", "variant", "layout", "N", "C", "H", "W", "R", "S", "stride", "pad", "P", "Q", "elements",
              "time_median_s", "time_min_s", "source"]
    done = 0
    tmp = a.out + ".part"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            if time.time() - t0 > a.budget_s:
                print(f"budget reached after {done} of {len(rows)} shapes", flush=True)
                break
            for math in dtypes:
                dt = DTYPES[math]
                try:
                    for pas, fn in op_fns(r, dt, device, fmt):
                        with torch.no_grad():
                            med, mn = timeit(fn)
                        w.writerow({**r, "pass": pas, "layout": layout, "math_mode": math, "time_median_s": f"{med:.4g}", "time_min_s": f"{mn:.4g}"})
                except (torch.OutOfMemoryError, RuntimeError) as e:
                    print(f"skipped {r}: {str(e)[:100]}", flush=True)
                torch.cuda.empty_cache()
            done += 1
    os.replace(tmp, a.out)
    prov = {
        "what": "validation/pytorch/op_times.py: PyTorch's own kernels timed alone on the validated models' shapes",
        "models": a.models, "batches": a.batches, "memory_format": a.memory_format, "ops": a.ops, "dtypes": a.dtypes, "shapes_timed": done, "shapes_found": len(rows),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": os.environ.get("DTSIM_GIT_COMMIT", "unknown"),
        "torch": torch.__version__, "torchvision": torchvision.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(0),
        "driver": os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().strip().splitlines()[0:1],
        "host": platform.node(), "python": platform.python_version(), "seconds": round(time.time() - t0),
    }
    with open(os.path.splitext(a.out)[0] + ".provenance.json", "w") as f:
        json.dump(prov, f, indent=1)
    print(f"{done} shapes x {len(dtypes)} dtypes x 2 passes in {time.time() - t0:.0f} s -> {a.out}", flush=True)


if __name__ == "__main__":
    main()
