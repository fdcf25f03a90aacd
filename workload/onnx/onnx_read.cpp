// The ONNX importer (onnx_importer.hpp): reading the file, ONNX shape inference with constant evaluation,
// and the shapes of tensors as dtsim sees them (per sample, the batch's axis).
#include "workload/onnx/onnx_importer.hpp"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/text_file.hpp"

namespace fs = std::filesystem;

namespace dtsim::onnx_import {

void Importer::read() {
  std::error_code ec;
  if (!fs::is_regular_file(path_, ec)) fail("no such file");
  auto size = fs::file_size(path_, ec);
  if (ec) fail("cannot read: " + ec.message());
  if (size >= kMaxFileBytes) fail("larger than 2 GiB: export with external weights (torch.onnx.export does so above 2 GiB), dtsim reads only the graph");
  std::ifstream in(path_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) fail("cannot read");
  // A gzip-compressed export (model.onnx.gz: graphs whose weights are stripped compress well).
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b) {
    bytes = read_text_file(path_, kMaxFileBytes);
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b)
      fail("is gzip data that does not decompress (truncated?)");
  }
  if (bytes.empty()) fail("is empty, not an ONNX model");
  if (!model_.ParseFromString(bytes)) fail("not an ONNX model (the protobuf ModelProto does not parse)");
  if (!model_.has_graph() || model_.graph().node_size() == 0) fail("not an ONNX model, or one without nodes (no graph in the ModelProto)");
  for (const auto& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  if (opset_ <= 0) fail("opset_import has no version for the default ONNX domain");
  max_opset_ = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  const int max_opset = max_opset_;
  // Newer opsets changed few of the operators CNNs use; inference runs with the rules this libonnx
  // knows, and a shape it then cannot infer is reported with its reason.
  if (opset_ > max_opset)
    g_.notes.push_back(path_ + ": opset " + std::to_string(opset_) + " is newer than this libonnx knows (" + std::to_string(max_opset) +
                       "); shapes are inferred with opset-" + std::to_string(max_opset) + " rules: if import fails, export with opset_version=" +
                       std::to_string(max_opset));
  const auto& graph = model_.graph();
  for (int i = 0; i < graph.node_size(); ++i) node_index_[&graph.node(i)] = i;
  // Gelu (opset 20) is newer than this libonnx: inference sees an Identity (the same shape), and
  // node() maps it to the activation.
  for (auto& n : *model_.mutable_graph()->mutable_node()) {
    if (!default_domain(n) || n.op_type() != "Gelu" || n.input_size() != 1 || n.output_size() != 1) continue;
    gelu_[&n] = attr_str(n, "approximate", "none") == "tanh" ? "gelu_tanh" : "gelu";
    n.set_op_type("Identity");
    n.clear_attribute();
  }
  // PyTorch 2.x's dynamo exporter writes opset 18 and, asked for 17, converts down with libonnx's
  // version converter, which leaves opset 18's `num_outputs` on Split (gpt2's packed q/k/v); where
  // the conversion fails it keeps opset 18 (ShuffleNet's channel split), which this libonnx (opsets
  // up to 17) reads with opset-17 rules.
  // With a `split` input the input gives the parts; without one an opset-13..17 Split cuts its axis
  // into as many equal parts as it has outputs: the same thing when num_outputs is that count. Either
  // way the attribute goes.
  if (opset_ < 18 || max_opset < 18)
    for (auto& n : *model_.mutable_graph()->mutable_node()) {
      if (!default_domain(n) || n.op_type() != "Split") continue;
      const bool split_input = n.input_size() > 1 && !n.input(1).empty();
      auto* attrs = n.mutable_attribute();
      for (int i = 0; i < attrs->size(); ++i) {
        if (attrs->Get(i).name() != "num_outputs") continue;
        if (!split_input && attrs->Get(i).i() != n.output_size())
          fail_at(n, "num_outputs (an opset-18 attribute) is " + std::to_string(attrs->Get(i).i()) + " but the node has " +
                         std::to_string(n.output_size()) + " outputs: export with opset_version=17 and the TorchScript exporter (dynamo=False)");
        attrs->DeleteSubrange(i, 1);
        break;
      }
    }
  if (max_opset < 18 && opset_ >= 18) reduce_axes_to_attribute();
}

