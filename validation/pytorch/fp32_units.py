#!/usr/bin/env python3
"""Convolutions on the FP32 units: what cuDNN does with strict-FP32 convolutions, where the
tensor cores are not allowed (torch.backends.cudnn.allow_tf32 = False), as V100 runs every "fp32"
convolution (it has no TF32). On a GPU that has TF32 this is the same kind of math unit as V100's
FP32 path, measured rather than assumed.

Writes to --out:
  steps.csv     torchvision resnet50 training steps (SGD momentum, eager, one GPU), strict FP32 and
                PyTorch's default (TF32 convolutions), median of --iters after a warm-up;
  layers.csv    every convolution of resnet50 at --layer-batch: forward, data and weight gradients timed
                alone (cudnn.benchmark, CUDA events around 20 calls), strict FP32, with the direct
                convolution's FLOPs;
  kernels.txt   torch.profiler's kernel list of one strict-FP32 step (which algorithms cuDNN ran);
  provenance.json.
usage: fp32_units.py --out DIR [--batches 64,128] [--layer-batch 64] [--iters 20]
"""
import argparse, csv, json, os, subprocess, sys, time

import torch
import torch.nn.functional as F
import torchvision


def step_time(model, batch, iters, strict):
    torch.backends.cudnn.allow_tf32 = not strict
    torch.backends.cuda.matmul.allow_tf32 = False
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    def one():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    for _ in range(8):
        one()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); one(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def conv_layers(model):
    shapes = []
    hooks = [m.register_forward_hook(lambda m, i, o: shapes.append((m, tuple(i[0].shape))))
             for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(torch.randn(1, 3, 224, 224, device="cuda"))
    for h in hooks:
        h.remove()
    return shapes


def time_call(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record(); b.synchronize()
    return a.elapsed_time(b) / 1e3 / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", default="64,128")
    ap.add_argument("--layer-batch", type=int, default=64)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    t0 = time.time()
    model = torchvision.models.resnet50().cuda().train()
    with open(os.path.join(a.out, "steps.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "batch", "math", "step_median_s"])
        for b in map(int, a.batches.split(",")):
            for strict in (True, False):
                w.writerow(["resnet50", b, "fp32_strict" if strict else "fp32_tf32_convs", "%.5g" % step_time(model, b, a.iters, strict)])
                f.flush()
    # one profiled strict-FP32 step
    torch.backends.cudnn.allow_tf32 = False
    bs = int(a.batches.split(",")[0])
    x = torch.randn(bs, 3, 224, 224, device="cuda"); y = torch.randint(0, 1000, (bs,), device="cuda")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        F.cross_entropy(model(x), y).backward()
        torch.cuda.synchronize()
    with open(os.path.join(a.out, "kernels.txt"), "w") as f:
        f.write(prof.key_averages().table(sort_by="cuda_time_total", row_limit=60, max_name_column_width=140))
    # every convolution alone, strict FP32
    seen = set()
    with open(os.path.join(a.out, "layers.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["N", "C", "H", "W", "K", "R", "S", "stride", "pad", "groups", "pass", "time_s", "direct_flops", "layers"])
        counts = {}
        for m, s in conv_layers(model):
            key = (s[1], s[2], s[3], m.out_channels, m.kernel_size[0], m.kernel_size[1], m.stride[0], m.padding[0], m.groups)
            counts[key] = counts.get(key, 0) + 1
        for key, n in counts.items():
            C, H, W, K, R, S, st, pd, g = key
            N = a.layer_batch
            xx = torch.randn(N, C, H, W, device="cuda"); ww = torch.randn(K, C // g, R, S, device="cuda")
            yy = F.conv2d(xx, ww, None, st, pd, 1, g); dy = torch.randn_like(yy)
            P, Q = yy.shape[2], yy.shape[3]
            fl = 2.0 * N * K * P * Q * (C // g) * R * S
            cb = torch.ops.aten.convolution_backward
            for p, fn in (("fwd", lambda: F.conv2d(xx, ww, None, st, pd, 1, g)),
                          ("bwd_data", lambda: cb(dy, xx, ww, None, [st, st], [pd, pd], [1, 1], False, [0, 0], g, [True, False, False])),
                          ("bwd_filter", lambda: cb(dy, xx, ww, None, [st, st], [pd, pd], [1, 1], False, [0, 0], g, [False, True, False]))):
                w.writerow([N, C, H, W, K, R, S, st, pd, g, p, "%.5g" % time_call(fn), "%.6g" % fl, n])
            f.flush()
            del xx, ww, yy, dy
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    json.dump({"what": __doc__.splitlines()[0], "gpu_driver": smi, "torch": torch.__version__, "cuda": torch.version.cuda,
               "cudnn": torch.backends.cudnn.version(), "torchvision": torchvision.__version__,
               "git_commit": os.environ.get("DTSIM_GIT_COMMIT", "unknown"),
               "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": round(time.time() - t0, 1),
               "args": vars(a)}, open(os.path.join(a.out, "provenance.json"), "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
