#!/usr/bin/env python3
"""Kernel times where users go and the harness's sweep did not: large aligned GEMMs, every zoo
classifier layer at batch 1..1024, GEMMs and convolutions beyond the harness's shape range, the zoo's
convolutions at batch 384 and 512, in fp32 (PyTorch's default math), bf16 and fp16.

Each kernel is timed through PyTorch as a training step runs it (nn.Linear's three GEMMs; F.conv2d and
aten.convolution_backward with one gradient's output mask, cudnn.benchmark=True), two ways:
  time_median_s  back-to-back stream time, the harness's definition: CUDA events around every repeat,
                 a sleep kernel queued first so that the host's launch cost is hidden; each repeat
                 still includes the event records between kernels (about a microsecond).
  time_graph_s   GPU time alone: K calls captured in one CUDA graph, replayed, total / K.
Rows are written in the harness's kernel-CSV schema (validation/README.md) plus `time_graph_s` and
`split`: "heldout" for shapes beyond the range the shipped predictors were trained on (a GEMM of more
than 1.1 TFLOP per call, or with a dimension beyond the harness's random range, a classifier layer at a
batch size the harness never ran, a convolution at batch > 256), "train" otherwise. The split is decided
here, from the shape alone, before anything is fitted.

usage: kernel_sweep.py --out DIR [--budget-s 420] [--seed 7] [--sections gemm,classifier,conv,depthwise | depthwise_nhwc | conv_nhwc]

The depthwise section (not in the default sections) times contiguous depthwise convolutions in fp32 and
bf16, which PyTorch runs with its own conv_depthwise2d kernels rather than cuDNN's: the zoo's at the
harness's batches and random ones, all training rows (the zoo's at batch 384/512 are kernels_beyond's).
The depthwise_nhwc section (run alone: its rows carry a `layout` column, nhwc) times the same shapes on
channels_last tensors, which PyTorch gives to cuDNN's NHWC depthwise engines (cudnn.benchmark's pick;
the harness's graph-API autotune, which tries ten engines, picked slower ones on large batches).
The conv_nhwc section (run alone, the same `layout` column) times the zoo's other convolutions on
channels_last tensors at batches 32-256, in random order: what cuDNN runs for PyTorch's channels_last
and compiled steps, against which the graph-API rows (kernels_nhwc) are checked.
"""
import argparse
import csv
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# The harness's GEMM sweep: batch up to 4096, in/out features up to 32768, at most 0.26 TFLOP a call.
GEMM_TRAIN_MAX_DIM = {"batch": 4096, "in": 32768, "out": 32768}
GEMM_TRAIN_MAX_FLOPS = 1.1e12          # 2 * 8192^3: the large aligned GEMMs up to here are training rows
HARNESS_BATCHES = {1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256}
CLASSIFIERS = [(4096, 1000), (9216, 4096), (4096, 4096), (25088, 4096), (512, 1000), (2048, 1000),
               (1024, 1000), (1280, 1000)]
CLASSIFIER_BATCHES = [1, 2, 3, 4, 8, 16, 24, 32, 64, 100, 128, 256, 384, 512, 768, 1024]

GEMM_COLS = ["kind", "pass", "math_mode", "dtype", "M", "N", "K", "transA", "transB", "batch", "in_features",
             "out_features", "impl", "time_median_s", "time_min_s", "time_spread_s", "repeats", "source",
             "time_graph_s", "graph_calls", "split"]
CONV_COLS = ["kind", "pass", "math_mode", "dtype", "N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w",
             "pad_h", "pad_w", "dil_h", "dil_w", "groups", "algo", "algo_math", "workspace_bytes", "time_median_s",
             "time_min_s", "time_spread_s", "repeats", "source", "time_graph_s", "graph_calls", "split"]


def sig4(x):
    return float("%.4g" % x) if x == x else x


