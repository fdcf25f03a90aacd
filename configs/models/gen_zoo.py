#!/usr/bin/env python3
"""Generate dtsim's built-in model zoo (configs/models/*.json) from torchvision's definitions.

Standard library only. Every model mirrors torchvision.models (default constructor arguments,
1000 classes, no auxiliary heads) layer by layer; functional ops of torchvision's forward()
(residual adds, torch.cat, F.relu, F.avg_pool2d, torch.flatten) appear as extra layers.
The transformers mirror torchvision's vit_b_16 and HuggingFace transformers' GPT2LMHeadModel
(gpt2) and BertForMaskedLM (bert-base-uncased) the same way (docs/transformers.md).
The format is docs/model-format.md. After writing, each file is read back, its shapes and
parameters are inferred following the doc's rules, and the parameter counts are checked against
torchvision's exact values and the forward MACs against the well-known figures (within 2%).

Usage (from the repository root):  python3 configs/models/gen_zoo.py
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TV = "torchvision 0.26 definition"

# ----------------------------------------------------------------------------------------------
# Shape inference and cost, following docs/model-format.md
# ----------------------------------------------------------------------------------------------

FIELDS = {
    "conv2d": {"out_channels", "kernel", "stride", "padding", "dilation", "groups", "bias"},
    "linear": {"out_features", "bias"},
    "batchnorm2d": {"eps"},
    "maxpool2d": {"kernel", "stride", "padding", "ceil_mode"},
    "avgpool2d": {"kernel", "stride", "padding", "ceil_mode"},
    "adaptive_avgpool2d": {"output"},
    "add": set(), "mul": set(), "concat": set(), "dropout": {"p"}, "flatten": set(),
    "softmax_cross_entropy": set(),
    "embedding": {"num_embeddings", "embedding_dim"}, "positional_embedding": {"num_embeddings"},
    "layernorm": {"eps", "elementwise_affine", "bias"}, "attention": {"num_heads", "is_causal", "dropout_p", "module"},
    "to_sequence": set(), "class_token": set(), "select": {"index"},
}
for _a in ("relu", "relu6", "sigmoid", "tanh", "silu", "gelu", "hardswish"):
    FIELDS[_a] = set()
FIELDS["gelu"] = {"approximate"}
FIELDS["linear"] = {"out_features", "bias", "tie_weight"}
REQUIRED = {"conv2d": {"out_channels", "kernel"}, "linear": {"out_features"},
            "maxpool2d": {"kernel"}, "avgpool2d": {"kernel"}, "adaptive_avgpool2d": {"output"},
            "embedding": {"num_embeddings", "embedding_dim"}, "positional_embedding": {"num_embeddings"},
            "attention": {"num_heads"}}
# A sequence of T tokens of C features is the tuple ("seq", T, C); a language model's input is its
# token ids, ("seq", T, 1).


def pair(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return (v, v)
    assert isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v), v
    return (v[0], v[1])


def conv_out(h, k, s, p, d):
    return (h + 2 * p - d * (k - 1) - 1) // s + 1


def pool_out(h, k, s, p, ceil_mode):
    # PyTorch pooling_output_shape (dilation 1)
    num = h + 2 * p - (k - 1) - 1
    if ceil_mode:
        o = -(-num // s) + 1
        if (o - 1) * s >= h + p:  # last window must start inside the input or left padding
            o -= 1
    else:
        o = num // s + 1
    return o


def is_seq(x):
    return len(x) == 3 and x[0] == "seq"


def transformer_cost(layer, ins, named):
    """The transformer ops of docs/model-format.md: (output shape, params, forward MACs)."""
    op, name, x = layer["op"], layer["name"], ins[0]
    if op == "attention":
        assert len(ins) in (1, 3) and all(is_seq(i) and i[1] == x[1] for i in ins), "%s: q, k, v %s" % (name, ins)
        c = x[2] // 3 if len(ins) == 1 else x[2]
        assert len(ins) == 3 or x[2] % 3 == 0, name
        assert c % layer["num_heads"] == 0, name
        if len(ins) == 3:  # grouped-query attention: k and v of fewer heads, each shared by a group of q's
            d = c // layer["num_heads"]
            assert ins[1] == ins[2] and ins[1][2] % d == 0 and layer["num_heads"] % (ins[1][2] // d) == 0, "%s: k, v %s" % (name, ins)
        return ("seq", x[1], c), 0, 2 * x[1] * x[1] * c  # QK^T and PV, counted dense
    assert len(ins) == 1, "%s: one input expected" % name
    if op == "embedding":
        assert is_seq(x) and x[2] == 1, "%s: embedding needs token ids, got %s" % (name, x)
        return ("seq", x[1], layer["embedding_dim"]), layer["num_embeddings"] * layer["embedding_dim"], 0
    if op == "positional_embedding":
        assert is_seq(x) and x[1] <= layer["num_embeddings"], name
        return x, layer["num_embeddings"] * x[2], 0
    if op == "layernorm":
        assert is_seq(x) or len(x) == 1, name
        c = x[-1]
        affine = layer.get("elementwise_affine", True)
        return x, (c if affine else 0) + (c if affine and layer.get("bias", True) else 0), 0
    if op == "to_sequence":
        assert len(x) == 3 and not is_seq(x), name
        return ("seq", x[1] * x[2], x[0]), 0, 0
    if op == "class_token":
        assert is_seq(x), name
        return ("seq", x[1] + 1, x[2]), x[2], 0
    if op == "select":
        assert is_seq(x) and layer.get("index", 0) < x[1], name
        return (x[2],), 0, 0
    raise AssertionError("%s: unknown op %s" % (name, op))


def layer_cost(layer, ins, named=None):
    """Returns (output shape, params, forward MACs) of one layer given its input shapes.
    A shape is a tuple (C, H, W), (F,) or ("seq", T, C). `named`: the layers before it by name (for
    tie_weight)."""
    op = layer["op"]
    extra = set(layer) - {"name", "op", "inputs"} - FIELDS[op]
    assert not extra, "%s: unknown fields %s" % (layer["name"], extra)
    missing = REQUIRED.get(op, set()) - set(layer)
    assert not missing, "%s: missing %s" % (layer["name"], missing)
    if op in ("embedding", "positional_embedding", "layernorm", "attention", "to_sequence", "class_token", "select"):
        return transformer_cost(layer, ins, named)
    if op in ("add", "mul", "concat"):
        assert len(ins) >= 2, "%s: %s needs two or more inputs" % (layer["name"], op)
    else:
        assert len(ins) == 1, "%s: one input expected" % layer["name"]
    x = ins[0]
    if op == "linear" and is_seq(x):  # per token
        o = layer["out_features"]
        weight = x[2] * o
        if "tie_weight" in layer:
            e = named[layer["tie_weight"]]
            assert e["op"] == "embedding" and (e["num_embeddings"], e["embedding_dim"]) == (o, x[2]), layer["name"]
            weight = 0  # the embedding's weight, counted there
        return ("seq", x[1], o), weight + (o if layer.get("bias", True) else 0), x[1] * x[2] * o
    if op == "softmax_cross_entropy" and is_seq(x):
        return (), 0, 0
    assert "tie_weight" not in layer, "%s: only a linear layer over a sequence ties its weight here" % layer["name"]
    if op == "conv2d":
        assert len(x) == 3 and not is_seq(x), layer["name"]
        c, h, w = x
        k = layer["out_channels"]
        r, s_ = pair(layer["kernel"])
        sh, sw = pair(layer.get("stride", 1))
        ph, pw = pair(layer.get("padding", 0))
        dh, dw = pair(layer.get("dilation", 1))
        g = layer.get("groups", 1)
        assert c % g == 0 and k % g == 0, layer["name"]
        ho, wo = conv_out(h, r, sh, ph, dh), conv_out(w, s_, sw, pw, dw)
        assert ho > 0 and wo > 0, layer["name"]
        params = k * (c // g) * r * s_ + (k if layer.get("bias", True) else 0)
        return (k, ho, wo), params, k * ho * wo * (c // g) * r * s_
    if op == "linear":
        assert len(x) == 1, "%s: linear needs a vector (flatten first)" % layer["name"]
        o = layer["out_features"]
        return (o,), x[0] * o + (o if layer.get("bias", True) else 0), x[0] * o
    if op == "batchnorm2d":
        assert len(x) == 3, layer["name"]
        return x, 2 * x[0], 0
    if op in ("maxpool2d", "avgpool2d"):
        c, h, w = x
        kh, kw = pair(layer["kernel"])
        sh, sw = pair(layer.get("stride", layer["kernel"]))
        ph, pw = pair(layer.get("padding", 0))
        cm = layer.get("ceil_mode", False)
        assert 2 * ph <= kh and 2 * pw <= kw, "%s: pad should be at most half of kernel" % layer["name"]
        return (c, pool_out(h, kh, sh, ph, cm), pool_out(w, kw, sw, pw, cm)), 0, 0
    if op == "adaptive_avgpool2d":
        oh, ow = pair(layer["output"])
        return (x[0], oh, ow), 0, 0
    if op in ("add", "mul"):
        assert all(i == x for i in ins), "%s: %s of shapes %s" % (layer["name"], op, ins)
        return x, 0, 0
    if op == "concat":
        assert all(len(i) == 3 and i[1:] == x[1:] for i in ins), "%s: concat %s" % (layer["name"], ins)
        return (sum(i[0] for i in ins),) + x[1:], 0, 0
    if op == "flatten":
        if is_seq(x):
            return (x[1] * x[2],), 0, 0
        return (x[0] * x[1] * x[2],) if len(x) == 3 else x, 0, 0
    if op == "softmax_cross_entropy":
        assert len(x) == 1, layer["name"]
        return (), 0, 0
    return x, 0, 0  # activations, dropout


def infer(model):
    """Checks a model dict and returns (shapes by layer name, total params, total MACs)."""
    for key in model:
        assert key in ("name", "input", "layers", "description", "source"), key
    inp = model["input"]
    if "sequence_length" in inp:
        assert set(inp) == {"sequence_length"}, inp
        shapes = {"input": ("seq", inp["sequence_length"], 1)}
    else:
        shapes = {"input": (inp["channels"], inp["height"], inp["width"])}
    named = {}
    prev = "input"
    params = macs = 0
    for i, layer in enumerate(model["layers"]):
        name = layer["name"]
        assert name not in shapes, "duplicate layer name " + name
        ins = layer.get("inputs", [prev])
        for n in ins:
            assert n in shapes, "%s: undefined input %s" % (name, n)
        out, p, m = layer_cost(layer, [shapes[n] for n in ins], named)
        named[name] = layer
        if layer["op"] == "softmax_cross_entropy":
            assert i == len(model["layers"]) - 1, "loss must be the last layer"
        shapes[name] = out
        params += p
        macs += m
        prev = name
    assert model["layers"][-1]["op"] == "softmax_cross_entropy"
    return shapes, params, macs


# ----------------------------------------------------------------------------------------------
# Builder
# ----------------------------------------------------------------------------------------------

def _compact(v):
    if isinstance(v, tuple):
        v = list(v)
    if isinstance(v, list) and len(v) == 2 and v[0] == v[1]:
        return v[0]
    return v


class Model:
    def __init__(self, name, source, c, h=None, w=None, tokens=None):
        """An image model (c, h, w), or a language model over `tokens` token ids (c is None)."""
        if tokens is not None:
            self.d = {"name": name, "source": source, "input": {"sequence_length": tokens}, "layers": []}
            self.shapes = {"input": ("seq", tokens, 1)}
        else:
            self.d = {"name": name, "source": source,
                      "input": {"channels": c, "height": h, "width": w}, "layers": []}
            self.shapes = {"input": (c, h, w)}
        self.named = {}
        self.last = "input"

    def add(self, name, op, inputs=None, **fields):
        layer = {"name": name, "op": op}
        if isinstance(inputs, str):
            inputs = [inputs]
        if inputs is not None and inputs != [self.last]:
            layer["inputs"] = list(inputs)
        for k, v in fields.items():
            layer[k] = _compact(v)
        ins = layer.get("inputs", [self.last])
        out, _, _ = layer_cost(layer, [self.shapes[n] for n in ins], self.named)
        self.named[name] = layer
        self.d["layers"].append(layer)
        self.shapes[name] = out
        self.last = name
        return name

    def shape(self, name=None):
        return self.shapes[name or self.last]

    # convenience
    def conv(self, name, out, k, stride=1, padding=0, groups=1, bias=True, inputs=None):
        f = {"out_channels": out, "kernel": k}
        if pair(stride) != (1, 1):
            f["stride"] = stride
        if pair(padding) != (0, 0):
            f["padding"] = padding
        if groups != 1:
            f["groups"] = groups
        f["bias"] = bias
        return self.add(name, "conv2d", inputs, **f)

    def linear(self, name, out, bias=True, inputs=None):
        return self.add(name, "linear", inputs, out_features=out, bias=bias)

    def bn(self, name, eps=None, inputs=None):
        return self.add(name, "batchnorm2d", inputs, **({} if eps is None else {"eps": eps}))

    def pool(self, name, op, k, stride=None, padding=0, ceil_mode=False, inputs=None):
        f = {"kernel": k}
        if stride is not None and pair(stride) != pair(k):
            f["stride"] = stride
        if pair(padding) != (0, 0):
            f["padding"] = padding
        if ceil_mode:
            f["ceil_mode"] = True
        return self.add(name, op, inputs, **f)

    def head(self, classifier):
        """classifier: list of (name, op, fields); appends the loss."""
        for name, op, f in classifier:
            self.add(name, op, **f)
        self.add("loss", "softmax_cross_entropy")


# ----------------------------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------------------------

def alexnet():
    m = Model("alexnet", "torchvision.models.alexnet, " + TV, 3, 224, 224)
    m.conv("features.0", 64, 11, 4, 2)
    m.add("features.1", "relu")
    m.pool("features.2", "maxpool2d", 3, 2)
    m.conv("features.3", 192, 5, padding=2)
    m.add("features.4", "relu")
    m.pool("features.5", "maxpool2d", 3, 2)
    m.conv("features.6", 384, 3, padding=1)
    m.add("features.7", "relu")
    m.conv("features.8", 256, 3, padding=1)
    m.add("features.9", "relu")
    m.conv("features.10", 256, 3, padding=1)
    m.add("features.11", "relu")
    m.pool("features.12", "maxpool2d", 3, 2)
    assert m.shape() == (256, 6, 6), m.shape()
    m.add("avgpool", "adaptive_avgpool2d", output=6)
    m.add("flatten", "flatten")
    m.add("classifier.0", "dropout", p=0.5)
    m.linear("classifier.1", 4096)
    m.add("classifier.2", "relu")
    m.add("classifier.3", "dropout", p=0.5)
    m.linear("classifier.4", 4096)
    m.add("classifier.5", "relu")
    m.linear("classifier.6", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


VGG_CFG = {
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}


def vgg(name):
    m = Model(name, "torchvision.models.%s, %s" % (name, TV), 3, 224, 224)
    i = 0
    for v in VGG_CFG[name]:
        if v == "M":
            m.pool("features.%d" % i, "maxpool2d", 2, 2)
            i += 1
        else:
            m.conv("features.%d" % i, v, 3, padding=1)
            m.add("features.%d" % (i + 1), "relu")
            i += 2
    assert m.shape() == (512, 7, 7), m.shape()
    m.add("avgpool", "adaptive_avgpool2d", output=7)
    m.add("flatten", "flatten")
    m.linear("classifier.0", 4096)
    m.add("classifier.1", "relu")
    m.add("classifier.2", "dropout", p=0.5)
    m.linear("classifier.3", 4096)
    m.add("classifier.4", "relu")
    m.add("classifier.5", "dropout", p=0.5)
    m.linear("classifier.6", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


RESNET_CFG = {
    "resnet18": ("basic", [2, 2, 2, 2]), "resnet34": ("basic", [3, 4, 6, 3]),
    "resnet50": ("bottleneck", [3, 4, 6, 3]), "resnet101": ("bottleneck", [3, 4, 23, 3]),
    "resnet152": ("bottleneck", [3, 8, 36, 3]),
    # ResNeXt-101 32x4d (Xie et al. 2017): torchvision's ResNet(Bottleneck, [3, 4, 23, 3], groups=32,
    # width_per_group=4), the network of NVIDIA DeepLearningExamples' resnext101-32x4d (cardinality 32,
    # widths 128..1024, stride on the grouped 3x3 convolution), whose published training throughputs
    # are an independent check (validation/data/published/throughputs.json).
    "resnext101_32x4d": ("bottleneck", [3, 4, 23, 3], 32, 4),
}
RESNET_SOURCE = {"resnext101_32x4d": "torchvision.models.resnet.ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4), %s; "
                                     "NVIDIA DeepLearningExamples' resnext101-32x4d" % TV}


def resnet(name):
    kind, blocks, *grouping = RESNET_CFG[name]
    groups, width_per_group = grouping or (1, 64)
    exp = 1 if kind == "basic" else 4
    m = Model(name, RESNET_SOURCE.get(name, "torchvision.models.%s, %s" % (name, TV)), 3, 224, 224)
    m.conv("conv1", 64, 7, 2, 3, bias=False)
    m.bn("bn1")
    m.add("relu", "relu")
    m.pool("maxpool", "maxpool2d", 3, 2, 1)
    inplanes = 64
    for li, (planes, n) in enumerate(zip([64, 128, 256, 512], blocks)):
        for bi in range(n):
            stride = 2 if (li > 0 and bi == 0) else 1
            p = "layer%d.%d." % (li + 1, bi)
            x = m.last
            if kind == "basic":
                m.conv(p + "conv1", planes, 3, stride, 1, bias=False)
                m.bn(p + "bn1")
                m.add(p + "relu", "relu")
                m.conv(p + "conv2", planes, 3, 1, 1, bias=False)
                out = m.bn(p + "bn2")
            else:  # torchvision Bottleneck (v1.5: stride on the 3x3 conv; ResNeXt: grouped and wider)
                width = planes * width_per_group // 64 * groups
                m.conv(p + "conv1", width, 1, bias=False)
                m.bn(p + "bn1")
                m.add(p + "relu", "relu")
                m.conv(p + "conv2", width, 3, stride, 1, groups=groups, bias=False)
                m.bn(p + "bn2")
                m.add(p + "relu_2", "relu")
                m.conv(p + "conv3", planes * exp, 1, bias=False)
                out = m.bn(p + "bn3")
            identity = x
            if stride != 1 or inplanes != planes * exp:
                m.conv(p + "downsample.0", planes * exp, 1, stride, bias=False, inputs=x)
                identity = m.bn(p + "downsample.1")
            m.add(p + "add", "add", inputs=[out, identity])
            m.add(p + "relu_out", "relu")
            inplanes = planes * exp
    assert m.shape() == (512 * exp, 7, 7), m.shape()
    m.add("avgpool", "adaptive_avgpool2d", output=1)
    m.add("flatten", "flatten")
    m.linear("fc", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


def densenet121():
    growth, block_config, init, bn_size = 32, (6, 12, 24, 16), 64, 4
    m = Model("densenet121", "torchvision.models.densenet121, " + TV, 3, 224, 224)
    m.conv("features.conv0", init, 7, 2, 3, bias=False)
    m.bn("features.norm0")
    m.add("features.relu0", "relu")
    m.pool("features.pool0", "maxpool2d", 3, 2, 1)
    for bi, n in enumerate(block_config):
        b = "features.denseblock%d." % (bi + 1)
        feats = [m.last]
        for j in range(n):
            p = b + "denselayer%d." % (j + 1)
            if len(feats) > 1:  # _DenseLayer.bn_function: torch.cat(inputs, 1)
                m.add(p + "cat", "concat", inputs=feats)
            else:
                m.last = feats[0]
            m.bn(p + "norm1", inputs=m.last)
            m.add(p + "relu1", "relu")
            m.conv(p + "conv1", bn_size * growth, 1, bias=False)
            m.bn(p + "norm2")
            m.add(p + "relu2", "relu")
            feats.append(m.conv(p + "conv2", growth, 3, padding=1, bias=False))
        m.add(b + "cat", "concat", inputs=feats)  # _DenseBlock.forward: torch.cat(features, 1)
        c = m.shape()[0]
        if bi != len(block_config) - 1:
            t = "features.transition%d." % (bi + 1)
            m.bn(t + "norm")
            m.add(t + "relu", "relu")
            m.conv(t + "conv", c // 2, 1, bias=False)
            m.pool(t + "pool", "avgpool2d", 2, 2)
    m.bn("features.norm5")
    assert m.shape() == (1024, 7, 7), m.shape()
    m.add("relu", "relu")  # F.relu in DenseNet.forward
    m.add("avgpool", "adaptive_avgpool2d", output=1)
    m.add("flatten", "flatten")
    m.linear("classifier", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


def mobilenet_v2():
    m = Model("mobilenet_v2", "torchvision.models.mobilenet_v2, " + TV, 3, 224, 224)

    def cna(p, out, k, stride=1, groups=1):  # Conv2dNormActivation with ReLU6
        m.conv(p + ".0", out, k, stride, (k - 1) // 2, groups, bias=False)
        m.bn(p + ".1")
        m.add(p + ".2", "relu6")

    cna("features.0", 32, 3, 2)
    inp, idx = 32, 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            p = "features.%d.conv." % idx
            x = m.last
            hidden = int(round(inp * t))
            j = 0
            if t != 1:
                cna(p + "0", hidden, 1)
                j = 1
            cna(p + str(j), hidden, 3, stride, hidden)
            m.conv(p + str(j + 1), c, 1, bias=False)
            m.bn(p + str(j + 2))
            if stride == 1 and inp == c:
                m.add("features.%d.add" % idx, "add", inputs=[m.last, x])
            inp = c
            idx += 1
    cna("features.%d" % idx, 1280, 1)
    assert m.shape() == (1280, 7, 7), m.shape()
    m.add("avgpool", "adaptive_avgpool2d", output=1)  # nn.functional.adaptive_avg_pool2d
    m.add("flatten", "flatten")
    m.add("classifier.0", "dropout", p=0.2)
    m.linear("classifier.1", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


def basic_conv(m, p, out, k, stride=1, padding=0, inputs=None):
    """torchvision's BasicConv2d of googlenet / inception: conv (no bias), bn (eps 0.001), F.relu."""
    m.conv(p + ".conv", out, k, stride, padding, bias=False, inputs=inputs)
    m.bn(p + ".bn", eps=0.001)
    return m.add(p + ".relu", "relu")


