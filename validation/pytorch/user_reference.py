#!/usr/bin/env python3
"""The models users bring (user_models.py), exported and measured as their users run them: one GPU,
eager PyTorch, no DDP (a one-GPU training loop), bf16 autocast or fp32 (PyTorch's defaults: TF32
convolutions, strict FP32 matmuls), cudnn.benchmark on, torch.optim's default (foreach) AdamW or SGD
with momentum, zero_grad(set_to_none=True).

    python3 validation/pytorch/user_reference.py export  --out DIR [--only a,b] [--workers 8]
    python3 validation/pytorch/user_reference.py measure --out DIR [--only a,b] [--precisions bf16,fp32]
    python3 validation/pytorch/user_reference.py modes   --out DIR [--only a,b]   # checkpointing, accumulation

export: per model, in its own process on the CPU, the Step module (user_models.Step: the model and
its loss) with the TorchScript exporter (dynamo=False, training=TRAINING, do_constant_folding=False,
opset 17; token ids, attention mask and labels as inputs, the batch dynamic) and, for the models in
DYNAMO, the dynamo exporter too (opset 18). Float initializers of more than 16 elements are stripped
to their name, dims and type (dtsim reads only dims). DIR/onnx/<name>.onnx, <name>.dynamo.onnx,
DIR/onnx/provenance.json.

measure: per model, in a fresh process (so that one model's cached blocks do not inflate the next
one's reserved memory), each batch and precision: warm-up, then timed iterations with CUDA events at
each iteration's start and no host synchronisation between iterations; peak allocated and reserved
memory over the timed iterations (counters reset after the warm-up); then one profiled iteration
(torch.profiler: GPU time per kernel name and launches, host ops and their counts).
DIR/runs/<name>_b<B>_1gpu_<precision>.json (dtsim-measured-run/1), DIR/profiles/<same>.json.

modes: activation checkpointing (HuggingFace's gradient_checkpointing_enable(), torch.utils.checkpoint
per block for the others) and gradient accumulation (K micro-batches, one optimizer step), same
timing and memory. DIR/modes/<name>_b<B>_1gpu_<precision>_<mode>.json.
"""
import argparse
import collections
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

KEEP_ELEMENTS = 16
DYNAMO = ("hf_gpt2", "hf_bert_base", "hf_llama_small", "hf_qwen2_small", "timm_convnext_tiny",
          "tv_swin_t", "tv_efficientnet_b0", "hf_roberta_base")


def sig4(x):
    return float(f"{x:.4g}")


def pct(v, q):
    s = sorted(v)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] * (1 - (pos - lo)) + s[hi] * (pos - lo)


def git_commit():
    return os.environ.get("DTSIM_GIT_COMMIT") or "unknown"


def versions():
    import torch
    out = {"torch": torch.__version__, "python": platform.python_version()}
    for mod in ("transformers", "timm", "torchvision", "onnx", "onnxscript"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            out[mod] = None
    return out


def provenance():
    import torch
    p = torch.cuda.get_device_properties(0)
    drv = "unknown"
    try:
        drv = subprocess.check_output(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem",
                                       "--format=csv,noheader"], text=True).splitlines()[0].strip()
    except Exception:  # noqa: BLE001
        pass
    nccl = torch.cuda.nccl.version()
    return {
        "framework": "pytorch", **versions(),
        "cuda_runtime": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "cublas": "bundled with torch " + torch.__version__,
        "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
        "gpu": {"name": p.name, "compute_capability": f"{p.major}.{p.minor}", "sm_count": p.multi_processor_count,
                "memory_bytes": p.total_memory},
        "driver_and_max_clocks": drv, "host": socket.gethostname(), "cpus": os.cpu_count(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": git_commit(),
        "environment": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                      "NVSHMEM_DISABLE_NVLS", "CUDA_VISIBLE_DEVICES")},
        "settings": {"cudnn.benchmark": torch.backends.cudnn.benchmark,
                     "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                     "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32},
    }


# ---------------------------------------------------------------- export

def strip(src, dst):
    import onnx
    m = onnx.load(src, load_external_data=True)
    stripped = 0
    for t in m.graph.initializer:
        floating = t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                                   onnx.TensorProto.DOUBLE)
        n = 1
        for d in t.dims:
            n *= d
        if not floating or n <= KEEP_ELEMENTS:
            continue
        for field in ("raw_data", "float_data", "double_data", "int32_data", "external_data"):
            t.ClearField(field)
        t.ClearField("data_location")
        stripped += 1
    onnx.save(m, dst)
    ops = collections.Counter(n.op_type for n in m.graph.node)
    return {"nodes": len(m.graph.node), "ops": dict(sorted(ops.items())), "initializers": len(m.graph.initializer),
            "stripped_initializers": stripped, "bytes": os.path.getsize(dst),
            "inputs": [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}],
            "opset": [(o.domain, o.version) for o in m.opset_import]}


