#!/usr/bin/env python3
"""The GPU kernels of one training step under bf16 autocast and under fp16 autocast with GradScaler,
from torch.profiler: which kernels the scaler adds (loss scaling, unscale with the inf check, scale
update) and what they cost, and whether the convolutions and GEMMs of the two precisions are the same
kernels (so that fp16 may be priced with the bf16 predictors).

usage: amp_step_kernels.py --out FILE.json [--model resnet50] [--batch 64]
"""
import argparse
import collections
import json
import time

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile


def step_kernels(model, x, y, opt, dtype, scaler):
    crit = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype):
            loss = crit(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(6):  # warm-up: cudnn.benchmark's search, the scaler's first steps
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    by_name = collections.OrderedDict()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            d = by_name.setdefault(e.name, {"calls": 0, "gpu_us": 0.0})
            d["calls"] += 1
            d["gpu_us"] += e.device_time
    return by_name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    res = {"model": a.model, "batch": a.batch, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "layout": "NCHW", "optimizer": "torch.optim.SGD(momentum=0.9, weight_decay=1e-4), foreach"}
    for name, dtype, scaled in [("bf16", torch.bfloat16, False), ("fp16", torch.float16, True)]:
        torch.manual_seed(0)
        model = getattr(torchvision.models, a.model)(num_classes=1000).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        scaler = torch.amp.GradScaler("cuda", enabled=scaled)
        x = torch.randn(a.batch, 3, 224, 224, device="cuda")
        y = torch.randint(0, 1000, (a.batch,), device="cuda")
        res[name] = step_kernels(model, x, y, opt, dtype, scaler)
        del model, opt
        torch.cuda.empty_cache()
    json.dump(res, open(a.out, "w"), indent=1)
    for name in ("bf16", "fp16"):
        tot = sum(v["gpu_us"] for v in res[name].values())
        print(name, "kernels", sum(v["calls"] for v in res[name].values()), "GPU us %.0f" % tot)
    only16 = [k for k in res["fp16"] if k not in res["bf16"]]
    print("kernel names only in fp16:", len(only16))
    for k in only16:
        print("  %6d calls %9.1f us  %s" % (res["fp16"][k]["calls"], res["fp16"][k]["gpu_us"], k[:150]))


if __name__ == "__main__":
    main()