// Opset 18 moved the Reduce operators' axes (but ReduceSum's, moved in 13) from an attribute to an
// input. This libonnx (opsets up to 17) checks and infers them with opset-17 rules, so a constant
// axes input (an initializer or a Constant node: what exporters write) becomes the attribute again.
void Importer::reduce_axes_to_attribute() {
  static const std::set<std::string> reduce = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                                                "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  std::map<std::string, const onnx::TensorProto*> constants;
  auto* graph = model_.mutable_graph();
  for (const auto& t : graph->initializer()) constants[t.name()] = &t;
  for (const auto& n : graph->node())
    if (default_domain(n) && n.op_type() == "Constant" && n.output_size() == 1)
      for (const auto& a : n.attribute())
        if (a.name() == "value" && a.has_t()) constants[n.output(0)] = &a.t();
  for (auto& n : *graph->mutable_node()) {
    if (!default_domain(n) || !reduce.count(n.op_type()) || n.input_size() < 2 || n.input(1).empty()) continue;
    auto c = constants.find(n.input(1));
    std::optional<onnx_fold::Known> axes = c == constants.end() ? std::nullopt : onnx_fold::read_tensor(*c->second);
    if (!axes) fail_at(n, "its axes come from input '" + n.input(1) + "', not a constant: export with opset_version=17");
    // noop_with_empty_axes (opset 18) matters only for empty axes, where opset 17 reduces everything.
    auto* attrs = n.mutable_attribute();
    for (int i = attrs->size() - 1; i >= 0; --i) {
      if (attrs->Get(i).name() != "noop_with_empty_axes") continue;
      if (axes->values.empty() && attrs->Get(i).i() != 0) fail_at(n, "reduces nothing (empty axes, noop_with_empty_axes = 1): export with opset_version=17");
      attrs->DeleteSubrange(i, 1);
    }
    auto* a = n.add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    for (double v : axes->values) a->add_ints(static_cast<int64_t>(v));
    n.mutable_input()->RemoveLast();
  }
}

// Sets the batch dimension of the one real input and drops the shapes the exporter recorded for
// intermediate tensors and outputs: they carry the export's batch, which inference would clash with.
void Importer::prepare_inputs() {
  auto* graph = model_.mutable_graph();
  std::set<std::string> inits;
  for (const auto& t : graph->initializer()) inits.insert(t.name());
  onnx::ValueInfoProto* input = nullptr;
  // The dynamo exporter, given the same tensor as token ids and labels, reads the ids from the labels
  // input and only the shape of the first: then the input the embedding reads is the data input.
  std::string ids;
  for (const auto& v : graph->input())
    if (!inits.count(v.name()) && ids.empty() && embeds(v.name())) ids = v.name();
  for (auto& v : *graph->mutable_input()) {
    if (inits.count(v.name())) continue;
    if (!ids.empty() && v.name() != ids && side_input(v)) continue;
    if (input && side_input(v)) continue;
    if (input) fail("graph inputs '" + input->name() + "' and '" + v.name() + "': dtsim models take exactly one input tensor (the images)");
    input = &v;
  }
  if (!input) fail("the graph has no input tensor (every input is an initializer)");
  const std::string where = "input '" + input->name() + "'";
  if (!input->type().has_tensor_type() || !input->type().tensor_type().has_shape()) fail(where + " has no tensor shape: export with a fixed example input");
  auto* shape = input->mutable_type()->mutable_tensor_type()->mutable_shape();
  const int32_t type = input->type().tensor_type().elem_type();
  using T = onnx::TensorProto;
  // A language model's input: N x T token ids (int64, as torch exports a LongTensor).
  token_input_ = type == T::INT64 || type == T::INT32;
  if (token_input_ && shape->dim_size() != 2)
    fail(where + " holds integers of rank " + std::to_string(shape->dim_size()) + ": dtsim takes integer inputs as N x T token ids");
  if (!token_input_ && !is_float_type(type)) fail(where + " is neither a floating-point tensor nor int64 token ids");
  if (!token_input_ && shape->dim_size() != 4 && shape->dim_size() != 3 && shape->dim_size() != 2)
    fail(where + " has rank " + std::to_string(shape->dim_size()) +
         ": dtsim takes N x C x H x W images, N x T x C sequences, N x F vectors or N x T int64 token ids");
  for (int d = 1; d < shape->dim_size(); ++d) {
    const auto& dim = shape->dim(d);
    if (!dim.has_dim_value())
      fail(where + " dimension " + std::to_string(d) + " is symbolic ('" + dim.dim_param() + "'): dtsim needs fixed per-sample sizes; export without dynamic_axes on it");
    if (dim.dim_value() <= 0 || dim.dim_value() > kMaxDim) fail(where + " dimension " + std::to_string(d) + " is " + std::to_string(dim.dim_value()) + ", must be positive");
  }
  shape->mutable_dim(0)->set_dim_value(opt_.batch);
  input_name_ = input->name();
  graph->clear_value_info();
  for (auto& o : *graph->mutable_output())
    if (o.type().has_tensor_type()) o.mutable_type()->mutable_tensor_type()->clear_shape();
}

