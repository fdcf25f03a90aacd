#!/usr/bin/env python3
"""Exports real torch.onnx.export files of torchvision classifiers for dtsim's import tests
(tests/data/onnx/torch_export/).

Unlike gen_onnx.py, which writes graphs node by node the way the exporter is believed to write them,
this runs PyTorch's own TorchScript exporter:

    torch.onnx.export(model, torch.randn(1, 3, 224, 224), path,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      opset_version=17, dynamo=False, input_names=["input"],
                      dynamic_axes={"input": {0: "batch"}})

for resnet18, mobilenet_v2 and googlenet(aux_logits=False, init_weights=False) (weights=None), plus
resnet18 in TrainingMode.EVAL. Every initializer is then stripped to its dims and data_type (raw_data
and the typed data fields cleared) so the files stay small: dtsim reads shapes, not weights.

Needs torch, torchvision and onnx.  Usage:  python3 export_torchvision.py OUTDIR
Writes OUTDIR/<name>.onnx, OUTDIR/provenance.json and prints a summary.
"""
import datetime
import json
import os
import sys

import onnx
import torch
import torchvision

OPSET = 17


def export(model, path, mode):
    x = torch.randn(1, 3, 224, 224)
    kw = dict(training=mode, do_constant_folding=False, opset_version=OPSET,
              input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    try:
        torch.onnx.export(model, x, path, dynamo=False, **kw)
        return "dynamo=False"
    except TypeError:  # an older torch without the dynamo argument
        torch.onnx.export(model, x, path, **kw)
        return "no dynamo argument"


def strip(path):
    m = onnx.load(path)
    params = 0
    for t in m.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        params += n
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                      "uint64_data", "string_data", "external_data"):
            t.ClearField(field)
        t.ClearField("data_location")
    onnx.save(m, path)
    ops = sorted({n.op_type for n in m.graph.node})
    return params, ops, len(m.graph.node)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    tv = torchvision.models
    T, E = torch.onnx.TrainingMode.TRAINING, torch.onnx.TrainingMode.EVAL
    jobs = [
        ("resnet18", lambda: tv.resnet18(weights=None), T),
        ("mobilenet_v2", lambda: tv.mobilenet_v2(weights=None), T),
        ("googlenet", lambda: tv.googlenet(weights=None, aux_logits=False, init_weights=False), T),
        ("resnet18_eval", lambda: tv.resnet18(weights=None), E),
    ]
    prov = {
        "exporter": "torch.onnx.export (TorchScript exporter)",
        "torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__,
        "opset_version": OPSET, "do_constant_folding": False, "input": [1, 3, 224, 224],
        "input_names": ["input"], "dynamic_axes": {"input": {"0": "batch"}},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "initializers": "stripped to dims and data_type (no data)",
        "script": "tests/data/onnx/export_torchvision.py",
        "files": {},
    }
    for name, make, mode in jobs:
        path = os.path.join(out, name + ".onnx")
        model = make()
        torch_params = sum(p.numel() for p in model.parameters())
        # The exporter's training mode needs the module in train(); eval mode in eval().
        model.train(mode == T)
        try:
            how = export(model, path, mode)
            params, ops, nodes = strip(path)
        except Exception as e:  # keep going: report which export failed and why
            import traceback
            traceback.print_exc()
            prov["files"][name + ".onnx"] = {"error": repr(e)}
            continue
        prov["files"][name + ".onnx"] = {
            "model": name.replace("_eval", ""), "training": "TRAINING" if mode == T else "EVAL",
            "export_call": how, "torch_parameters": torch_params, "initializer_elements": params,
            "nodes": nodes, "ops": ops, "bytes": os.path.getsize(path),
        }
        print(name, how, "torch params", torch_params, "initializer elements", params,
              "nodes", nodes, "bytes", os.path.getsize(path), "ops", ops, flush=True)
    with open(os.path.join(out, "provenance.json"), "w") as f:
        json.dump(prov, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