def export_one(name, out, exporter):
    import tempfile
    import torch
    torch.set_num_threads(2)
    import user_models as um
    model = um.build(name)
    step = um.Step(name, model)
    x, mask, y = um.inputs(name, model, 1, "cpu")
    args = um.step_args(name, x, mask, y)
    names = ["input_ids", "attention_mask", "labels"] if um.is_language(name) else ["input", "labels"]
    dyn = {n: {0: "batch"} for n in names}
    rec = {"model": name, "exporter": exporter, "torch_parameters": um.parameters(model),
           "example_batch": 1, "input_names": names, "dynamic_axes": "dim 0 of every input ('batch')"}
    dst = os.path.join(out, name + (".onnx" if exporter == "torchscript" else ".dynamo.onnx"))
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "full.onnx")
        try:
            if exporter == "torchscript":
                rec.update(opset=17, training="TRAINING", do_constant_folding=False)
                torch.onnx.export(step, args, src, training=torch.onnx.TrainingMode.TRAINING,
                                  do_constant_folding=False, opset_version=17, input_names=names,
                                  output_names=["loss"], dynamic_axes=dyn, dynamo=False)
            else:
                rec.update(opset=18, note="dynamo exporter: the module as it is, in train()")
                try:
                    torch.onnx.export(step, args, src, dynamo=True, opset_version=18, external_data=True,
                                      input_names=names, output_names=["loss"], dynamic_axes=dyn)
                except Exception as e:  # noqa: BLE001  (a dynamic batch may not trace: then a fixed one)
                    rec["dynamic_batch_failed"] = f"{type(e).__name__}: {str(e)[:300]}"
                    rec["dynamic_axes"] = "none (batch 1 fixed)"
                    torch.onnx.export(step, args, src, dynamo=True, opset_version=18, external_data=True,
                                      input_names=names, output_names=["loss"])
            rec.update(strip(src, dst))
        except Exception as e:  # noqa: BLE001  (recorded: the other models still export)
            rec["export_failed"] = f"{type(e).__name__}: {str(e)[:600]}"
    rec["export_s"] = round(time.time() - t0, 1)
    return rec


def cmd_export(a):
    import concurrent.futures as cf
    import user_models as um
    out = os.path.join(a.out, "onnx")
    os.makedirs(out, exist_ok=True)
    names = a.only.split(",") if a.only else list(um.MODELS)
    jobs = [(n, "torchscript") for n in names] + [(n, "dynamo") for n in names if n in DYNAMO and not a.no_dynamo]
    files = {}
    import multiprocessing
    with cf.ProcessPoolExecutor(max_workers=a.workers, mp_context=multiprocessing.get_context("spawn")) as ex:
        futs = {ex.submit(export_one, n, out, e): (n, e) for n, e in jobs}
        for f in cf.as_completed(futs):
            n, e = futs[f]
            try:
                rec = f.result()
            except Exception as ex2:  # noqa: BLE001
                rec = {"model": n, "exporter": e, "export_failed": f"worker: {type(ex2).__name__}: {ex2}"}
            files[n + (".onnx" if e == "torchscript" else ".dynamo.onnx")] = rec
            print(f"export {n:24s} {e:11s} {rec.get('export_failed', 'ok'):.120s} ({rec.get('export_s')} s)",
                  flush=True)
    prov = {"script": "validation/pytorch/user_reference.py export", **versions(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": git_commit(), "host": socket.gethostname(),
            "initializers": f"float initializers of more than {KEEP_ELEMENTS} elements stripped to name, dims and type",
            "files": dict(sorted(files.items())), "torch_num_threads": 2}
    with open(os.path.join(out, "provenance.json"), "w") as f:
        json.dump(prov, f, indent=1, sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------- measure

def make_optimizer(kind, params):
    import torch
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=1e-4), {"name": "adamw", "impl": "torch.optim.AdamW (foreach default)",
                                                    "lr": 1e-4, "betas": [0.9, 0.999], "eps": 1e-8,
                                                    "weight_decay": 0.01}
    return (torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4),
            {"name": "sgd_momentum", "impl": "torch.optim.SGD (foreach default)", "lr": 0.01, "momentum": 0.9,
             "weight_decay": 1e-4})