// An input after the first that holds integers or booleans: the labels of a loss computed in the graph,
// an attention mask (a training step exported whole: model(x, mask, labels).loss). Its values are not
// known at import time, so what the graph computes from it is static: free, like shape arithmetic; an
// attention mask read from it is taken as no padding (mask_kind). Its batch dimension is set as the
// input's; its other dimensions must be fixed.
bool Importer::side_input(onnx::ValueInfoProto& v) {
  using T = onnx::TensorProto;
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return false;
  const int32_t type = v.type().tensor_type().elem_type();
  if (type != T::INT64 && type != T::INT32 && type != T::BOOL) return false;
  auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
  if (shape->dim_size() < 1) return false;
  for (int d = 1; d < shape->dim_size(); ++d)
    if (!shape->dim(d).has_dim_value() || shape->dim(d).dim_value() <= 0 || shape->dim(d).dim_value() > kMaxDim)
      fail("input '" + v.name() + "' dimension " + std::to_string(d) + " is not a fixed positive size: dtsim needs fixed per-sample sizes; export without dynamic_axes on it");
  shape->mutable_dim(0)->set_dim_value(opt_.batch);
  side_inputs_.insert(v.name());
  return true;
}

// Whether a graph input is read as token ids: by a Gather of a float initializer table, directly or
// through views.
bool Importer::embeds(const std::string& tensor) const {
  static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Cast"};
  std::set<std::string> inits, reach = {tensor};
  for (const auto& t : model_.graph().initializer())
    if (is_float_type(t.data_type())) inits.insert(t.name());
  for (const auto& n : model_.graph().node()) {
    if (n.input_size() < 1 || !default_domain(n)) continue;
    if (n.op_type() == "Gather" && n.input_size() == 2 && reach.count(n.input(1)) && inits.count(n.input(0))) return true;
    if (views.count(n.op_type()) && reach.count(n.input(0)) && n.output_size() == 1) reach.insert(n.output(0));
  }
  return false;
}

