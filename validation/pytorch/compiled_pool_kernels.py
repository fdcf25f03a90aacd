#!/usr/bin/env python3
"""torch.compile's generated pooling kernels, timed alone: Inductor runs a pooling over a
window as a kernel of its own (the bn-ReLU before it materialised, max pooling's window offsets
saved), forward and backward. Each case compiles y = pool(relu(x)) on a channels_last bf16/fp32 input
that requires grad, runs forward and backward under torch.profiler, and writes the generated
kernels whose names hold the pooling (triton_*max_pool2d* / *avg_pool2d*) with their GPU time.

  python3 validation/pytorch/compiled_pool_kernels.py --out DIR [--budget-s 240]

DIR/pool_kernels.csv: op,dtype,N,C,H,W,k,s,p,pass,kernel,time_us (mean over the profiled repeats),
DIR/provenance.json.
"""
import argparse, csv, json, os, random, subprocess, time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

SHAPES = [(N, C, H) for N in (32, 64, 128, 256) for C, H in ((64, 112), (64, 224), (128, 112), (256, 56), (512, 28), (512, 14), (96, 55), (192, 27))]
WINDOWS = [("max", 3, 2, 1), ("max", 2, 2, 0), ("max", 3, 2, 0), ("avg", 2, 2, 0), ("avg", 3, 1, 1)]


def case(op, dt, N, C, H, k, s, p, repeats=5):
    pool = (lambda t: F.max_pool2d(t, k, s, p)) if op == "max" else (lambda t: F.avg_pool2d(t, k, s, p))
    f = torch.compile(lambda t: pool(torch.relu(t)))
    x = torch.randn(N, C, H, H, device="cuda", dtype=dt).contiguous(memory_format=torch.channels_last).requires_grad_()
    for _ in range(3):
        f(x).sum().backward()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            f(x).sum().backward()
        torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and "pool2d" in e.name:
            phase = "bwd" if "backward" in e.name else "fwd"
            rows.setdefault((phase, e.name[:120]), []).append(e.device_time_total)
    torch._dynamo.reset()
    return [(ph, name, sum(v) / repeats) for (ph, name), v in rows.items()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=240)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cmd = lambda c: subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
    json.dump({"what": "validation/pytorch/compiled_pool_kernels.py", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "git_commit": os.environ.get("DTSIM_GIT_COMMIT", ""), "gpu": torch.cuda.get_device_name(0),
               "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
               "driver": cmd("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
               "clocks": cmd("nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader | head -1"),
               "torch": torch.__version__, "cuda_runtime": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
               "layout": "channels_last input, y = pool(relu(x)) compiled with torch.compile (default mode)"},
              open(os.path.join(a.out, "provenance.json"), "w"), indent=1)
    items = [(op, dt, N, C, H, k, s, p) for (op, k, s, p) in WINDOWS for dt in ("bf16", "fp32") for (N, C, H) in SHAPES]
    random.Random(5).shuffle(items)
    t0 = time.time()
    with open(os.path.join(a.out, "pool_kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["op", "dtype", "N", "C", "H", "W", "k", "s", "p", "pass", "kernel", "time_us"])
        n = 0
        for op, dt, N, C, H, k, s, p in items:
            if time.time() - t0 > a.budget_s:
                break
            try:
                for ph, name, us in case(op, torch.bfloat16 if dt == "bf16" else torch.float32, N, C, H, k, s, p):
                    w.writerow([op, dt, N, C, H, H, k, s, p, ph, name, f"{us:.2f}"])
                n += 1
            except Exception as e:  # one case must not cost the others
                print(f"{op} {dt} {N}x{C}x{H} k{k}s{s}p{p}: {type(e).__name__}: {str(e)[:120]}", flush=True)
            f.flush()
    print(f"{n} of {len(items)} cases in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