def profile_step(step_fn, iters=1):
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(iters):
            step_fn()
        torch.cuda.synchronize()
    kernels = collections.defaultdict(lambda: [0.0, 0])
    seq = []
    host = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = kernels[e.name[:160]]
            k[0] += e.device_time_total / iters
            k[1] += 1
            seq.append((e.time_range.start, e.time_range.end - e.time_range.start, e.name[:100]))
        elif e.name.startswith("aten::") or e.name.startswith("autograd::") or "Backward" in e.name:
            h = host[e.name[:80]]
            h[0] += e.self_cpu_time_total / iters
            h[1] += 1
    seq.sort()
    t0 = seq[0][0] if seq else 0
    return {
        "gpu_time_us": sig4(sum(v[0] for v in kernels.values())),
        "launches": sum(v[1] for v in kernels.values()) // iters,
        "kernels": [{"name": n, "us": sig4(v[0]), "calls": v[1] // iters}
                    for n, v in sorted(kernels.items(), key=lambda kv: -kv[1][0])],
        "host_ops": [{"name": n, "self_cpu_us": sig4(v[0]), "calls": v[1] // iters}
                     for n, v in sorted(host.items(), key=lambda kv: -kv[1][0])[:120]],
        "sequence_first_400": [[round((s - t0) / 1e3, 1), round(d / 1e3, 1), n] for s, d, n in seq[:400]],
        "note": "torch.profiler, one iteration after the timed ones: kernels' GPU time (us) and launches; host "
                "ops' self CPU time (us) and calls (aten::, autograd and backward nodes, top 120); sequence: start "
                "offset, duration (us), name of the first 400 kernels",
    }


def run_one(name, batch, prec, a, mode="plain", accum=1, profile=False):
    import torch
    import user_models as um
    dev = torch.device("cuda", 0)
    model = um.build(name).to(dev)
    if mode == "checkpoint":
        enable_checkpointing(name, model)
    step_mod = um.Step(name, model)
    opt, opt_rec = make_optimizer(um.MODELS[name]["optimizer"], model.parameters())
    bf16 = prec == "bf16"
    micro = [um.inputs(name, model, batch, dev, seed=s + 1) for s in range(max(2, accum))]
    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        for k in range(accum):
            x, mask, y = micro[k % len(micro)]
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                loss = step_mod(*um.step_args(name, x, mask, y))
                if accum > 1:
                    loss = loss / accum
            loss.backward()
        opt.step()
        losses.append(loss.detach())

    t0 = time.time()
    torch.cuda.synchronize()
    s = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    per = (time.perf_counter() - s) / 3
    iters = int(min(25, max(10, a.seconds / max(per, 1e-4))))
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    warm_peak = (torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev))
    torch.cuda.reset_peak_memory_stats(dev)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    tw = time.time()
    for i in range(iters):
        ev[i].record()
        step()
    ev[iters].record()
    torch.cuda.synchronize()
    wall = (time.time() - tw) / iters
    times = [ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(iters)]
    peak = (torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev))
    # The step alone, host synchronised after each: the host's own time per step where the GPU is idle
    # at the end (what a host-paced step is made of), measured beside the run.
    sync = []
    for _ in range(3):
        torch.cuda.synchronize()
        s = time.perf_counter()
        step()
        torch.cuda.synchronize()
        sync.append(time.perf_counter() - s)
    prof = profile_step(step) if (a.profile and profile) else None
    med = statistics.median(times)
    e = um.MODELS[name]
    lang = um.is_language(name)
    lv = [float(v) for v in torch.stack(losses).float().cpu()]
    res = {
        "schema": "dtsim-measured-run/1", "source": "pytorch-user-models", "framework": "pytorch",
        "model": name, **({"zoo_model": e["zoo"]} if "zoo" in e else
                          {"model_file": f"validation/data/h200-sxm/user_models/onnx/{name}.onnx"}),
        "family": e["family"], "library": e["source"], "split": e["split"],
        "model_source": f"validation/pytorch/user_models.py build('{name}')",
        "parameters": um.parameters(model),
        "batch_per_gpu": batch, "gpus": 1, "nodes": 1, "gpus_per_node": 1,
        **({"sequence_length": e["T"], "throughput_tokens_per_s": sig4(batch * e["T"] * accum / med)} if lang else {}),
        "precision": prec,
        "precision_detail": ("torch.autocast(cuda, bfloat16) around forward and loss; fp32 parameters, gradients "
                             "and optimizer" if bf16 else
                             "fp32; PyTorch defaults: TF32 allowed for cuDNN convolutions, not for matmuls"),
        "optimizer": opt_rec,
        "ddp": None, "wrapper": "none: one-GPU training loop, no DistributedDataParallel",
        "loss": {"causal_lm": "HuggingFace's own (labels=input_ids: logits shifted inside the model, upcast to fp32)",
                 "masked_lm": "HuggingFace's own (labels=input_ids, every token labelled)",
                 "image_cls_labels": "HuggingFace's own (labels=)",
                 "image_cls": "torch.nn.functional.cross_entropy(model(x), y)",
                 "plain_lm": "torch.nn.functional.cross_entropy over every token against its own id (no shift)"}[e["task"]],
        "conv_api": "pytorch (cudnn.benchmark=True)", "layout": "NCHW" if not lang else "tokens (B x T ids)",
        "execution": {"memory_format": "contiguous", "optimizer": e["optimizer"], "execution": "eager",
                      **({"activation_checkpointing": True} if mode == "checkpoint" else {}),
                      **({"grad_accum_steps": accum} if accum > 1 else {})},
        "iterations": {"warmup": 5, "measured": iters},
        "iteration_time_s": {"median": sig4(med), "min": sig4(min(times)), "max": sig4(max(times)),
                             "p10": sig4(pct(times, 0.1)), "p90": sig4(pct(times, 0.9)),
                             "mean": sig4(sum(times) / len(times)), "spread": sig4(pct(times, 0.9) - pct(times, 0.1)),
                             "samples": [sig4(v) for v in times]},
        "iteration_timing": ("CUDA events at each iteration's start (before zero_grad), no host synchronisation between "
                             "iterations; wall-clock check %.4g s per iteration" % wall),
        "host_synchronised_step_s": {"median": sig4(statistics.median(sync)), "samples": [sig4(v) for v in sync],
                                     "note": "wall time of one step with torch.cuda.synchronize() before and after"},
        "throughput_samples_per_s": sig4(batch * accum / med),
        "memory": {"peak_allocated_bytes": int(peak[0]), "peak_reserved_bytes": int(peak[1]),
                   "warmup_peak_allocated_bytes": int(warm_peak[0]), "warmup_peak_reserved_bytes": int(warm_peak[1]),
                   "note": "torch.cuda.max_memory_allocated / max_memory_reserved over the timed iterations (reset "
                           "after warm-up); warmup_*: from the model's creation, cudnn.benchmark's trials included; "
                           "one model per process"},
        "checks": {"loss_first": sig4(lv[0]), "loss_last": sig4(lv[-1]), "losses": [sig4(v) for v in lv[:40]]},
        "config_wall_s": sig4(time.time() - t0),
    }
    del opt, model, step_mod, micro, losses
    torch.cuda.empty_cache()
    return res, prof