// Every node must be one libonnx knows and fit its schema (inputs, outputs, attributes) before
// shape inference runs: libonnx 1.12 may crash on malformed nodes and on what follows a node it
// has no schema for. A node without a schema (a custom domain, an operator newer than this
// libonnx) gets no output shape, so dtsim could not cost it even by roofline.
void Importer::check_nodes() {
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model_.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : model_.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = static_cast<int>(o.version());
  ctx.set_opset_imports(opsets);
  onnx::checker::LexicalScopeContext scope;
  const auto& graph = model_.graph();
  std::set<std::string> defined;
  for (const auto& v : graph.input()) defined.insert(v.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& n : graph.node()) {
    // Control flow (If, Loop, Scan: operators with subgraphs) is refused before the checker sees
    // it: the checker reads a subgraph's uses of outer names as a graph out of topological order,
    // in a multi-line message, and dtsim prices one straight-line graph.
    bool subgraph = false;
    for (const auto& a : n.attribute()) subgraph |= a.has_g() || a.graphs_size() > 0;
    if (subgraph || ((n.domain().empty() || n.domain() == "ai.onnx") && (n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan")))
      fail_at(n, "control-flow operator " + printable(n.op_type()) +
                     " is not supported: dtsim prices a straight-line graph; export a traced model (no torch.jit.script), which records the branch taken");
    for (const auto& in : n.input())
      if (!in.empty() && !defined.count(in))
        fail_at(n, "reads '" + in + "', which no earlier node produces and which is no input or initializer (nodes must be in topological order)");
    for (const auto& out : n.output())
      if (!out.empty() && !defined.insert(out).second) fail_at(n, "writes '" + out + "', which an earlier node, input or initializer already defines");
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto version = opsets.find(domain);
    if (version == opsets.end()) fail_at(n, "domain '" + n.domain() + "' has no opset_import entry");
    if (!onnx::OpSchemaRegistry::Schema(n.op_type(), version->second, domain)) {
      std::string what = domain.empty() ? "operator '" + n.op_type() + "' is not an ONNX operator of opset " + std::to_string(version->second)
                                        : "operator '" + n.op_type() + "' of domain '" + n.domain() + "' is not an ONNX operator";
      fail_at(n, what + " that this libonnx knows (opsets up to " + std::to_string(max_opset_) +
                     "), so ONNX shape inference cannot give its output shape and dtsim cannot cost it, even with --allow-unknown-ops");
    }
    try {
      onnx::checker::check_node(n, ctx, scope);
    } catch (const std::exception& e) {
      fail_at(n, "malformed node: " + first_line(e.what()));
    }
    // libonnx 1.12's shape inference divides by these without checking them (a stride of 0 is a
    // SIGFPE in convPoolShapeInference, found by fuzz_onnx); ONNX requires them positive.
    for (const auto& a : n.attribute()) {
      if (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape") {
        for (int64_t v : a.ints())
          if (v < 1) fail_at(n, a.name() + " must be positive, got " + std::to_string(v));
      } else if (a.name() == "blocksize" && a.i() < 1) {
        fail_at(n, "blocksize must be positive, got " + std::to_string(a.i()));
      }
    }
  }
}

// ONNX shape inference and constant evaluation, in turn. ONNX infers the shapes it can; dtsim then
// evaluates every tensor whose value follows from the initializers, Constant nodes and the shapes
// known so far (onnx_fold.hpp) and gives those values to the next inference as initializers, until
// no new value feeds a node whose output shape ONNX could not infer. A graph whose shapes ONNX infers
// on its own takes one pass; each further pass goes one step further along a chain of computed
// shapes (a channel shuffle whose view reads the shape of the previous shuffle's output).
// libonnx's own data propagation (Shape -> Gather -> Concat into a Reshape) is off: dtsim evaluates
// those values itself, with bounds checks, where libonnx 1.12's Gather reads past the end of a shape
// (a segfault fuzz_onnx found on a Conv whose kernel_shape gives it the wrong rank).
void Importer::infer() {
  check_nodes();
  index_nodes();
  for (const auto& t : model_.graph().initializer())
    if (auto k = onnx_fold::read_tensor(t)) known_[t.name()] = *k;
  const onnx::ModelProto skeleton = without_weight_values();
  do {
    prepared_ = with_known_values(skeleton);  // kept to explain a missing shape later
    onnx::ModelProto inferred = prepared_;
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*enable_data_propagation=*/false);
      onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      fail("ONNX shape inference failed: " + first_line(e.what()));
    }
    read_shapes(inferred.graph());
  } while (evaluate_constants());
}

// Which node writes each tensor, and which tensors are computed per sample: the input and what
// nodes compute from it, except through Shape and Size (node() below makes the same split into
// layers and free shape arithmetic).
void Importer::index_nodes() {
  dynamic_ = {input_name_};
  for (const auto& n : model_.graph().node()) {
    bool reads = false;
    for (const auto& in : n.input()) reads |= dynamic_.count(in) > 0;
    for (const auto& in : n.input()) {
      auto& u = users_[in];
      if (u.empty() || u.back() != &n) u.push_back(&n);
    }
    for (const auto& out : n.output()) {
      if (out.empty()) continue;
      producer_[out] = &n;
      if (reads && !shape_op(n)) dynamic_.insert(out);
    }
  }
}

// The model for inference, without the values of initializers too large to be read as values
// (weights: inference needs only their dimensions, and the model is copied once per pass).
onnx::ModelProto Importer::without_weight_values() const {
  onnx::ModelProto m = model_;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    double n = 1;
    for (int64_t d : t.dims()) n *= static_cast<double>(d);
    if (n <= onnx_fold::kMaxElements) continue;
    t.clear_raw_data(), t.clear_float_data(), t.clear_double_data(), t.clear_int32_data(), t.clear_int64_data();
  }
  return m;
}

