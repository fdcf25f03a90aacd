#!/usr/bin/env python3
"""What PyTorch runs on the GPU in each training mode: torch.profiler's kernel list of one
DDP iteration on one GPU, for contiguous against channels_last tensors, SGD against AdamW / Adam, and
eager against torch.compile (with and without CUDA graphs). dtsim's lowering of each mode
(docs/training-modes.md) is read off these lists.

  python3 validation/pytorch/mode_profile.py --out DIR \
      --configs "resnet50:128:bf16:channels_last:adamw:eager resnet50:128:bf16:contiguous:sgd:compile-cuda-graphs"

Per configuration DIR gets <model>_b<batch>_<precision>_<format>_<optimizer>_<execution>.txt:
  - GPU time per kernel name (us per iteration, mean over the profiled iterations) and launches;
  - the launch sequence of the last profiled iteration (start offset, duration, name), which shows
    the order, and so which layer a kernel belongs to;
  - wall time per iteration without the profiler and the CPU time of the optimizer step;
  - the host's side: self CPU time and calls per iteration of the 40 host ops that take most of it
    (torch.profiler's key_averages), which shows what a step pays the host where no kernel is issued.
"""
import argparse, collections, os, time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

from ddp_reference import INPUT, build_step  # noqa: E402  (this folder is on sys.path when run as a script)
import transformer_models  # noqa: E402


def profile_config(dev, model_name, batch, prec, fmt, optimizer, execution, iters, out_dir, seq_len=None):
    torch.manual_seed(0)
    size = INPUT.get(model_name, 224)
    cl = fmt == "channels_last"
    # As ddp_reference.py builds its runs (SGD at its default learning rate, 0.01).
    model, ddp, opt, _, step_model = build_step(model_name, dev, fmt, optimizer, execution, 0.01)
    x = torch.randn(batch, 3, size, size, device=dev)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=dev)
    loss_of = torch.nn.functional.cross_entropy
    if model_name in transformer_models.LANGUAGE_MODELS:  # token ids in, the loss over every token
        vocab = transformer_models.vocabulary(model_name)
        seq_len = seq_len or transformer_models.context(model_name)
        x = torch.randint(0, vocab, (batch, seq_len), device=dev)
        y = torch.randint(0, vocab, (batch, seq_len), device=dev)
        loss_of = lambda out, t: torch.nn.functional.cross_entropy(out.view(-1, vocab), t.view(-1))  # noqa: E731
    sixteen = prec in ("bf16", "fp16")
    scaler = torch.amp.GradScaler("cuda", enabled=prec == "fp16")
    dtype = torch.float16 if prec == "fp16" else torch.bfloat16

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=sixteen):
            loss = loss_of(step_model(x), y)
        scaler.scale(loss).backward()
        with record_function("optimizer_step"):
            scaler.step(opt)
            scaler.update()

    t0 = time.perf_counter()
    for _ in range(8):
        step()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    wall_us = (time.perf_counter() - t0) / 20 * 1e6
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    per = collections.defaultdict(lambda: [0.0, 0])
    gpu = []
    opt_cpu_us = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name][0] += e.device_time_total / iters
            per[e.name][1] += 1
            gpu.append((e.time_range.start, e.time_range.end - e.time_range.start, e.name))
        elif e.name == "optimizer_step":
            opt_cpu_us.append(e.cpu_time_total)
    total = sum(v[0] for v in per.values())
    gpu.sort()
    n_per_iter = len(gpu) // iters if iters else 0
    last = gpu[-n_per_iter:] if n_per_iter else []
    name = f"{model_name}_b{batch}{'_t%d' % seq_len if seq_len else ''}_{prec}_{fmt}_{optimizer}_{execution}.txt"
    with open(os.path.join(out_dir, name), "w") as f:
        f.write(f"# {model_name} b{batch} {prec} {fmt} {optimizer} {execution}, 1 GPU DDP, torch {torch.__version__}, "
                f"cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}; cudnn.benchmark on\n")
        f.write(f"total_gpu_us_per_iteration {total:.1f} (mean over {iters} profiled iterations)\n")
        f.write(f"wall_us_per_iteration {wall_us:.1f} (20 iterations, no profiler)\n")
        f.write(f"warmup_s {warm_s:.1f} (8 iterations, compilation included)\n")
        if opt_cpu_us:
            f.write(f"optimizer_step_cpu_us {sorted(opt_cpu_us)[len(opt_cpu_us) // 2]:.1f} (median)\n")
        f.write("## by name: us per iteration, launches per iteration, name\n")
        for kname, (us, n) in sorted(per.items(), key=lambda kv: -kv[1][0]):
            f.write(f"{us:10.1f} {n // iters:5d}  {kname[:200]}\n")
        host = sorted((e for e in prof.key_averages() if e.self_cpu_time_total > 0), key=lambda e: -e.self_cpu_time_total)
        f.write(f"## host: self CPU us per iteration, calls per iteration, op (top 40; all ops: "
                f"{sum(e.self_cpu_time_total for e in host) / iters:.1f} us)\n")
        for e in host[:40]:
            f.write(f"{e.self_cpu_time_total / iters:10.1f} {e.count / iters:7.1f}  {e.key[:160]}\n")
        f.write(f"## launch sequence of the last iteration ({len(last)} launches): start offset us, duration us, name\n")
        t_first = last[0][0] if last else 0
        for start, dur, kname in last:
            f.write(f"{start - t_first:10.1f} {dur:8.1f}  {kname[:160]}\n")
    print(f"{name}: gpu {total:.0f} us, wall {wall_us:.0f} us, warm-up {warm_s:.1f} s", flush=True)
    del step_model, ddp, model, opt
    torch._dynamo.reset()
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", required=True,
                    help="space-separated model:batch:precision:format:optimizer:execution[:seq_len]")
    ap.add_argument("--iters", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29573")
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    for c in a.configs.split():
        m, b, p, fmt, o, ex, *t = c.split(":")
        try:
            profile_config(dev, m, int(b), p, fmt, o, ex, a.iters, a.out, int(t[0]) if t else None)
        except Exception as e:  # one failing configuration must not cost the others
            print(f"{c}: failed: {type(e).__name__}: {e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
