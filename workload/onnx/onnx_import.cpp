// ONNX import (workload/onnx/onnx_import.hpp). The mapping from ONNX operators to dtsim layers and what is
// costed how is documented in docs/onnx-import.md; keep the two in step.
#include "workload/onnx/onnx_import.hpp"

#include <cctype>
#include <filesystem>

#include "workload/onnx/onnx_importer.hpp"

namespace dtsim::onnx_import {

namespace fs = std::filesystem;

std::string lower_snake(const std::string& op) {
  // "LeakyRelu" -> "leaky_relu", "HardSwish" -> "hardswish" (dtsim's JSON spelling), "Relu" -> "relu".
  if (op == "HardSwish") return "hardswish";
  if (op == "HardSigmoid") return "hardsigmoid";
  if (op == "PRelu") return "prelu";
  std::string s;
  for (size_t i = 0; i < op.size(); ++i) {
    char c = op[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0 && !std::isupper(static_cast<unsigned char>(op[i - 1]))) s += '_';
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      s += c;
    }
  }
  return s;
}

std::string first_line(const std::string& s) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > 300 ? l.substr(0, 300) + "..." : l;
}

// Names come from the file: control characters would break the one-line messages.
std::string printable(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + (d[i] < 0 ? std::string("?") : std::to_string(d[i]));
  return s + "]";
}

bool is_float_type(int32_t t) {
  using T = onnx::TensorProto;
  return t == T::FLOAT || t == T::FLOAT16 || t == T::BFLOAT16 || t == T::DOUBLE;
}

Graph Importer::run() {
  read();
  prepare_inputs();
  infer();
  collect();
  fs::path stem = fs::path(path_).stem();  // model.onnx -> model, model.onnx.gz -> model
  g_.name = (stem.extension() == ".onnx" ? stem.stem() : stem).string();
  g_.source = "ONNX " + path_ + " (" + (model_.producer_name().empty() ? "unknown producer" : model_.producer_name() + " " + model_.producer_version()) +
              ", opset " + std::to_string(opset_) + ")";
  const auto& graph = model_.graph();
  check_shape_inputs();
  recognise();
  for (int i = 0; i < graph.node_size(); ++i) node(graph.node(i), i);
  outputs();
  check_shapes();
  add_notes();
  return std::move(g_);
}

std::string Importer::unique_name(const std::string& base) {
  std::string name = base;
  for (int k = 2; used_names_.count(name) || name == "input"; ++k) name = base + "_" + std::to_string(k);
  used_names_.insert(name);
  return name;
}

// Appends a layer reading `inputs` (activation tensors) and producing `output`; `expect` is the
// per-sample output shape ONNX inferred, checked against dtsim's own inference at the end.
int Importer::add(const onnx::NodeProto& n, Layer l, const std::vector<std::string>& inputs, const std::string& output, const Shape& expect, const std::string& suffix) {
  l.name = unique_name(node_name(n) + suffix);
  l.inputs.clear();
  for (const auto& t : inputs) l.inputs.push_back(value(n, t).layer);
  g_.layers.push_back(std::move(l));
  expected_.push_back(expect);
  origin_.push_back(node_where(n));
  int idx = static_cast<int>(g_.layers.size()) - 1;
  if (!output.empty()) values_[output] = Value{true, idx};
  return idx;
}

// The initializer a tensor names: itself, or the one an Identity chain leads to. torch.onnx.export
// deduplicates initializers (tied parameters; in eval mode any two equal ones, such as fresh zero
// biases) into one, the other names becoming Identity nodes of it.
const std::string& Importer::canonical(const std::string& name) const {
  auto it = initializer_alias_.find(name);
  return it == initializer_alias_.end() ? name : it->second;
}

