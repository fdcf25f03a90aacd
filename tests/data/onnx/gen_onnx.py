#!/usr/bin/python3
"""Writes the ONNX test models of tests/data/onnx/: graph-only files shaped like
torch.onnx.export(model, x, f, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
opset_version=17) of torchvision's classifiers, and small hand-built graphs for the error paths.

There is no PyTorch on the machines that build dtsim, so these graphs are written node by node the way
the exporter writes them: one Conv/BatchNormalization(training_mode=1, 3 outputs)/Relu per module,
Clip with Constant bounds for ReLU6, x * sigmoid(x) for SiLU, Dropout with ratio and training_mode
inputs, Flatten + Gemm(transB=1) for the classifier, GlobalAveragePool for adaptive_avg_pool2d(1),
AveragePool for adaptive pooling to the input's own size, ReduceMean for x.mean([2, 3]), Split for
chunk, Shape/Gather/Concat/Reshape for a view computed from x.size(). Initializers carry their
dimensions only (no data): dtsim reads shapes, not weights. Export the real thing from PyTorch with
the command in README.md; these files exist so that tests need no PyTorch.

Two families:
  - torchvision builders written from torchvision's model code (resnet18, resnet50, resnext50_32x4d,
    mobilenet_v2, squeezenet1_0, shufflenet_v2_x1_0, efficientnet_b0, regnet_y_400mf): independent
    of dtsim's zoo, so that tests comparing them with configs/models/*.json compare two definitions.
  - zoo_<name>.onnx: the remaining zoo models translated from configs/models/<name>.json, op for op.
Parameter counts are checked here against torchvision's published num_params.

Dev-time tool: needs Debian's python3-onnx (apt-get install python3-onnx), run with the system
python:  /usr/bin/python3 tests/data/onnx/gen_onnx.py   (from the repository root)
"""
import json
import math
import os
import sys

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
OPSET = 17

# torchvision's num_params (weights' meta) for every builder model.
TORCHVISION_PARAMS = {
    "resnet18": 11689512, "resnet50": 25557032, "resnext50_32x4d": 25028904, "mobilenet_v2": 3504872,
    "squeezenet1_0": 1248424, "shufflenet_v2_x1_0": 2278604, "efficientnet_b0": 5288548, "regnet_y_400mf": 4344144,
}


