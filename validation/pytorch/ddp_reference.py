#!/usr/bin/env python3
"""PyTorch DistributedDataParallel reference runs for dtsim validation.

torchvision models under DDP (NCCL, one process per GPU via torch.multiprocessing.spawn, default
bucket settings: 25 MiB, first bucket 1 MiB, broadcast_buffers on), SGD with momentum, synthetic
learnable data already on the GPU, cudnn.benchmark on, fp32 (PyTorch defaults: TF32 convolutions,
strict FP32 matmuls) or bf16 autocast (fp32 master weights, fp32 gradient all-reduce). Writes one
measured-run JSON ("dtsim-measured-run/1", framework "pytorch", see validation/README.md) per
configuration: <out>/<model>_b<batch>_<gpus>gpu_<precision>.json.

Ways of running beyond eager NCHW SGD (dtsim's issue "What users run"), each a list whose every
combination runs: --memory-formats contiguous,channels_last (model and input in torch.channels_last),
--optimizers sgd,adamw,adam (torch.optim's default foreach implementations), --executions
eager,compile,compile-cuda-graphs (torch.compile of the DDP module, default mode or
mode="reduce-overhead"). A run in any of these beyond the default writes "execution", "memory_format"
and "optimizer" and adds them to its file name, e.g. resnet50_b64_1gpu_bf16_channels_last_adamw.json.

usage: python3 validation/pytorch/ddp_reference.py --out DIR --gpus 2 \
           --configs "resnet50:16,32,64 densenet121:8" --precisions fp32,bf16 [--iters 25 --warmup 5]
"""
import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import traceback

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torchvision  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_models  # noqa: E402
from dist_launch import emulate_node_of_rank  # noqa: E402

INPUT = {"inception_v3": 299}


def sig4(x):
    return float(f"{x:.4g}")


def pct(v, q):
    s = sorted(v)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] * (1 - (pos - lo)) + s[hi] * (pos - lo)


def git_commit():
    c = os.environ.get("DTSIM_GIT_COMMIT")
    if c:
        return c
    try:
        return subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=os.path.dirname(__file__),
                                       stderr=subprocess.DEVNULL, text=True).strip()
    except Exception:
        return "unknown"


def provenance(world):
    p = torch.cuda.get_device_properties(0)
    drv = "unknown"
    try:
        drv = subprocess.check_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                      text=True).splitlines()[0].strip()
    except Exception:
        pass
    nccl = torch.cuda.nccl.version()
    return {
        "framework": "pytorch",
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "cuda_runtime": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
        "python": platform.python_version(),
        "gpus": [{"index": i, "name": torch.cuda.get_device_name(i)} for i in range(world)],
        "gpu": {"name": p.name, "compute_capability": f"{p.major}.{p.minor}", "sm_count": p.multi_processor_count,
                "memory_bytes": p.total_memory},
        "driver": drv, "host": socket.gethostname(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": git_commit(),
        # every NCCL_* setting too: the transport and its sockets decide what DDP's all-reduce costs
        "environment": {**{k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                         "NVSHMEM_DISABLE_NVLS", "CUDA_VISIBLE_DEVICES")},
                        **{k: v for k, v in sorted(os.environ.items()) if k.startswith(("NCCL_", "DTSIM_EMULATE_"))}},
        "settings": {"cudnn.benchmark": torch.backends.cudnn.benchmark,
                     "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                     "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32},
    }


def make_batches(n, size, classes, rank, nb, device, dtype):
    """Synthetic, learnable: label random; input = N(0,1) noise + a fixed +-1 pattern of the label."""
    xs, ys = [], []
    for b in range(nb):
        g = torch.Generator().manual_seed(1000 * rank + b + 1)
        y = torch.randint(0, classes, (n,), generator=g)
        x = torch.randn(n, 3, size, size, generator=g)
        for i in range(n):
            pg = torch.Generator().manual_seed(int(y[i]) + 7)
            x[i] += torch.randint(0, 2, (3, size, size), generator=pg).float() * 2 - 1
        xs.append(x.to(device=device, dtype=dtype))
        ys.append(y.to(device))
    return xs, ys