// The float initializers among a node's static inputs that no earlier layer counted: PyTorch's
// parameters and buffers both become initializers; outside BatchNormalization (whose running
// statistics are skipped) dtsim takes them as parameters.
// Inputs read for their values (kShapeInputs' operators: everything after the data) are not.
// The initializer a static tensor is a view or cast of (gamma.reshape(1, -1, 1, 1), a cast to the
// compute dtype), or the tensor itself.
std::string Importer::parameter_source(const std::string& t) const {
  static const std::set<std::string> views = {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Cast", "Identity"};
  std::string s = canonical(t);
  for (int hops = 0; hops < 8 && !initializers_.count(s) && !dynamic_.count(s); ++hops) {
    auto p = producer_.find(s);
    if (p == producer_.end() || !default_domain(*p->second) || !views.count(p->second->op_type()) || p->second->input_size() < 1) break;
    s = canonical(p->second->input(0));
  }
  return initializers_.count(s) ? s : canonical(t);
}

int64_t Importer::trainable_elements(const onnx::NodeProto& n) {
  int64_t total = 0;
  int inputs = kShapeInputs.count(n.op_type()) ? std::min(n.input_size(), 1) : n.input_size();
  for (int i = 0; i < inputs; ++i) {
    const std::string in = parameter_source(n.input(i));
    auto it = initializers_.find(in);
    if (it == initializers_.end() || !is_float_type(it->second->data_type()) || counted_.count(in)) continue;
    int64_t e = 1;
    for (int64_t d : it->second->dims()) e *= std::max<int64_t>(d, 0);
    total += e;
    counted_.insert(in);
  }
  return total;
}

// An operator dtsim cannot cost: stop, or (--allow-unknown-ops) cost it by roofline from its tensor
// sizes, one kernel per pass moving its inputs and outputs.
void Importer::unsupported(const onnx::NodeProto& n, const std::vector<std::string>& acts, const std::string& why) {
  if (!opt_.allow_unknown_ops) {
    std::string list;
    for (const auto& s : onnx_supported_ops()) list += (list.empty() ? "" : ", ") + s;
    fail_at(n, why + "; dtsim costs " + list + "; pass --allow-unknown-ops to cost it by roofline from its tensor sizes");
  }
  unknown_[n.op_type()].push_back(node_name(n));
  eltwise(n, acts, /*roofline_only=*/true);
}

// An operator dtsim knows but costs only by the bytes it moves (transpose, softmax, broadcasting
// arithmetic): one layer per used output.
// roofline_only: an operator dtsim does not know, priced by the roofline alone.
void Importer::eltwise(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool roofline_only) {
  Layer l;
  l.op = Op::Eltwise;
  l.source_op = n.op_type();
  l.roofline_only = roofline_only;
  l.extra_params = trainable_elements(n);
  int k = 0;
  for (int o = 0; o < n.output_size(); ++o) {
    if (n.output(o).empty() || !consumers_[n.output(o)]) continue;
    l.given_out = per_sample(n, n.output(o));
    add(n, l, acts, n.output(o), l.given_out, k++ ? ":" + std::to_string(o) : "");
    l.extra_params = 0;
  }
}

// A view: Flatten when it turns a feature map into a vector (as dtsim's zoo writes it), nothing when
// the shape does not change, else a View layer.
void Importer::view(const onnx::NodeProto& n, const std::string& in, const std::string& out) {
  Shape x = per_sample(n, in), y = per_sample(n, out);
  const Value& v = value(n, in);
  Shape produced = v.layer < 0 ? g_.input : expected_[v.layer];
  if (y == produced) return alias(out, in);
  if (token_input_ && v.layer < 0 && dims(n, in) == dims(n, out)) return alias(out, in);  // ids.view(-1, T)
  Layer l;
  if (y.vector && !x.vector && y.c == x.elements()) {
    l.op = Op::Flatten;
  } else {
    l.op = Op::View;
    l.given_out = y;
  }
  add(n, l, {in}, out, y);
}


// Padding from auto_pad or pads, as [begin_h, begin_w, end_h, end_w].
std::vector<int64_t> Importer::pads(const onnx::NodeProto& n, const std::vector<int64_t>& in_hw, const std::vector<int64_t>& k, const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  std::string auto_pad = attr_str(n, "auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    auto p = attr_ints(n, "pads");
    if (p.empty()) return {0, 0, 0, 0};
    if (p.size() != 4) fail_at(n, "pads must have 4 values for a 2-D operator, got " + std::to_string(p.size()));
    for (int64_t x : p)
      if (x < 0) fail_at(n, "pads must not be negative");
    return p;
  }
  if (auto_pad == "VALID") return {0, 0, 0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") fail_at(n, "auto_pad '" + auto_pad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
  std::vector<int64_t> r(4);
  for (int i = 0; i < 2; ++i) {
    int64_t out = (in_hw[i] + s[i] - 1) / s[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + d[i] * (k[i] - 1) + 1 - in_hw[i]);
    int64_t small = total / 2, big = total - small;
    r[i] = auto_pad == "SAME_UPPER" ? small : big;
    r[i + 2] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return r;
}

std::vector<int64_t> Importer::pair_attr(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  auto v = attr_ints(n, name);
  if (v.empty()) return {def, def};
  if (v.size() != 2) fail_at(n, name + " must have 2 values for a 2-D operator, got " + std::to_string(v.size()));
  for (int64_t x : v)
    if (x < 1 || x > kMaxDim) fail_at(n, name + " must be positive, got " + std::to_string(x));
  return v;
}

void Importer::outputs() {
  const auto& graph = model_.graph();
  std::vector<std::string> outs;
  for (const auto& o : graph.output()) {
    auto it = values_.find(o.name());
    if (it == values_.end()) fail("graph output '" + o.name() + "' is produced by no node");
    if (it->second.activation) outs.push_back(o.name());
  }
  if (outs.empty()) fail("no graph output depends on the input");
  if (outs.size() > 1)
    g_.notes.push_back(path_ + ": " + std::to_string(outs.size()) + " outputs; the loss is on the first ('" + outs[0] +
                       "'); the layers feeding only the others are costed as if their outputs were part of the loss");
  if (loss_) return;
  const std::string& o = outs[0];
  const Value& v = values_[o];
  if (v.layer < 0) fail("graph output '" + o + "' is the input itself");
  Shape s = expected_[v.layer];
  Layer l;
  l.op = Op::SoftmaxCrossEntropy;
  l.name = unique_name("loss");
  l.inputs = {v.layer};
  if (!s.vector && !s.seq) {
    if (!opt_.allow_unknown_ops)
      fail("graph output '" + o + "' is " + s.str() + " per sample: dtsim adds a softmax cross-entropy loss to a vector of class scores; pass --allow-unknown-ops to cost a loss over it by roofline");
    l.op = Op::Eltwise;
    l.source_op = "loss";
    l.roofline_only = true;
    l.given_out = Shape{1, 1, 1, true};
    unknown_["loss"].push_back(l.name);
  }
  g_.layers.push_back(l);
  expected_.push_back(Shape{1, 1, 1, true});
  origin_.push_back(path_ + ": the loss on output '" + o + "'");
}

// dtsim infers every shape again with its own (PyTorch's) rules; a disagreement with ONNX means the
// mapping lost something (padding, a layout), and the costs would be wrong.
void Importer::check_shapes() {
  try {
    infer_shapes(g_, path_);
  } catch (const InputError& e) {
    // Point at the node rather than at dtsim's layer list.
    const std::string& w = e.where();
    auto open = w.find("$.layers[");
    if (open != std::string::npos) {
      size_t i = std::stoul(w.substr(open + 9));
      if (i < origin_.size()) throw InputError(origin_[i], e.rule());
    }
    throw;
  }
  for (size_t i = 0; i < g_.layers.size(); ++i)
    if (!(g_.layers[i].out == expected_[i]))
      throw InputError(origin_[i], "dtsim infers the output " + g_.layers[i].out.str() + " but ONNX shape inference " + expected_[i].str());
}

void Importer::add_notes() {
  if (rotary_ > 0)
    g_.notes.push_back(path_ + ": " + std::to_string(rotary_) + " rotary position embeddings (x * cos + rotate_half(x) * sin on q and k) are part of their attention layers" +
                       "; their elementwise kernels are not priced apart");
  const std::string reexport = "re-export with torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)";
  if (inference_bns_ > 0)
    g_.notes.push_back(path_ + ": an eval-mode export: " + std::to_string(inference_bns_) + " of " + std::to_string(batchnorms_) +
                       " BatchNormalization nodes use running statistics (first: '" + inference_bn_ +
                       "'); costed as training batchnorm, but dropout may be missing: " + reexport);
  else if (batchnorms_ == 0 && dropouts_ == 0 && layernorms_ == 0 && convs_ > 0 && conv_biases_ == convs_)
    g_.notes.push_back(path_ + ": looks like an eval-mode export (every Conv has a bias and there is no BatchNormalization or Dropout: batchnorm folded into the convolutions?); training would be costed without batchnorm: " +
                       reexport + " (ignore this if the network has neither)");
  if (!unknown_.empty()) {
    std::string list;
    size_t count = 0;
    for (const auto& [op, nodes] : unknown_) {
      list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(nodes.size()) + " (first: '" + nodes[0] + "')";
      count += nodes.size();
    }
    g_.notes.push_back(path_ + ": --allow-unknown-ops: " + std::to_string(count) + (count == 1 ? " operator" : " operators") +
                       " dtsim does not know costed by roofline as kernels moving their inputs and outputs: " + list);
  }
  if (!asymmetric_pads_.empty())
    g_.notes.push_back(path_ + ": " + std::to_string(asymmetric_pads_.size()) + (asymmetric_pads_.size() == 1 ? " node pads" : " nodes pad") +
                       " asymmetrically (first: '" + asymmetric_pads_[0] +
                       "'); costed with the symmetric padding that gives the same output size");
}

}  // namespace dtsim::onnx_import

namespace dtsim {

using namespace onnx_import;

const std::vector<std::string>& onnx_supported_ops() {
  static const std::vector<std::string> ops = [] {
    std::set<std::string> s = {"Conv", "Gemm", "MatMul", "BatchNormalization", "LayerNormalization", "Gelu", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                               "ReduceMean", "Concat", "Dropout", "Softmax", "LogSoftmax", "SoftmaxCrossEntropyLoss", "Transpose", "Pad", "Expand", "Tile", "Resize", "Upsample"};
    s.insert(kUnaryActivations.begin(), kUnaryActivations.end());
    s.insert(kBinary.begin(), kBinary.end());
    s.insert(kViews.begin(), kViews.end());
    s.insert(kShapeOps.begin(), kShapeOps.end());
    s.insert(kIndexOps.begin(), kIndexOps.end());
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return ops;
}

Graph import_onnx(const std::string& path, const ModelLoadOptions& options) {
  if (options.batch < 1) throw InputError(path, "the batch for ONNX shape inference must be positive");
  try {
    Graph g = Importer(path, options).run();
    for (auto& n : g.notes) n = printable(n);
    return g;
  } catch (const InputError& e) {
    throw InputError(printable(e.where()), printable(e.rule()));
  } catch (const std::exception& e) {
    // libonnx and protobuf throw their own errors on malformed graphs: still the file's fault.
    throw InputError(path, "malformed ONNX model: " + printable(first_line(e.what())));
  }
}

}  // namespace dtsim
