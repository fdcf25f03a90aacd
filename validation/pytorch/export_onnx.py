#!/usr/bin/env python3
"""Exports the zoo's transformers and ShuffleNet V2 with torch.onnx.export for dtsim's import tests
(tests/data/onnx_exports/, tests/test_onnx_exports.cpp).

    /usr/bin/python3 validation/pytorch/export_onnx.py [--full DIR] [--opset 17] [--out tests/data/onnx_exports]

Models: torchvision's vit_b_16 (224 x 224) and shufflenet_v2_x1_0, and gpt2_small and bert_base from
validation/pytorch/transformer_models.py with explicit_attention=True (attention written out, as an
export of HuggingFace's eager attention contains it). Each is exported with

    torch.onnx.export(model, example, path, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}})

in training mode, which keeps BatchNormalization's batch statistics and the Dropout nodes the zoo
entries have (an eval-mode export drops them); the module is in train(). The example is one sample:
images 1 x 3 x 224 x 224, token ids 1 x T int64 with T = 1024 (gpt2_small) or 512 (bert_base), the
zoo entries' sequence lengths; only the batch is dynamic (dtsim sets it), T is fixed.

The full files (weights inside; vit_b_16 ~350 MB, gpt2_small ~650 MB) go to --full (default: a
temporary directory, deleted). The stripped copies in --out keep the graph and every initializer's
name, dims and data_type; float initializers of more than 16 elements lose their data (dtsim reads
only their dims), integer and small initializers keep theirs (shape arithmetic may read them).
--out/provenance.json records the versions, options and per-file counts.

The committed files were written with Debian's python3-torch 1.13.1+dfsg-4 (torch.__version__
1.13.0a0), python3-torchvision 0.14.1-2 (0.14.1a0) and python3-onnx 1.12.0, at opset 17 (all four)
and, with `--opset 14 --only vit_b_16 gpt2_small bert_base`, at opset 14 (files *_opset14.onnx),
where LayerNorm is exported decomposed (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add);
ShuffleNet V2's opset-14 graph is its opset-17 graph node for node. provenance.json records the
versions and, per file, the opset, node and operator counts and sizes.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import onnx
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_models  # noqa: E402

KEEP_ELEMENTS = 16  # float initializers up to this size keep their values


def models():
    tv = torchvision.models
    image = lambda: torch.randn(1, 3, 224, 224)  # noqa: E731
    ids = lambda name: torch.randint(0, transformer_models.vocabulary(name), (1, transformer_models.context(name)))  # noqa: E731
    return [
        ("vit_b_16", lambda: tv.vit_b_16(weights=None), image, 86567656),
        ("shufflenet_v2_x1_0", lambda: tv.shufflenet_v2_x1_0(weights=None), image, 2278604),
        ("gpt2_small", lambda: transformer_models.build("gpt2_small", explicit_attention=True), lambda: ids("gpt2_small"),
         transformer_models.PARAMETERS["gpt2_small"]),
        ("bert_base", lambda: transformer_models.build("bert_base", explicit_attention=True), lambda: ids("bert_base"),
         transformer_models.PARAMETERS["bert_base"]),
    ]


def elements(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def strip(src, dst):
    """Copies src to dst without the values of float initializers of more than KEEP_ELEMENTS elements."""
    m = onnx.load(src)
    stripped = 0
    for t in m.graph.initializer:
        floating = t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE)
        if not floating or elements(t) <= KEEP_ELEMENTS:
            continue
        for field in ("raw_data", "float_data", "double_data", "int32_data", "external_data"):
            t.ClearField(field)
        t.ClearField("data_location")
        stripped += 1
    onnx.save(m, dst)
    return m, stripped


def debian_packages():
    """The Debian packages torch, torchvision and onnx came from, if dpkg knows them."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "python3-torch", "python3-torchvision", "python3-onnx"],
                             capture_output=True, text=True).stdout
    except OSError:
        return {}
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def export(model, example, path, opset, exporter):
    """exporter: "torchscript" (PyTorch's TorchScript exporter; on PyTorch 2.x asked for with dynamo=False,
    since 2.9 makes the dynamo exporter the default) or "dynamo" (torch.export-based; it has no
    training-mode switch and exports the module as it is, in train())."""
    common = dict(opset_version=opset, input_names=["input"], output_names=["output"], dynamic_axes={"input": {0: "batch"}})
    if exporter == "dynamo":
        torch.onnx.export(model, (example,), path, dynamo=True, external_data=False, **common)
        return
    extra = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    torch.onnx.export(model, example, path, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      **common, **extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "onnx_exports"))
    ap.add_argument("--full", help="directory for the full exports (weights included); default: a temporary one, deleted")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--only", nargs="*", help="model names (default: all)")
    ap.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript")
    ap.add_argument("--suffix", default="", help="added to each file name (e.g. _torch2 for a PyTorch 2.x export)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tmp = None if args.full else tempfile.TemporaryDirectory()
    full = args.full or tmp.name
    os.makedirs(full, exist_ok=True)
    suffix = ("" if args.opset == 17 else "_opset%d" % args.opset) + args.suffix
    prov_path = os.path.join(args.out, "provenance.json")
    prov = json.load(open(prov_path)) if os.path.exists(prov_path) else {}
    prov.update({
        "exporter": "torch.onnx.export (%s exporter)" % ("TorchScript" if args.exporter == "torchscript" else "dynamo"),
        "torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__,
        "training": "TRAINING", "do_constant_folding": False, "input_names": ["input"],
        "dynamic_axes": {"input": {"0": "batch"}}, "example_batch": 1,
        "initializers": "float initializers of more than %d elements stripped to name, dims and data_type" % KEEP_ELEMENTS,
        "script": "validation/pytorch/export_onnx.py", "debian_packages": debian_packages(),
    })
    prov.setdefault("files", {})
    torch.manual_seed(0)
    for name, make, example, want in models():
        if args.only and name not in args.only:
            continue
        model = make()
        params = sum(p.numel() for p in model.parameters())
        assert params == want, (name, params, want)
        model.train()
        x = example()
        src = os.path.join(full, name + suffix + ".onnx")
        dst = os.path.join(args.out, name + suffix + ".onnx")
        try:
            export(model, x, src, args.opset, args.exporter)
        except Exception as e:  # recorded, not fatal: the other models still export
            print(name, "export failed:", type(e).__name__, str(e)[:300], flush=True)
            prov["files"][name + suffix + ".onnx"] = {"model": name, "export_failed": "%s: %s" % (type(e).__name__, str(e)[:300])}
            continue
        m, stripped = strip(src, dst)
        ops = {}
        for n in m.graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        prov["files"][os.path.basename(dst)] = {
            "model": name, "exporter": args.exporter, "opset_version": args.opset, "example_input": list(x.shape), "example_dtype": str(x.dtype),
            "torch_parameters": params, "nodes": len(m.graph.node), "ops": dict(sorted(ops.items())),
            "initializers": len(m.graph.initializer), "stripped_initializers": stripped,
            "full_bytes": os.path.getsize(src), "bytes": os.path.getsize(dst),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        }
        print(name, "opset", args.opset, "params", params, "nodes", len(m.graph.node), "full", os.path.getsize(src),
              "stripped", os.path.getsize(dst), flush=True)
    with open(prov_path, "w") as f:
        json.dump(prov, f, indent=1, sort_keys=True)
        f.write("\n")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
