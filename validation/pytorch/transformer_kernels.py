#!/usr/bin/env python3
"""Times the transformer's kernels as PyTorch runs them, for dtsim's measured predictors.

The harness (validation/harness) measures cuDNN and cuBLAS kernels from C++; the kernels a transformer
step adds are PyTorch's own (flash attention inside scaled_dot_product_attention, ATen's layer_norm,
embedding and cross-entropy kernels, GELU), so they are timed here, through PyTorch, the way a training
step calls them, and written in the harness's kernel-CSV schema (validation/README.md) so that
`dtsim train-predictors` reads them like the harness's files. Sections, one CSV each:

  attention   F.scaled_dot_product_attention(q, k, v, dropout_p, is_causal) on q, k, v of N x heads x
              T x head_dim (contiguous), fwd; bwd = autograd's backward of its output (the flash
              backward's preprocessing, main and dq conversion kernels together). `backend` says which
              kernels PyTorch picked (torch.profiler's kernel names), `dropout_p` 0 or 0.1.
  layernorm   F.layer_norm over the last dim of rows x features, with weight and bias; bwd = autograd
              (dx, dweight, dbias: ATen's two backward kernels).
  embedding   F.embedding(ids, FP32 weight) (fwd, a gather); bwd = aten.embedding_dense_backward
              (the zero-filled FP32 weight gradient, rows added in; sort-based in ATen).
  softmax_ce  F.cross_entropy(FP32 logits N x classes, labels) (log_softmax + nll_loss); bwd =
              autograd (nll_loss_backward + log_softmax_backward). impl "torch", beside the harness's own
              kernel's rows (impl cuda_kernel) which stop at 1000 classes.
  activation  F.gelu(x, approximate) for gelu and gelu_tanh; bwd = aten.gelu_backward.
  gemm        nn.Linear's three GEMMs (kernel_sweep.gemm_rows) on transformer widths with B*T rows.
  vocab       the same on vocabulary-sized output layers (many not a multiple of 8), written to
              vocab.csv in gemm's columns.

Each time is taken two ways (kernel_sweep.measure): time_median_s, back-to-back stream time with CUDA
events around every repeat (the harness's definition), and time_graph_s, K calls in one CUDA graph
replayed (GPU time alone). Shapes are drawn at random from the ranges users run (seeded); `split` is
"heldout" for shapes beyond the training ranges (attention T = 8192, layernorm features > 8192,
softmax_ce classes > 100k, embedding tables > 100k rows), so that extrapolation can be reported; dtsim
also holds out a fifth of the remaining shapes by hash. Every section stops at its time budget.

usage: transformer_kernels.py --out DIR [--budget-s 360] [--seed 11] [--sections attention,layernorm,...]
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import random
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

aten = torch.ops.aten

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kernel_sweep import DTYPES, gemm_rows, sig4, time_graph, time_stream  # noqa: E402

GRAPHS = True  # --no-graph: stream times only (set after a capture failed in this section)


class CaptureFailed(Exception):
    """A failed CUDA graph capture leaves the process's CUDA state unusable: the section's process
    ends and the parent starts it again without graph timing."""


def measure(fn, graph=True):
    med, mn, spread, n, t1 = time_stream(fn)
    tg, k = float("nan"), 0
    if graph and GRAPHS:
        try:
            tg, k = time_graph(fn, t1)
        except Exception as ex:
            raise CaptureFailed(str(ex).splitlines()[0][:160])
    return med, mn, spread, n, tg, k

TIMES = ["impl", "time_median_s", "time_min_s", "time_spread_s", "repeats", "source", "time_graph_s", "graph_calls",
         "split"]
COLS = {
    "attention": ["kind", "pass", "math_mode", "dtype", "N", "heads", "T", "head_dim", "causal", "dropout_p", "backend"]
    + TIMES,
    "layernorm": ["kind", "pass", "math_mode", "dtype", "rows", "features"] + TIMES,
    "embedding": ["kind", "pass", "math_mode", "dtype", "rows", "dim", "num_embeddings"] + TIMES,
    "softmax_ce": ["kind", "pass", "math_mode", "dtype", "N", "classes"] + TIMES,
    "activation": ["kind", "pass", "math_mode", "dtype", "op", "elements"] + TIMES,
}
SHARE = {"attention": 0.4, "layernorm": 0.12, "embedding": 0.1, "softmax_ce": 0.13, "activation": 0.07, "gemm": 0.18,
         "vocab": 0.18}


def log_uniform_int(rng, lo, hi):
    return int(round(2 ** rng.uniform(math.log2(lo), math.log2(hi))))


def kernel_names(fn):
    """The CUDA kernels one call launches (torch.profiler), to record the attention backend."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type.name == "CUDA"]


