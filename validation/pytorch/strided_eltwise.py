#!/usr/bin/env python3
"""Times the elementwise kernels nn.MultiheadAttention leaves strided, beside their contiguous twins.

torchvision's ViT runs nn.MultiheadAttention(batch_first=True). In training its functional form
transposes the input to T x B x C, so the attention's output comes back as a B x T x C view of a
T x B x C tensor, and the residual stream stays in that layout: the residual adds, the copies that
LayerNorm needs and the in_proj bias add then run as ATen's non-vectorised elementwise_kernel
(validation/data/h100-sxm/kernel_profile/transformers/vit_b_16_*.txt) instead of the vectorised one.
This measures, on ViT's shapes, each such kernel and the same kernel on contiguous tensors, so that
dtsim can price the strided ones as a time ratio of the contiguous ones it predicts.

Ops (x: B x T x C; "perm": a B x T x C view of a contiguous T x B x C tensor; 16 = bf16, 32 = fp32):
  add_mixed         x32 + y16                       contiguous (autocast's residual add)
  add_mixed_perm    x32 + y16perm                   the attention's residual add
  add_mixed_permx   x32perm + y16                   the MLP's residual add (the stream is permuted)
  add_fp32 / _perm  x32 + y32 / x32 + y32perm       the same in FP32 training
  copy / copy_perm  x32.clone() / x32perm.contiguous()  LayerNorm's input made contiguous
  bias_add / _perm  z16 + b16 / z16perm + b16       in_proj's bias (z: B x T x 3C)
  add_res_perm      a16perm + x32                   the attention's residual add as torchvision writes
                                                    it (x + input: the permuted 16-bit branch first, so
                                                    the sum takes its layout)
  transpose_in      x16.transpose(0, 1).contiguous()  nn.MultiheadAttention's input made T x B x C
  qkv_copy          p16.unflatten(-1, (3, C)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
                                                    the packed in_proj output split into q, k, v
                                                    (p: T x B x 3C); its contiguous twin: p16.clone()
  copy_bf16         x16.clone(), p16.clone()        contiguous copies of the same sizes

Each is timed back to back on one stream with CUDA events (validation/pytorch/kernel_sweep.py's
time_stream, the harness's definition). Writes CSV: op,dtype,B,T,C,elements,time_median_s,time_min_s.

  python3 validation/pytorch/strided_eltwise.py --out strided.csv
"""
import argparse
import csv
import datetime
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_sweep import sig4, time_stream  # noqa: E402


def perm(b, t, c, dtype):
    return torch.randn(t, b, c, device="cuda", dtype=dtype).transpose(0, 1)


def ops(b, t, c):
    f32, b16 = torch.float32, torch.bfloat16
    x32 = torch.randn(b, t, c, device="cuda")
    y16, y32 = torch.randn(b, t, c, device="cuda", dtype=b16), torch.randn(b, t, c, device="cuda")
    y16p, y32p, x32p = perm(b, t, c, b16), perm(b, t, c, f32), perm(b, t, c, f32)
    z16, z16p = torch.randn(b, t, 3 * c, device="cuda", dtype=b16), perm(b, t, 3 * c, b16)
    bias = torch.randn(3 * c, device="cuda", dtype=b16)
    x16, p16 = torch.randn(b, t, c, device="cuda", dtype=b16), torch.randn(t, b, 3 * c, device="cuda", dtype=b16)
    return [
        ("add_res_perm", "bf16+fp32", b * t * c, lambda: y16p + x32),
        ("transpose_in", "bf16", b * t * c, lambda: x16.transpose(0, 1).contiguous()),
        ("copy_bf16", "bf16", b * t * c, lambda: x16.clone()),
        ("qkv_copy", "bf16", b * t * 3 * c,
         lambda: p16.unflatten(-1, (3, c)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()),
        ("copy_bf16", "bf16", b * t * 3 * c, lambda: p16.clone()),
        ("add_mixed", "fp32+bf16", b * t * c, lambda: x32 + y16),
        ("add_mixed_perm", "fp32+bf16", b * t * c, lambda: x32 + y16p),
        ("add_mixed_permx", "fp32+bf16", b * t * c, lambda: x32p + y16),
        ("add_fp32", "fp32", b * t * c, lambda: x32 + y32),
        ("add_fp32_perm", "fp32", b * t * c, lambda: x32 + y32p),
        ("copy", "fp32", b * t * c, lambda: x32.clone()),
        ("copy_perm", "fp32", b * t * c, lambda: x32p.contiguous()),
        ("bias_add", "bf16", b * t * 3 * c, lambda: z16 + bias),
        ("bias_add_perm", "bf16", b * t * 3 * c, lambda: z16p + bias),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", default="8,16,32,64,128,256")
    ap.add_argument("--tokens", default="50,197,257")
    ap.add_argument("--widths", default="768,1024")
    a = ap.parse_args()
    rows = []
    for c in map(int, a.widths.split(",")):
        for t in map(int, a.tokens.split(",")):
            for b in map(int, a.batches.split(",")):
                for op, dtype, el, fn in ops(b, t, c):
                    med, mn, _, _, _ = time_stream(fn)
                    rows.append(dict(op=op, dtype=dtype, B=b, T=t, C=c, elements=el, time_median_s=sig4(med),
                                     time_min_s=sig4(mn)))
                torch.cuda.empty_cache()
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    prov = {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": os.environ.get("DTSIM_GIT_COMMIT", "unknown"), "torch": torch.__version__,
            "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
            "timing": "kernel_sweep.time_stream: back-to-back stream time, CUDA events around each repeat"}
    with open(os.path.splitext(a.out)[0] + "_provenance.json", "w") as f:
        json.dump(prov, f, indent=1)
    print(f"{len(rows)} rows -> {a.out}")


if __name__ == "__main__":
    main()
