#!/usr/bin/env python3
"""An all-reduce alone and beside compute. Inside a DDP step under the emulated socket
network the harness's bucket all-reduces took longer than the same sizes alone (resnet18 b32, s1x1:
7.26 ms against 6.43 predicted from the standalone sweep). This measures that slowdown apart from any
training run, so a model of it is not fitted to the runs it is checked on.

One process per GPU (torch.multiprocessing); every rank does the same. For each size, a float32 sum
all-reduce on a side stream (as DDP's communication stream) is timed with CUDA events on that stream:
  alone        nothing else on the GPU;
  memory       the default stream streams a large tensor (x.mul_(1.0001), 1 GiB, back to back);
  matmul       the default stream runs bf16 8192^3 matmuls back to back;
  step         the default stream runs torchvision resnet18 forward and backward at batch 32, bf16
               autocast (a training step's kernels; the all-reduce starts after the forward).
Each row: the median over --samples of the slowest rank. The environment (NCCL_*) is the caller's.

usage: allreduce_beside_compute.py --out FILE.csv [--gpus 2] [--sizes-mib 2,8,16,28,32] [--samples 7]
"""
import argparse, csv, datetime, os, statistics

import torch
import torch.distributed as dist

from dist_launch import add_rank_options, init_rank, run_ranks


def worker(rank, a):
    dev = init_rank(rank, a)
    comm = torch.cuda.Stream(device=dev)
    big = torch.ones(256 << 20, device=dev)  # 1 GiB of float32
    m1 = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    import torchvision
    net = torchvision.models.resnet18().to(dev)
    img = torch.randn(32, 3, 224, 224, device=dev)
    lab = torch.randint(0, 1000, (32,), device=dev)

    def load(kind):
        if kind == "memory":
            for _ in range(6):
                big.mul_(1.0001)
        elif kind == "matmul":
            for _ in range(12):
                torch.mm(m1, m1)
        elif kind == "step":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(net(img), lab)
            return loss
        return None

    rows = []
    for mib in [float(s) for s in a.sizes_mib.split(",")]:
        x = torch.ones(int(mib * (1 << 20)) // 4, device=dev)
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        for kind in ("alone", "memory", "matmul", "step"):
            times = []
            for _ in range(a.samples):
                dist.barrier()
                torch.cuda.synchronize()
                loss = load(kind) if kind == "step" else None
                comm.wait_stream(torch.cuda.current_stream())
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.cuda.stream(comm):
                    s.record()
                    dist.all_reduce(x)
                    e.record()
                if kind == "step":
                    loss.backward()
                elif kind != "alone":
                    load(kind)
                torch.cuda.synchronize()
                t = torch.tensor([s.elapsed_time(e)], device=dev)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                times.append(t.item() / 1e3)
            rows.append([mib, kind, "%.5g" % statistics.median(times), "%.5g" % min(times), "%.5g" % max(times)])
        del x
    if rank == 0:
        with open(a.out, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["# allreduce_beside_compute.py, torch %s, NCCL %s, %s UTC, %s; NCCL env: %s" % (
                torch.__version__, ".".join(map(str, torch.cuda.nccl.version())),
                datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), torch.cuda.get_device_name(0),
                " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")))])
            w.writerow(["size_MiB", "beside", "time_median_s", "time_min_s", "time_max_s"])
            w.writerows(rows)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes-mib", default="2,8,16,28,32")
    add_rank_options(ap, samples=7, port=29571)
    run_ranks(worker, ap.parse_args())


if __name__ == "__main__":
    main()