def host_probe_us(device, n=400, blocks=5):
    """Host time per eager op on this process and machine: a 1-element add_ (dispatch + launch) and a
    tiny cuDNN convolution (PyTorch's convolution path on the host: plan cache, descriptors, launch).
    Median over blocks of n ops, GPU idle before each block; the GPU keeps up (each kernel is a few us),
    so the host sets the pace. What a host-bound run is made of, measured beside it."""
    z = torch.zeros(1, device=device)
    x = torch.randn(1, 8, 8, 8, device=device)
    w = torch.randn(8, 8, 3, 3, device=device)
    ops = {"add_": lambda: z.add_(1.0), "conv2d": lambda: torch.nn.functional.conv2d(x, w, padding=1)}
    out = {}
    for key, op in ops.items():
        op()
        per = []
        for _ in range(blocks):
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(n):
                op()
            per.append((time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
        out[key] = sig4(statistics.median(per))
    return out


OPTIMIZERS = {
    "sgd": ("sgd_momentum", "torch.optim.SGD (foreach default)"),
    "adamw": ("adamw", "torch.optim.AdamW (foreach default)"),
    "adam": ("adam", "torch.optim.Adam (foreach default)"),
}


def make_optimizer(kind, params, lr):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=1e-4), {"momentum": 0.9, "weight_decay": 1e-4, "lr": lr}
    if kind == "adamw":  # PyTorch's defaults: betas (0.9, 0.999), eps 1e-8, weight decay 0.01
        return torch.optim.AdamW(params, lr=1e-3), {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}
    return torch.optim.Adam(params, lr=1e-3), {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0}


def build_step(name, device, memory_format, optimizer, execution, lr):
    """The torchvision model in its memory format, wrapped in DDP, its optimizer and the module the
    step calls (torch.compile'd for the compile executions); also what mode_profile.py profiles."""
    if name in transformer_models.LANGUAGE_MODELS:
        model = transformer_models.build(name).to(device)
    else:
        # Without the auxiliary heads, as dtsim's zoo defines them (configs/models/googlenet.json, inception_v3.json).
        kw = {"aux_logits": False, "init_weights": False} if name in ("inception_v3", "googlenet") else {}
        model = getattr(torchvision.models, name)(num_classes=1000, **kw).to(device)
    if memory_format == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    ddp = DDP(model, device_ids=[device.index])
    opt, opt_settings = make_optimizer(optimizer, ddp.parameters(), lr)
    step_model = ddp
    if execution == "compile":
        step_model = torch.compile(ddp)
    elif execution == "compile-cuda-graphs":
        step_model = torch.compile(ddp, mode="reduce-overhead")
    return model, ddp, opt, opt_settings, step_model


def make_token_batches(n, t, vocab, rank, nb, device):
    """Random token ids; the targets are the ids shifted by one (next-token prediction, as nanoGPT
    feeds GPT-2; for BERT's masked-LM head simply a label per token)."""
    xs, ys = [], []
    for b in range(nb):
        g = torch.Generator().manual_seed(1000 * rank + b + 1)
        ids = torch.randint(0, vocab, (n, t + 1), generator=g)
        xs.append(ids[:, :-1].contiguous().to(device))
        ys.append(ids[:, 1:].contiguous().to(device))
    return xs, ys


def run_config(rank, world, name, batch, prec, a, mode=("contiguous", "sgd", "eager"), seq_len=None):
    memory_format, optimizer, execution = mode
    device = torch.device("cuda", 0 if world == 1 else rank)
    size = INPUT.get(name, 224)
    cl = memory_format == "channels_last"
    model, ddp, opt, opt_settings, step_model = build_step(name, device, memory_format, optimizer, execution, a.lr)
    crit = torch.nn.CrossEntropyLoss()
    language = name in transformer_models.LANGUAGE_MODELS
    if language:
        vocab = transformer_models.vocabulary(name)
        xs, ys = make_token_batches(batch, seq_len, vocab, rank, a.nbatches, device)
        # logits B x T x V against B x T targets: the loss over every token (dtsim's zoo: B*T rows)
        loss_of = lambda out, y: crit(out.view(-1, vocab), y.view(-1))  # noqa: E731
    else:
        xs, ys = make_batches(batch, size, 1000, rank, a.nbatches, device, torch.float32)
        loss_of = crit
    if cl:
        xs = [x.contiguous(memory_format=torch.channels_last) for x in xs]
    bf16 = prec == "bf16"
    fp16 = prec == "fp16"  # autocast float16 with GradScaler, as PyTorch's AMP recipe
    scaler = torch.amp.GradScaler("cuda", enabled=fp16)
    n_it = a.warmup + a.iters
    # Peak memory of this configuration alone (model, optimizer state, DDP buckets, activations):
    # what dtsim's memory model predicts as allocated_peak_bytes.
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(device)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4 * n_it + 1)]
    losses = []
    ddp.train()
    t0 = time.time()
    for it in range(n_it):
        if it == a.warmup:
            torch.cuda.synchronize()
            dist.barrier()
            # cudnn.benchmark's trial workspaces inflate the warm-up peak; the measured iterations'
            # peak is the steady state a training run lives with.
            warm_peak = (torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device))
            # ProcessGroupNCCL keeps the tensors of a finished all-reduce (here the first iteration's
            # buckets, replaced when DDP rebuilds them) until its watchdog thread cleans the work up;
            # a peak counted before that holds one more parameter-sized copy, or not, by a race.
            time.sleep(a.settle_s)
            probe_before = host_probe_us(device) if a.host_probe else None
            torch.cuda.reset_peak_memory_stats(device)
            t_timed = time.time()
        ev[4 * it].record()
        x, y = xs[it % a.nbatches], ys[it % a.nbatches]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16 if fp16 else torch.bfloat16, enabled=bf16 or fp16):
            out = step_model(x)
            loss = loss_of(out, y)
        ev[4 * it + 1].record()
        scaler.scale(loss).backward()
        ev[4 * it + 2].record()
        scaler.step(opt)
        scaler.update()
        ev[4 * it + 3].record()
        if a.sync_every_step:
            torch.cuda.synchronize()
        losses.append(loss.detach())
    ev[4 * n_it].record()
    torch.cuda.synchronize()
    wall = time.time() - t_timed
    probe_after = host_probe_us(device) if a.host_probe else None
    mem = torch.tensor([torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device),
                        warm_peak[0], warm_peak[1]], device=device, dtype=torch.int64)
    dist.all_reduce(mem, op=dist.ReduceOp.MAX)
    times, fwd, bwd, optt = [], [], [], []
    for it in range(a.warmup, n_it):
        nxt = ev[4 * (it + 1)]
        times.append(ev[4 * it].elapsed_time(nxt) * 1e-3)
        fwd.append(ev[4 * it].elapsed_time(ev[4 * it + 1]) * 1e-3)
        bwd.append(ev[4 * it + 1].elapsed_time(ev[4 * it + 2]) * 1e-3)
        optt.append(ev[4 * it + 2].elapsed_time(ev[4 * it + 3]) * 1e-3)
    # slowest rank per iteration
    tt = torch.tensor(times, device=device, dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    slow = tt.tolist()
    # parameters bit-identical across ranks?
    flat = torch.cat([p.detach().float().flatten() for p in model.parameters()])
    bits = flat.view(torch.int32).to(torch.int64)
    h = torch.stack([(bits * (torch.arange(bits.numel(), device=device) % 1000003 + 1)).sum(), bits.sum()])
    hs = [torch.zeros_like(h) for _ in range(world)]
    dist.all_gather(hs, h)
    same = all(torch.equal(hs[0], x) for x in hs)
    lv = [float(v) for v in torch.stack(losses).float().cpu()]
    nparams = sum(p.numel() for p in model.parameters())
    res = None
    if rank == 0:
        med = statistics.median(slow)
        cyc = min(a.nbatches, len(lv) // 2)
        head, tail = lv[:cyc], lv[-cyc:]
        res = {
            "schema": "dtsim-measured-run/1", "source": "pytorch-ddp", "framework": "pytorch",
            "model": name, "model_file": f"configs/models/{name}.json",
            **({"model_source": f"validation/pytorch/transformer_models.py build('{name}')", "sequence_length": seq_len,
                "throughput_tokens_per_s": sig4(world * batch * seq_len / statistics.median(slow))} if language else
               {"torchvision_model": f"torchvision.models.{name}(num_classes=1000"
                                     f"{', aux_logits=False, init_weights=False' if name in ('inception_v3', 'googlenet') else ''})"}),
            "batch_per_gpu": batch, "gpus": world, "nodes": -(-world // a.gpus_per_node),
            "gpus_per_node": min(world, a.gpus_per_node),
            "precision": prec,
            "precision_detail": ("torch.autocast(cuda, bfloat16) around forward and loss; fp32 parameters, fp32 "
                                 "gradients, fp32 all-reduce" if bf16 else
                                 "torch.autocast(cuda, float16) around forward and loss, torch.amp.GradScaler "
                                 "(scale, unscale + inf check in step, update); fp32 parameters, gradients and "
                                 "all-reduce" if fp16 else
                                 "fp32; PyTorch defaults: TF32 allowed for cuDNN convolutions, not for matmuls"),
            "optimizer": dict({"name": OPTIMIZERS[optimizer][0], "impl": OPTIMIZERS[optimizer][1]}, **opt_settings),
            "ddp": {"bucket_bytes": 25 * 1048576, "first_bucket_bytes": 1048576, "overlap": True,
                    "broadcast_buffers": True, "gradient_as_bucket_view": False, "parameters": nparams,
                    "allreduce": "DDP defaults (NCCL backend, allreduce of gradient buckets, divided by world size)"},
            "conv_api": "pytorch (cudnn.benchmark=True)",
            "layout": "tokens (B x T ids)" if language else "NHWC (torch.channels_last)" if cl else "NCHW",
            "iterations": {"warmup": a.warmup, "measured": a.iters, "settle_s_after_warmup": a.settle_s},
            "iteration_time_s": {"median": sig4(med), "min": sig4(min(slow)), "max": sig4(max(slow)),
                                 "p10": sig4(pct(slow, 0.1)), "p90": sig4(pct(slow, 0.9)),
                                 "mean": sig4(sum(slow) / len(slow)),
                                 "spread": sig4(pct(slow, 0.9) - pct(slow, 0.1)),
                                 "samples": [sig4(v) for v in slow]},
            "iteration_timing": ("CUDA events at each iteration's start (before zero_grad), no host synchronisation "
                                 "between iterations; iteration k = start(k+1) - start(k); slowest rank per "
                                 "iteration (all_reduce MAX); wall-clock check: %.4g s per iteration" % (wall / a.iters)),
            "throughput_samples_per_s": sig4(world * batch / med),
            "breakdown_s": {"forward": sig4(statistics.median(fwd)), "backward": sig4(statistics.median(bwd)),
                            "optimizer": sig4(statistics.median(optt)), "allreduce_total": None,
                            "allreduce_exposed": None, "host_idle": None,
                            "note": "rank 0, medians; forward = start to after loss (incl. zero_grad), backward = "
                                    "loss.backward() incl. DDP's all-reduces that are not hidden, optimizer = step()"},
            "memory": {"peak_allocated_bytes": int(mem[0]), "peak_reserved_bytes": int(mem[1]),
                       "warmup_peak_allocated_bytes": int(mem[2]), "warmup_peak_reserved_bytes": int(mem[3]),
                       "note": "torch.cuda.max_memory_allocated / max_memory_reserved, largest over ranks: peak_* over "
                               "the measured iterations (counters reset after warm-up), warmup_peak_* from after the "
                               "model, optimizer and data (nbatches input batches) were created to the end of warm-up, "
                               "which includes cudnn.benchmark's trial workspaces"},
            "layers": [],
            "allreduces": [],
            "checks": {"loss_first": sig4(sum(head) / cyc), "loss_last": sig4(sum(tail) / cyc),
                       "loss_fell": sum(tail) < sum(head), "losses": [sig4(v) for v in lv],
                       "loss_note": f"loss_first / loss_last: mean loss of the first / last {cyc} iterations (one "
                                    "pass over the data), rank 0",
                       "params_identical_across_ranks": same},
            "dataset": (f"synthetic: {a.nbatches} batches per rank on the GPU of random token ids, targets the ids "
                        "shifted by one" if language else
                        f"synthetic: {a.nbatches} batches per rank on the GPU, label random, input = N(0,1) + a fixed "
                        "+-1 pattern of the label"),
            "config_wall_s": sig4(time.time() - t0),
            "host_sync_every_step": a.sync_every_step,
        }
        if mode != ("contiguous", "sgd", "eager"):
            res["execution"] = {"memory_format": memory_format, "optimizer": optimizer, "execution": execution,
                                "torch_compile": {"compile": "torch.compile(ddp)",
                                                  "compile-cuda-graphs": "torch.compile(ddp, mode='reduce-overhead')"}
                                .get(execution, "none (eager)")}
        if a.host_probe:
            res["host_probe_us"] = {"before": probe_before, "after": probe_after,
                                    "method": "validation/pytorch/ddp_reference.py host_probe_us: host time per op "
                                              "(median of 5 blocks of 400) of a 1-element add_ and of a 1x8x8x8 "
                                              "3x3 conv2d, rank 0, before (after the settle wait) and after the "
                                              "measured iterations"}
    del ddp, step_model, model, opt, xs, ys, out, loss, losses
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return res


def worker(rank, world, a, port):
    emulate_node_of_rank(rank)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(0 if world == 1 else rank)
    torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            device_id=torch.device("cuda", 0 if world == 1 else rank))
    prov = provenance(torch.cuda.device_count()) if rank == 0 else None
    configs = []
    modes = [(f, o, e) for f in a.memory_formats.split(",") for o in a.optimizers.split(",") for e in a.executions.split(",")]
    for item in a.configs.split():
        name, bs = item.split(":")
        # a language model's batch per GPU counts sequences; it runs at every --seq-lens length up to
        # its context (default the context)
        seqs = [None]
        if name in transformer_models.LANGUAGE_MODELS:
            ctx = transformer_models.context(name)
            seqs = [t for t in (int(v) for v in a.seq_lens.split(",")) if t <= ctx] if a.seq_lens else [ctx]
        for b in bs.split(","):
            for t in seqs:
                for prec in a.precisions.split(","):
                    for mode in modes:
                        configs.append((name, int(b), prec, mode, t))
    for done_before, (name, batch, prec, mode, seq_len) in enumerate(configs):
        suffix = "".join("_" + m for m, default in zip(mode, ("contiguous", "sgd", "eager")) if m != default)
        tag = f"{name}_b{batch}{'_t%d' % seq_len if seq_len else ''}_{world}gpu_{prec}{suffix}"
        err = None
        try:
            res = run_config(rank, world, name, batch, prec, a, mode, seq_len)
        except torch.cuda.OutOfMemoryError as e:  # deterministic: every rank gets it
            err = "no_memory: " + str(e).splitlines()[0]
            res = None
            torch.cuda.empty_cache()
        if rank == 0:
            if err:
                print(f"{tag:40s} skipped: {err}", flush=True)
                with open(os.path.join(a.out, "skipped.txt"), "a") as f:
                    f.write(f"{tag}\t{err}\n")
                continue
            # Peak memory depends on what ran before in the same process (an extra FP32 parameter copy
            # was seen after other configurations): say how many did.
            res["configs_before_in_process"] = done_before
            res["provenance"] = dict(prov, date_utc_end=datetime.datetime.now(datetime.timezone.utc)
                                     .strftime("%Y-%m-%dT%H:%M:%SZ"))
            with open(os.path.join(a.out, tag + ".json"), "w") as f:
                json.dump(res, f, indent=1)
            it = res["iteration_time_s"]
            print(f"{tag:40s} median {it['median'] * 1e3:9.3f} ms  spread {it['spread'] * 1e3:7.3f} ms  "
                  f"loss {res['checks']['loss_first']:.3f} -> {res['checks']['loss_last']:.3f}  params_same "
                  f"{res['checks']['params_identical_across_ranks']}  ({res['config_wall_s']:.1f} s)", flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--configs", default="resnet50:32")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--memory-formats", default="contiguous", help="contiguous, channels_last (comma-separated)")
    ap.add_argument("--optimizers", default="sgd", help="sgd, adamw, adam (comma-separated)")
    ap.add_argument("--executions", default="eager", help="eager, compile, compile-cuda-graphs (comma-separated)")
    ap.add_argument("--gpus-per-node", type=int, default=1 << 20,
                    help="the placement to record: 1 where NCCL runs on sockets and every GPU is its own node "
                         "(validation/scripts/run_emulated.sh); default all GPUs in one node")
    ap.add_argument("--seq-lens", default="",
                    help="sequence lengths (comma-separated) for the language models (gpt2_small, bert_base of "
                         "transformer_models.py); default each model's context")
    ap.add_argument("--iters", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--nbatches", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--port", type=int, default=29517)
    ap.add_argument("--settle-s", type=float, default=2.0,
                    help="seconds to wait after the warm-up before the measured iterations (NCCL's watchdog "
                         "frees the warm-up's finished work meanwhile); 0 as in the runs before 2026-11-26 10:00")
    ap.add_argument("--host-probe", action="store_true",
                    help="time a tiny add_ and conv2d per op on the host before and after the measured iterations "
                         "(host_probe_us in the output): how fast this process's host is, beside its run")
    ap.add_argument("--sync-every-step", action="store_true",
                    help="torch.cuda.synchronize() after each optimizer step (the host never runs ahead)")
    a = ap.parse_args()
    for flag, value, known in [("--memory-formats", a.memory_formats, {"contiguous", "channels_last"}),
                               ("--optimizers", a.optimizers, set(OPTIMIZERS)),
                               ("--executions", a.executions, {"eager", "compile", "compile-cuda-graphs"})]:
        for v in value.split(","):
            if v not in known:
                ap.error(f"{flag}: unknown '{v}' (known: {', '.join(sorted(known))})")
    if a.iters < 20:
        print("note: fewer than 20 timed iterations", file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    if a.gpus == 1:  # one rank: no second interpreter to start (the same DDP and NCCL set-up)
        worker(0, 1, a, a.port)
    else:
        mp.spawn(worker, args=(a.gpus, a, a.port), nprocs=a.gpus, join=True)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
