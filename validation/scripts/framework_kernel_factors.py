#!/usr/bin/env python3
"""PyTorch's own kernels against the harness's measured ones, as time ratios per predictor key.

PyTorch 2.x runs bf16 batchnorm and all pooling with its native kernels rather than cuDNN's
(validation/README.md, "PyTorch differences measured"). data/<gpu>/torch_compare/{batchnorm,pool}.csv
time the same shapes both ways; the ratio of the summed times per (kind, pass, math[, variant]) is
what a network's total for that kernel kind changes by, so it weighs large kernels as the iteration
does. Writes the ratios into a framework profile's `kernel_time_factors` (other fields kept):

  validation/scripts/framework_kernel_factors.py --data validation/data/h100-sxm/torch_compare \
      --profile configs/frameworks/pytorch.json \
      --sgd validation/data/h100-sxm/kernel_profile/vgg16_b32_fp32.txt:validation/data/h100-sxm/runs/vgg16_b32_1gpu_fp32.json

--op-times CSV (validation/pytorch/op_times.py): PyTorch's own bias add and gradient, pooling and
activation kernels timed alone on the shapes the validated networks run them, against dtsim's
prediction of the same kernel (`dtsim kernel`, the harness-measured predictors or the roofline): the
ratio of the sums per key, over shapes dtsim prices at --min-time-s or more (chosen by the prediction,
not the measurement, so slow shapes are not picked out). Pooling gets a key per window too
(pool/bwd/bf16/avg/k2s2p0: densenet's 2x2 average pooling backward is 4x, resnet's 3x3/s2/p1 max
pooling backward 0.8x); dtsim uses the most specific key it finds. Keys from --op-times replace the
same keys from --data.

--sgd PROFILE:RUN (repeatable): PyTorch's SGD (foreach: weight decay, momentum and update as separate
multi-tensor passes) against the harness's one fused kernel: the multi_tensor_apply kernels' time in a
torch.profiler listing (validation/pytorch/kernel_profile.py) over the sgd_update time of a harness
run of the same model; the mean ratio becomes sgd_update/update/fp32.
"""
import argparse, collections, csv, json, os, subprocess

from profile_io import set_profile_field


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", help="torch_compare folder (batchnorm.csv, pool.csv)")
    ap.add_argument("--channels-last-op-times",
                    help="op_times.py CSV measured with --memory-format channels_last: writes only the profile's "
                         "channels_last_kernel_time_factors (see below)")
    ap.add_argument("--profile", required=True, help="framework profile JSON to update")
    ap.add_argument("--min-shapes", type=int, default=4)
    ap.add_argument("--sgd", action="append", default=[], help="PROFILE.txt:RUN.json (see above)")
    ap.add_argument("--op-times", help="op_times.py CSV (see above)")
    ap.add_argument("--dtsim", default="build/dtsim", help="dtsim binary, for --op-times")
    ap.add_argument("--gpu", default="h100-sxm", help="GPU the --op-times rows ran on")
    ap.add_argument("--min-time-s", type=float, default=20e-6,
                    help="only shapes whose harness kernel takes this long: PyTorch's single-op timings of "
                         "smaller ones include its host costs (some tiny pooling backwards read 100 us)")
    a = ap.parse_args()
    if a.channels_last_op_times:
        return channels_last_factors(a)
    if not a.data:
        ap.error("--data is required unless --channels-last-op-times is given")
    sums = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for kind in ("batchnorm", "pool"):
        with open(os.path.join(a.data, kind + ".csv")) as f:
            for r in csv.DictReader(f):
                if float(r["harness_time_s"]) < a.min_time_s:
                    continue
                key = f"{kind}/{r['pass']}/{r['math_mode']}"
                if kind == "pool":
                    key += "/" + r["shape"].split(";")[0]
                s = sums[key]
                s[0] += float(r["torch_time_s"])
                s[1] += float(r["harness_time_s"])
                s[2] += 1
    factors, shapes = {}, {}
    for key in sorted(sums):
        torch_s, harness_s, n = sums[key]
        if n >= a.min_shapes:
            factors[key] = round(torch_s / harness_s, 3)
            shapes[key] = n
    if a.op_times:
        for key, (torch_s, dtsim_s, n) in op_time_sums(a).items():
            if n >= a.min_shapes:
                factors[key] = round(torch_s / dtsim_s, 3)
                shapes[key] = f"{n} op-times"
    sgd = []
    for pair in a.sgd:
        prof_txt, run = pair.split(":")
        torch_us = sum(float(l.split()[0]) for l in open(prof_txt) if "multi_tensor_apply_kernel" in l)
        harness_s = sum(l["time_s"] for l in json.load(open(run))["layers"] if l["kernel_kind"] == "sgd_update")
        sgd.append(torch_us * 1e-6 / harness_s)
    if sgd:
        factors["sgd_update/update/fp32"] = round(sum(sgd) / len(sgd), 3)
        shapes["sgd_update/update/fp32"] = f"{len(sgd)} profiled runs ({', '.join(a.sgd)})"
    note = (f"{a.data}: PyTorch's time over the harness's for the same shapes, summed per key "
            f"(validation/scripts/framework_kernel_factors.py; shapes whose harness time is at least "
            f"{a.min_time_s * 1e6:.0f} us, keys with at least {a.min_shapes})")
    if a.op_times:
        note += (f"; keys marked op-times: {a.op_times}, PyTorch's kernels timed alone on the validated models' "
                 f"shapes over dtsim's prediction of the same kernels on {a.gpu} (predicted at least "
                 f"{a.min_time_s * 1e6:.0f} us), replacing the same keys from the harness comparison")
    factors = dict(sorted(factors.items()))
    set_profile_field(a.profile, "kernel_time_factors", factors, note + f"; shapes per key: {shapes}")
    for key, v in factors.items():
        print(f"{key:28s} {v:6.3f}  ({shapes[key]} shapes)")