def time_stream(fn, target_s=0.01, min_rep=5, max_rep=30, warmup=1, long_min_rep=3):
    """The harness's back-to-back timing: events around every repeat after a sleep kernel. Kernels of
    50 ms and more take at least `long_min_rep` repeats instead of `min_rep`. Returns the median, the
    minimum, the spread, the repeats and the probe's time (validation/scripts/torch_compare.py too)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    t1 = max(s.elapsed_time(e) * 1e-3, 1e-7)
    n = max(min_rep if t1 < 0.05 else long_min_rep, min(max_rep, int(target_s / t1) + 1))
    evs = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    if t1 < 500e-6:
        # keep the GPU busy while the host enqueues (autograd calls cost the host ~100 us each)
        torch.cuda._sleep(int(min(n * 400e-6, 0.05) * 1.5e9))
    evs[0].record()
    for i in range(n):
        fn()
        evs[i + 1].record()
    evs[-1].synchronize()
    t = sorted(evs[i].elapsed_time(evs[i + 1]) * 1e-3 for i in range(n))
    return statistics.median(t), t[0], t[-1] - t[0], n, t1


def time_graph(fn, t1):
    """GPU time alone: K calls in one CUDA graph, replayed 3 times; the median replay / K."""
    k = max(1, min(100, int(2e-3 / max(t1, 1e-7))))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(k):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3 / k)
    del g
    return statistics.median(ts), k


def measure(fn):
    med, mn, spread, n, t1 = time_stream(fn)
    try:
        tg, k = time_graph(fn, t1)
    except Exception as ex:  # a capture that fails keeps its stream time
        print("  graph capture failed:", str(ex).splitlines()[0][:120], flush=True)
        torch.cuda.synchronize()
        tg, k = float("nan"), 0
    return med, mn, spread, n, tg, k


# --- GEMMs as nn.Linear issues them --------------------------------------------------------------

def gemm_rows(b, fin, fout, mode, source, split):
    dt = DTYPES[mode]
    x = torch.randn(b, fin, device="cuda", dtype=dt)
    w = torch.randn(fout, fin, device="cuda", dtype=dt)
    dy = torch.randn(b, fout, device="cuda", dtype=dt)
    passes = {
        # (M, N, K, transA, transB) in the harness's column-major cuBLAS view
        "fwd": (lambda: torch.mm(x, w.t()), (fout, b, fin, "T", "N")),
        "bwd_data": (lambda: torch.mm(dy, w), (fin, b, fout, "N", "N")),
        "bwd_weight": (lambda: torch.mm(dy.t(), x), (fin, fout, b, "N", "T")),
    }
    rows = []
    for p, (fn, (M, N, K, ta, tb)) in passes.items():
        med, mn, spread, n, tg, k = measure(fn)
        rows.append(["gemm", p, mode, mode, M, N, K, ta, tb, b, fin, fout, "torch.mm", sig4(med), sig4(mn), sig4(spread), n,
                     source, sig4(tg), k, split])
    del x, w, dy
    return rows


def gemm_split(b, fin, fout):
    beyond = (b > GEMM_TRAIN_MAX_DIM["batch"] or fin > GEMM_TRAIN_MAX_DIM["in"] or fout > GEMM_TRAIN_MAX_DIM["out"]
              or 2.0 * b * fin * fout > GEMM_TRAIN_MAX_FLOPS)
    return "heldout" if beyond else "train"


def gemm_shapes(rng):
    sizes = [1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
    out = [(16384, 16384, 16384, "aligned"), (8192, 8192, 8192, "aligned"), (4096, 4096, 4096, "aligned")]
    while len(out) < 60:
        out.append((rng.choice(sizes), rng.choice(sizes), rng.choice(sizes), "aligned"))
    for _ in range(140):
        b = int(round(2 ** rng.uniform(0, 16)))
        fin = int(round(2 ** rng.uniform(4, 16)))
        fout = int(round(2 ** rng.uniform(4, 16)))
        out.append((b, fin, fout, "random_wide"))
    rng.shuffle(out)
    return out


# --- convolutions ---------------------------------------------------------------------------------

def conv_rows(N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, g, mode, source, split, layout="nchw"):
    dt = DTYPES[mode]
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    x = torch.randn(N, C, H, W, device="cuda", dtype=dt).to(memory_format=fmt)
    w = torch.randn(K, C // g, R, S, device="cuda", dtype=dt).to(memory_format=fmt)
    y = F.conv2d(x, w, None, (sh, sw), (ph, pw), (dh, dw), g)
    dy = torch.randn_like(y)  # keeps y's memory format
    conv_bwd = torch.ops.aten.convolution_backward

    def bwd(mask):
        return lambda: conv_bwd(dy, x, w, None, [sh, sw], [ph, pw], [dh, dw], False, [0, 0], g, mask)

    passes = {"fwd": lambda: F.conv2d(x, w, None, (sh, sw), (ph, pw), (dh, dw), g),
              "bwd_data": bwd([True, False, False]), "bwd_filter": bwd([False, True, False])}
    rows = []
    for p, fn in passes.items():
        med, mn, spread, n, tg, k = measure(fn)
        rows.append(["conv2d", p, mode, mode, N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, g, "torch", "cudnn.benchmark", 0,
                     sig4(med), sig4(mn), sig4(spread), n, source, sig4(tg), k, split] + ([layout] if layout == "nhwc" else []))
    del x, w, y, dy
    return rows


def conv_ok(N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, g):
    P = (H + 2 * ph - dh * (R - 1) - 1) // sh + 1
    Q = (W + 2 * pw - dw * (S - 1) - 1) // sw + 1
    if P < 1 or Q < 1:
        return False
    flops = 2.0 * N * K * P * Q * (C // g) * R * S
    return max(N * C * H * W, N * K * P * Q) < 2 ** 31 and flops <= 6e12


def conv_shapes(rng):
    zoo = json.load(open(os.path.join(HERE, "zoo_conv_shapes.json")))["layers"]
    out = [(256, 1024, 112, 112, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1, "issue21/1x1_memory_bound", "train")]
    picks = rng.sample(zoo, 60)
    for i, z in enumerate(picks):
        layer, *shape = z
        N = 384 if i % 2 else 512
        out.append((N, *shape, layer, "heldout"))
    # Wide random convolutions: channels up to 4096, batch 32..512 (beyond 256: held out).
    for _ in range(40):
        R = rng.choice([1, 3, 3, 5, 7])
        st = rng.choice([1, 1, 2])
        C = int(round(2 ** rng.uniform(5, 12)))
        K = int(round(2 ** rng.uniform(5, 12)))
        H = int(round(2 ** rng.uniform(3, 7.5)))
        N = int(round(2 ** rng.uniform(5, 9)))
        out.append((N, C, H, H, K, R, R, st, st, R // 2, R // 2, 1, 1, 1, "random_wide", "heldout" if N > 256 else "train"))
    rng.shuffle(out)
    return [s for s in out if conv_ok(*s[:14])]


# --- depthwise convolutions as PyTorch runs them ----------------------------------------------------
# aten's use_cudnn_depthwise sends a contiguous depthwise convolution (groups == C, K a multiple of C)
# to cuDNN only in fp16; in fp32 and bf16 PyTorch runs its own conv_depthwise2d kernels. dtsim's
# harness measured cuDNN's, which these are not (kernels_beyond: 24-59% apart). Batches of the
# harness's sweep are training rows; the zoo's layers at 384 and 512 stay in kernels_beyond, held out.
DEPTHWISE_BATCHES = [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256]


CONV_NHWC_BATCHES = [32, 64, 128, 256]


def conv_nhwc_shapes(rng):
    zoo = [z for z in json.load(open(os.path.join(HERE, "zoo_conv_shapes.json")))["layers"] if z[-1] == 1]
    out = [(N, *shape, layer, "train") for layer, *shape in zoo for N in CONV_NHWC_BATCHES]
    rng.shuffle(out)
    return [s for s in out if conv_ok(*s[:14])]


def depthwise_shapes(rng):
    zoo = [z for z in json.load(open(os.path.join(HERE, "zoo_conv_shapes.json")))["layers"] if z[-1] > 1]
    out = []
    for layer, *shape in zoo:
        for N in DEPTHWISE_BATCHES:
            out.append((N, *shape, layer, "train"))
    # Random depthwise shapes: channels 8..2048, maps 4..160, 3x3/5x5/7x7, stride 1 or 2, multiplier 1 or 2.
    while len(out) < 600:
        R = rng.choice([3, 3, 3, 5, 5, 7])
        st = rng.choice([1, 1, 2])
        C = int(round(2 ** rng.uniform(3, 11)))
        H = int(round(2 ** rng.uniform(2, 7.3)))
        N = rng.choice(DEPTHWISE_BATCHES)
        mult = 2 if rng.random() < 0.1 else 1
        out.append((N, C, H, H, C * mult, R, R, st, st, R // 2, R // 2, 1, 1, C, "random_depthwise", "train"))
    rng.shuffle(out)
    return [s for s in out if conv_ok(*s[:14])]


def depthwise_kernel_names(modes, memory_format=torch.contiguous_format):
    """The kernels one depthwise step runs in each mode, from torch.profiler: the evidence of which
    implementation the rows time (contiguous fp32/bf16: PyTorch's own conv_depthwise2d kernels;
    fp16 or channels_last: cuDNN's)."""
    names = {}
    for mode in modes:
        x = torch.randn(8, 64, 28, 28, device="cuda", dtype=DTYPES[mode]).to(memory_format=memory_format).requires_grad_()
        w = torch.randn(64, 1, 3, 3, device="cuda", dtype=DTYPES[mode]).to(memory_format=memory_format).requires_grad_()
        F.conv2d(x, w, None, 1, 1, 1, 64).sum().backward()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            F.conv2d(x, w, None, 1, 1, 1, 64).sum().backward()
            torch.cuda.synchronize()
        names[mode] = sorted({e.name[:120] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    return names


def provenance(args):
    def cmd(c):
        try:
            return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:
            return ""
    p = torch.cuda.get_device_properties(0)
    return {
        "what": "validation/pytorch/kernel_sweep.py: PyTorch kernel times beyond the harness's range",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": os.environ.get("DTSIM_GIT_COMMIT", ""),
        "gpu": torch.cuda.get_device_name(0), "sm_count": p.multi_processor_count,
        "memory_bytes": p.total_memory,
        "driver": cmd("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
        "clocks": cmd("nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | head -1"),
        "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(), "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "cublas": "bundled with torch (nvidia-cublas wheel): " + cmd("python3 -c \"import importlib.metadata as m; print(m.version('nvidia-cublas'))\" 2>/dev/null || pip show nvidia-cublas-cu13 2>/dev/null | grep Version"),
        "math": {"fp32": "torch.backends.cuda.matmul.allow_tf32=False (strict FP32 matmuls), "
                          "torch.backends.cudnn.allow_tf32=True (TF32 convolutions): PyTorch's defaults",
                 "bf16": "bf16 tensors (autocast's conv/matmul dtype)", "fp16": "fp16 tensors (autocast's conv/matmul dtype)"},
        "cudnn_benchmark": True, "layout": "NCHW (contiguous)",
        "timing": __doc__.split("two ways:")[1].split("Rows are")[0].strip(),
        "args": vars(args),
    }


def record(section, shape, mode, writer, f, skipped, rows):
    """Measures one shape in one mode and writes its rows; a shape that fails (out of memory, no
    engine) goes to skipped.csv instead. Returns 1 when measured."""
    done = 0
    try:
        for r in rows():
            writer.writerow(r)
        done = 1
    except Exception as ex:
        skipped.write('%s,"%s",%s,"%s"\n' % (section, shape, mode, str(ex).splitlines()[0][:200]))
        torch.cuda.empty_cache()
    f.flush()
    return done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=420)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sections", default="classifier,gemm,conv")
    ap.add_argument("--share", default="classifier=0.15,gemm=0.35,conv=0.5,depthwise=1,depthwise_nhwc=1,conv_nhwc=1")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False
    rng = random.Random(a.seed)
    share = {k: float(v) for k, v in (s.split("=") for s in a.share.split(","))}
    prov = provenance(a)
    if "depthwise" in a.sections.split(","):
        prov["depthwise_kernels"] = depthwise_kernel_names(["fp32", "bf16", "fp16"])
    if "depthwise_nhwc" in a.sections.split(","):
        prov["depthwise_nhwc_kernels"] = depthwise_kernel_names(["fp32", "bf16"], torch.channels_last)
        prov["layout"] = "NHWC (channels_last) for the depthwise_nhwc rows (column layout)"
    if "conv_nhwc" in a.sections.split(","):
        prov["layout"] = "NHWC (channels_last) for the conv_nhwc rows (column layout)"
    json.dump(prov, open(os.path.join(a.out, "provenance.json"), "w"), indent=1)
    t_start = time.time()
    gemm_f = open(os.path.join(a.out, "gemm.csv"), "w", newline="")
    conv_f = open(os.path.join(a.out, "conv2d.csv"), "w", newline="")
    gw, cw = csv.writer(gemm_f), csv.writer(conv_f)
    gw.writerow(GEMM_COLS)
    nhwc_run = "depthwise_nhwc" in a.sections.split(",") or "conv_nhwc" in a.sections.split(",")
    cw.writerow(CONV_COLS + (["layout"] if nhwc_run else []))
    skipped = open(os.path.join(a.out, "skipped.csv"), "w")
    skipped.write("section,shape,mode,error\n")
    spent_before = 0.0
    sections = a.sections.split(",")
    for si, sec in enumerate(sections):
        # each section gets its share plus whatever earlier sections left
        left_total = a.budget_s - (time.time() - t_start)
        rest = sum(share[s] for s in sections[si:])
        deadline = time.time() + left_total * share[sec] / rest
        n = 0
        if sec == "classifier":
            items = [(b, fin, fout, m) for (fin, fout) in CLASSIFIERS for b in CLASSIFIER_BATCHES for m in DTYPES]
            rng.shuffle(items)
            for b, fin, fout, m in items:
                if time.time() > deadline:
                    break
                split = "train" if b in HARNESS_BATCHES else "heldout"
                n += record(sec, (b, fin, fout), m, gw, gemm_f, skipped,
                            lambda: gemm_rows(b, fin, fout, m, "classifier_%dx%d" % (fin, fout), split))
        elif sec == "gemm":
            for b, fin, fout, src in gemm_shapes(rng):
                for m in ["bf16", "fp32", "fp16"]:
                    if time.time() > deadline:
                        break
                    fl = 2.0 * b * fin * fout
                    if fl > (2.5e12 if m == "fp32" else 9e12) or (m == "fp16" and rng.random() < 0.5):
                        continue
                    n += record(sec, (b, fin, fout), m, gw, gemm_f, skipped,
                                lambda: gemm_rows(b, fin, fout, m, src, gemm_split(b, fin, fout)))
        elif sec in ("depthwise", "depthwise_nhwc", "conv_nhwc"):  # the nhwc ones alone in a run: their rows carry a layout column
            shapes = conv_nhwc_shapes(rng) if sec == "conv_nhwc" else depthwise_shapes(rng)
            layout = "nhwc" if sec.endswith("_nhwc") else "nchw"
            for s in shapes:
                for m in ["bf16", "fp32"]:
                    if time.time() > deadline:
                        break
                    n += record(sec, s[:14], m, cw, conv_f, skipped, lambda: conv_rows(*s[:14], m, s[14], s[15], layout))
        elif sec == "conv":
            for s in conv_shapes(rng):
                for m in ["bf16", "fp32", "fp16"]:
                    if time.time() > deadline:
                        break
                    if m == "fp16" and rng.random() < 0.5:
                        continue
                    n += record(sec, s[:14], m, cw, conv_f, skipped, lambda: conv_rows(*s[:14], m, s[14], s[15]))
        print("%s: %d shapes x modes in %.0f s" % (sec, n, time.time() - t_start - spent_before), flush=True)
        spent_before = time.time() - t_start
    gemm_f.close()
    conv_f.close()
    skipped.close()


if __name__ == "__main__":
    sys.exit(main())
