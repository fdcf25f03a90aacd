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
Several measurement files are averaged. Writes `host_cost_s` into the profile (other fields kept).

  validation/scripts/host_cost_profile.py --profile configs/frameworks/pytorch.json \
      validation/data/h100-sxm/host_costs/host_costs_*.json
"""
import argparse, json, statistics

from profile_io import set_profile_field


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    runs = [json.load(open(f)) for f in a.files]

    def cost(layer, prec, phase):
        return statistics.mean(r["layers"][layer][prec][phase + "_s"] for r in runs)

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
    t["eltwise/fwd/fp32/autocast"] = t["eltwise/bwd/fp32/autocast"] = 0.0
    t["sgd_update/update/fp32"] = statistics.mean(
        statistics.mean(cost(l, m, "step") for m in ("fp32", "bf16")) for l in ("conv", "conv_bias", "batchnorm", "linear"))
    t = {k: float(f"{max(v, 0.0):.3g}") for k, v in sorted(t.items())}
    prov = runs[0].get("provenance", {})
    set_profile_field(a.profile, "host_cost_s", t, (
        "measured per layer type by validation/pytorch/host_costs.py (" + runs[0].get("method", "") + "), "
        f"{len(runs)} runs averaged ({', '.join(a.files)}); {prov.get('gpu', '?')}, torch {prov.get('torch', '?')}, "
        f"{prov.get('date_utc', '?')}; put on dtsim's kernels by validation/scripts/host_cost_profile.py"))
    for k, v in t.items():
        print(f"{k:32s} {v * 1e6:7.1f} us")


if __name__ == "__main__":
    main()
