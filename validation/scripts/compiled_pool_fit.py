#!/usr/bin/env python3
"""Fits the cost of torch.compile's generated pooling kernels (FrameworkSpec::compiled_pooling) on
validation/data/<gpu>/pytorch_modes/compiled_pool/pool_kernels.csv and reports held-out error.

The model, per pooling mode and pass (max/fwd, max/bwd, avg/fwd, avg/bwd):

  t = max(bytes / (bandwidth_fraction x bandwidth),
          (window_elements x cw + input_elements x ci) / (SMs x SM clock)) + kernel_overhead_s

window_elements: forward N*C*P*Q*R*S (every output reads its window); backward N*C*H*W*ceil(R/s)*ceil(S/s)
(every input gathers from the outputs whose windows may hold it). bytes: input and output once, plus a
one-byte window offset per output for max pooling (Inductor keeps the argmax as an int8 offset). The
measured backward kernels also read the ReLU output in front of the pooling (threshold_backward fused
in), which the fit counts; dtsim's backward kernel does not, since its ReLU backward stays with the
layers in front.

cw, ci: SM cycles per window element and per input element, the rate at which the SMs issue the
index arithmetic, compares and gathers (the kernels run far below their bytes' time at 3x3/s2).
bandwidth_fraction: one for all four. kernel_overhead_s is the GPU preset's, as the roofline adds it.

Split: rows whose shape's FNV-1a hash is 0 mod 5 are held out (the predictors' rule); the fit is a
grid search minimising the training rows' mean absolute percentage error.

  validation/scripts/compiled_pool_fit.py [--data CSV] [--gpu configs/gpus/h200-sxm.json]
"""
import argparse, csv, json, math


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def features(r, relu_read):
    n, c, h, w, k, s, p = (int(r[x]) for x in "N C H W k s p".split())
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    eb = 2 if r["dtype"] in ("bf16", "fp16") else 4
    inp, out = n * c * h * w, n * c * ho * wo
    offsets = out if r["op"] == "max" else 0
    if r["pass"] == "fwd":
        windows, nbytes = out * k * k, (inp + out) * eb + offsets
    else:
        windows = inp * math.ceil(k / s) ** 2
        nbytes = (inp + out + (inp if relu_read else 0)) * eb + offsets
    return inp, windows, nbytes


def predict_s(r, cw, ci, f, gpu):
    inp, windows, nbytes = features(r, True)
    issue = (windows * cw + inp * ci) / (gpu["sm_count"] * gpu["sm_clock_MHz"] * 1e6)
    return max(nbytes / (f * gpu["memory_bandwidth_GBps"] * 1e9), issue) + gpu["roofline"]["kernel_overhead_s"]


def errors(rows, params, f, gpu):
    return [predict_s(r, *params[(r["op"], r["pass"])], f, gpu) / (float(r["time_us"]) * 1e-6) - 1 for r in rows]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="validation/data/h200-sxm/pytorch_modes/compiled_pool/pool_kernels.csv")
    ap.add_argument("--gpu", default="configs/gpus/h200-sxm.json")
    a = ap.parse_args()
    gpu = json.load(open(a.gpu))
    rows = list(csv.DictReader(open(a.data)))
    for r in rows:
        r["held"] = fnv1a64(",".join(r[x] for x in "op dtype N C H W k s p".split())) % 5 == 0
    train = [r for r in rows if not r["held"]]
    keys = sorted({(r["op"], r["pass"]) for r in rows})
    cycles = [0.005 * 1.04 ** i for i in range(160)]  # 0.005 .. 2.7 SM cycles
    best = None
    for f in [0.80 + 0.01 * i for i in range(16)]:
        params, total = {}, 0.0
        for key in keys:
            sub = [r for r in train if (r["op"], r["pass"]) == key]
            fit = min(((sum(abs(e) for e in errors(sub, {key: (cw, ci)}, f, gpu)), cw, ci)
                       for cw in cycles for ci in [0.0] + cycles[::4]))
            params[key] = fit[1:]
            total += fit[0]
        if best is None or total < best[0]:
            best = (total, f, params)
    _, f, params = best
    print(f"bandwidth_fraction {f:.2f}")
    for key in keys:
        for name, sub in (("train", train), ("held-out", [r for r in rows if r["held"]])):
            e = errors([r for r in sub if (r["op"], r["pass"]) == key], params, f, gpu)
            big = [x for r, x in zip([r for r in sub if (r["op"], r["pass"]) == key], e) if float(r["time_us"]) >= 20]
            print(f"{key[0]}/{key[1]} cw {params[key][0]:.4f} ci {params[key][1]:.4f} {name}: {len(e)} rows, "
                  f"MAPE {sum(map(abs, e)) / len(e):.3f}, max {max(map(abs, e)):.3f}, bias {sum(e) / len(e):+.3f}; "
                  f"rows of 20 us and more: {len(big)}" + (f", MAPE {sum(map(abs, big)) / len(big):.3f}" if big else ""))
    print(json.dumps({"bandwidth_fraction": round(f, 2),
                      "sm_cycles_per_element": {f"{k[0]}/{k[1]}": {"window": round(params[k][0], 4), "input": round(params[k][1], 4)}
                                                for k in keys}}, indent=2))


if __name__ == "__main__":
    main()
