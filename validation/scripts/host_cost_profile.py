#!/usr/bin/env python3
"""Per-kernel host costs for a framework profile, from validation/pytorch/host_costs.py measurements.

host_costs.py gives eager PyTorch's host time per layer and pass (forward, backward, optimizer step)
for each layer type, in fp32 and bf16 autocast. dtsim issues kernels, so each layer's cost is put on
the kernels dtsim lowers that layer to (workload/kernels.cpp), keyed as sim/schedule.hpp's
framework_host_cost_key:
  conv2d/fwd/M                     conv forward (under bf16, its autocast weight cast included)
  conv2d/bwd_data/M, bwd_filter/M  half of the conv backward each
  eltwise/{fwd,bwd}/M/bias_add|bias_grad   what a bias adds to a conv's forward / backward
  eltwise/{fwd,bwd}/fp32/autocast  0: counted in the conv's and linear's bf16 costs
  batchnorm, activation (relu), pool (max, avg), add, dropout: their layer's cost
  gemm/fwd/M, gemm/bwd_data/M, gemm/bwd_weight/M: linear forward; half its backward each
  sgd_update/update/fp32           the step's cost per layer with parameters (mean over conv, conv
                                   with bias, batchnorm and linear)
  layernorm, attention (GPT-2's heads and scaled_dot_product_attention, dropout or not),
  activation/*/M/gelu and gelu_tanh: their layer's cost
  eltwise/{fwd,bwd}/fp32/autocast_cast   bf16: half of what a linear layer fed and followed by FP32
                                   costs over a plain one (two casts)
  eltwise/*/M/mha_*                nn.MultiheadAttention's cost over its two linear layers and the
                                   attention, shared evenly by the layout kernels dtsim lowers it to
                                   (3 forward; 11 backward: the permute, the q/k/v selects' 3 fills,
                                   3 copies and 2 adds, the q/k/v and input copies)
Several measurement files are averaged, each layer kind over the files that measured it. Writes `host_cost_s` into the profile (other fields kept).

  validation/scripts/host_cost_profile.py --profile configs/frameworks/pytorch.json \
      validation/data/h100-sxm/host_costs/host_costs_*.json
"""
import argparse, json, statistics

from profile_io import set_profile_field

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True)
    ap.add_argument("--add-keys", action="store_true",
                    help="keep the profile's host_cost_s entries; add only the keys it lacks")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    runs = [json.load(open(f)) for f in a.files]

    def cost(layer, prec, phase):
        return statistics.mean(r["layers"][layer][prec][phase + "_s"] for r in runs if layer in r["layers"])

    t = {}
    for m in ("fp32", "bf16"):
        t[f"conv2d/fwd/{m}"] = cost("conv", m, "fwd")
        t[f"conv2d/bwd_data/{m}"] = t[f"conv2d/bwd_filter/{m}"] = cost("conv", m, "bwd") / 2
        t[f"eltwise/fwd/{m}/bias_add"] = max(0.0, cost("conv_bias", m, "fwd") - cost("conv", m, "fwd"))
        t[f"eltwise/bwd/{m}/bias_grad"] = max(0.0, cost("conv_bias", m, "bwd") - cost("conv", m, "bwd"))
        t[f"batchnorm/fwd/{m}"] = cost("batchnorm", m, "fwd")
        t[f"batchnorm/bwd/{m}"] = cost("batchnorm", m, "bwd")
        t[f"activation/fwd/{m}"] = cost("relu", m, "fwd")
        t[f"activation/bwd/{m}"] = cost("relu", m, "bwd")
        for v, layer in (("max", "maxpool"), ("avg", "avgpool")):
            t[f"pool/fwd/{m}/{v}"] = cost(layer, m, "fwd")
            t[f"pool/bwd/{m}/{v}"] = cost(layer, m, "bwd")
        t[f"add/fwd/{m}"] = cost("add", m, "fwd")
        t[f"add/bwd/{m}"] = cost("add", m, "bwd")
        t[f"dropout/fwd/{m}"] = cost("dropout", m, "fwd")
        t[f"dropout/bwd/{m}"] = cost("dropout", m, "bwd")
        t[f"gemm/fwd/{m}"] = cost("linear", m, "fwd")
        t[f"gemm/bwd_data/{m}"] = t[f"gemm/bwd_weight/{m}"] = cost("linear", m, "bwd") / 2
        # The transformer's kinds, and the differences between kinds, from the files that measured
        # them (one machine's linear layer against the same machine's attention).
        seq = [r for r in runs if "mha" in r["layers"]]
        if not seq:
            continue

        def cs(layer, phase):
            return statistics.mean(r["layers"][layer][m][phase + "_s"] for r in seq)
        for ph in ("fwd", "bwd"):
            t[f"layernorm/{ph}/{m}"] = cs("layernorm", ph)
            t[f"attention/{ph}/{m}"] = cs("attention", ph)
            t[f"activation/{ph}/{m}/gelu"] = t[f"activation/{ph}/{m}/gelu_tanh"] = cs("gelu", ph)
        fwd_extra = cs("mha", "fwd") - 2 * cs("linear", "fwd") - cs("attention", "fwd")
        bwd_extra = cs("mha", "bwd") - 2 * cs("linear", "bwd") - cs("attention", "bwd")
        for v in ("mha_input_transpose", "mha_qkv_contiguous", "mha_output_permute"):
            t[f"eltwise/fwd/{m}/{v}"] = fwd_extra / 3
        for v in ("mha_output_permute", "mha_qkv_grad_fill", "mha_qkv_grad_copy", "mha_qkv_grad_add",
                  "mha_qkv_contiguous", "mha_input_transpose"):
            t[f"eltwise/bwd/{m}/{v}"] = bwd_extra / 11  # 11 kernels: 3 fills, 3 copies, 2 adds among them
        if m == "bf16":
            t["eltwise/fwd/fp32/autocast_cast"] = (cs("linear_cast", "fwd") - cs("linear", "fwd")) / 2
            t["eltwise/bwd/fp32/autocast_cast"] = (cs("linear_cast", "bwd") - cs("linear", "bwd")) / 2
    t["eltwise/fwd/fp32/autocast"] = t["eltwise/bwd/fp32/autocast"] = 0.0
    t["sgd_update/update/fp32"] = statistics.mean(
        statistics.mean(cost(l, m, "step") for m in ("fp32", "bf16")) for l in ("conv", "conv_bias", "batchnorm", "linear"))
    t = {k: float(f"{max(v, 0.0):.3g}") for k, v in sorted(t.items())}
    prov = runs[0].get("provenance", {})
    note = ("measured per layer type by validation/pytorch/host_costs.py (" + runs[0].get("method", "") + "), "
            f"{len(runs)} runs averaged ({', '.join(a.files)}); {prov.get('gpu', '?')}, torch {prov.get('torch', '?')}, "
            f"{prov.get('date_utc', '?')}; put on dtsim's kernels by validation/scripts/host_cost_profile.py")
    if a.add_keys:
        with open(a.profile) as f:
            prof = json.load(f)
        old = prof.get("host_cost_s", {})
        added = sorted(set(t) - set(old))
        t = dict(sorted({**t, **old}.items()))
        note = prof.get("sources", {}).get("host_cost_s", "") + f". Added later ({', '.join(added)}): " + note
    set_profile_field(a.profile, "host_cost_s", t, note)
    for k, v in t.items():
        print(f"{k:32s} {v * 1e6:7.1f} us")

if __name__ == "__main__":
    main()