def channels_last_factors(a):
    """channels_last_kernel_time_factors: PyTorch's kernels on channels_last tensors (op_times.py
    --memory-format channels_last: batchnorm, residual add and gradient accumulation, bias, pooling,
    activations) over dtsim's prediction of the same kernels (the harness's NCHW measurements), summed
    per key over the shapes dtsim prices at --min-time-s or more. NHWC convolutions have measured
    predictors of their own (conv2d/<pass>/<math>/nhwc) and take no factor.

    Several CSVs may be given (comma-separated). fp16 rows count for batchnorm only: dtsim keys every
    other fp16 kernel as bf16 (compute/kernel_key.cpp), while PyTorch runs fp16 batchnorm with other
    kernels than bf16's (sim/schedule.cpp framework_kernel_key: batchnorm/<pass>/fp16). Keys computed
    here replace the same keys of the profile; the others (torch.compile's inductor_* factors) stay."""
    factors, shapes, notes = {}, {}, []
    for path in a.channels_last_op_times.split(","):
        a.op_times = path
        for key, (torch_s, dtsim_s, n) in sorted(op_time_sums(a).items()):
            if "/fp16" in key and not key.startswith("batchnorm/"):
                continue
            if n >= a.min_shapes:
                factors[key] = round(torch_s / dtsim_s, 3)
                shapes[key] = n
    with open(a.profile) as f:
        kept = {k: v for k, v in json.load(f).get("channels_last_kernel_time_factors", {}).items() if k not in factors}
    note = (f"{a.channels_last_op_times}: PyTorch's kernels on channels_last tensors timed alone on the validated models' "
            f"shapes over dtsim's prediction of the same kernels on {a.gpu} (the harness's NCHW measurements; predicted at "
            f"least {a.min_time_s * 1e6:.0f} us, keys with at least {a.min_shapes} shapes; fp16 rows for batchnorm only; "
            f"validation/scripts/framework_kernel_factors.py --channels-last-op-times); shapes per key: {shapes}")
    set_profile_field(a.profile, "channels_last_kernel_time_factors", dict(sorted({**kept, **factors}.items())), note)
    for key, v in sorted(factors.items()):
        print(f"{key:28s} {v:6.3f}  ({shapes[key]} shapes)")


def dtsim_kernel_args(r):
    """The `dtsim kernel` arguments pricing an op_times.py row as dtsim's lowering issues it."""
    if r["op"] == "batchnorm":
        shape = ",".join(f"{k}={r[k]}" for k in ("N", "C", "H", "W"))
        return ["--kind", "batchnorm", "--pass", r["pass"], "--shape", shape]
    if r["op"] == "add":  # forward sum of two tensors; backward: autograd's accumulation (add/bwd, 2 inputs)
        return ["--kind", "add", "--pass", r["pass"], "--shape", f"elements={r['elements']},inputs=2"]
    if r["op"] == "bias":  # kernels.cpp bias_kernels: add reads the output and the bias; the gradient reduces to C
        el, c = int(r["elements"]), int(r["C"])
        if r["pass"] == "fwd":
            return ["--kind", "eltwise", "--pass", "fwd", "--variant", "bias_add", "--shape", f"read={el + c},written={el}"]
        return ["--kind", "eltwise", "--pass", "bwd", "--variant", "bias_grad", "--shape", f"read={el},written={c}"]
    if r["op"] == "pool":
        shape = ",".join(f"{k}={r[k]}" for k in ("N", "C", "H", "W", "R", "S", "stride", "pad"))
        return ["--kind", "pool", "--pass", r["pass"], "--variant", r["variant"], "--shape", shape]
    return ["--kind", "activation", "--pass", r["pass"], "--variant", r["variant"], "--shape", f"elements={r['elements']}"]


def op_time_sums(a):
    """{key: [PyTorch seconds, dtsim seconds, shapes]} over the --op-times rows dtsim prices at --min-time-s or more."""
    sums = collections.defaultdict(lambda: [0.0, 0.0, 0])
    with open(a.op_times) as f:
        for r in csv.DictReader(f):
            args = dtsim_kernel_args(r)
            cmd = [a.dtsim, "kernel", "--gpu", a.gpu, "--dtype", r["math_mode"], "--format", "json"] + args
            dtsim_s = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["time_s"]
            if dtsim_s < a.min_time_s:
                continue
            opt = dict(zip(args[::2], args[1::2]))  # the kernel as dtsim keys it: kind/pass/math/variant
            if r["op"] == "add":  # compute/kernel_key.cpp: both passes of add share the forward's key
                keys = [f"add/fwd/{r['math_mode']}"]
            elif r["op"] == "batchnorm":
                keys = [f"batchnorm/{r['pass']}/{r['math_mode']}"]
            else:
                keys = [f"{opt['--kind']}/{opt['--pass']}/{r['math_mode']}/{opt['--variant']}"]
            if r["op"] == "pool":  # sim/schedule.cpp framework_kernel_key: the window's own key too
                keys.append(keys[0] + f"/k{r['R']}s{r['stride']}p{r['pad']}")
            for key in keys:
                s = sums[key]
                s[0] += float(r["time_median_s"])
                s[1] += dtsim_s
                s[2] += 1
    return sums


if __name__ == "__main__":
    main()