// `skeleton` with every node whose outputs' values are all known replaced by initializers holding them.
onnx::ModelProto Importer::with_known_values(const onnx::ModelProto& skeleton) const {
  onnx::ModelProto m = skeleton;
  auto* graph = m.mutable_graph();
  graph->clear_node();
  for (const auto& n : skeleton.graph().node()) {
    bool folded = n.output_size() > 0;
    for (const auto& o : n.output()) folded &= o.empty() || known_.count(o) > 0;
    if (!folded) {
      *graph->add_node() = n;
      continue;
    }
    for (const auto& o : n.output())
      if (!o.empty()) *graph->add_initializer() = onnx_fold::write_tensor(known_.at(o), o);
  }
  return m;
}

// One pass in topological order over the nodes not computed per sample: the values that follow
// from those known. Returns whether a new value feeds a node whose output shape ONNX did not infer
// (another inference pass can use it). Why a node has no value is kept for the error messages.
bool Importer::evaluate_constants() {
  onnx_fold::Lookup lookup{[this](const std::string& t) -> const onnx_fold::Known* {
                             auto it = known_.find(t);
                             return it == known_.end() ? nullptr : &it->second;
                           },
                           [this](const std::string& t) { return complete_shape(t); }, opset_};
  std::set<std::string> fresh;
  for (const auto& n : model_.graph().node()) {
    if (!default_domain(n) || n.output_size() != 1 || known_.count(n.output(0)) || dynamic_.count(n.output(0))) continue;
    onnx_fold::Result r = onnx_fold::evaluate(n, lookup);
    if (r.outputs.empty()) {
      if (!r.why_not.empty()) unevaluated_[&n] = r.why_not;
      continue;
    }
    known_[n.output(0)] = std::move(r.outputs[0]);
    fresh.insert(n.output(0));
  }
  for (const auto& n : model_.graph().node()) {
    bool reads = false;
    for (const auto& in : n.input()) reads |= fresh.count(in) > 0;
    for (const auto& o : n.output())
      if (reads && !o.empty() && !known_.count(o) && !complete_shape(o)) return true;
  }
  return false;
}

// The dimensions ONNX inferred for a tensor, if all are known.
const std::vector<int64_t>* Importer::complete_shape(const std::string& tensor) const {
  auto it = shapes_.find(tensor);
  if (it == shapes_.end() || !it->second.has_shape) return nullptr;
  for (int64_t d : it->second.dims)
    if (d < 0) return nullptr;
  return &it->second.dims;
}

// A layer whose output shape depends on a value dtsim could not evaluate (a shape input computed
// from activations, or by an operator onnx_fold does not evaluate) is refused, naming the node and
// the cause, before the mapping stops at the first tensor without a shape with less to say.
void Importer::check_shape_inputs() {
  for (const auto& n : model_.graph().node()) {
    auto slots = kShapeInputs.find(n.op_type());
    if (slots == kShapeInputs.end() || !default_domain(n)) continue;
    bool layer = false, complete = true;
    for (const auto& in : n.input()) layer |= dynamic_.count(in) > 0;
    for (const auto& o : n.output()) complete &= o.empty() || complete_shape(o) != nullptr;
    if (!layer || complete) continue;
    for (int i : slots->second) {
      if (i >= n.input_size() || n.input(i).empty() || known_.count(n.input(i))) continue;
      if (auto why = unknown_because(n.input(i)))
        fail_at(n, "its " + input_name(n, i) + " input '" + n.input(i) + "' is not known at import time: " + *why +
                       "; dtsim prices fixed shapes: compute them from x.size() and constants");
    }
  }
}

// The schema's name of input i ("shape", "sizes", "starts").
std::string Importer::input_name(const onnx::NodeProto& n, int i) const {
  const auto* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min<int64_t>(opset_, max_opset_)), "");
  if (schema && i < static_cast<int>(schema->inputs().size())) return schema->inputs()[i].GetName();
  return "#" + std::to_string(i);
}