def enable_checkpointing(name, model):
    """HuggingFace: gradient_checkpointing_enable() (its blocks under torch.utils.checkpoint,
    use_reentrant=False). Others: every child of the model's block list (timm/torchvision 'stages',
    'features', 'layers', 'blocks') wrapped in torch.utils.checkpoint, non-reentrant."""
    import torch
    import torch.utils.checkpoint as cp
    import user_models as um
    if um.MODELS[name]["source"] == "hf":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return
    class Ck(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *xs):
            return cp.checkpoint(self.m, *xs, use_reentrant=False)

    lists = [getattr(model, a) for a in ("layer1", "layer2", "layer3", "layer4") if hasattr(model, a)]  # ResNets
    if not lists:
        lists = [getattr(model, a) for a in ("stages", "layers", "blocks", "features", "h", "layer")
                 if isinstance(getattr(model, a, None), (torch.nn.Sequential, torch.nn.ModuleList))][:1]
    if not lists:
        raise RuntimeError(f"{name}: no block list to checkpoint")
    for seq in lists:
        for i, c in enumerate(seq):
            seq[i] = Ck(c)


def measure_model(name, a, precisions, out):
    """Runs in its own process: every batch and precision of one model."""
    import torch
    torch.backends.cudnn.benchmark = True
    import user_models as um
    prov = provenance()
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    os.makedirs(os.path.join(out, "profiles"), exist_ok=True)
    for prec in precisions:
        for b in um.MODELS[name]["batches"]:
            tag = f"{name}_b{b}_1gpu_{prec}"
            try:
                res, prof = run_one(name, b, prec, a, profile=b == um.MODELS[name]["batches"][-1])
            except torch.cuda.OutOfMemoryError as e:
                print(f"{tag:40s} skipped: out of memory: {str(e).splitlines()[0][:100]}", flush=True)
                torch.cuda.empty_cache()
                continue
            res["provenance"] = dict(prov, date_utc_end=datetime.datetime.now(datetime.timezone.utc)
                                     .strftime("%Y-%m-%dT%H:%M:%SZ"))
            with open(os.path.join(out, "runs", tag + ".json"), "w") as f:
                json.dump(res, f, indent=1)
            if prof:
                with open(os.path.join(out, "profiles", tag + ".json"), "w") as f:
                    json.dump({"run": tag, **prof}, f, indent=0)
            it = res["iteration_time_s"]
            print(f"{tag:40s} {it['median'] * 1e3:9.2f} ms (spread {it['spread'] * 1e3:6.2f}) sync "
                  f"{res['host_synchronised_step_s']['median'] * 1e3:8.2f} ms  mem "
                  f"{res['memory']['peak_allocated_bytes'] / 2**30:6.2f} / {res['memory']['peak_reserved_bytes'] / 2**30:6.2f} GiB "
                  f"loss {res['checks']['loss_first']:.2f}->{res['checks']['loss_last']:.2f} "
                  f"({res['config_wall_s']:.1f} s)", flush=True)