def backend_of(names):
    text = " ".join(names).lower()
    # cuDNN's kernels are named cudnn_generated_fort_native_sdpa_sm90_flash_fprop...: "cudnn" first
    for key, name in (("cudnn", "cudnn"), ("flash", "flash"), ("fmha_cutlass", "efficient"), ("mem_eff", "efficient"),
                      ("efficient", "efficient"), ("sdpa", "cudnn")):
        if key in text:
            return name
    return "math" if "gemm" in text or "softmax" in text else "unknown"


def cudnn_backward(q, k, v, do, drop, causal):
    """cuDNN's attention backward called as autograd would call it, bound by the argument names of this
    PyTorch's schema (they have changed between releases), from what its forward returned. None where
    this PyTorch has no such op or its schema names an argument this does not know."""
    try:
        fwd_op = aten._scaled_dot_product_cudnn_attention.default
        bwd_op = aten._scaled_dot_product_cudnn_attention_backward.default
        known = dict(query=q, key=k, value=v, attn_bias=None, compute_log_sumexp=True, dropout_p=drop,
                     is_causal=causal, return_debug_mask=False, scale=None)
        outs = fwd_op(*[known[a.name] for a in fwd_op._schema.arguments if not a.kwarg_only],
                      **{a.name: known[a.name] for a in fwd_op._schema.arguments if a.kwarg_only})
        names = [r.name for r in fwd_op._schema.returns]
        got = dict(zip(names, outs)) if all(names) else dict(zip(
            ["output", "logsumexp", "cum_seq_q", "cum_seq_k", "max_q", "max_k", "philox_seed", "philox_offset",
             "debug_attn_mask"], outs))
        known.update(got, grad_out=do, out=got.get("output"))
        pos = [known[a.name] for a in bwd_op._schema.arguments if not a.kwarg_only]
        kw = {a.name: known[a.name] for a in bwd_op._schema.arguments if a.kwarg_only}
        bwd = lambda: bwd_op(*pos, **kw)  # noqa: E731
        dq = bwd()[0]
        if drop == 0:  # the binding is right only if it gives autograd's gradient
            qg = q.detach().requires_grad_()
            ref = torch.autograd.grad(F.scaled_dot_product_attention(qg, k, v, is_causal=causal), qg, do)[0]
            if not torch.allclose(dq.float(), ref.float(), rtol=0.05, atol=0.05 * ref.abs().max().item()):
                raise RuntimeError("direct backward disagrees with autograd's")
        torch.cuda.synchronize()
        return bwd
    except (AttributeError, KeyError, RuntimeError, TypeError) as ex:
        print(f"cuDNN attention backward not callable directly ({type(ex).__name__}: {str(ex)[:120]}); autograd",
              file=sys.stderr, flush=True)
        return None


def timed(section, fixed, pas, fn, source, split, graph=True):
    med, mn, spread, n, tg, k = measure(fn, graph)
    return dict(fixed, kind=section, **{"pass": pas}, impl="torch", time_median_s=sig4(med), time_min_s=sig4(mn),
                time_spread_s=sig4(spread), repeats=n, source=source, time_graph_s=sig4(tg), graph_calls=k, split=split)


# --- one shape per section: yields rows -----------------------------------------------------------