// Why a tensor's value is not known, following the nodes that compute it back to the cause; none
// when the cause is a tensor shape ONNX did not infer (the mapping stops at the node lacking it).
std::optional<std::string> Importer::unknown_because(std::string t) const {
  for (;;) {
    auto p = producer_.find(t);
    if (p == producer_.end())
      return dynamic_.count(t) ? "it is computed from the values of the input '" + t + "'"
                               : "initializer '" + t + "' holds no value dtsim reads (stored outside the file, more than " +
                                     std::to_string(onnx_fold::kMaxElements) + " elements, or not numbers)";
    const onnx::NodeProto& n = *p->second;
    const std::string where = "node '" + node_name(n) + "' (" + n.op_type() + ")";
    if (dynamic_.count(t)) {  // back through shape arithmetic to the node that reads activations
      auto in = std::find_if(n.input().begin(), n.input().end(), [&](const std::string& x) { return dynamic_.count(x) > 0; });
      if (!default_domain(n) || !onnx_fold::evaluates(n.op_type()) || in == n.input().end()) return "it is computed from activations by " + where;
      t = *in;
      continue;
    }
    if (shape_op(n)) return std::nullopt;
    auto why = unevaluated_.find(&n);
    if (why != unevaluated_.end()) return where + ": " + why->second;
    if (!default_domain(n)) return where + " is not of the ONNX domain, whose operators dtsim evaluates";
    auto in = std::find_if(n.input().begin(), n.input().end(), [&](const std::string& x) { return !x.empty() && !known_.count(x); });
    if (in == n.input().end()) return where + " was not evaluated";
    t = *in;
  }
}

// Why ONNX inferred no shape for some tensor: inference again, stopping at the first node that fails.
std::string Importer::inference_reason() {
  if (!reason_) {
    reason_ = "";
    try {
      onnx::ModelProto m = prepared_;
      onnx::ShapeInferenceOptions options(false, /*error_mode=*/1, false);
      onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      reason_ = first_line(e.what());
    }
  }
  return *reason_;
}

void Importer::read_shapes(const onnx::GraphProto& graph) {
  shapes_.clear();
  auto take = [&](const onnx::ValueInfoProto& v) {
    TensorInfo info;
    if (v.type().has_tensor_type()) {
      info.elem_type = v.type().tensor_type().elem_type();
      if (v.type().tensor_type().has_shape()) {
        info.has_shape = true;
        for (const auto& d : v.type().tensor_type().shape().dim()) info.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      }
    }
    shapes_[v.name()] = info;
  };
  for (const auto& v : graph.input()) take(v);
  for (const auto& v : graph.value_info()) take(v);
  for (const auto& v : graph.output()) take(v);
  for (const auto& t : graph.initializer()) shapes_[t.name()] = TensorInfo{true, {t.dims().begin(), t.dims().end()}, t.data_type()};
}

void Importer::collect() {
  const auto& graph = model_.graph();
  for (const auto& t : graph.initializer()) {
    initializers_[t.name()] = &t;
    values_[t.name()] = Value{false, -1};
  }
  for (const auto& n : graph.node())
    for (const auto& in : n.input()) consumers_[in]++;
  for (const auto& o : graph.output()) consumers_[o.name()]++;
  values_[input_name_] = Value{true, -1};
  for (const auto& side : side_inputs_) values_[side] = Value{false, -1};
  const TensorInfo& in = shapes_[input_name_];
  g_.token_input = token_input_;
  if (token_input_) g_.input = Shape{1, in.dims[1], 1, false, true};
  else if (in.dims.size() == 4) g_.input = Shape{in.dims[1], in.dims[2], in.dims[3], false};
  else if (in.dims.size() == 3) g_.input = Shape{in.dims[2], in.dims[1], 1, false, true};
  else g_.input = Shape{in.dims[1], 1, 1, true};
}

const Value& Importer::value(const onnx::NodeProto& n, const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end())
    fail_at(n, "reads '" + name + "', which no earlier node produces and which is no input or initializer (nodes must be in topological order)");
  return it->second;
}

// The dimensions ONNX inferred, complete; fails naming the tensor and ONNX's reason otherwise.
const std::vector<int64_t>& Importer::dims(const onnx::NodeProto& n, const std::string& tensor) {
  auto it = shapes_.find(tensor);
  bool complete = it != shapes_.end() && it->second.has_shape;
  if (complete)
    for (int64_t d : it->second.dims) complete &= d >= 0;
  if (!complete) {
    std::string why = inference_reason();
    fail_at(n, "ONNX shape inference gave no complete shape for tensor '" + tensor + "'" +
                   (it != shapes_.end() && it->second.has_shape ? " (got " + dims_str(it->second.dims) + ")" : "") + (why.empty() ? "" : ": " + why));
  }
  for (int64_t d : it->second.dims)
    if (d == 0) fail_at(n, "tensor '" + tensor + "' has a zero dimension " + dims_str(it->second.dims));
  return it->second.dims;
}