MODES = {  # model: (batch, precision, modes); accumulation K = 4
    "hf_gpt2": (8, "bf16"), "hf_gpt2_medium": (4, "bf16"), "hf_llama_small": (4, "bf16"),
    "hf_bert_base": (16, "bf16"), "hf_opt_125m": (8, "bf16"), "tv_resnext50_32x4d": (32, "bf16"),
    "tv_convnext_tiny": (32, "bf16"), "hf_qwen2_small": (4, "bf16"),
    "plain_gpt2": (8, "bf16"), "plain_bert": (16, "bf16"), "tv_resnet50": (64, "bf16"),
}


def modes_model(name, a, out):
    import torch
    torch.backends.cudnn.benchmark = True
    prov = provenance()
    os.makedirs(os.path.join(out, "modes"), exist_ok=True)
    b, prec = MODES[name]
    for mode, accum in (("plain", 1), ("checkpoint", 1), ("plain", 4), ("checkpoint", 4)):
        tag = f"{name}_b{b}_1gpu_{prec}_{'ckpt' if mode == 'checkpoint' else 'plain'}_accum{accum}"
        try:
            res, _ = run_one(name, b, prec, a, mode=mode, accum=accum)
        except Exception as e:  # noqa: BLE001
            print(f"{tag:50s} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
            torch.cuda.empty_cache()
            continue
        res["provenance"] = prov
        with open(os.path.join(out, "modes", tag + ".json"), "w") as f:
            json.dump(res, f, indent=1)
        print(f"{tag:50s} {res['iteration_time_s']['median'] * 1e3:9.2f} ms  mem "
              f"{res['memory']['peak_allocated_bytes'] / 2**30:6.2f} GiB", flush=True)


def child(a):
    """One model in this process (the measure and modes commands start one per model)."""
    if a.cmd == "measure":
        measure_model(a.model, a, a.precisions.split(","), a.out)
    else:
        modes_model(a.model, a, a.out)


def cmd_per_model(a, names):
    t0 = time.time()
    for n in names:
        if a.budget_s and time.time() - t0 > a.budget_s:
            print(f"budget of {a.budget_s} s spent: {n} and later not run", flush=True)
            break
        cmd = [sys.executable, os.path.abspath(__file__), a.cmd, "--out", a.out, "--model", n,
               "--precisions", a.precisions, "--seconds", str(a.seconds)] + (["--profile"] if a.profile else [])
        r = subprocess.run(cmd)
        if r.returncode:
            print(f"{n}: process exited {r.returncode}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=["export", "measure", "modes"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--model", default="", help="(internal) the one model a child process runs")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--no-dynamo", action="store_true")
    ap.add_argument("--precisions", default="bf16,fp32")
    ap.add_argument("--seconds", type=float, default=2.0, help="aim of the timed iterations' total (10..25 iterations)")
    ap.add_argument("--profile", action="store_true", help="one profiled iteration after each measured configuration")
    ap.add_argument("--budget-s", type=float, default=0, help="start no new model after this many seconds")
    a = ap.parse_args()
    try:
        if a.cmd == "export":
            cmd_export(a)
            return
        if a.model:
            child(a)
            return
        import user_models as um
        names = a.only.split(",") if a.only else (list(um.MODELS) if a.cmd == "measure" else list(MODES))
        cmd_per_model(a, names)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