def attention(rng):
    d = rng.choice([64, 64, 128, 128, 80, 96])
    heads = rng.choice([4, 8, 12, 12, 16, 16, 20, 25, 32])
    t = rng.choice([128, 256, 512, 1024, 2048, 4096, 8192])
    n = max(1, log_uniform_int(rng, 1, max(1, 65536 // t)))
    causal = rng.random() < 0.5
    drop = rng.choice([0.0, 0.1])
    mode = rng.choice(["bf16", "bf16", "bf16", "fp32", "fp16"])
    # one call under about 60 ms at the fp32 rate (fwd 4 N H T^2 d FLOPs, bwd 2.5x)
    flops = 4.0 * n * heads * t * t * d * (0.5 if causal else 1) * 3.5
    if flops > (1.5e13 if mode != "fp32" else 1.5e12):
        return None
    dt = DTYPES[mode]
    q, k, v = (torch.randn(n, heads, t, d, device="cuda", dtype=dt) for _ in range(3))
    fwd = lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=drop, is_causal=causal)  # noqa: E731
    backend = backend_of(kernel_names(fwd))
    do = torch.randn(n, heads, t, d, device="cuda", dtype=dt)
    # The backward as autograd calls it, but called directly: autograd would run it on the forward's
    # stream, outside a graph being captured on another.
    bwd_graph = drop == 0
    if backend == "cudnn":
        bwd = cudnn_backward(q, k, v, do, drop, causal)
        if bwd is None:
            # cuDNN's backward through autograd: autograd runs it on the forward's stream, so it is timed
            # back to back only, without a graph. Small shapes then read the host's time (about 150-350 us
            # a call on an H100 host), not the GPU's: use the direct call where this PyTorch has it.
            qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
            og = F.scaled_dot_product_attention(qg, kg, vg, dropout_p=drop, is_causal=causal)
            bwd = lambda: torch.autograd.grad(og, (qg, kg, vg), do, retain_graph=True)  # noqa: E731
            bwd_graph = False
            backend = "cudnn_autograd"
    elif backend == "flash":
        o, lse, cq, ck, mq, mk, seed, off, _ = aten._scaled_dot_product_flash_attention(q, k, v, drop, causal, False)
        bwd = lambda: aten._scaled_dot_product_flash_attention_backward(  # noqa: E731
            do, q, k, v, o, lse, cq, ck, mq, mk, drop, causal, seed, off)
    elif backend == "efficient":
        o, lse, seed, off = aten._scaled_dot_product_efficient_attention(q, k, v, None, True, drop, causal)
        bwd = lambda: aten._scaled_dot_product_efficient_attention_backward(  # noqa: E731
            do, q, k, v, None, o, lse, seed, off, drop, [True, True, True, False], causal)
    else:
        bwd = None
    fixed = dict(math_mode=mode, dtype=mode, N=n, heads=heads, T=t, head_dim=d, causal=int(causal), dropout_p=drop,
                 backend=backend)
    split = "heldout" if t >= 8192 else "train"
    # dropout draws from the generator: its offsets under graph capture are left alone (stream time only)
    rows = [timed("attention", fixed, "fwd", fwd, "random", split, graph=drop == 0)]
    if bwd:
        rows.append(timed("attention", fixed, "bwd", bwd, "random", split, graph=bwd_graph))
    return rows


def layernorm(rng):
    c = rng.choice([768, 1024, 1280, 1536, 1600, 2048, 2560, 3072, 4096, 5120, 8192, 12288, 16384,
                    log_uniform_int(rng, 64, 16384)])
    rows_n = log_uniform_int(rng, 64, 131072)
    if rows_n * c > 2 ** 28:
        return None
    mode = rng.choice(["fp32", "fp32", "bf16"])
    dt = DTYPES[mode]
    x = torch.randn(rows_n, c, device="cuda", dtype=dt)
    w = torch.ones(c, device="cuda", dtype=dt)
    b = torch.zeros(c, device="cuda", dtype=dt)
    fwd = lambda: aten.native_layer_norm(x, [c], w, b, 1e-5)  # noqa: E731
    y, mean, rstd = fwd()
    dy = torch.randn_like(y)
    bwd = lambda: aten.native_layer_norm_backward(dy, x, [c], mean, rstd, w, b, [True, True, True])  # noqa: E731
    fixed = dict(math_mode=mode, dtype=mode, rows=rows_n, features=c)
    split = "heldout" if c > 8192 else "train"
    return [timed("layernorm", fixed, p, fn, "random", split) for p, fn in (("fwd", fwd), ("bwd", bwd))]


def embedding(rng):
    vocab = rng.choice([2, 512, 1024, 2048, 30522, 32000, 50257, 65536, 128256, log_uniform_int(rng, 2, 131072)])
    dim = rng.choice([768, 1024, 1600, 2048, 4096, log_uniform_int(rng, 64, 8192)])
    rows_n = log_uniform_int(rng, 256, 131072)
    if rows_n * dim > 2 ** 28 or vocab * dim > 2 ** 30:
        return None
    w = torch.randn(vocab, dim, device="cuda")
    ids = torch.randint(0, vocab, (rows_n,), device="cuda")
    dy = torch.randn(rows_n, dim, device="cuda")
    fwd = lambda: F.embedding(ids, w)  # noqa: E731
    bwd = lambda: torch.ops.aten.embedding_dense_backward(dy, ids, vocab, -1, False)  # noqa: E731
    fixed = dict(math_mode="fp32", dtype="fp32", rows=rows_n, dim=dim, num_embeddings=vocab)
    split = "heldout" if vocab > 100000 else "train"
    return [timed("embedding", fixed, p, fn, "random", split) for p, fn in (("fwd", fwd), ("bwd", bwd))]


def softmax_ce(rng):
    classes = rng.choice([1000, 10, 100, 30522, 32000, 50257, 50257, 128256, log_uniform_int(rng, 2, 131072)])
    n = log_uniform_int(rng, 32, 65536)
    if n * classes > 2 ** 29:
        return None
    logits = torch.randn(n, classes, device="cuda")
    y = torch.randint(0, classes, (n,), device="cuda")
    fwd = lambda: F.cross_entropy(logits, y)  # noqa: E731
    logp = F.log_softmax(logits, 1)
    loss, total = aten.nll_loss_forward(logp, y, None, 1, -100)
    one = torch.ones((), device="cuda")

    def bwd():  # autograd's two kernels: nll_loss_backward, then log_softmax's backward
        g = aten.nll_loss_backward(one, logp, y, None, 1, -100, total)
        return aten._log_softmax_backward_data(g, logp, 1, torch.float32)
    fixed = dict(math_mode="fp32", dtype="fp32", N=n, classes=classes)
    split = "heldout" if classes > 100000 else "train"
    return [timed("softmax_ce", fixed, p, fn, "random", split) for p, fn in (("fwd", fwd), ("bwd", bwd))]


def activation(rng):
    elements = log_uniform_int(rng, 1024, 2 ** 28)
    mode = rng.choice(["fp32", "bf16"])
    op = rng.choice(["gelu", "gelu_tanh"])
    approx = "tanh" if op == "gelu_tanh" else "none"
    x = torch.randn(elements, device="cuda", dtype=DTYPES[mode])
    dy = torch.randn_like(x)
    fwd = lambda: F.gelu(x, approximate=approx)  # noqa: E731
    bwd = lambda: torch.ops.aten.gelu_backward(dy, x, approximate=approx)  # noqa: E731
    fixed = dict(math_mode=mode, dtype=mode, op=op, elements=elements)
    return [timed("activation", fixed, p, fn, "random", "train") for p, fn in (("fwd", fwd), ("bwd", bwd))]


WIDTHS = [(768, 2304), (768, 768), (768, 3072), (3072, 768), (768, 50257), (768, 30522), (1024, 3072), (1024, 4096),
          (4096, 1024), (1024, 1024), (1600, 4800), (1600, 6400), (6400, 1600), (2048, 8192), (8192, 2048),
          (4096, 12288), (4096, 11008), (11008, 4096), (768, 1000)]


GEMM_COLS = ["kind", "pass", "math_mode", "dtype", "M", "N", "K", "transA", "transB", "batch", "in_features",
             "out_features", "impl", "time_median_s", "time_min_s", "time_spread_s", "repeats", "source",
             "time_graph_s", "graph_calls", "split"]


def gemm_dicts(rows):
    return [dict(zip(GEMM_COLS, r)) for r in rows]


def gemm(rng):
    fin, fout = rng.choice(WIDTHS)
    rows_n = rng.choice([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, log_uniform_int(rng, 256, 65536)])
    mode = rng.choice(["bf16", "bf16", "fp32"])
    if 2.0 * rows_n * fin * fout > (4e12 if mode == "bf16" else 6e11):
        return None
    # Held out: the largest token count (65536 rows), beyond every language-model step here. Not the
    # harness's range (kernel_sweep.gemm_split): that would hold out every vocabulary-sized GEMM, the
    # one a language model's step spends most in (768 x 50257, unaligned).
    out = gemm_rows(rows_n, fin, fout, mode, "transformer", "heldout" if rows_n >= 65536 else "train")
    return gemm_dicts(out)


def vocab(rng):
    """A language model's output layer and its tied embedding's GEMMs: widths 768..4096 against
    vocabulary sizes, many not a multiple of 8 (cuBLAS then runs alignment-1 kernels), beside aligned
    ones. Split as gemm's."""
    fin = rng.choice([768, 1024, 1280, 1600, 2048, 2560, 4096])
    fout = rng.choice([50257, 50257, 30522, 30522, 32000, 50304, 32768, 49408, 51200, 128256,
                       2 * log_uniform_int(rng, 5000, 65000) + 1])
    rows_n = rng.choice([1024, 2048, 4096, 8192, 16384, 65536, log_uniform_int(rng, 256, 32768)])
    mode = rng.choice(["bf16", "bf16", "bf16", "fp32"])
    if 2.0 * rows_n * fin * fout > (4e12 if mode == "bf16" else 6e11):
        return None
    out = gemm_rows(rows_n, fin, fout, mode, "vocab", "heldout" if rows_n >= 65536 else "train")
    return gemm_dicts(out)


SECTIONS = {"attention": attention, "layernorm": layernorm, "embedding": embedding, "softmax_ce": softmax_ce,
            "activation": activation, "gemm": gemm, "vocab": vocab}


def provenance(a, counts, seconds):
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()
    p = torch.cuda.get_device_properties(0)
    return {"what": "validation/pytorch/transformer_kernels.py: transformer kernels timed through PyTorch",
            "sections": a.sections, "seed": a.seed, "budget_s": a.budget_s, "rows": counts, "seconds": round(seconds),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": os.environ.get("DTSIM_GIT_COMMIT", "unknown"),
            "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "cublas": "bundled with torch " + torch.__version__,
            "gpu": p.name, "sm_count": p.multi_processor_count, "driver": drv[:1], "host": platform.node(),
            "python": platform.python_version(),
            "settings": {"matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                         "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32},
            "math": "fp32 rows: strict FP32 matmuls (PyTorch's default); bf16/fp16: tensors of that type"}


def run_section(a, name):
    """One section in this process, its rows appended to DIR/name.csv as they come."""
    global GRAPHS
    GRAPHS = not a.no_graph
    torch.backends.cudnn.benchmark = True
    rng = random.Random(f"{a.seed}/{name}")
    path = os.path.join(a.out, f"{name}.csv")
    seen = set()
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                seen.add(tuple(sorted((k, str(v)) for k, v in r.items() if k not in TIMES and k not in ("pass", "backend"))))
    start, added, failures = time.time(), 0, 0
    f = open(path, "a", newline="")
    w = None
    while time.time() - start < a.budget_s:
        try:
            got = SECTIONS[name](rng)
        except CaptureFailed as e:
            print(f"{name}: graph capture failed ({e}); this process's CUDA state is lost", flush=True)
            f.close()
            sys.exit(3)
        except (torch.OutOfMemoryError, RuntimeError) as e:
            print(f"{name}: skipped a shape: {str(e).splitlines()[0][:120]}", flush=True)
            got = None
            failures += 1
            if failures >= 8 and added == 0:
                print(f"{name}: every shape so far failed; giving up this section", flush=True)
                break
        torch.cuda.empty_cache()
        if not got:
            continue
        key = tuple(sorted((k, str(v)) for k, v in got[0].items() if k not in TIMES and k not in ("pass", "backend")))
        if key in seen:
            continue
        seen.add(key)
        if w is None:
            w = csv.DictWriter(f, fieldnames=COLS.get(name, list(got[0].keys())))
            if f.tell() == 0:
                w.writeheader()
        w.writerows(got)
        f.flush()
        added += len(got)
    f.close()
    print(f"{name}: {added} rows in {time.time() - start:.0f} s -> {path}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=360)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-graph", action="store_true", help="stream times only (no CUDA graph replay)")
    a = ap.parse_args()
    names = a.sections.split(",")
    for name in names:
        if name not in SECTIONS:
            ap.error(f"--sections: unknown {name!r}")
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        run_section(a, names[0])
        return
    # Each section in a process of its own: a failed graph capture cannot spoil the others.
    t0, counts = time.time(), {}
    for name in names:
        budget = a.budget_s * SHARE[name] / sum(SHARE[n] for n in names)
        start, seed, graph = time.time(), a.seed, not a.no_graph
        while True:
            left = budget - (time.time() - start)
            if left < 5:
                break
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--out", a.out, "--sections", name,
                   "--budget-s", str(left), "--seed", str(seed)] + ([] if graph else ["--no-graph"])
            rc = subprocess.run(cmd).returncode
            if rc != 3:
                break
            graph, seed = False, seed + 1000  # go on without graphs, on other shapes
        path = os.path.join(a.out, f"{name}.csv")
        counts[name] = sum(1 for _ in open(path)) - 1 if os.path.exists(path) else 0
        with open(os.path.join(a.out, "provenance.json"), "w") as f:
            json.dump(provenance(a, counts, time.time() - t0), f, indent=1)


if __name__ == "__main__":
    main()