// Where the batch is in a tensor of dimensions d: the axis that grows with it, and how many of that
// axis's entries each sample has (T for the [T*N, C] rows of a sequence, heads for attention's
// [N*heads, T, d]); none if no axis, or several, grow with it. The first axis when it holds the batch;
// otherwise (nn.MultiheadAttention's T x N x C, HuggingFace's Conv1D on N*T rows) the shapes are
// inferred again, once, for one sample more, and compared.
std::optional<std::pair<size_t, int64_t>> Importer::batch_axis(const std::string& t, const std::vector<int64_t>& d) {
  if (!d.empty() && d[0] == opt_.batch) return std::make_pair(size_t{0}, int64_t{1});
  if (!probe_) {
    ModelLoadOptions o = opt_;
    o.batch = opt_.batch + 1;
    Importer p(path_, o);
    try {
      p.read(), p.prepare_inputs(), p.infer();
    } catch (const std::exception&) {  // no second shape for any tensor: the batch stays unplaced
    }
    probe_ = std::move(p.shapes_);
  }
  auto it = probe_->find(t);
  if (it == probe_->end() || it->second.dims.size() != d.size()) return std::nullopt;
  std::optional<std::pair<size_t, int64_t>> r;
  for (size_t i = 0; i < d.size(); ++i) {
    int64_t grow = it->second.dims[i] - d[i];
    if (grow == 0) continue;
    if (r || grow < 0 || d[i] != grow * opt_.batch) return std::nullopt;
    r = std::make_pair(i, grow);
  }
  return r;
}

// One sample's shape of an activation tensor [N, ...]: N x C x H x W -> C x H x W, N x F -> F,
// N x T x C -> a sequence of T tokens of C features (the N x T token ids: T tokens of one id).
// Other ranks keep their element count: [N, A, B, H, W] -> A*B x H x W. The batch elsewhere
// (batch_axis) leaves the same per-sample dimensions: T x N x C and [N*T, C] are T tokens of C.
Shape Importer::per_sample(const onnx::NodeProto& n, const std::string& tensor) {
  const auto& d = dims(n, tensor);
  if (d.empty()) fail_at(n, "tensor '" + tensor + "' is a scalar: dtsim needs the batch as its first dimension");
  auto b = batch_axis(tensor, d);
  if (!b)
    fail_at(n, "tensor '" + tensor + "' " + dims_str(d) + " has " + std::to_string(d[0]) + " in the batch dimension, expected the batch size " +
                   std::to_string(opt_.batch) + ": the export fixed the batch (a reshape to a constant shape?); re-export with x.flatten(1) or x.view(x.size(0), -1)");
  int64_t total = 1;
  for (int64_t x : sample_dims(d, *b)) {
    if (x > kMaxDim) fail_at(n, "tensor '" + tensor + "' dimension " + std::to_string(x) + " is too large");
    total *= x;
    if (total > kMaxElements) fail_at(n, "tensor '" + tensor + "' has more than 2^40 elements per sample");
  }
  if (token_input_ && tensor == input_name_) return Shape{1, d[1], 1, false, true};
  return to_shape(sample_dims(d, *b));
}

// The per-sample shape of a tensor whose dimensions ONNX inferred and whose batch axis is known.
std::optional<Shape> Importer::sample(const std::string& t) {
  const auto* d = complete_shape(t);
  auto b = d && !d->empty() ? batch_axis(t, *d) : std::nullopt;
  return b ? std::optional<Shape>(to_shape(sample_dims(*d, *b))) : std::nullopt;
}

// A scalar input that must be a constant (clip bounds, dropout ratio), if given.
std::optional<double> Importer::const_scalar(const onnx::NodeProto& n, int i) {
  if (n.input_size() <= i || n.input(i).empty()) return std::nullopt;
  auto it = known_.find(n.input(i));
  if (it == known_.end() || it->second.values.size() != 1) return std::nullopt;
  return it->second.values[0];
}

}  // namespace dtsim::onnx_import
