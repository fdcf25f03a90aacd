#!/usr/bin/env python3
"""GPU time per kernel of a PyTorch DDP training iteration (torch.profiler), to compare with dtsim's
lowering and the harness: where does PyTorch spend GPU time that the harness does not?

  python3 validation/pytorch/kernel_profile.py --model vgg16 --batch 32 --precision bf16 --out prof.txt
"""
import argparse, collections, os, time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torchvision  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="vgg16")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29571")
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    # As ddp_reference.py: inception_v3 at 299 x 299 without its auxiliary head.
    kw = {"aux_logits": False, "init_weights": False} if a.model == "inception_v3" else {}
    size = 299 if a.model == "inception_v3" else 224
    model = getattr(torchvision.models, a.model)(num_classes=1000, **kw).to(dev)
    ddp = DDP(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(a.batch, 3, size, size, device=dev)
    y = torch.randint(0, 1000, (a.batch,), device=dev)
    bf16 = a.precision == "bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    # Wall time per iteration without the profiler: against the GPU time below it says how far the
    # host, not the GPU, sets the pace.
    t0 = time.perf_counter()
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    wall_us = (time.perf_counter() - t0) / 20 * 1e6
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.iters):
            step()
        torch.cuda.synchronize()
    per = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name][0] += e.device_time_total / a.iters
            per[e.name][1] += 1
    total = sum(v[0] for v in per.values())
    with open(a.out, "w") as f:
        f.write(f"# {a.model} b{a.batch} {a.precision} 1 GPU DDP, torch {torch.__version__}, {torch.cuda.get_device_name(0)}; "
                f"GPU time per iteration by kernel name (us), mean over {a.iters} profiled iterations\n")
        f.write(f"total_us {total:.1f}\n")
        f.write(f"wall_us_per_iteration {wall_us:.1f} (20 iterations, no profiler)\n")
        for name, (us, n) in sorted(per.items(), key=lambda kv: -kv[1][0]):
            f.write(f"{us:10.1f} {n // a.iters:5d}  {name[:160]}\n")
    dist.destroy_process_group()
    print(open(a.out).read()[:3000])


if __name__ == "__main__":
    main()
