// The ONNX importer (onnx_importer.hpp): each operator as dtsim layers (docs/onnx-import.md lists them).
#include "workload/onnx/onnx_importer.hpp"

#include <algorithm>

namespace dtsim::onnx_import {

// Symmetric padding that gives ONNX's output size (dtsim's layers pad both sides alike; PyTorch
// exports always do). `out_of(p)` is dtsim's output size for padding p.
template <class F>
int64_t Importer::symmetric_pad(const onnx::NodeProto& n, int64_t begin, int64_t end, int64_t expect, F out_of, const char* axis) {
  if (begin == end) return begin;
  asymmetric_pads_.push_back(node_name(n));
  for (int64_t p : {begin, end, (begin + end) / 2, (begin + end + 1) / 2})
    if (out_of(p) == expect) return p;
  fail_at(n, std::string("asymmetric ") + axis + " padding " + std::to_string(begin) + "+" + std::to_string(end) +
                 " cannot be expressed as PyTorch's symmetric padding with the same output size");
}

void Importer::conv(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  if (acts.size() != 1 || value(n, x).activation == false) return unsupported(n, acts, "Conv with weights computed from activations is not supported");
  if (rank(n, x) != 4) return unsupported(n, acts, "only 2-D convolutions (N x C x H x W inputs) are supported, got rank " + std::to_string(rank(n, x)));
  const auto& w = dims(n, n.input(1));
  Shape in = per_sample(n, x), out = per_sample(n, n.output(0));
  int64_t groups = attr_int(n, "group", 1);
  if (w.size() != 4) fail_at(n, "weight '" + n.input(1) + "' " + dims_str(w) + " must be K x C/groups x R x S");
  if (groups < 1 || in.c % groups || w[0] % groups || w[1] * groups != in.c)
    fail_at(n, "weight " + dims_str(w) + " does not fit " + std::to_string(in.c) + " input channels in " + std::to_string(groups) + " groups");
  auto ks = attr_ints(n, "kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != w[2] || ks[1] != w[3])) fail_at(n, "kernel_shape " + dims_str(ks) + " differs from the weight's " + dims_str(w));
  Layer l;
  l.op = Op::Conv2d;
  l.out_channels = w[0];
  l.kh = w[2];
  l.kw = w[3];
  l.groups = groups;
  auto s = pair_attr(n, "strides", 1), d = pair_attr(n, "dilations", 1);
  l.sh = s[0]; l.sw = s[1]; l.dh = d[0]; l.dw = d[1];
  auto p = pads(n, {in.h, in.w}, {l.kh, l.kw}, s, d);
  auto conv_out = [](int64_t i, int64_t k, int64_t st, int64_t pad, int64_t dil) { return (i + 2 * pad - dil * (k - 1) - 1) / st + 1; };
  l.ph = symmetric_pad(n, p[0], p[2], out.h, [&](int64_t q) { return conv_out(in.h, l.kh, l.sh, q, l.dh); }, "height");
  l.pw = symmetric_pad(n, p[1], p[3], out.w, [&](int64_t q) { return conv_out(in.w, l.kw, l.sw, q, l.dw); }, "width");
  l.bias = n.input_size() > 2 && !n.input(2).empty();
  for (int i = 1; i < n.input_size(); ++i) counted_.insert(canonical(n.input(i)));
  ++convs_;
  conv_biases_ += l.bias;
  add(n, l, {x}, n.output(0), out);
}

// An N x ... x C activation as a sequence of tokens of its last dimension (a View layer, no kernel):
// the tensor it writes, an internal name no ONNX file uses.
std::string Importer::tokens(const onnx::NodeProto& n, const std::string& x) {
  const auto& d = dims(n, x);
  const int64_t c = d.back();
  Shape seq{c, per_sample(n, x).elements() / c, 1, false, true};
  Layer v;
  v.op = Op::View;
  v.given_out = seq;
  const std::string t = "\x01" + x + ":tokens";
  if (!values_.count(t)) add(n, v, {x}, t, seq, ":tokens");
  return t;
}

// Back from tokens to the node's output shape `out` (a View layer).
void Importer::untokens(const onnx::NodeProto& n, const std::string& from, const std::string& output, const Shape& out) {
  Layer v;
  v.op = Op::View;
  v.given_out = out;
  add(n, v, {from}, output, out, ":view");
}

void Importer::gemm(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool matmul) {
  const std::string& a = n.input(0);
  if (matmul && acts.size() == 2)
    return unsupported(n, acts, "MatMul of two activations is supported only inside attention (MatMul(q, k^T), scale, mask, Softmax, MatMul with v: one attention layer), which this one is not part of");
  if (acts.size() != 1 || !value(n, a).activation)
    return unsupported(n, acts, std::string(matmul ? "MatMul" : "Gemm") + " is supported as a linear layer: an activation times a weight initializer");
  if (rank(n, a) != 2 && !(matmul && rank(n, a) >= 3))
    return unsupported(n, acts, std::string(matmul ? "MatMul" : "Gemm") + " on a rank-" + std::to_string(rank(n, a)) +
                                    " input (only N x F vectors, and N x ... x C tensors for MatMul, are supported)");
  if (!matmul && attr_int(n, "transA", 0)) return unsupported(n, acts, "Gemm with transA=1 is not supported");
  const auto& w = dims(n, n.input(1));
  if (w.size() != 2) fail_at(n, "weight '" + n.input(1) + "' " + dims_str(w) + " must be a matrix");
  bool trans_b = !matmul && attr_int(n, "transB", 0);
  int64_t in_f = trans_b ? w[1] : w[0], out_f = trans_b ? w[0] : w[1];
  // N x H x W x C (ConvNeXt's pointwise MLP on channels-last maps): a sequence of H*W tokens, by views.
  const bool map = rank(n, a) > 3;
  const std::string x_in = map ? tokens(n, a) : a;
  Shape x = map ? expected_[value(n, x_in).layer] : per_sample(n, a);
  if (x.c != in_f) fail_at(n, "weight " + dims_str(w) + (trans_b ? " (transB)" : "") + " does not take " + std::to_string(x.c) + " input features");
  Layer l;
  l.op = Op::Linear;
  l.out_features = out_f;
  l.bias = !matmul && n.input_size() > 2 && !n.input(2).empty();
  if (l.bias && value(n, n.input(2)).activation) return unsupported(n, acts, "Gemm with a bias computed from activations is not supported");
  for (int i = 1; i < n.input_size(); ++i) counted_.insert(canonical(n.input(i)));
  // x @ wte.T: a weight tied to an embedding's table (GPT-2's lm_head), counted once, at the embedding.
  auto t = transposed_init_.find(n.input(1));
  if (t != transposed_init_.end()) {
    counted_.insert(t->second);
    auto e = embedding_of_.find(t->second);
    if (e != embedding_of_.end()) l.tied_to = e->second;
  }
  const Shape out = per_sample(n, n.output(0));
  int idx = add(n, l, {x_in}, map ? "\x01" + n.output(0) + ":linear" : n.output(0), map ? Shape{out_f, x.h, 1, false, true} : out);
  if (map) untokens(n, "\x01" + n.output(0) + ":linear", n.output(0), out);
  if (matmul) bias_free_linear_[n.output(0)] = idx;
}

void Importer::batchnorm(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  if (acts.size() != 1 || !value(n, x).activation) return unsupported(n, acts, "BatchNormalization with statistics computed from activations is not supported");
  if (rank(n, x) != 4) return unsupported(n, acts, "only 2-D batch normalization (N x C x H x W inputs) is supported, got rank " + std::to_string(rank(n, x)));
  Shape in = per_sample(n, x);
  for (int i = 1; i < std::min(n.input_size(), 3); ++i) {
    const auto& d = dims(n, n.input(i));
    if (d.size() != 1 || d[0] != in.c) fail_at(n, "scale and bias must have " + std::to_string(in.c) + " elements, '" + n.input(i) + "' is " + dims_str(d));
  }
  for (int i = 1; i < n.input_size(); ++i) counted_.insert(canonical(n.input(i)));
  // A training-mode export keeps the batch statistics: opset 14+ says so in training_mode, older
  // opsets by emitting the running statistics as extra outputs.
  bool training = opset_ >= 14 ? attr_int(n, "training_mode", 0) != 0 : n.output_size() > 1;
  ++batchnorms_;
  if (!training && inference_bn_.empty()) inference_bn_ = node_name(n);
  inference_bns_ += !training;
  Layer l;
  l.op = Op::BatchNorm2d;
  add(n, l, {x}, n.output(0), in);
  for (int o = 1; o < n.output_size(); ++o) values_[n.output(o)] = Value{false, -1};
}

void Importer::pool(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  if (rank(n, x) != 4) return unsupported(n, acts, "only 2-D pooling (N x C x H x W inputs) is supported, got rank " + std::to_string(rank(n, x)));
  if (n.output_size() > 1 && !n.output(1).empty() && consumers_[n.output(1)])
    return unsupported(n, acts, "MaxPool's indices output is not supported");
  Shape in = per_sample(n, x), out = per_sample(n, n.output(0));
  Layer l;
  l.op = n.op_type() == "MaxPool" ? Op::MaxPool2d : Op::AvgPool2d;
  auto k = pair_attr(n, "kernel_shape", 0);
  if (k[0] == 0) fail_at(n, "kernel_shape is required");
  auto s = pair_attr(n, "strides", 1), d = pair_attr(n, "dilations", 1);
  if (d[0] != 1 || d[1] != 1) return unsupported(n, acts, "dilated pooling is not supported");
  l.kh = k[0]; l.kw = k[1]; l.sh = s[0]; l.sw = s[1];
  l.ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
  auto p = pads(n, {in.h, in.w}, k, s, d);
  auto pool_out = [&](int64_t i, int64_t kk, int64_t st, int64_t pad) {  // PyTorch's rule, as in graph.cpp
    int64_t span = i + 2 * pad - kk;
    int64_t o = (l.ceil_mode ? (span + st - 1) / st : span / st) + 1;
    if (l.ceil_mode && (o - 1) * st >= i + pad) --o;
    return o;
  };
  l.ph = symmetric_pad(n, p[0], p[2], out.h, [&](int64_t q) { return pool_out(in.h, l.kh, l.sh, q); }, "height");
  l.pw = symmetric_pad(n, p[1], p[3], out.w, [&](int64_t q) { return pool_out(in.w, l.kw, l.sw, q); }, "width");
  add(n, l, {x}, n.output(0), out);
}

void Importer::global_pool(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool keep_dims) {
  const std::string& x = n.input(0);
  if (rank(n, x) != 4) return unsupported(n, acts, "only 2-D global pooling (N x C x H x W inputs) is supported");
  Shape in = per_sample(n, x);
  Layer l;
  if (n.op_type() == "GlobalMaxPool") {
    l.op = Op::MaxPool2d;
    l.kh = l.sh = in.h;
    l.kw = l.sw = in.w;
  } else {
    l.op = Op::AdaptiveAvgPool2d;  // torch exports adaptive_avg_pool2d(x, 1) and x.mean([2, 3]) so
  }
  Shape pooled{in.c, 1, 1, false};
  if (keep_dims) {
    add(n, l, {x}, n.output(0), pooled);
    return;
  }
  // ReduceMean with keepdims=0 yields N x C: the pooling, then a flatten.
  int idx = add(n, l, {x}, "", pooled);
  Layer f;
  f.op = Op::Flatten;
  f.name = "";
  std::string tmp = "\x01" + n.output(0);  // an internal tensor name no ONNX file uses
  values_[tmp] = Value{true, idx};
  add(n, f, {tmp}, n.output(0), Shape{in.c, 1, 1, true}, ":flatten");
}

void Importer::reduce_mean(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  std::vector<int64_t> axes = attr_ints(n, "axes");
  if (axes.empty() && n.input_size() > 1) {  // opset 18 moved axes to an input
    auto it = known_.find(n.input(1));
    if (it != known_.end())
      for (double a : it->second.values) axes.push_back(static_cast<int64_t>(a));
  }
  size_t r = rank(n, x);
  for (auto& a : axes)
    if (a < 0) a += static_cast<int64_t>(r);
  std::sort(axes.begin(), axes.end());
  if (r == 4 && axes == std::vector<int64_t>{2, 3}) return global_pool(n, acts, attr_int(n, "keepdims", 1) != 0);
  eltwise(n, acts);
}

void Importer::activation(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  if (acts.size() != 1 || acts[0] != x) return unsupported(n, acts, n.op_type() + " on a computed parameter is not supported");
  Layer l;
  l.op = Op::Activation;
  l.activation = lower_snake(n.op_type());
  if (n.op_type() == "Clip") {
    // PyTorch exports ReLU6 and hardtanh as Clip: bounds from inputs (opset 11+) or attributes.
    std::optional<double> lo = opset_ >= 11 ? const_scalar(n, 1) : attr_float(n, "min");
    std::optional<double> hi = opset_ >= 11 ? const_scalar(n, 2) : attr_float(n, "max");
    bool has_hi = opset_ >= 11 ? n.input_size() > 2 && !n.input(2).empty() : attr(n, "max") != nullptr;
    if (lo && *lo == 0 && hi && *hi == 6) l.activation = "relu6";
    else if (lo && *lo == 0 && !has_hi) l.activation = "relu";
  }
  l.extra_params = trainable_elements(n);  // PReLU's slope
  Shape in = per_sample(n, x);
  add(n, l, {x}, n.output(0), in);
  if (n.op_type() == "Sigmoid" || n.op_type() == "HardSigmoid") gate_input_[n.output(0)] = x;
}

void Importer::binary(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& op = n.op_type();
  const std::string& out = n.output(0);
  Shape y = per_sample(n, out);
  if (acts.size() == 1) {
    const std::string& x = acts[0];
    // MatMul + Add of a bias vector is how torch exports nn.Linear on some inputs: fold the bias.
    auto lin = bias_free_linear_.find(x);
    if (op == "Add" && lin != bias_free_linear_.end() && consumers_[x] == 1 && n.input_size() == 2) {
      const std::string& b = n.input(0) == x ? n.input(1) : n.input(0);
      auto bd = shapes_.find(b);
      Layer& l = g_.layers[lin->second];
      if (initializers_.count(canonical(b)) && bd != shapes_.end() && bd->second.dims.size() == 1 && bd->second.dims[0] == l.out_features) {
        l.bias = true;
        counted_.insert(canonical(b));
        return alias(out, x);
      }
    }
    if (op == "Add" && n.input_size() == 2 && positions(n, x)) return;
    // Arithmetic with a constant (a scale, a bias, stochastic depth's noise): elementwise.
    if (y == per_sample(n, x)) {
      Layer l;
      l.op = Op::Activation;
      l.activation = lower_snake(op);
      l.extra_params = trainable_elements(n);
      add(n, l, {x}, out, y);
      return;
    }
    return eltwise(n, acts);
  }
  if (op == "Mul" && acts.size() == 2) {
    // x * sigmoid(x) is how torch exports SiLU (and x * hardsigmoid(x) HardSwish): one activation.
    for (int k = 0; k < 2; ++k) {
      const std::string& gate = acts[k];
      const std::string& other = acts[1 - k];
      auto gi = gate_input_.find(gate);
      if (gi == gate_input_.end() || gi->second != other || consumers_[gate] != 1) continue;
      Layer& l = g_.layers[value(n, gate).layer];
      l.activation = l.activation == "sigmoid" ? "silu" : "hardswish";
      return alias(out, gate);
    }
    Shape a = per_sample(n, acts[0]), b = per_sample(n, acts[1]);
    auto gate_of = [](const Shape& gs, const Shape& m) { return !gs.vector && !m.vector && gs.c == m.c && gs.h == 1 && gs.w == 1; };
    if (a == b || gate_of(a, b) || gate_of(b, a)) {
      Layer l;
      l.op = Op::Mul;
      add(n, l, acts, out, y);
      return;
    }
    return eltwise(n, acts);
  }
  if ((op == "Add" || op == "Sum") && acts.size() >= 2 && static_cast<int>(acts.size()) == n.input_size()) {
    bool same = true;
    for (const auto& t : acts) same &= per_sample(n, t) == y;
    if (same) {
      Layer l;
      l.op = Op::Add;
      add(n, l, acts, out, y);
      return;
    }
  }
  eltwise(n, acts);
}

void Importer::concat(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  int64_t axis = attr_int(n, "axis", 1);
  size_t r = rank(n, n.output(0));
  if (axis < 0) axis += static_cast<int64_t>(r);
  if (static_cast<int>(acts.size()) == n.input_size() && r == 4 && axis == 1) {
    if (acts.size() == 1) return alias(n.output(0), acts[0]);
    Layer l;
    l.op = Op::Concat;
    add(n, l, acts, n.output(0), per_sample(n, n.output(0)));
    return;
  }
  if (axis == 0) fail_at(n, "concatenates along the batch dimension: dtsim keeps samples independent");
  if (r == 3 && axis == 1 && acts.size() == 1 && n.input_size() == 2 && n.input(1) == acts[0]) {
    // torch.cat([class_token.expand(n, -1, -1), x], dim=1): ViT's class token in front of the patches.
    std::string token = learned_token(n.input(0), per_sample(n, acts[0]).c);
    if (!token.empty()) {
      Layer l;
      l.op = Op::ClassToken;
      counted_.insert(token);
      add(n, l, acts, n.output(0), per_sample(n, n.output(0)));
      return;
    }
  }
  eltwise(n, acts);
}

void Importer::dropout(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  Layer l;
  l.op = Op::Dropout;
  std::optional<double> ratio = opset_ >= 12 ? const_scalar(n, 1) : attr_float(n, "ratio");
  l.dropout_p = ratio ? *ratio : 0.5;
  if (l.dropout_p < 0 || l.dropout_p > 1) fail_at(n, "ratio must be in [0, 1]");
  (void)acts;
  // p = 0 (ViT's dropouts): PyTorch returns the input, no kernel.
  if (l.dropout_p == 0) alias(n.output(0), x);
  else add(n, l, {x}, n.output(0), per_sample(n, x));
  for (int o = 1; o < n.output_size(); ++o) values_[n.output(o)] = Value{false, -1};  // the mask
  ++dropouts_;
}

void Importer::softmax(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  // A softmax on the class scores at the very end is the loss's own: the loss costs it.
  const std::string& x = n.input(0);
  bool is_output = false;
  for (const auto& o : model_.graph().output()) is_output |= o.name() == n.output(0);
  if (is_output && consumers_[n.output(0)] == 1 && (per_sample(n, x).vector || per_sample(n, x).seq)) {
    Layer l;
    l.op = Op::SoftmaxCrossEntropy;
    add(n, l, {x}, n.output(0), Shape{1, 1, 1, true});
    loss_ = true;
    return;
  }
  eltwise(n, acts);
}

void Importer::views(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  if (!value(n, x).activation) {
    if (n.op_type() == "Gather" && embedding(n, acts)) return;
    return eltwise(n, acts);  // e.g. gathering rows of a table by indices computed per sample
  }
  if (n.op_type() == "Gather") {
    int64_t axis = attr_int(n, "axis", 0);
    if (axis == 0 || axis == -static_cast<int64_t>(rank(n, x))) fail_at(n, "gathers along the batch dimension: dtsim keeps samples independent");
    if (acts.size() != 1) return eltwise(n, acts);
    if (select(n, axis)) return;
  }
  if ((n.op_type() == "Flatten" || n.op_type() == "Reshape") && patches(n)) return;
  for (int o = 0; o < n.output_size(); ++o)
    if (!n.output(o).empty() && consumers_[n.output(o)]) view(n, x, n.output(o));
}

void Importer::transpose(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  auto perm = attr_ints(n, "perm");
  auto map = flat_map_.find(n.input(0));
  if (map != flat_map_.end() && perm == std::vector<int64_t>{0, 2, 1}) {  // x.flatten(2).transpose(1, 2): ViT's patches
    Layer l;
    l.op = Op::ToSequence;
    add(n, l, {map->second}, n.output(0), per_sample(n, n.output(0)));
    return;
  }
  // Only the batch moves (x.transpose(0, 1) of N x T x C, nn.MultiheadAttention's batch_first): each
  // sample's data keeps its order, a view. (PyTorch copies it where a GEMM needs it contiguous.)
  const auto& d = dims(n, n.input(0));
  auto b = batch_axis(n.input(0), d);
  std::vector<int64_t> rest;
  for (int64_t p : perm)
    if (b && p != static_cast<int64_t>(b->first)) rest.push_back(p);
  if (b && b->second == 1 && perm.size() == d.size() && std::is_sorted(rest.begin(), rest.end())) return view(n, n.input(0), n.output(0));
  eltwise(n, acts);  // PyTorch's transpose is a view, but the .contiguous() that follows copies
}

// Static tensors that layers read as tables: a Gather of a float matrix initializer by constant
// indices (learned positions gathered by a Range), and the transpose of a matrix initializer (x @ W.T).
void Importer::static_table(const onnx::NodeProto& n) {
  if (n.output_size() != 1 || n.input_size() < 1) return;
  // A cast of a gathered table (HuggingFace casts the positions to the embeddings' dtype) is the table.
  auto cast = position_table_.find(n.input(0));
  if (cast != position_table_.end() && (n.op_type() == "Cast" || n.op_type() == "Identity")) position_table_[n.output(0)] = cast->second;
  const std::string& data = canonical(n.input(0));
  auto init = initializers_.find(data);
  if (init == initializers_.end() || !is_float_type(init->second->data_type()) || init->second->dims_size() != 2) return;
  if (n.op_type() == "Gather" && attr_int(n, "axis", 0) == 0) position_table_[n.output(0)] = data;
  auto perm = attr_ints(n, "perm");
  if (n.op_type() == "Transpose" && (perm.empty() || perm == std::vector<int64_t>{1, 0})) transposed_init_[n.output(0)] = data;
}

// Gather(table, token ids): an embedding of the model's token input.
bool Importer::embedding(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  // The ids: the token input, or a view of it of the same shape (HuggingFace's input_ids.view(-1, T)).
  if (!token_input_ || acts.size() != 1 || n.input_size() != 2 || attr_int(n, "axis", 0) != 0) return false;
  const Value& ids = value(n, n.input(1));
  if (!ids.activation || ids.layer != -1) return false;
  const std::string& table = canonical(n.input(0));
  auto init = initializers_.find(table);
  if (init == initializers_.end() || !is_float_type(init->second->data_type())) return false;
  const auto& d = dims(n, n.input(0));
  if (d.size() != 2) return false;
  Layer l;
  l.op = Op::Embedding;
  l.num_embeddings = d[0];
  l.embedding_dim = d[1];
  counted_.insert(table);
  embedding_of_[table] = add(n, l, {input_name_}, n.output(0), per_sample(n, n.output(0)));
  return true;
}

// Add(x, positions) on a sequence: learned positions, gathered from a table by a Range or Constant
// (GPT-2's wpe), or a [1, T, C] initializer added whole (ViT's pos_embedding).
bool Importer::positions(const onnx::NodeProto& n, const std::string& x) {
  const std::string& other = n.input(0) == x ? n.input(1) : n.input(0);
  Shape xs = per_sample(n, x);
  if (!xs.seq) return false;
  std::string table;
  int64_t rows = 0;
  auto gathered = position_table_.find(other);
  if (gathered != position_table_.end()) {
    const auto& d = initializers_.at(gathered->second)->dims();
    const auto* ids = complete_shape(other);
    if (ids && ids->size() == 3 && sample(other) == std::optional<Shape>(xs)) return token_types(n, x, other, gathered->second);
    if (d[1] != xs.c || d[0] < xs.h) return false;
    table = gathered->second, rows = d[0];
  } else {
    auto init = initializers_.find(canonical(other));
    if (init == initializers_.end() || !is_float_type(init->second->data_type())) return false;
    std::vector<int64_t> d(init->second->dims().begin(), init->second->dims().end());
    if (d.size() == 3 && d[0] == 1) d.erase(d.begin());
    if (d.size() != 2 || d[0] != xs.h || d[1] != xs.c) return false;
    table = canonical(other), rows = d[0];
  }
  Layer l;
  l.op = Op::PositionalEmbedding;
  l.num_embeddings = rows;
  counted_.insert(table);
  add(n, l, {x}, n.output(0), per_sample(n, n.output(0)));
  return true;
}

// Add(x, Gather(table, constant ids of the input's shape)): BERT's token types, all zero. An
// embedding of the token input (as the zoo writes it) and an add.
bool Importer::token_types(const onnx::NodeProto& n, const std::string& x, const std::string& rows, const std::string& table) {
  if (!token_input_) return false;
  const auto& d = initializers_.at(table)->dims();
  Layer e;
  e.op = Op::Embedding;
  e.num_embeddings = d[0];
  e.embedding_dim = d[1];
  counted_.insert(table);
  std::string tmp = "\x01" + rows;  // an internal tensor name no ONNX file uses
  add(*producer_.at(rows), e, {input_name_}, tmp, per_sample(n, x));
  Layer l;
  l.op = Op::Add;
  add(n, l, {x, tmp}, n.output(0), per_sample(n, n.output(0)));
  return true;
}

// The float initializer of c elements a static tensor expands (class_token.expand(n, -1, -1)); "" if none.
std::string Importer::learned_token(std::string t, int64_t c) {
  for (int hops = 0; hops < 8; ++hops) {
    auto init = initializers_.find(canonical(t));
    if (init != initializers_.end()) {
      int64_t e = 1;
      for (int64_t d : init->second->dims()) e *= d;
      return is_float_type(init->second->data_type()) && e == c ? canonical(t) : "";
    }
    auto p = producer_.find(t);
    if (p == producer_.end() || !default_domain(*p->second)) return "";
    const std::string& op = p->second->op_type();
    if (op != "Expand" && op != "Tile" && op != "Identity" && op != "Cast" && op != "Reshape") return "";
    t = p->second->input(0);
  }
  return "";
}

// x[:, i] of a sequence (Gather on the tokens' axis by a constant index): select, as a ViT's head reads its class token.
bool Importer::select(const onnx::NodeProto& n, int64_t axis) {
  const std::string& x = n.input(0);
  if (rank(n, x) != 3 || (axis != 1 && axis != -2)) return false;
  auto k = known_.find(n.input(1));
  if (k == known_.end() || !k->second.dims.empty() || k->second.values.size() != 1) return false;
  Shape xs = per_sample(n, x);
  int64_t i = static_cast<int64_t>(k->second.values[0]);
  if (i < 0) i += xs.h;
  if (i < 0 || i >= xs.h) fail_at(n, "index " + std::to_string(i) + " is outside the sequence's " + std::to_string(xs.h) + " tokens");
  Layer l;
  l.op = Op::Select;
  l.index = i;
  add(n, l, {x}, n.output(0), per_sample(n, n.output(0)));
  return true;
}

// x.flatten(2) of an N x C x H x W map whose one reader is transpose(1, 2): no layer here, the
// Transpose becomes to_sequence.
bool Importer::patches(const onnx::NodeProto& n) {
  const std::string& x = n.input(0);
  const std::string& y = n.output(0);
  const auto* xd = complete_shape(x);
  const auto* yd = complete_shape(y);
  if (!xd || !yd || xd->size() != 4 || yd->size() != 3 || (*yd)[1] != (*xd)[1] || (*yd)[2] != (*xd)[2] * (*xd)[3]) return false;
  auto r = readers(y);
  if (r.size() != 1 || r[0]->op_type() != "Transpose" || attr_ints(*r[0], "perm") != std::vector<int64_t>{0, 2, 1}) return false;
  flat_map_[y] = x;
  alias(y, x);
  return true;
}

void Importer::layernorm(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  const std::string& x = n.input(0);
  if (acts.size() != 1 || acts[0] != x) return unsupported(n, acts, "LayerNormalization with a scale or bias computed from activations is not supported");
  int64_t r = static_cast<int64_t>(rank(n, x)), axis = attr_int(n, "axis", -1);
  if (axis < 0) axis += r;
  if (axis != r - 1 || r < 2)
    return unsupported(n, acts, "LayerNormalization is supported over the last dimension (axis -1): of N x T x C, N x F, or N x H x W x C after a permute");
  Shape in = per_sample(n, x);
  // N x H x W x C (ConvNeXt's LayerNorm between permutes, over the channels): a sequence of H*W
  // tokens of C features for the layernorm, by views in and out.
  const std::string from = r > 3 ? tokens(n, x) : x;
  const Shape given = in;
  if (r > 3) in = expected_[value(n, from).layer];
  for (int i = 1; i < std::min(n.input_size(), 3); ++i) {
    if (n.input(i).empty()) continue;
    const auto& d = dims(n, n.input(i));
    if (d.size() != 1 || d[0] != in.c) fail_at(n, "scale and bias must have " + std::to_string(in.c) + " elements, '" + n.input(i) + "' is " + dims_str(d));
    counted_.insert(canonical(n.input(i)));
  }
  Layer l;
  l.op = Op::LayerNorm;
  l.bias = n.input_size() > 2 && !n.input(2).empty();
  ++layernorms_;
  if (r <= 3) {
    add(n, l, {x}, n.output(0), in);
  } else {
    const std::string normed = "\x01" + n.output(0) + ":normed";
    add(n, l, {from}, normed, in);
    untokens(n, normed, n.output(0), given);
  }
  for (int o = 1; o < n.output_size(); ++o) values_[n.output(o)] = Value{false, -1};  // mean, inverse standard deviation
}

void Importer::gelu(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  if (acts.size() != 1) return unsupported(n, acts, "Gelu of a computed parameter is not supported");
  Layer l;
  l.op = Op::Activation;
  l.activation = gelu_.at(&n);
  add(n, l, acts, n.output(0), per_sample(n, acts[0]));
}

// A node inside a recognised pattern: its outputs are read only inside it (or for their shapes); the
// pattern's last node adds its layer.
void Importer::fused(const onnx::NodeProto& n) {
  for (const auto& o : n.output()) values_[o] = Value{false, -1};
  auto f = fused_.find(&n);
  if (f == fused_.end()) return;
  const Fused& p = f->second;
  Layer l;
  l.op = p.op;
  l.activation = p.activation;
  l.num_heads = p.heads;
  l.causal = p.causal;
  l.dropout_p = p.dropout;
  l.mha_layout = p.mha_layout;
  l.bias = p.op == Op::LayerNorm;
  add(*p.anchor, l, p.inputs, p.output, per_sample(n, p.output), p.op == Op::Attention ? ":attention" : "");
}

// The loss as the graph computes it: cross_entropy(logits, labels) of a training step exported whole
// (SoftmaxCrossEntropyLoss, whose labels are a side input). One softmax cross-entropy on the logits.
void Importer::loss(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
  // (Labels computed from the token ids, as an export given the ids as labels writes them, are read
  // for their values only: the loss's one input is the logits.)
  if (acts.empty() || acts[0] != n.input(0)) return unsupported(n, acts, "SoftmaxCrossEntropyLoss is supported on logits computed from the input");
  if (n.output_size() > 1 && !n.output(1).empty() && consumers_[n.output(1)]) return unsupported(n, acts, "SoftmaxCrossEntropyLoss's log_prob output is not supported");
  Shape x = per_sample(n, acts[0]);
  if (!x.vector && !x.seq) return unsupported(n, acts, "SoftmaxCrossEntropyLoss is supported on class scores (N x classes, or N x T x classes)");
  Layer l;
  l.op = Op::SoftmaxCrossEntropy;
  add(n, l, {acts[0]}, n.output(0), Shape{1, 1, 1, true});
  loss_ = true;
}

void Importer::node(const onnx::NodeProto& n, int) {
  if (absorbed_.count(&n)) return fused(n);
  const std::string& op = n.op_type();
  std::vector<std::string> acts;
  for (const auto& in : n.input()) {
    if (in.empty()) continue;
    if (value(n, in).activation && std::find(acts.begin(), acts.end(), in) == acts.end()) acts.push_back(in);
  }
  bool known_domain = n.domain().empty() || n.domain() == "ai.onnx";
  if (acts.empty() || (known_domain && kShapeOps.count(op))) {
    for (const auto& o : n.output()) values_[o] = Value{false, -1};  // constants and shape arithmetic
    if (op == "Identity" && known_domain && n.input_size() == 1 && n.output_size() == 1 && initializers_.count(canonical(n.input(0))))
      initializer_alias_[n.output(0)] = canonical(n.input(0));
    if (known_domain) static_table(n);
    return;
  }
  for (const auto& o : n.output())
    if (!o.empty() && values_.count(o)) fail_at(n, "writes '" + o + "', which an earlier node or initializer already defines");
  if (!known_domain) return unsupported(n, acts, "operator '" + op + "' of domain '" + n.domain() + "' is not an ONNX operator");
  if (op == "Conv") return conv(n, acts);
  if (op == "Gemm") return gemm(n, acts, false);
  if (op == "MatMul") return gemm(n, acts, true);
  if (op == "BatchNormalization") return batchnorm(n, acts);
  if (op == "LayerNormalization") return layernorm(n, acts);
  if (gelu_.count(&n)) return gelu(n, acts);
  if (op == "MaxPool" || op == "AveragePool") return pool(n, acts);
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return global_pool(n, acts, true);
  if (op == "ReduceMean") return reduce_mean(n, acts);
  if (kUnaryActivations.count(op)) return activation(n, acts);
  if (kBinary.count(op)) return binary(n, acts);
  if (op == "Concat") return concat(n, acts);
  if (op == "Dropout") return dropout(n, acts);
  if (op == "Softmax" || op == "LogSoftmax") return softmax(n, acts);
  if (op == "SoftmaxCrossEntropyLoss") return loss(n, acts);
  if (kViews.count(op)) return views(n, acts);
  if (op == "Transpose") return transpose(n, acts);
  if (op == "Pad" || op == "Expand" || op == "Tile" || op == "Resize" || op == "Upsample") return eltwise(n, acts);
  if (kIndexOps.count(op)) return eltwise(n, acts);
  unsupported(n, acts, "operator '" + op + "' is not supported");
}

}  // namespace dtsim::onnx_import