def googlenet():
    m = Model("googlenet", "torchvision.models.googlenet (aux_logits=False), " + TV, 3, 224, 224)

    def inception(p, ch1, ch3r, ch3, ch5r, ch5, pool_proj):
        x = m.last
        b1 = basic_conv(m, p + ".branch1", ch1, 1, inputs=x)
        basic_conv(m, p + ".branch2.0", ch3r, 1, inputs=x)
        b2 = basic_conv(m, p + ".branch2.1", ch3, 3, padding=1)
        basic_conv(m, p + ".branch3.0", ch5r, 1, inputs=x)
        b3 = basic_conv(m, p + ".branch3.1", ch5, 3, padding=1)  # 3x3, as in torchvision
        m.pool(p + ".branch4.0", "maxpool2d", 3, 1, 1, ceil_mode=True, inputs=x)
        b4 = basic_conv(m, p + ".branch4.1", pool_proj, 1)
        m.add(p + ".cat", "concat", inputs=[b1, b2, b3, b4])

    basic_conv(m, "conv1", 64, 7, 2, 3)
    m.pool("maxpool1", "maxpool2d", 3, 2, ceil_mode=True)
    basic_conv(m, "conv2", 64, 1)
    basic_conv(m, "conv3", 192, 3, padding=1)
    m.pool("maxpool2", "maxpool2d", 3, 2, ceil_mode=True)
    inception("inception3a", 64, 96, 128, 16, 32, 32)
    inception("inception3b", 128, 128, 192, 32, 96, 64)
    m.pool("maxpool3", "maxpool2d", 3, 2, ceil_mode=True)
    inception("inception4a", 192, 96, 208, 16, 48, 64)
    inception("inception4b", 160, 112, 224, 24, 64, 64)
    inception("inception4c", 128, 128, 256, 24, 64, 64)
    inception("inception4d", 112, 144, 288, 32, 64, 64)
    inception("inception4e", 256, 160, 320, 32, 128, 128)
    m.pool("maxpool4", "maxpool2d", 2, 2, ceil_mode=True)
    inception("inception5a", 256, 160, 320, 32, 128, 128)
    inception("inception5b", 384, 192, 384, 48, 128, 128)
    assert m.shape() == (1024, 7, 7), m.shape()
    m.add("avgpool", "adaptive_avgpool2d", output=1)
    m.add("flatten", "flatten")
    m.add("dropout", "dropout", p=0.2)
    m.linear("fc", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


def inception_v3():
    m = Model("inception_v3", "torchvision.models.inception_v3 (aux_logits=False), " + TV,
              3, 299, 299)
    bc = lambda *a, **k: basic_conv(m, *a, **k)

    def block_a(p, pool_features):
        x = m.last
        b1 = bc(p + ".branch1x1", 64, 1, inputs=x)
        bc(p + ".branch5x5_1", 48, 1, inputs=x)
        b5 = bc(p + ".branch5x5_2", 64, 5, padding=2)
        bc(p + ".branch3x3dbl_1", 64, 1, inputs=x)
        bc(p + ".branch3x3dbl_2", 96, 3, padding=1)
        b3 = bc(p + ".branch3x3dbl_3", 96, 3, padding=1)
        m.pool(p + ".avg_pool", "avgpool2d", 3, 1, 1, inputs=x)  # F.avg_pool2d(x, 3, 1, 1)
        bp = bc(p + ".branch_pool", pool_features, 1)
        m.add(p + ".cat", "concat", inputs=[b1, b5, b3, bp])

    def block_b(p):
        x = m.last
        b3 = bc(p + ".branch3x3", 384, 3, stride=2, inputs=x)
        bc(p + ".branch3x3dbl_1", 64, 1, inputs=x)
        bc(p + ".branch3x3dbl_2", 96, 3, padding=1)
        bd = bc(p + ".branch3x3dbl_3", 96, 3, stride=2)
        bp = m.pool(p + ".max_pool", "maxpool2d", 3, 2, inputs=x)  # F.max_pool2d(x, 3, 2)
        m.add(p + ".cat", "concat", inputs=[b3, bd, bp])

    def block_c(p, c7):
        x = m.last
        b1 = bc(p + ".branch1x1", 192, 1, inputs=x)
        bc(p + ".branch7x7_1", c7, 1, inputs=x)
        bc(p + ".branch7x7_2", c7, [1, 7], padding=[0, 3])
        b7 = bc(p + ".branch7x7_3", 192, [7, 1], padding=[3, 0])
        bc(p + ".branch7x7dbl_1", c7, 1, inputs=x)
        bc(p + ".branch7x7dbl_2", c7, [7, 1], padding=[3, 0])
        bc(p + ".branch7x7dbl_3", c7, [1, 7], padding=[0, 3])
        bc(p + ".branch7x7dbl_4", c7, [7, 1], padding=[3, 0])
        bd = bc(p + ".branch7x7dbl_5", 192, [1, 7], padding=[0, 3])
        m.pool(p + ".avg_pool", "avgpool2d", 3, 1, 1, inputs=x)
        bp = bc(p + ".branch_pool", 192, 1)
        m.add(p + ".cat", "concat", inputs=[b1, b7, bd, bp])

    def block_d(p):
        x = m.last
        bc(p + ".branch3x3_1", 192, 1, inputs=x)
        b3 = bc(p + ".branch3x3_2", 320, 3, stride=2)
        bc(p + ".branch7x7x3_1", 192, 1, inputs=x)
        bc(p + ".branch7x7x3_2", 192, [1, 7], padding=[0, 3])
        bc(p + ".branch7x7x3_3", 192, [7, 1], padding=[3, 0])
        b7 = bc(p + ".branch7x7x3_4", 192, 3, stride=2)
        bp = m.pool(p + ".max_pool", "maxpool2d", 3, 2, inputs=x)
        m.add(p + ".cat", "concat", inputs=[b3, b7, bp])

    def block_e(p):
        x = m.last
        b1 = bc(p + ".branch1x1", 320, 1, inputs=x)
        t = bc(p + ".branch3x3_1", 384, 1, inputs=x)
        a = bc(p + ".branch3x3_2a", 384, [1, 3], padding=[0, 1], inputs=t)
        b = bc(p + ".branch3x3_2b", 384, [3, 1], padding=[1, 0], inputs=t)
        b3 = m.add(p + ".branch3x3.cat", "concat", inputs=[a, b])
        bc(p + ".branch3x3dbl_1", 448, 1, inputs=x)
        t = bc(p + ".branch3x3dbl_2", 384, 3, padding=1)
        a = bc(p + ".branch3x3dbl_3a", 384, [1, 3], padding=[0, 1], inputs=t)
        b = bc(p + ".branch3x3dbl_3b", 384, [3, 1], padding=[1, 0], inputs=t)
        bd = m.add(p + ".branch3x3dbl.cat", "concat", inputs=[a, b])
        m.pool(p + ".avg_pool", "avgpool2d", 3, 1, 1, inputs=x)
        bp = bc(p + ".branch_pool", 192, 1)
        m.add(p + ".cat", "concat", inputs=[b1, b3, bd, bp])

    bc("Conv2d_1a_3x3", 32, 3, stride=2)
    bc("Conv2d_2a_3x3", 32, 3)
    bc("Conv2d_2b_3x3", 64, 3, padding=1)
    m.pool("maxpool1", "maxpool2d", 3, 2)
    bc("Conv2d_3b_1x1", 80, 1)
    bc("Conv2d_4a_3x3", 192, 3)
    m.pool("maxpool2", "maxpool2d", 3, 2)
    assert m.shape() == (192, 35, 35), m.shape()
    block_a("Mixed_5b", 32)
    block_a("Mixed_5c", 64)
    block_a("Mixed_5d", 64)
    assert m.shape() == (288, 35, 35), m.shape()
    block_b("Mixed_6a")
    block_c("Mixed_6b", 128)
    block_c("Mixed_6c", 160)
    block_c("Mixed_6d", 160)
    block_c("Mixed_6e", 192)
    assert m.shape() == (768, 17, 17), m.shape()
    block_d("Mixed_7a")
    block_e("Mixed_7b")
    block_e("Mixed_7c")
    assert m.shape() == (2048, 8, 8), m.shape()
    m.add("avgpool", "adaptive_avgpool2d", output=1)
    m.add("dropout", "dropout", p=0.5)  # torchvision applies dropout before torch.flatten
    m.add("flatten", "flatten")
    m.linear("fc", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


HF = "HuggingFace transformers 4.x definition"


def vit_b_16():
    """torchvision's VisionTransformer(patch_size=16, num_layers=12, num_heads=12, hidden_dim=768,
    mlp_dim=3072) at 224 x 224: 196 patches and the class token, 197 tokens. Its dropouts default to
    p=0.0, which PyTorch skips (no kernel, nothing saved), so they are left out."""
    m = Model("vit_b_16", "torchvision.models.vit_b_16, " + TV, 3, 224, 224)
    m.conv("conv_proj", 768, 16, 16)
    m.add("to_sequence", "to_sequence")  # _process_input: x.reshape(n, 768, 196).permute(0, 2, 1)
    m.add("class_token", "class_token")  # torch.cat([class_token.expand(n, -1, -1), x], dim=1)
    m.add("encoder.pos_embedding", "positional_embedding", num_embeddings=197)  # input + pos_embedding
    for i in range(12):
        p = "encoder.layers.encoder_layer_%d." % i
        x = m.last
        m.add(p + "ln_1", "layernorm", eps=1e-6)
        # nn.MultiheadAttention(batch_first=True), called with need_weights=False: one packed
        # in_proj (in_proj_weight 3C x C, in_proj_bias), scaled_dot_product_attention, out_proj.
        m.linear(p + "self_attention.in_proj", 3 * 768)
        # module: nn.MultiheadAttention's layout copies around it (docs/transformers.md)
        m.add(p + "self_attention.sdpa", "attention", num_heads=12, module="nn.MultiheadAttention")
        m.linear(p + "self_attention.out_proj", 768)
        res = m.add(p + "add_1", "add", inputs=[m.last, x])  # x = x + input
        m.add(p + "ln_2", "layernorm", eps=1e-6)
        m.linear(p + "mlp.0", 3072)
        m.add(p + "mlp.1", "gelu")
        m.linear(p + "mlp.3", 768)
        m.add(p + "add_2", "add", inputs=[m.last, res])  # x + y
    m.add("encoder.ln", "layernorm", eps=1e-6)
    m.add("select", "select", index=0)  # x[:, 0], the class token
    m.linear("heads.head", 1000)
    m.add("loss", "softmax_cross_entropy")
    return m


# GPT-2's sizes (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners", table 2;
# HuggingFace's gpt2, gpt2-medium, gpt2-large and gpt2-xl config.json: n_layer, n_embd, n_head; all
# with n_positions 1024 and vocab_size 50257): name -> (layers, width, heads, checkpoint).
GPT2_SIZES = {"gpt2_small": (12, 768, 12, "gpt2"), "gpt2_medium": (24, 1024, 16, "gpt2-medium"),
              "gpt2_large": (36, 1280, 20, "gpt2-large"), "gpt2_xl": (48, 1600, 25, "gpt2-xl")}


def gpt2(name="gpt2_small"):
    """HuggingFace's GPT2LMHeadModel with the gpt2 configuration: 12 layers of width 768, 12 heads,
    MLP 3072 with gelu_new (tanh-approximated GELU), pre-LayerNorm, vocabulary 50257, 1024 learned
    positions, dropout 0.1 (embd, resid and attention, the last inside the attention kernel), Conv1D
    layers (linear layers with biases), lm_head without bias and tied to wte. The loss is the
    cross-entropy over the vocabulary of every token of the batch (B x T rows).
    The larger checkpoints (gpt2-medium, -large, -xl) are the same module at GPT2_SIZES' sizes, MLP 4C.
    Parameters (tied lm_head counted once, as model.parameters() lists it): wte 50257 C, wpe 1024 C,
    per layer ln_1 2C + c_attn 3C^2 + 3C + c_proj C^2 + C + ln_2 2C + c_fc 4C^2 + 4C + c_proj 4C^2 + C
    = 12C^2 + 13C, ln_f 2C:
      gpt2 (C 768, 12 layers): 38,597,376 + 786,432 + 12 x 7,087,872 + 1,536 = 124,439,808
      gpt2-medium (1024, 24): 51,463,168 + 1,048,576 + 24 x 12,596,224 + 2,048 = 354,823,168
      gpt2-large (1280, 36): 64,328,960 + 1,310,720 + 36 x 19,677,440 + 2,560 = 774,030,080
      gpt2-xl (1600, 48): 80,411,200 + 1,638,400 + 48 x 30,740,800 + 3,200 = 1,557,611,200"""
    layers, c, heads, ckpt = GPT2_SIZES[name]
    config = "GPT2Config(): the gpt2 checkpoint" if ckpt == "gpt2" else "the %s checkpoint's configuration" % ckpt
    m = Model(name, "transformers.GPT2LMHeadModel (" + config + "), " + HF, None, tokens=1024)
    m.add("transformer.wte", "embedding", num_embeddings=50257, embedding_dim=c)
    m.add("transformer.wpe", "positional_embedding", num_embeddings=1024)  # inputs_embeds + wpe(position_ids)
    m.add("transformer.drop", "dropout", p=0.1)
    for i in range(layers):
        p = "transformer.h.%d." % i
        x = m.last
        m.add(p + "ln_1", "layernorm")
        m.linear(p + "attn.c_attn", 3 * c)  # q, k, v in one Conv1D, split into heads of 64
        m.add(p + "attn.sdpa", "attention", num_heads=heads, is_causal=True, dropout_p=0.1)
        m.linear(p + "attn.c_proj", c)
        m.add(p + "attn.resid_dropout", "dropout", p=0.1)
        res = m.add(p + "add_1", "add", inputs=[m.last, x])
        m.add(p + "ln_2", "layernorm")
        m.linear(p + "mlp.c_fc", 4 * c)
        m.add(p + "mlp.act", "gelu", approximate="tanh")
        m.linear(p + "mlp.c_proj", c)
        m.add(p + "mlp.dropout", "dropout", p=0.1)
        m.add(p + "add_2", "add", inputs=[m.last, res])
    m.add("transformer.ln_f", "layernorm")
    m.add("lm_head", "linear", out_features=50257, bias=False, tie_weight="transformer.wte")
    m.add("loss", "softmax_cross_entropy")
    return m


# Llama sizes: name -> (layers, width, heads, kv heads, MLP width, vocabulary, tokens, source).
LLAMA_SIZES = {
    "llama2_7b": (32, 4096, 32, 32, 11008, 32000, 4096,
                  "transformers.LlamaForCausalLM (meta-llama/Llama-2-7b-hf config.json: hidden_size 4096, "
                  "intermediate_size 11008, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, "
                  "vocab_size 32000, max_position_embeddings 4096, tie_word_embeddings false; Touvron et al. 2023, "
                  "arXiv:2307.09288), " + HF),
    # 2048 tokens by default, not max_position_embeddings' 8192: at 8192 the lm_head's 8192 x 4096 x
    # 128256 multiply-accumulates per sequence pass dtsim's per-layer bound of 2^40 (workload/graph.cpp).
    "llama3_8b": (32, 4096, 32, 8, 14336, 128256, 2048,
                  "transformers.LlamaForCausalLM (meta-llama/Meta-Llama-3-8B config.json: hidden_size 4096, "
                  "intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, "
                  "vocab_size 128256, max_position_embeddings 8192, rope_theta 500000, tie_word_embeddings false; "
                  "Grattafiori et al. 2024, arXiv:2407.21783), " + HF),
}


def llama(name):
    """HuggingFace's LlamaForCausalLM: pre-RMSNorm decoder layers (RMSNorm: a layernorm with a weight
    and no bias, here priced as one), attention with rotary positions on q and k (no parameters; the
    rotation's elementwise kernels are not modelled), grouped-query attention where num_key_value_heads
    < num_attention_heads (k_proj and v_proj of kv_heads x 128 outputs), a SwiGLU MLP
    down_proj(silu(gate_proj(x)) * up_proj(x)), no biases, no dropout, an untied lm_head. The
    default sequence is max_position_embeddings for Llama 2, 2048 for Llama 3 (LLAMA_SIZES says why);
    --seq-len sets another.
    Parameters: embed_tokens V C; per layer q_proj C^2, k_proj and v_proj C x kvC each, o_proj C^2,
    gate, up and down 3 C F, two RMSNorm weights 2C; the final norm C; lm_head V C:
      Llama-2-7B: 131,072,000 + 32 x (67,108,864 + 135,266,304 + 8,192) + 4,096 + 131,072,000
        = 6,738,415,616 (HuggingFace's count of meta-llama/Llama-2-7b-hf)
      Llama-3-8B: 525,336,576 + 32 x (41,943,040 + 176,160,768 + 8,192) + 4,096 + 525,336,576
        = 8,030,261,248 (HuggingFace's count of meta-llama/Meta-Llama-3-8B)"""
    layers, c, heads, kv_heads, mlp, vocab, tokens, source = LLAMA_SIZES[name]
    kv = kv_heads * (c // heads)
    m = Model(name, source, None, tokens=tokens)
    m.add("model.embed_tokens", "embedding", num_embeddings=vocab, embedding_dim=c)
    for i in range(layers):
        p = "model.layers.%d." % i
        x = m.last
        n = m.add(p + "input_layernorm", "layernorm", bias=False)
        q = m.linear(p + "self_attn.q_proj", c, bias=False, inputs=n)
        k = m.linear(p + "self_attn.k_proj", kv, bias=False, inputs=n)
        v = m.linear(p + "self_attn.v_proj", kv, bias=False, inputs=n)
        m.add(p + "self_attn.sdpa", "attention", inputs=[q, k, v], num_heads=heads, is_causal=True)
        m.linear(p + "self_attn.o_proj", c, bias=False)
        res = m.add(p + "add_1", "add", inputs=[m.last, x])
        n = m.add(p + "post_attention_layernorm", "layernorm", bias=False)
        gate = m.linear(p + "mlp.gate_proj", mlp, bias=False, inputs=n)
        act = m.add(p + "mlp.act_fn", "silu", inputs=gate)
        up = m.linear(p + "mlp.up_proj", mlp, bias=False, inputs=n)
        m.add(p + "mlp.mul", "mul", inputs=[act, up])
        m.linear(p + "mlp.down_proj", c, bias=False)
        m.add(p + "add_2", "add", inputs=[m.last, res])
    m.add("model.norm", "layernorm", bias=False)
    m.linear("lm_head", vocab, bias=False)
    m.add("loss", "softmax_cross_entropy")
    return m


def bert_base():
    """HuggingFace's BertForMaskedLM with the bert-base-uncased configuration: BertModel without its
    pooler (BertForMaskedLM builds it with add_pooling_layer=False), 12 post-LayerNorm layers of
    width 768, 12 heads, intermediate 3072 with exact GELU, vocabulary 30522, 512 learned positions,
    2 token types, dropout 0.1; the masked-LM head: transform (dense, GELU, LayerNorm) and a decoder
    tied to the word embeddings with its own bias. The loss runs over every token (labels -100 where
    nothing is masked), B x T rows.
    Parameters, layer by layer:
      embeddings: word 30522 x 768 = 23,440,896; position 512 x 768 = 393,216; token type
        2 x 768 = 1,536; LayerNorm 2 x 768 = 1,536; together 23,837,184
      each layer: query, key, value 3 x (768 x 768 + 768) = 1,771,776; attention output dense
        590,592; its LayerNorm 1,536; intermediate 768 x 3072 + 3072 = 2,362,368; output
        3072 x 768 + 768 = 2,360,064; its LayerNorm 1,536; together 7,087,872, x 12 = 85,054,464
      MLM head: transform dense 590,592; LayerNorm 1,536; decoder weight tied (0); decoder bias
        30,522; together 622,650
      BertForMaskedLM: 23,837,184 + 85,054,464 + 622,650 = 109,514,298
      (BertModel with its pooler, 768 x 768 + 768 = 590,592 more, is 109,482,240 without the head;
      BertForPreTraining adds the pooler and the next-sentence head, 768 x 2 + 2: 110,106,428.)"""
    m = Model("bert_base", "transformers.BertForMaskedLM (bert-base-uncased configuration), " + HF, None, tokens=512)
    word = m.add("bert.embeddings.word_embeddings", "embedding", num_embeddings=30522, embedding_dim=768)
    # inputs_embeds + token_type_embeddings + position_embeddings: sums in any order; listed in
    # BertEmbeddings' parameter order (word, position, token type) for DDP's buckets. The token type
    # ids have the input ids' shape (one per token): the embedding reads the input.
    m.add("bert.embeddings.position_embeddings", "positional_embedding", num_embeddings=512, inputs=word)
    pos = m.last
    tt = m.add("bert.embeddings.token_type_embeddings", "embedding", inputs="input", num_embeddings=2, embedding_dim=768)
    m.add("bert.embeddings.add", "add", inputs=[pos, tt])
    m.add("bert.embeddings.LayerNorm", "layernorm", eps=1e-12)
    m.add("bert.embeddings.dropout", "dropout", p=0.1)
    for i in range(12):
        p = "bert.encoder.layer.%d." % i
        x = m.last
        q = m.linear(p + "attention.self.query", 768, inputs=x)
        k = m.linear(p + "attention.self.key", 768, inputs=x)
        v = m.linear(p + "attention.self.value", 768, inputs=x)
        m.add(p + "attention.self.sdpa", "attention", inputs=[q, k, v], num_heads=12, dropout_p=0.1)
        m.linear(p + "attention.output.dense", 768)
        m.add(p + "attention.output.dropout", "dropout", p=0.1)
        m.add(p + "attention.output.add", "add", inputs=[m.last, x])  # LayerNorm(hidden + input)
        a = m.add(p + "attention.output.LayerNorm", "layernorm", eps=1e-12)
        m.linear(p + "intermediate.dense", 3072)
        m.add(p + "intermediate.intermediate_act_fn", "gelu")
        m.linear(p + "output.dense", 768)
        m.add(p + "output.dropout", "dropout", p=0.1)
        m.add(p + "output.add", "add", inputs=[m.last, a])
        m.add(p + "output.LayerNorm", "layernorm", eps=1e-12)
    m.linear("cls.predictions.transform.dense", 768)
    m.add("cls.predictions.transform.transform_act_fn", "gelu")
    m.add("cls.predictions.transform.LayerNorm", "layernorm", eps=1e-12)
    m.add("cls.predictions.decoder", "linear", out_features=30522, bias=True, tie_weight="bert.embeddings.word_embeddings")
    m.add("loss", "softmax_cross_entropy")
    return m


def lm_gmacs(params, layers, tokens, width):
    """The usual estimate of a transformer's forward MACs per sequence: one per parameter per token,
    plus attention's QK^T and PV, 2 T^2 C per layer (dense)."""
    return (params * tokens + 2 * layers * tokens * tokens * width) / 1e9


# name -> (builder, torchvision parameter count, forward GMACs per sample or None)
# (the transformers: torchvision's or HuggingFace's parameter count; vit_b_16's 17.56 is torchvision's
# documented GFLOPS column, which counts multiply-accumulates as it does for the CNNs)
ZOO = {
    "alexnet": (alexnet, 61100840, 0.71),
    "vgg11": (lambda: vgg("vgg11"), 132863336, 7.61),
    "vgg16": (lambda: vgg("vgg16"), 138357544, 15.47),
    "vgg19": (lambda: vgg("vgg19"), 143667240, 19.63),
    "resnet18": (lambda: resnet("resnet18"), 11689512, 1.81),
    "resnet34": (lambda: resnet("resnet34"), 21797672, 3.66),
    "resnet50": (lambda: resnet("resnet50"), 25557032, 4.09),
    "resnet101": (lambda: resnet("resnet101"), 44549160, 7.80),
    "resnet152": (lambda: resnet("resnet152"), 60192808, 11.51),
    # timm's resnext101_32x4d (the same torchvision ResNet) has 44,177,704 parameters and 8.0 GMACs (its
    # model card); the ResNeXt paper's 7.8 GFLOPs (multiply-adds) is a little lower.
    "resnext101_32x4d": (lambda: resnet("resnext101_32x4d"), 44177704, 8.0),
    "densenet121": (densenet121, 7978856, 2.83),
    "mobilenet_v2": (mobilenet_v2, 3504872, 0.30),
    "googlenet": (googlenet, 6624904, 1.50),
    "inception_v3": (inception_v3, 23834568, 5.71),
    "vit_b_16": (vit_b_16, 86567656, 17.56),
    "gpt2_small": (gpt2, 124439808, lm_gmacs(124439808, 12, 1024, 768)),
    # HuggingFace's parameter counts of gpt2-medium, -large and -xl (tied lm_head counted once)
    "gpt2_medium": (lambda: gpt2("gpt2_medium"), 354823168, lm_gmacs(354823168, 24, 1024, 1024)),
    "gpt2_large": (lambda: gpt2("gpt2_large"), 774030080, lm_gmacs(774030080, 36, 1024, 1280)),
    "gpt2_xl": (lambda: gpt2("gpt2_xl"), 1557611200, lm_gmacs(1557611200, 48, 1024, 1600)),
    # HuggingFace's counts of Llama-2-7b-hf and Meta-Llama-3-8B; the MACs estimate counts the
    # parameters the tokens meet (not the embedding table, a gather) and attention as if q, k, v were C wide.
    "llama2_7b": (lambda: llama("llama2_7b"), 6738415616, lm_gmacs(6738415616 - 131072000, 32, 4096, 4096)),
    "llama3_8b": (lambda: llama("llama3_8b"), 8030261248, lm_gmacs(8030261248 - 525336576, 32, 2048, 4096)),
    "bert_base": (bert_base, 109514298, lm_gmacs(109514298, 12, 512, 768)),
}

# The logits before the loss: 1000 classes, or a language model's vocabulary per token.
LOGITS = {"gpt2_small": ("seq", 1024, 50257), "gpt2_medium": ("seq", 1024, 50257), "gpt2_large": ("seq", 1024, 50257),
          "gpt2_xl": ("seq", 1024, 50257), "llama2_7b": ("seq", 4096, 32000), "llama3_8b": ("seq", 2048, 128256),
          "bert_base": ("seq", 512, 30522)}

# feature map that must reach the classifier's pooling layer
LAST_FEATURES = {"alexnet": ("features.12", (256, 6, 6)), "resnet50": ("layer4.2.relu_out", (2048, 7, 7)),
                 "inception_v3": ("Mixed_7c.cat", (2048, 8, 8)), "vgg16": ("features.30", (512, 7, 7)),
                 "densenet121": ("features.norm5", (1024, 7, 7)), "googlenet": ("inception5b.cat", (1024, 7, 7)),
                 "mobilenet_v2": ("features.18.2", (1280, 7, 7)),
                 "vit_b_16": ("encoder.ln", ("seq", 197, 768)), "gpt2_small": ("transformer.ln_f", ("seq", 1024, 768)),
                 "bert_base": ("cls.predictions.transform.LayerNorm", ("seq", 512, 768))}


def dumps(model):
    head = {k: model[k] for k in ("name", "description", "source", "input") if k in model}
    out = "{\n"
    for k, v in head.items():
        out += "  %s: %s,\n" % (json.dumps(k), json.dumps(v))
    out += '  "layers": [\n    '
    out += ",\n    ".join(json.dumps(l) for l in model["layers"])
    out += "\n  ]\n}\n"
    assert json.loads(out) == model
    return out


def main():
    failures = []
    rows = []
    for name, (build, want_params, want_gmacs) in ZOO.items():
        model = build().d
        path = os.path.join(HERE, name + ".json")
        with open(path, "w") as f:
            f.write(dumps(model))
        with open(path) as f:
            model = json.load(f)
        shapes, params, macs = infer(model)
        if params != want_params:
            failures.append("%s: %d parameters, torchvision has %d" % (name, params, want_params))
        if want_gmacs is not None and abs(macs / 1e9 - want_gmacs) > 0.02 * want_gmacs:
            failures.append("%s: %.3f GMAC, expected ~%.2f" % (name, macs / 1e9, want_gmacs))
        if name in LAST_FEATURES:
            lname, want = LAST_FEATURES[name]
            if shapes[lname] != want:
                failures.append("%s: %s is %s, expected %s" % (name, lname, shapes[lname], want))
        if shapes[model["layers"][-2]["name"]] != LOGITS.get(name, (1000,)):
            failures.append("%s: logits are %s" % (name, shapes[model["layers"][-2]["name"]]))
        rows.append((name, params, macs, len(model["layers"])))
    tiny = os.path.join(HERE, "..", "..", "tests", "data", "tiny.json")
    if os.path.exists(tiny):
        with open(tiny) as f:
            model = json.load(f)
        _, params, macs = infer(model)
        rows.append(("tiny", params, macs, len(model["layers"])))
    print("%-14s %12s %10s %7s" % ("model", "params", "GMAC", "layers"))
    for name, params, macs, n in rows:
        print("%-14s %12d %10.4f %7d" % (name, params, macs / 1e9, n))
    if failures:
        for msg in failures:
            print("FAIL " + msg, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
