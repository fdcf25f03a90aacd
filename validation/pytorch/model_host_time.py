#!/usr/bin/env python3
"""A whole model's host time per training step, measured beside its step time, in one process.

host_costs.py measures one more layer's host cost on chains of identical layers on a tiny input; a
real model's host time is what dtsim sums from such costs. This measures the sum's target directly:
for each zoo model (DDP, world 1, ddp_reference.build_step: the same model, optimizer and execution
as the reference runs), at a batch where the host paces,

  * host_s: the host's time of one step (zero_grad + forward + loss, backward, optimizer step), read
    with perf_counter around each phase while the GPU is kept from falling behind
    (torch.cuda.synchronize() after each step, outside the timed phases), the median over ITERS;
  * step_s: the step time as ddp_reference.py measures it (CUDA events, no synchronisation: the host
    runs ahead where it can), the median over ITERS, in the same process right after.

Where the host paces, step_s is close to host_s; how close says how much of the host's time a step
hides. Writes one JSON with a row per configuration and the provenance.

  python3 validation/pytorch/model_host_time.py --out host_time.json \
      --models resnet18,resnet50 --batch 1 --precisions fp32,bf16 --modes contiguous:sgd:eager
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_reference  # noqa: E402


def sig4(x):
    return float(f"{x:.4g}")


def measure(name, batch, prec, mode, iters, warmup, device):
    memory_format, optimizer, execution = mode
    torch._dynamo.reset()
    model, ddp, opt, _, step_model = ddp_reference.build_step(name, device, memory_format, optimizer, execution, 0.01)
    size = ddp_reference.INPUT.get(name, 224)
    xs, ys = ddp_reference.make_batches(batch, size, 1000, 0, 2, device, torch.float32)
    if memory_format == "channels_last":
        xs = [x.contiguous(memory_format=torch.channels_last) for x in xs]
    crit = torch.nn.CrossEntropyLoss()
    bf16 = prec == "bf16"

    def step(it, phases=None):
        x, y = xs[it % 2], ys[it % 2]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = crit(step_model(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if phases is not None:
            phases.append((t1 - t0, t2 - t1, t3 - t2))

    for it in range(warmup):
        step(it)
    torch.cuda.synchronize()
    phases = []
    for it in range(iters):
        step(it, phases)
        torch.cuda.synchronize()  # the GPU never holds the host back
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    torch.cuda.synchronize()
    for it in range(iters):
        ev[it].record()
        step(it)
    ev[iters].record()
    torch.cuda.synchronize()
    steps = [ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(iters)]
    fwd, bwd, upd = (statistics.median(p[i] for p in phases) for i in range(3))
    host = statistics.median(sum(p) for p in phases)
    row = {"model": name, "batch": batch, "precision": prec, "memory_format": memory_format, "optimizer": optimizer,
           "execution": execution, "host_s": sig4(host), "host_fwd_s": sig4(fwd), "host_bwd_s": sig4(bwd),
           "host_step_s": sig4(upd), "step_s": sig4(statistics.median(steps)),
           "step_p10_s": sig4(ddp_reference.pct(steps, 0.1)), "step_p90_s": sig4(ddp_reference.pct(steps, 0.9))}
    del model, ddp, opt, step_model
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="alexnet,vgg16,resnet18,resnet50,mobilenet_v2,densenet121,googlenet,inception_v3")
    ap.add_argument("--batch", default="1", help="batch per GPU; a comma-separated list runs each in turn, in one process")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--modes", default="contiguous:sgd:eager",
                    help="memory_format:optimizer:execution, comma separated (ddp_reference.py's names)")
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=15)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29571")
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
    torch.backends.cudnn.benchmark = True
    rows = []
    for mode in (tuple(m.split(":")) for m in a.modes.split(",")):
        for name in a.models.split(","):
            for prec, batch in ((p, int(b)) for p in a.precisions.split(",") for b in a.batch.split(",")):
                try:
                    r = measure(name, batch, prec, mode, a.iters, a.warmup, device)
                except Exception as e:  # one configuration failing leaves the others
                    print(f"{name} {prec} {mode}: {type(e).__name__}: {e}", flush=True)
                    continue
                rows.append(r)
                print(f"{name:13s} b{batch} {prec} {':'.join(mode):28s} host {r['host_s'] * 1e3:7.2f} ms "
                      f"(fwd {r['host_fwd_s'] * 1e3:6.2f} bwd {r['host_bwd_s'] * 1e3:6.2f} step {r['host_step_s'] * 1e3:5.2f})"
                      f"  step {r['step_s'] * 1e3:7.2f} ms", flush=True)
    dist.destroy_process_group()
    prov = ddp_reference.provenance(1)
    prov["cpus"] = os.cpu_count()
    with open(a.out, "w") as f:
        json.dump({"method": __doc__.split("\n\n")[1].replace("\n", " "), "iters": a.iters, "warmup": a.warmup,
                   "rows": rows, "provenance": prov}, f, indent=1)


if __name__ == "__main__":
    main()
