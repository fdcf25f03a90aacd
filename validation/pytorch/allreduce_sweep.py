#!/usr/bin/env python3
"""All-reduce bus bandwidth as PyTorch's ProcessGroupNCCL gives it, printed in nccl-tests' format so that
`dtsim calibrate --measured LOG` reads it (PyTorch DDP's all-reduces under the emulated
socket network, beside the harness's collective mode measured in the same environment).

    python3 validation/pytorch/allreduce_sweep.py --gpus 2 [--max-bytes 512M] [--samples 6] > allreduce_torch.log

One process per GPU (torch.multiprocessing), float32 sum all-reduce of 4 B .. --max-bytes (x4 steps),
each size --warmup times untimed, then --samples calls, each timed alone with CUDA events on the
current stream after a barrier; the row's time is the median over samples of the slowest rank.
The environment (NCCL_*) is the caller's: run it under the same settings as the training runs.
"""
import argparse
import datetime
import os
import socket
import statistics

import torch
import torch.distributed as dist

from dist_launch import add_rank_options, init_rank, run_ranks


def parse_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def worker(rank, a):
    dev = init_rank(rank, a)
    if rank == 0:
        print("# allreduce_sweep.py (PyTorch %s, NCCL %s), %s UTC" % (torch.__version__, ".".join(map(str, torch.cuda.nccl.version())),
                                                                     datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")))
        print("# NCCL environment: " + " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")))
        print("# nThread 1 nGpus 1 minBytes 4 maxBytes %d step: 4(factor) warmup iters: %d iters: %d" % (a.max_bytes, a.warmup, a.samples))
    dist.barrier()
    for r in range(a.gpus):
        if r == rank:
            print("#  Rank %2d Group  0 Pid %6d on %s device %2d [0x00] %s" % (rank, os.getpid(), socket.gethostname(), rank,
                                                                               torch.cuda.get_device_name(rank)), flush=True)
        dist.barrier()
    if rank == 0:
        print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    size = 4
    while size <= a.max_bytes:
        x = torch.ones(size // 4, dtype=torch.float32, device=dev)
        for _ in range(a.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(a.samples):
            dist.barrier()
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            dist.all_reduce(x)
            e.record()
            e.synchronize()
            t = torch.tensor([s.elapsed_time(e) * 1e3], device=dev)  # us
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            times.append(t.item())
        if rank == 0:
            us = statistics.median(times)
            algbw = size / (us * 1e-6) / 1e9
            busbw = algbw * 2 * (a.gpus - 1) / a.gpus
            print("%12d  %12d     float     sum      -1  %8.2f  %6.2f  %6.2f       0  %8.2f  %6.2f  %6.2f       0" %
                  (size, size // 4, us, algbw, busbw, us, algbw, busbw), flush=True)
        del x
        size *= 4
    if rank == 0:
        print("# Collective test concluded: all_reduce_perf")
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-bytes", type=parse_bytes, default=512 << 20)
    ap.add_argument("--warmup", type=int, default=2)
    add_rank_options(ap, samples=6, port=29561)
    run_ranks(worker, ap.parse_args())


if __name__ == "__main__":
    main()