class Builder:
    """Emits ONNX nodes the way torch.onnx.export names and orders them."""

    def __init__(self, name, c=3, h=224, w=224, batch=1, opset=OPSET):
        self.name = name
        self.nodes, self.inits, self.used = [], [], set()
        self.params = 0
        self.opset = opset
        self.input = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [batch, c, h, w])
        self.x = "input.1"
        self.batch = batch
        self.extra_inputs, self.extra_opsets = [], []

    # -- plumbing --------------------------------------------------------------------------------
    def _node_name(self, module, op):
        base = "/" + module.replace(".", "/") + "/" + op if module else "/" + op
        name, k = base, 1
        while name in self.used:
            name = "%s_%d" % (base, k)
            k += 1
        self.used.add(name)
        return name

    def node(self, op, inputs, module, outputs=1, domain=None, **attrs):
        name = self._node_name(module, op)
        outs = ["%s_output_%d" % (name, i) for i in range(outputs)]
        n = helper.make_node(op, inputs, outs, name=name, domain=domain, **attrs)
        self.nodes.append(n)
        return outs if outputs > 1 else outs[0]

    def init(self, name, dims, trainable=True, dtype=TensorProto.FLOAT):
        t = TensorProto()
        t.name = name
        t.data_type = dtype
        t.dims.extend(dims)
        self.inits.append(t)
        if trainable:
            self.params += math.prod(dims)
        return name

    def const(self, module, values, dtype=TensorProto.INT64, dims=None):
        dims = [len(values)] if dims is None else dims
        t = helper.make_tensor("value", dtype, dims, values)
        return self.node("Constant", [], module, value=t)

    # -- layers (torch.nn modules and functional ops) -----------------------------------------------
    def conv(self, x, m, cin, cout, k, s=1, p=0, g=1, d=1, bias=False):
        ins = [x, self.init(m + ".weight", [cout, cin // g, k, k])]
        if bias:
            ins.append(self.init(m + ".bias", [cout]))
        return self.node("Conv", ins, m, dilations=[d, d], group=g, kernel_shape=[k, k], pads=[p, p, p, p], strides=[s, s])

    def bn(self, x, m, c):
        ins = [x, self.init(m + ".weight", [c]), self.init(m + ".bias", [c]),
               self.init(m + ".running_mean", [c], trainable=False), self.init(m + ".running_var", [c], trainable=False)]
        y, _, _ = self.node("BatchNormalization", ins, m, outputs=3, epsilon=1e-5, momentum=0.9, training_mode=1)
        return y

    def relu(self, x, m):
        return self.node("Relu", [x], m)

    def relu6(self, x, m):
        lo = self.const(m, [0.0], TensorProto.FLOAT, dims=[])
        hi = self.const(m, [6.0], TensorProto.FLOAT, dims=[])
        return self.node("Clip", [x, lo, hi], m)

    def sigmoid(self, x, m):
        return self.node("Sigmoid", [x], m)

    def silu(self, x, m):  # torch exports nn.SiLU as x * sigmoid(x)
        return self.node("Mul", [x, self.sigmoid(x, m)], m)

    def maxpool(self, x, m, k, s, p=0, ceil=False):
        return self.node("MaxPool", [x], m, ceil_mode=int(ceil), kernel_shape=[k, k], pads=[p, p, p, p], strides=[s, s])

    def avgpool(self, x, m, k, s, p=0, ceil=False):
        return self.node("AveragePool", [x], m, ceil_mode=int(ceil), count_include_pad=1, kernel_shape=[k, k], pads=[p, p, p, p], strides=[s, s])

    def gap(self, x, m):  # adaptive_avg_pool2d(x, 1)
        return self.node("GlobalAveragePool", [x], m)

    def add(self, a, b, m):
        return self.node("Add", [a, b], m)

    def mul(self, a, b, m):
        return self.node("Mul", [a, b], m)

    def cat(self, xs, m):
        return self.node("Concat", xs, m, axis=1)

    def flatten(self, x, m=""):
        return self.node("Flatten", [x], m, axis=1)

    def linear(self, x, m, fin, fout, bias=True):
        ins = [x, self.init(m + ".weight", [fout, fin])]
        if bias:
            ins.append(self.init(m + ".bias", [fout]))
        return self.node("Gemm", ins, m, alpha=1.0, beta=1.0, transB=1)

    def dropout(self, x, m, p):
        ratio = self.const(m, [p], TensorProto.FLOAT, dims=[])
        train = self.const(m, [True], TensorProto.BOOL, dims=[])
        y, _ = self.node("Dropout", [x, ratio, train], m, outputs=2)
        return y

    def cna(self, x, m, cin, cout, k, s=1, g=1, act="relu"):
        """torchvision.ops.Conv2dNormActivation: conv (padding (k-1)//2, no bias), bn, activation."""
        y = self.conv(x, m + ".0", cin, cout, k, s, (k - 1) // 2, g)
        y = self.bn(y, m + ".1", cout)
        if act == "relu":
            y = self.relu(y, m + ".2")
        elif act == "relu6":
            y = self.relu6(y, m + ".2")
        elif act == "silu":
            y = self.silu(y, m + ".2")
        return y

    def finish(self, out, classes=1000, path=None):
        g = helper.make_graph(self.nodes, "main_graph", [self.input] + self.extra_inputs,
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [self.batch, classes] if classes else None)],
                              initializer=self.inits)
        model = helper.make_model(g, producer_name="pytorch", producer_version="2.11.0 (graph written by gen_onnx.py)",
                                  opset_imports=[helper.make_opsetid("", self.opset)] + self.extra_opsets)
        model.ir_version = 8
        path = path or os.path.join(HERE, self.name + ".onnx")
        onnx.save(model, path)
        return model, path


def check(model, classes=1000):
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    out = inferred.graph.output[0].type.tensor_type.shape
    dims = [d.dim_value for d in out.dim]
    assert dims[-1] == classes, dims


# ---------------------------------------------------------------------------------------------------
# torchvision models
# ---------------------------------------------------------------------------------------------------

def resnet(name, layers, bottleneck, groups=1, width_per_group=64):
    b = Builder(name)
    x = b.conv(b.x, "conv1", 3, 64, 7, 2, 3)
    x = b.relu(b.bn(x, "bn1", 64), "relu")
    x = b.maxpool(x, "maxpool", 3, 2, 1)
    inplanes, expansion = 64, 4 if bottleneck else 1
    for li, (planes, blocks) in enumerate(zip([64, 128, 256, 512], layers)):
        for bi in range(blocks):
            stride = 2 if li > 0 and bi == 0 else 1
            p = "layer%d.%d" % (li + 1, bi)
            identity = x
            if bottleneck:
                width = int(planes * (width_per_group / 64.0)) * groups
                y = b.relu(b.bn(b.conv(x, p + ".conv1", inplanes, width, 1), p + ".bn1", width), p + ".relu")
                y = b.relu(b.bn(b.conv(y, p + ".conv2", width, width, 3, stride, 1, groups), p + ".bn2", width), p + ".relu_1")
                y = b.bn(b.conv(y, p + ".conv3", width, planes * 4, 1), p + ".bn3", planes * 4)
            else:
                y = b.relu(b.bn(b.conv(x, p + ".conv1", inplanes, planes, 3, stride, 1), p + ".bn1", planes), p + ".relu")
                y = b.bn(b.conv(y, p + ".conv2", planes, planes, 3, 1, 1), p + ".bn2", planes)
            if stride != 1 or inplanes != planes * expansion:
                identity = b.bn(b.conv(x, p + ".downsample.0", inplanes, planes * expansion, 1, stride), p + ".downsample.1", planes * expansion)
            x = b.relu(b.add(y, identity, p), p + ".relu_2" if bottleneck else p + ".relu_1")
            inplanes = planes * expansion
    x = b.flatten(b.gap(x, "avgpool"))
    return b, b.linear(x, "fc", 512 * expansion, 1000)


def make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def mobilenet_v2():
    b = Builder("mobilenet_v2")
    settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]
    x = b.cna(b.x, "features.0", 3, 32, 3, 2, act="relu6")
    cin, idx = 32, 1
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            p = "features.%d.conv" % idx
            hidden = int(round(cin * t))
            y, j = x, 0
            if t != 1:
                y = b.cna(y, "%s.%d" % (p, j), cin, hidden, 1, act="relu6")
                j += 1
            y = b.cna(y, "%s.%d" % (p, j), hidden, hidden, 3, stride, hidden, act="relu6")
            y = b.bn(b.conv(y, "%s.%d" % (p, j + 1), hidden, c, 1), "%s.%d" % (p, j + 2), c)
            x = b.add(x, y, "features.%d" % idx) if stride == 1 and cin == c else y
            cin, idx = c, idx + 1
    x = b.cna(x, "features.18", 320, 1280, 1, act="relu6")
    x = b.flatten(b.gap(x, ""))
    return b, b.linear(b.dropout(x, "classifier.0", 0.2), "classifier.1", 1280, 1000)


def squeezenet1_0():
    b = Builder("squeezenet1_0")

    def fire(x, m, cin, sq, e1, e3):
        s = b.relu(b.conv(x, m + ".squeeze", cin, sq, 1, bias=True), m + ".squeeze_activation")
        a = b.relu(b.conv(s, m + ".expand1x1", sq, e1, 1, bias=True), m + ".expand1x1_activation")
        c = b.relu(b.conv(s, m + ".expand3x3", sq, e3, 3, 1, 1, bias=True), m + ".expand3x3_activation")
        return b.cat([a, c], m)

    x = b.relu(b.conv(b.x, "features.0", 3, 96, 7, 2, bias=True), "features.1")
    x = b.maxpool(x, "features.2", 3, 2, ceil=True)
    x = fire(x, "features.3", 96, 16, 64, 64)
    x = fire(x, "features.4", 128, 16, 64, 64)
    x = fire(x, "features.5", 128, 32, 128, 128)
    x = b.maxpool(x, "features.6", 3, 2, ceil=True)
    x = fire(x, "features.7", 256, 32, 128, 128)
    x = fire(x, "features.8", 256, 48, 192, 192)
    x = fire(x, "features.9", 384, 48, 192, 192)
    x = fire(x, "features.10", 384, 64, 256, 256)
    x = b.maxpool(x, "features.11", 3, 2, ceil=True)
    x = fire(x, "features.12", 512, 64, 256, 256)
    x = b.dropout(x, "classifier.0", 0.5)
    x = b.relu(b.conv(x, "classifier.1", 512, 1000, 1, bias=True), "classifier.2")
    return b, b.flatten(b.gap(x, "classifier.3"))


def shufflenet_v2_x1_0():
    b = Builder("shufflenet_v2_x1_0")

    def channel_shuffle(x, m, c, h, w, groups=2):
        # batchsize, num_channels, height, width = x.size(): traced as Shape + Gather per size
        shape = b.node("Shape", [x], m)
        n = b.node("Gather", [shape, b.const(m, [0], dims=[])], m, axis=0)
        hh = b.node("Gather", [shape, b.const(m, [2], dims=[])], m, axis=0)
        ww = b.node("Gather", [shape, b.const(m, [3], dims=[])], m, axis=0)
        un = lambda t: b.node("Unsqueeze", [t, b.const(m, [0])], m)
        five = b.node("Concat", [un(n), b.const(m, [groups]), b.const(m, [c // groups]), un(hh), un(ww)], m, axis=0)
        y = b.node("Reshape", [x, five], m)
        y = b.node("Transpose", [y], m, perm=[0, 2, 1, 3, 4])
        four = b.node("Concat", [un(n), b.const(m, [-1]), un(hh), un(ww)], m, axis=0)
        return b.node("Reshape", [y, four], m)

    def unit(x, m, inp, oup, stride, hw):
        bf = oup // 2
        if stride > 1:
            y1 = b.bn(b.conv(x, m + ".branch1.0", inp, inp, 3, stride, 1, inp), m + ".branch1.1", inp)
            y1 = b.relu(b.bn(b.conv(y1, m + ".branch1.2", inp, bf, 1), m + ".branch1.3", bf), m + ".branch1.4")
            x2, cin2 = x, inp
        else:
            y1, x2 = b.node("Split", [x, b.const(m, [bf, bf])], m, outputs=2, axis=1)
            cin2 = bf
        y2 = b.relu(b.bn(b.conv(x2, m + ".branch2.0", cin2, bf, 1), m + ".branch2.1", bf), m + ".branch2.2")
        y2 = b.bn(b.conv(y2, m + ".branch2.3", bf, bf, 3, stride, 1, bf), m + ".branch2.4", bf)
        y2 = b.relu(b.bn(b.conv(y2, m + ".branch2.5", bf, bf, 1), m + ".branch2.6", bf), m + ".branch2.7")
        out = b.cat([y1, y2], m)
        return channel_shuffle(out, m, oup, hw, hw)

    x = b.relu(b.bn(b.conv(b.x, "conv1.0", 3, 24, 3, 2, 1), "conv1.1", 24), "conv1.2")
    x = b.maxpool(x, "maxpool", 3, 2, 1)
    cin, hw = 24, 56
    for si, (reps, cout) in enumerate(zip([4, 8, 4], [116, 232, 464])):
        hw //= 2
        for i in range(reps):
            x = unit(x, "stage%d.%d" % (si + 2, i), cin if i == 0 else cout, cout, 2 if i == 0 else 1, hw)
        cin = cout
    x = b.relu(b.bn(b.conv(x, "conv5.0", 464, 1024, 1), "conv5.1", 1024), "conv5.2")
    x = b.node("ReduceMean", [x], "", axes=[2, 3], keepdims=0)  # x.mean([2, 3])
    return b, b.linear(x, "fc", 1024, 1000)


def squeeze_excitation(b, x, m, cin, csq, act):
    """torchvision.ops.SqueezeExcitation: scale = sigmoid(fc2(act(fc1(avgpool(x))))); scale * x."""
    s = b.gap(x, m + ".avgpool")
    s = b.conv(s, m + ".fc1", cin, csq, 1, bias=True)
    s = b.silu(s, m + ".activation") if act == "silu" else b.relu(s, m + ".activation")
    s = b.sigmoid(b.conv(s, m + ".fc2", csq, cin, 1, bias=True), m + ".scale_activation")
    return b.mul(s, x, m)


def efficientnet_b0():
    b = Builder("efficientnet_b0")
    setting = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
               (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
    total = sum(s[5] for s in setting)
    x = b.cna(b.x, "features.0", 3, 32, 3, 2, act="silu")
    block_id = 0
    for si, (e, k, s, cin0, cout, n) in enumerate(setting):
        for i in range(n):
            cin, stride = (cin0, s) if i == 0 else (cout, 1)
            m = "features.%d.%d" % (si + 1, i)
            exp = make_divisible(cin * e, 8)
            y, j = x, 0
            if exp != cin:
                y = b.cna(y, "%s.block.%d" % (m, j), cin, exp, 1, act="silu")
                j += 1
            y = b.cna(y, "%s.block.%d" % (m, j), exp, exp, k, stride, exp, act="silu")
            y = squeeze_excitation(b, y, "%s.block.%d" % (m, j + 1), exp, max(1, cin // 4), "silu")
            y = b.cna(y, "%s.block.%d" % (m, j + 2), exp, cout, 1, act=None)
            sd_prob = 0.2 * block_id / total
            if stride == 1 and cin == cout:
                if sd_prob > 0:  # torchvision.ops.StochasticDepth("row") in training: input * noise
                    sm = m + ".stochastic_depth"
                    shape = b.node("Shape", [y], sm)
                    nn = b.node("Gather", [shape, b.const(sm, [0], dims=[])], sm, axis=0)
                    size = b.node("Concat", [b.node("Unsqueeze", [nn, b.const(sm, [0])], sm), b.const(sm, [1, 1, 1])], sm, axis=0)
                    keep = helper.make_tensor("value", TensorProto.FLOAT, [1], [1.0 - sd_prob])
                    noise = b.node("Bernoulli", [b.node("ConstantOfShape", [size], sm, value=keep)], sm)
                    noise = b.node("Div", [noise, b.const(sm, [1.0 - sd_prob], TensorProto.FLOAT, dims=[])], sm)
                    y = b.mul(y, noise, sm)
                y = b.add(y, x, m)
            x = y
            block_id += 1
    x = b.cna(x, "features.8", 320, 1280, 1, act="silu")
    x = b.flatten(b.gap(x, "avgpool"))
    return b, b.linear(b.dropout(x, "classifier.0", 0.2), "classifier.1", 1280, 1000)


def regnet_y_400mf():
    # BlockParams.from_init_params(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25)
    depth, w_0, w_a, w_m, group_width = 16, 48, 27.89, 2.09, 8
    widths_cont = [i * w_a + w_0 for i in range(depth)]
    caps = [round(math.log(w / w_0) / math.log(w_m)) for w in widths_cont]
    block_widths = [int(round(w_0 * w_m ** c / 8) * 8) for c in caps]
    stage_widths, stage_depths = [], []
    for w in block_widths:
        if stage_widths and stage_widths[-1] == w:
            stage_depths[-1] += 1
        else:
            stage_widths.append(w)
            stage_depths.append(1)
    gws = [min(group_width, w) for w in stage_widths]
    stage_widths = [make_divisible(w, g) for w, g in zip(stage_widths, gws)]
    b = Builder("regnet_y_400mf")
    x = b.cna(b.x, "stem", 3, 32, 3, 2)
    cin = 32
    for si, (w, d, gw) in enumerate(zip(stage_widths, stage_depths, gws)):
        for i in range(d):
            m = "trunk_output.block%d.block%d-%d" % (si + 1, si + 1, i)
            stride = 2 if i == 0 else 1
            wi = cin if i == 0 else w
            proj = None
            if wi != w or stride != 1:
                proj = b.cna(x, m + ".proj", wi, w, 1, stride, act=None)
            y = b.cna(x, m + ".f.a", wi, w, 1)
            y = b.cna(y, m + ".f.b", w, w, 3, stride, w // gw)
            y = squeeze_excitation(b, y, m + ".f.se", w, int(round(0.25 * wi)), "relu")
            y = b.cna(y, m + ".f.c", w, w, 1, act=None)
            x = b.relu(b.add(proj, y, m) if proj else b.add(x, y, m), m + ".activation")
        cin = w
    x = b.flatten(b.gap(x, "avgpool"))
    return b, b.linear(x, "fc", cin, 1000)


# ---------------------------------------------------------------------------------------------------
# The zoo, translated op for op from configs/models/<name>.json
# ---------------------------------------------------------------------------------------------------

def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def zoo(name):
    doc = json.load(open(os.path.join(ROOT, "configs", "models", name + ".json")))
    i = doc["input"]
    b = Builder("zoo_" + name, i["channels"], i["height"], i["width"])
    out, shape, prev = {}, {}, b.x
    shape[b.x] = (i["channels"], i["height"], i["width"])
    last = None
    for l in doc["layers"]:
        ins = [b.x if n == "input" else out[n] for n in l.get("inputs", [])] or [prev]
        op, m, x = l["op"], l["name"], ins[0]
        c = shape[x][0]
        if op == "conv2d":
            k, s, p = pair(l["kernel"]), pair(l.get("stride", 1)), pair(l.get("padding", 0))
            g, cout = l.get("groups", 1), l["out_channels"]
            w = [b.init(m + ".weight", [cout, c // g, k[0], k[1]])]
            if l.get("bias", True):
                w.append(b.init(m + ".bias", [cout]))
            y = b.node("Conv", [x] + w, m, dilations=list(pair(l.get("dilation", 1))), group=g, kernel_shape=list(k),
                       pads=[p[0], p[1], p[0], p[1]], strides=list(s))
            h = (shape[x][1] + 2 * p[0] - (k[0] - 1) - 1) // s[0] + 1
            ww = (shape[x][2] + 2 * p[1] - (k[1] - 1) - 1) // s[1] + 1
            shape[y] = (cout, h, ww)
        elif op == "batchnorm2d":
            y = b.bn(x, m, c)
            shape[y] = shape[x]
        elif op in ("relu", "relu6"):
            y = b.relu(x, m) if op == "relu" else b.relu6(x, m)
            shape[y] = shape[x]
        elif op in ("maxpool2d", "avgpool2d"):
            k = pair(l["kernel"])
            s = pair(l.get("stride", l["kernel"]))
            p = pair(l.get("padding", 0))
            y = b.node("MaxPool" if op == "maxpool2d" else "AveragePool", [x], m, ceil_mode=int(l.get("ceil_mode", False)),
                       kernel_shape=list(k), pads=[p[0], p[1], p[0], p[1]], strides=list(s))
            inferred = onnx.shape_inference.infer_shapes(b.finish(y, classes=None, path=os.devnull)[0])
            dims = [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]
            shape[y] = tuple(dims[1:])
        elif op == "adaptive_avgpool2d":
            o = pair(l["output"])
            if o == (1, 1):
                y = b.gap(x, m)
            else:  # torch exports adaptive pooling as AveragePool when the input divides evenly
                assert shape[x][1] % o[0] == 0 and shape[x][2] % o[1] == 0, (m, shape[x], o)
                k = (shape[x][1] // o[0], shape[x][2] // o[1])
                y = b.node("AveragePool", [x], m, ceil_mode=0, kernel_shape=list(k), pads=[0, 0, 0, 0], strides=list(k))
            shape[y] = (c, o[0], o[1])
        elif op == "add":
            y = ins[0]
            for other in ins[1:]:
                y = b.add(y, other, m)
            shape[y] = shape[x]
        elif op == "concat":
            y = b.cat(ins, m)
            shape[y] = (sum(shape[t][0] for t in ins),) + shape[x][1:]
        elif op == "dropout":
            y = b.dropout(x, m, l.get("p", 0.5))
            shape[y] = shape[x]
        elif op == "flatten":
            y = b.flatten(x, m)
            shape[y] = (math.prod(shape[x]),)
        elif op == "linear":
            y = b.linear(x, m, c, l["out_features"], l.get("bias", True))
            shape[y] = (l["out_features"],)
        elif op == "softmax_cross_entropy":
            continue  # the loss is dtsim's to add; torch exports the model, not the loss
        else:
            raise SystemExit("gen_onnx: %s: no ONNX translation for op %s" % (name, op))
        out[m] = prev = last = y
    return b, last


# ---------------------------------------------------------------------------------------------------
# Small graphs for the error paths and the importer's corners
# ---------------------------------------------------------------------------------------------------

def small(name, body, c=3, hw=32, batch=1, opset=OPSET, classes=10):
    b = Builder(name, c, hw, hw, batch=batch, opset=opset)
    y = body(b)
    model, path = b.finish(y, classes=classes)
    return model, path


def small_cases():
    def stem(b, bias=False, bn=True):
        y = b.conv(b.x, "conv1", 3, 8, 3, 1, 1, bias=bias)
        if bn:
            y = b.bn(y, "bn1", 8)
        return b.relu(y, "relu")

    def head(b, y, c=8):
        return b.linear(b.flatten(b.gap(y, "avgpool")), "fc", c, 10)

    cases = {}
    # An operator dtsim does not cost (LRN, as in the original AlexNet), with shapes ONNX can infer.
    cases["unknown_op"] = lambda b: head(b, b.node("LRN", [stem(b)], "lrn", size=5))
    # An operator of a custom domain: no schema, so no inferred shape either.
    def custom_domain(b):
        b.extra_opsets.append(helper.make_opsetid("com.example", 1))
        return head(b, b.node("FancyNorm", [stem(b)], "fancy", domain="com.example"))
    cases["custom_domain"] = custom_domain
    # An eval-mode export: BatchNormalization in inference mode, one output.
    def eval_bn(b):
        y = b.conv(b.x, "conv1", 3, 8, 3, 1, 1)
        ins = [y, b.init("bn1.weight", [8]), b.init("bn1.bias", [8]), b.init("bn1.running_mean", [8], False), b.init("bn1.running_var", [8], False)]
        y = b.node("BatchNormalization", ins, "bn1", epsilon=1e-5, momentum=0.9)
        return head(b, b.relu(y, "relu"))
    cases["eval_bn"] = eval_bn
    # An eval-mode export with batchnorm folded into the convolutions (do_constant_folding=True).
    cases["eval_folded"] = lambda b: head(b, b.relu(b.conv(b.relu(b.conv(b.x, "conv1", 3, 8, 3, 1, 1, bias=True), "relu1"), "conv2", 8, 8, 3, 1, 1, bias=True), "relu2"))
    # The batch fixed by the export: x.view(1, -1) traced as a Reshape to a constant shape.
    cases["fixed_batch"] = lambda b: b.linear(b.node("Reshape", [b.gap(stem(b), "avgpool"), b.const("", [1, -1])], ""), "fc", 8, 10)
    # A 1-D convolution: not a 2-D layer.
    def conv1d(b):
        y = b.node("Reshape", [b.x, b.const("", [0, 3, -1])], "")  # x.flatten(2): N x 3 x 1024
        y = b.node("Conv", [y, b.init("conv1.weight", [8, 3, 3])], "conv1", kernel_shape=[3], pads=[1, 1], strides=[1])
        y = b.node("ReduceMean", [y], "", axes=[2], keepdims=0)
        return b.linear(y, "fc", 8, 10)
    cases["conv1d"] = conv1d
    # A node that reads a tensor nothing produces (a weight missing from the initializers).
    def dangling(b):
        y = b.node("Conv", [b.x, "conv1.weight"], "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        return head(b, y)
    cases["dangling"] = dangling
    # A segmentation-style output: a feature map, not class scores.
    cases["map_output"] = lambda b: b.conv(stem(b), "classifier", 8, 10, 1, bias=True)
    # Asymmetric padding (auto_pad SAME_UPPER with stride 2, as TensorFlow-converted models have).
    def same_upper(b):
        y = b.node("Conv", [b.x, b.init("conv1.weight", [8, 3, 3, 3])], "conv1", auto_pad="SAME_UPPER", kernel_shape=[3, 3], strides=[2, 2])
        return head(b, b.relu(b.bn(y, "bn1", 8), "relu"))
    cases["same_upper"] = same_upper
    # A stride of 0: libonnx 1.12's shape inference divides by it (SIGFPE; found by fuzz_onnx), so
    # the importer refuses it before inference.
    def zero_stride(b):
        y = b.node("Conv", [b.x, b.init("conv1.weight", [8, 3, 3, 3])], "conv1", auto_pad="SAME_UPPER", kernel_shape=[3, 3], strides=[0, 2])
        return head(b, b.relu(b.bn(y, "bn1", 8), "relu"))
    cases["zero_stride"] = zero_stride
    # nn.Linear exported as MatMul + Add, a PReLU, a softmax at the end, hardswish as x * hardsigmoid(x).
    def matmul_softmax(b):
        y = stem(b)
        hs = b.node("HardSigmoid", [y], "hswish", alpha=1.0 / 6, beta=0.5)
        y = b.node("Mul", [y, hs], "hswish")
        y = b.node("PRelu", [y, b.init("prelu.weight", [8, 1, 1])], "prelu")
        y = b.flatten(b.gap(y, "avgpool"))
        y = b.node("MatMul", [y, b.init("fc.weight_t", [8, 10])], "fc")
        y = b.node("Add", [y, b.init("fc.bias", [10])], "fc")
        return b.node("Softmax", [y], "", axis=1)
    cases["matmul_softmax"] = matmul_softmax
    # What torch.onnx.export writes for initializers it deduplicates (tied parameters; in eval mode any
    # two equal ones, such as fresh zero biases): one initializer, the other names Identity nodes of it.
    # The tied PReLU slope counts once, as in PyTorch; the aliased zero bias still folds into the linear.
    def identity_init(b):
        y = stem(b)
        slope = b.init("prelu.weight", [8, 1, 1])
        tied = b.node("Identity", [slope], "prelu2")
        y = b.node("PRelu", [y, slope], "prelu")
        y = b.node("PRelu", [y, tied], "prelu2")
        y = b.flatten(b.gap(y, "avgpool"))
        zero = b.init("zero.bias", [10])
        y = b.node("MatMul", [y, b.init("fc.weight_t", [8, 10])], "fc")
        return b.node("Add", [y, b.node("Identity", [zero], "fc")], "fc")
    cases["identity_init"] = identity_init
    # Height and width left symbolic (dynamic_axes on them).
    def dynamic_hw(b):
        b.input = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["batch", 3, "height", "width"])
        return head(b, stem(b))
    cases["dynamic_hw"] = dynamic_hw
    # Two inputs (an image and a second tensor): dtsim models take one.
    def two_inputs(b):
        b.extra_inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 8, 32, 32]))
        return head(b, b.node("Mul", [stem(b), "mask"], "masked"))
    cases["two_inputs"] = two_inputs
    # A convolution with zero output channels.
    cases["zero_dim"] = lambda b: head(b, b.conv(b.x, "conv1", 3, 0, 3, 1, 1), 0)
    return cases


def main():
    sizes = {}
    builders = {
        "resnet18": lambda: resnet("resnet18", [2, 2, 2, 2], False),
        "resnet50": lambda: resnet("resnet50", [3, 4, 6, 3], True),
        "resnext50_32x4d": lambda: resnet("resnext50_32x4d", [3, 4, 6, 3], True, groups=32, width_per_group=4),
        "mobilenet_v2": mobilenet_v2,
        "squeezenet1_0": squeezenet1_0,
        "shufflenet_v2_x1_0": shufflenet_v2_x1_0,
        "efficientnet_b0": efficientnet_b0,
        "regnet_y_400mf": regnet_y_400mf,
    }
    for name, build in builders.items():
        b, out = build()
        model, path = b.finish(out)
        check(model)
        assert b.params == TORCHVISION_PARAMS[name], (name, b.params, TORCHVISION_PARAMS[name])
        sizes[path] = os.path.getsize(path)
    for name in ("alexnet", "vgg16", "densenet121", "googlenet", "inception_v3"):
        b, out = zoo(name)
        model, path = b.finish(out)
        check(model)
        sizes[path] = os.path.getsize(path)
    for name, body in small_cases().items():
        model, path = small(name, body, classes=None)
        sizes[path] = os.path.getsize(path)
    # Not ONNX at all, and an ONNX file cut short.
    with open(os.path.join(HERE, "not_onnx.onnx"), "wb") as f:
        f.write(b"this is a text file, not a protobuf\n")
    whole = open(os.path.join(HERE, "resnet18.onnx"), "rb").read()
    with open(os.path.join(HERE, "truncated.onnx"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    for p, s in sorted(sizes.items()):
        print("%8d  %s" % (s, os.path.relpath(p, ROOT)))


if __name__ == "__main__":
    sys.exit(main())
