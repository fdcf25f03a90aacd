// ONNX import (workload/onnx/onnx_import.hpp). The mapping from ONNX operators to dtsim layers and what is
// costed how is documented in docs/onnx-import.md; keep the two in step.
#include "workload/onnx/onnx_import.hpp"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"
#include "workload/onnx/onnx_fold.hpp"

namespace dtsim {

namespace {

namespace fs = std::filesystem;

// Per-sample sizes beyond these are not a model that trains on one GPU; they also keep products of
// dimensions far from int64 overflow.
constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 40;
// Files bigger than this are weights, not graphs: protobuf cannot parse over 2 GiB anyway.
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{2} << 30;

const std::set<std::string> kUnaryActivations = {
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign",
    "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal", "Cast", "Clip", "ThresholdedRelu"};
const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"};
// Operators that only rearrange or select: views in PyTorch (reshape, slicing, chunk), no kernel.
const std::set<std::string> kViews = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Split", "Slice", "Gather", "Identity"};
// Operators that compute shapes and constants, not activations: free, whatever they read.
const std::set<std::string> kShapeOps = {"Shape", "Size"};
// Operators that read inputs for their values (a target shape, sizes, scales, axes, pads), by index:
// ONNX takes the output shape from them, so the importer must know them (onnx_fold.hpp), and they are
// never parameters. The first input of each is its data. (Resize: sizes and scales; opset 10's
// scales are input 1, later opsets' roi.)
const std::map<std::string, std::vector<int>> kShapeInputs = {
    {"Reshape", {1}}, {"Expand", {1}},    {"Tile", {1}},  {"Resize", {3, 2, 1}},   {"Upsample", {1}},
    {"Slice", {1, 2, 3, 4}}, {"Pad", {1}}, {"Split", {1}}, {"Squeeze", {1}}, {"Unsqueeze", {1}},
    {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}}};

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

struct TensorInfo {
  bool has_shape = false;
  std::vector<int64_t> dims;  // -1 where ONNX knows no value
  int32_t elem_type = 0;
};

// A tensor of the ONNX graph as the importer sees it: computed per sample by a dtsim layer (or the
// model input), or static (initializers, constants and what is computed from them and from shapes).
struct Value {
  bool activation = false;
  int layer = -1;  // activation: the producing layer, -1 for the model input
};

// A pattern of several nodes that becomes one layer (recognise()): attention, or GELU written out.
struct Fused {
  Op op = Op::Activation;
  std::string activation;           // Op::Activation: gelu, gelu_tanh
  std::vector<std::string> inputs;  // the activation tensors the layer reads
  std::string output;               // the tensor it writes
  const onnx::NodeProto* anchor = nullptr;  // names the layer (attention: the Softmax)
  int64_t heads = 1;
  bool causal = false;
  double dropout = 0;
  // attention on sequence-first tensors (T x N x C, nn.MultiheadAttention's layout): PyTorch copies q,
  // k, v and the output between it and the heads' layout (Layer::mha_layout)
  bool mha_layout = false;
};

class Importer {
 public:
  Importer(const std::string& path, const ModelLoadOptions& opt) : path_(path), opt_(opt) {}

  Graph run() {
    read();
    prepare_inputs();
    infer();
    collect();
    g_.name = fs::path(path_).stem().string();
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

 private:
  [[noreturn]] void fail(const std::string& rule) const { throw InputError(path_, rule); }
  [[noreturn]] void fail_at(const onnx::NodeProto& n, const std::string& rule) const { throw InputError(node_where(n), rule); }
  std::string node_where(const onnx::NodeProto& n) const { return path_ + ": node '" + node_name(n) + "' (" + n.op_type() + ")"; }
  std::string node_name(const onnx::NodeProto& n) const {
    return n.name().empty() ? n.op_type() + "_" + std::to_string(node_index_.at(&n)) : n.name();
  }

  // ---- reading and shape inference ---------------------------------------------------------------

  void read() {
    std::error_code ec;
    if (!fs::is_regular_file(path_, ec)) fail("no such file");
    auto size = fs::file_size(path_, ec);
    if (ec) fail("cannot read: " + ec.message());
    if (size >= kMaxFileBytes) fail("larger than 2 GiB: export with external weights (torch.onnx.export does so above 2 GiB), dtsim reads only the graph");
    std::ifstream in(path_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) fail("cannot read");
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
  void reduce_axes_to_attribute() {
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
  void prepare_inputs() {
    auto* graph = model_.mutable_graph();
    std::set<std::string> inits;
    for (const auto& t : graph->initializer()) inits.insert(t.name());
    onnx::ValueInfoProto* input = nullptr;
    for (auto& v : *graph->mutable_input()) {
      if (inits.count(v.name())) continue;
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

  // Every node must be one libonnx knows and fit its schema (inputs, outputs, attributes) before
  // shape inference runs: libonnx 1.12 may crash on malformed nodes and on what follows a node it
  // has no schema for. A node without a schema (a custom domain, an operator newer than this
  // libonnx) gets no output shape, so dtsim could not cost it even by roofline.
  void check_nodes() {
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
  void infer() {
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

  static bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }
  static bool shape_op(const onnx::NodeProto& n) { return default_domain(n) && kShapeOps.count(n.op_type()); }

  // Which node writes each tensor, and which tensors are computed per sample: the input and what
  // nodes compute from it, except through Shape and Size (node() below makes the same split into
  // layers and free shape arithmetic).
  void index_nodes() {
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
  onnx::ModelProto without_weight_values() const {
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
  onnx::ModelProto with_known_values(const onnx::ModelProto& skeleton) const {
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
  bool evaluate_constants() {
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
  const std::vector<int64_t>* complete_shape(const std::string& tensor) const {
    auto it = shapes_.find(tensor);
    if (it == shapes_.end() || !it->second.has_shape) return nullptr;
    for (int64_t d : it->second.dims)
      if (d < 0) return nullptr;
    return &it->second.dims;
  }

  // A layer whose output shape depends on a value dtsim could not evaluate (a shape input computed
  // from activations, or by an operator onnx_fold does not evaluate) is refused, naming the node and
  // the cause, before the mapping stops at the first tensor without a shape with less to say.
  void check_shape_inputs() {
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
  std::string input_name(const onnx::NodeProto& n, int i) const {
    const auto* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min<int64_t>(opset_, max_opset_)), "");
    if (schema && i < static_cast<int>(schema->inputs().size())) return schema->inputs()[i].GetName();
    return "#" + std::to_string(i);
  }

  // Why a tensor's value is not known, following the nodes that compute it back to the cause; none
  // when the cause is a tensor shape ONNX did not infer (the mapping stops at the node lacking it).
  std::optional<std::string> unknown_because(std::string t) const {
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
  std::string inference_reason() {
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

  void read_shapes(const onnx::GraphProto& graph) {
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

  void collect() {
    const auto& graph = model_.graph();
    for (const auto& t : graph.initializer()) {
      initializers_[t.name()] = &t;
      values_[t.name()] = Value{false, -1};
    }
    for (const auto& n : graph.node())
      for (const auto& in : n.input()) consumers_[in]++;
    for (const auto& o : graph.output()) consumers_[o.name()]++;
    values_[input_name_] = Value{true, -1};
    const TensorInfo& in = shapes_[input_name_];
    g_.token_input = token_input_;
    if (token_input_) g_.input = Shape{1, in.dims[1], 1, false, true};
    else if (in.dims.size() == 4) g_.input = Shape{in.dims[1], in.dims[2], in.dims[3], false};
    else if (in.dims.size() == 3) g_.input = Shape{in.dims[2], in.dims[1], 1, false, true};
    else g_.input = Shape{in.dims[1], 1, 1, true};
  }

  // ---- tensors -------------------------------------------------------------------------------------

  const Value& value(const onnx::NodeProto& n, const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end())
      fail_at(n, "reads '" + name + "', which no earlier node produces and which is no input or initializer (nodes must be in topological order)");
    return it->second;
  }

  // The dimensions ONNX inferred, complete; fails naming the tensor and ONNX's reason otherwise.
  const std::vector<int64_t>& dims(const onnx::NodeProto& n, const std::string& tensor) {
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
  std::optional<std::pair<size_t, int64_t>> batch_axis(const std::string& t, const std::vector<int64_t>& d) {
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
  Shape per_sample(const onnx::NodeProto& n, const std::string& tensor) {
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
  std::optional<Shape> sample(const std::string& t) {
    const auto* d = complete_shape(t);
    auto b = d && !d->empty() ? batch_axis(t, *d) : std::nullopt;
    return b ? std::optional<Shape>(to_shape(sample_dims(*d, *b))) : std::nullopt;
  }
  static std::vector<int64_t> sample_dims(std::vector<int64_t> d, std::pair<size_t, int64_t> batch) {
    d.erase(d.begin() + static_cast<std::ptrdiff_t>(batch.first));
    if (batch.second > 1) d.insert(d.begin() + static_cast<std::ptrdiff_t>(batch.first), batch.second);
    return d;
  }
  static Shape to_shape(const std::vector<int64_t>& p) {
    int64_t total = 1;
    for (int64_t x : p) total *= x;
    switch (p.size()) {
      case 0: return Shape{1, 1, 1, true};
      case 1: return Shape{p[0], 1, 1, true};
      case 2: return Shape{p[1], p[0], 1, false, true};
      default: return Shape{total / (p[p.size() - 2] * p.back()), p[p.size() - 2], p.back(), false};
    }
  }

  size_t rank(const onnx::NodeProto& n, const std::string& tensor) { return dims(n, tensor).size(); }

  // ---- attributes ----------------------------------------------------------------------------------

  static const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  static int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
    const auto* a = attr(n, name);
    return a ? a->i() : def;
  }
  static std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name) {
    const auto* a = attr(n, name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  static std::string attr_str(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
    const auto* a = attr(n, name);
    return a ? a->s() : def;
  }
  static std::optional<double> attr_float(const onnx::NodeProto& n, const std::string& name) {
    const auto* a = attr(n, name);
    return a ? std::optional<double>(a->f()) : std::nullopt;
  }
  // A scalar input that must be a constant (clip bounds, dropout ratio), if given.
  std::optional<double> const_scalar(const onnx::NodeProto& n, int i) {
    if (n.input_size() <= i || n.input(i).empty()) return std::nullopt;
    auto it = known_.find(n.input(i));
    if (it == known_.end() || it->second.values.size() != 1) return std::nullopt;
    return it->second.values[0];
  }

  // ---- building layers -----------------------------------------------------------------------------

  std::string unique_name(const std::string& base) {
    std::string name = base;
    for (int k = 2; used_names_.count(name) || name == "input"; ++k) name = base + "_" + std::to_string(k);
    used_names_.insert(name);
    return name;
  }

  // Appends a layer reading `inputs` (activation tensors) and producing `output`; `expect` is the
  // per-sample output shape ONNX inferred, checked against dtsim's own inference at the end.
  int add(const onnx::NodeProto& n, Layer l, const std::vector<std::string>& inputs, const std::string& output, const Shape& expect,
          const std::string& suffix = "") {
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

  void alias(const std::string& output, const std::string& input) { values_[output] = values_[input]; }

  // The initializer a tensor names: itself, or the one an Identity chain leads to. torch.onnx.export
  // deduplicates initializers (tied parameters; in eval mode any two equal ones, such as fresh zero
  // biases) into one, the other names becoming Identity nodes of it.
  const std::string& canonical(const std::string& name) const {
    auto it = initializer_alias_.find(name);
    return it == initializer_alias_.end() ? name : it->second;
  }

  // The float initializers among a node's static inputs that no earlier layer counted: PyTorch's
  // parameters and buffers both become initializers; outside BatchNormalization (whose running
  // statistics are skipped) dtsim takes them as parameters.
  // Inputs read for their values (kShapeInputs' operators: everything after the data) are not.
  int64_t trainable_elements(const onnx::NodeProto& n) {
    int64_t total = 0;
    int inputs = kShapeInputs.count(n.op_type()) ? std::min(n.input_size(), 1) : n.input_size();
    for (int i = 0; i < inputs; ++i) {
      const std::string& in = canonical(n.input(i));
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
  void unsupported(const onnx::NodeProto& n, const std::vector<std::string>& acts, const std::string& why) {
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
  void eltwise(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool roofline_only = false) {
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
  void view(const onnx::NodeProto& n, const std::string& in, const std::string& out) {
    Shape x = per_sample(n, in), y = per_sample(n, out);
    const Value& v = value(n, in);
    Shape produced = v.layer < 0 ? g_.input : expected_[v.layer];
    if (y == produced) return alias(out, in);
    Layer l;
    if (y.vector && !x.vector && y.c == x.elements()) {
      l.op = Op::Flatten;
    } else {
      l.op = Op::View;
      l.given_out = y;
    }
    add(n, l, {in}, out, y);
  }

  // Symmetric padding that gives ONNX's output size (dtsim's layers pad both sides alike; PyTorch
  // exports always do). `out_of(p)` is dtsim's output size for padding p.
  template <class F>
  int64_t symmetric_pad(const onnx::NodeProto& n, int64_t begin, int64_t end, int64_t expect, F out_of, const char* axis) {
    if (begin == end) return begin;
    asymmetric_pads_.push_back(node_name(n));
    for (int64_t p : {begin, end, (begin + end) / 2, (begin + end + 1) / 2})
      if (out_of(p) == expect) return p;
    fail_at(n, std::string("asymmetric ") + axis + " padding " + std::to_string(begin) + "+" + std::to_string(end) +
                   " cannot be expressed as PyTorch's symmetric padding with the same output size");
  }

  // Padding from auto_pad or pads, as [begin_h, begin_w, end_h, end_w].
  std::vector<int64_t> pads(const onnx::NodeProto& n, const std::vector<int64_t>& in_hw, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                            const std::vector<int64_t>& d) {
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

  std::vector<int64_t> pair_attr(const onnx::NodeProto& n, const std::string& name, int64_t def) {
    auto v = attr_ints(n, name);
    if (v.empty()) return {def, def};
    if (v.size() != 2) fail_at(n, name + " must have 2 values for a 2-D operator, got " + std::to_string(v.size()));
    for (int64_t x : v)
      if (x < 1 || x > kMaxDim) fail_at(n, name + " must be positive, got " + std::to_string(x));
    return v;
  }

  // ---- operators -----------------------------------------------------------------------------------

  void conv(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void gemm(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool matmul) {
    const std::string& a = n.input(0);
    if (matmul && acts.size() == 2)
      return unsupported(n, acts, "MatMul of two activations is supported only inside attention (MatMul(q, k^T), scale, mask, Softmax, MatMul with v: one attention layer), which this one is not part of");
    if (acts.size() != 1 || !value(n, a).activation)
      return unsupported(n, acts, std::string(matmul ? "MatMul" : "Gemm") + " is supported as a linear layer: an activation times a weight initializer");
    if (rank(n, a) != 2 && !(matmul && rank(n, a) == 3))
      return unsupported(n, acts, std::string(matmul ? "MatMul" : "Gemm") + " on a rank-" + std::to_string(rank(n, a)) +
                                      " input (only N x F vectors, and N x T x C sequences for MatMul, are supported)");
    if (!matmul && attr_int(n, "transA", 0)) return unsupported(n, acts, "Gemm with transA=1 is not supported");
    const auto& w = dims(n, n.input(1));
    if (w.size() != 2) fail_at(n, "weight '" + n.input(1) + "' " + dims_str(w) + " must be a matrix");
    bool trans_b = !matmul && attr_int(n, "transB", 0);
    int64_t in_f = trans_b ? w[1] : w[0], out_f = trans_b ? w[0] : w[1];
    Shape x = per_sample(n, a);
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
    int idx = add(n, l, {a}, n.output(0), per_sample(n, n.output(0)));
    if (matmul) bias_free_linear_[n.output(0)] = idx;
  }

  void batchnorm(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void pool(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void global_pool(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool keep_dims) {
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

  void reduce_mean(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void activation(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void binary(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void concat(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void dropout(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void softmax(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void views(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  void transpose(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
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

  // ---- transformers: patterns of several nodes -------------------------------------------------------

  // The nodes reading a tensor for its values (not only its shape).
  std::vector<const onnx::NodeProto*> readers(const std::string& t) const {
    std::vector<const onnx::NodeProto*> r;
    auto it = users_.find(t);
    if (it != users_.end())
      for (const auto* u : it->second)
        if (!shape_op(*u)) r.push_back(u);
    return r;
  }
  const onnx::NodeProto* producer(const std::string& t) const {
    auto it = producer_.find(t);
    return it == producer_.end() || !default_domain(*it->second) ? nullptr : it->second;
  }
  bool per_sample_tensor(const std::string& t) const { return !t.empty() && dynamic_.count(t) > 0; }
  std::vector<std::string> dynamic_inputs(const onnx::NodeProto& n) const {
    std::vector<std::string> r;
    for (const auto& in : n.input())
      if (per_sample_tensor(in) && std::find(r.begin(), r.end(), in) == r.end()) r.push_back(in);
    return r;
  }
  bool is_graph_output(const std::string& t) const {
    for (const auto& o : model_.graph().output())
      if (o.name() == t) return true;
    return false;
  }

  // Patterns that become one layer: attention (anchored at its Softmax) and GELU written out in
  // elementwise operators (anchored at its Erf or Tanh). Their nodes are absorbed; node() adds the
  // layer at the pattern's last node.
  void recognise() {
    for (const auto& n : model_.graph().node()) {
      if (!default_domain(n) || absorbed_.count(&n) || !per_sample_tensor(n.output_size() ? n.output(0) : "")) continue;
      if (n.op_type() == "Softmax") find_attention(n);
      if (n.op_type() == "Erf" || n.op_type() == "Tanh") find_gelu(n);
      if (n.op_type() == "ReduceMean") find_layernorm(n);
    }
  }

  // LayerNorm as torch exports it below opset 17, over the last axis: ReduceMean(x) -> Sub(x, mean) ->
  // Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(x - mean, ...) -> Mul(weight) -> Add(bias), each read
  // only by the next (x - mean by Pow and Div): one layernorm, as LayerNormalization.
  void find_layernorm(const onnx::NodeProto& r) {
    auto next = [&](const onnx::NodeProto* p, const char* op) -> const onnx::NodeProto* {
      auto rd = p ? readers(p->output(0)) : std::vector<const onnx::NodeProto*>{};
      return rd.size() == 1 && rd[0]->op_type() == op && !is_graph_output(p->output(0)) ? rd[0] : nullptr;
    };
    const std::string& x = r.input(0);
    const auto* xd = complete_shape(x);
    auto last_axis = [&](const onnx::NodeProto* p) {
      auto a = attr_ints(*p, "axes");
      return xd && a.size() == 1 && (a[0] == -1 || a[0] == static_cast<int64_t>(xd->size()) - 1) && attr_int(*p, "keepdims", 1);
    };
    const onnx::NodeProto* sub = next(&r, "Sub");
    if (!last_axis(&r) || !sub || sub->input(0) != x || sub->input(1) != r.output(0) || is_graph_output(sub->output(0))) return;
    auto rd = readers(sub->output(0));
    if (rd.size() != 2) return;
    const onnx::NodeProto *pow = rd[rd[0]->op_type() != "Pow"], *div = rd[rd[0]->op_type() == "Pow"];
    const onnx::NodeProto *var = next(pow, "ReduceMean"), *eps = next(var, "Add"), *sqrt = next(eps, "Sqrt"), *mul = next(div, "Mul"), *add = next(mul, "Add");
    if (pow->op_type() != "Pow" || const_scalar(*pow, 1) != 2.0 || !var || !last_axis(var) || !sqrt || dynamic_inputs(*eps).size() != 1 ||
        next(sqrt, "Div") != div || div->input(0) != sub->output(0) || !add)
      return;
    std::vector<std::string> affine;  // the weight and the bias: float initializers of C elements
    for (const auto* p : {mul, add}) {
      auto w = initializers_.find(canonical(p->input(per_sample_tensor(p->input(0)) ? 1 : 0)));
      if (w == initializers_.end() || !is_float_type(w->second->data_type()) || w->second->dims_size() != 1 || w->second->dims(0) != xd->back()) return;
      affine.push_back(w->first);
    }
    counted_.insert(affine.begin(), affine.end());
    const onnx::NodeProto* nodes[] = {&r, sub, pow, var, eps, sqrt, div, mul, add};
    absorbed_.insert(std::begin(nodes), std::end(nodes));
    Fused f;
    f.op = Op::LayerNorm;
    f.inputs = {x};
    f.output = add->output(0);
    f.anchor = &r;
    fused_[add] = f;
    ++layernorms_;
  }

  // GELU as torch exports it below opset 20: x * 0.5 * (1 + Erf(x / sqrt 2)), and the tanh forms
  // (nn.GELU(approximate="tanh"); GPT-2's 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))): the
  // pointwise nodes around one Erf or Tanh computed from one tensor x and constants, one of them
  // (a Mul) read outside. Anything else is left to the operators one by one.
  void find_gelu(const onnx::NodeProto& t) {
    static const std::set<std::string> pointwise = {"Add", "Sub", "Mul", "Div", "Pow", "Erf", "Tanh"};
    auto in_region = [&](const onnx::NodeProto* p) { return p && pointwise.count(p->op_type()) && !absorbed_.count(p); };
    // x: back from the Erf/Tanh through Mul, Div, Pow and Adds of two per-sample tensors (a bias Add ends it).
    std::set<const onnx::NodeProto*> region;
    std::set<std::string> roots;
    std::vector<const onnx::NodeProto*> todo = {&t};
    while (!todo.empty()) {
      const onnx::NodeProto* p = todo.back();
      todo.pop_back();
      if (!region.insert(p).second) continue;
      for (const auto& in : dynamic_inputs(*p)) {
        const onnx::NodeProto* q = producer(in);
        bool inner = in_region(q) && q->op_type() != "Erf" && q->op_type() != "Tanh" && ((q->op_type() != "Add" && q->op_type() != "Sub") || dynamic_inputs(*q).size() == 2);
        if (inner) todo.push_back(q);
        else roots.insert(in);
      }
    }
    if (roots.size() != 1) return;
    const std::string x = *roots.begin();
    // Forward: the pointwise nodes reading only x and the region's outputs (with constants).
    std::set<std::string> outs = {x};
    for (const auto* p : region) outs.insert(p->output(0));
    for (const auto& n : model_.graph().node()) {
      if (region.count(&n) || !in_region(&n) || !default_domain(n)) continue;
      auto ins = dynamic_inputs(n);
      bool only = !ins.empty();
      for (const auto& in : ins) only &= outs.count(in) > 0;
      if (only) region.insert(&n), outs.insert(n.output(0));  // 0.5 * x joins here, x * (1 + erf) here
    }
    const onnx::NodeProto* last = nullptr;
    for (const auto* p : region) {
      bool escapes = is_graph_output(p->output(0));
      for (const auto* r : readers(p->output(0))) escapes |= !region.count(r);
      if (escapes && last) return;
      if (escapes) last = p;
    }
    if (!last || last->op_type() != "Mul") return;
    // The region is what the last Mul computes from x: back from it again (0.5 * x joins here).
    std::set<const onnx::NodeProto*> nodes;
    todo = {last};
    int transcendental = 0;
    while (!todo.empty()) {
      const onnx::NodeProto* p = todo.back();
      todo.pop_back();
      if (!nodes.insert(p).second) continue;
      transcendental += p->op_type() == "Erf" || p->op_type() == "Tanh";
      for (const auto& in : dynamic_inputs(*p)) {
        if (in == x) continue;
        const onnx::NodeProto* q = producer(in);
        if (!in_region(q)) return;
        todo.push_back(q);
      }
    }
    if (transcendental != 1 || nodes.size() < 4 || !nodes.count(&t)) return;
    for (const auto* p : nodes) {
      if (p == last) continue;
      for (const auto* r : readers(p->output(0)))
        if (!nodes.count(r)) return;
    }
    absorbed_.insert(nodes.begin(), nodes.end());
    Fused f;
    f.activation = t.op_type() == "Erf" ? "gelu" : "gelu_tanh";
    f.inputs = {x};
    f.output = last->output(0);
    f.anchor = last;
    fused_[last] = f;
  }

  [[noreturn]] void partial_attention(const onnx::NodeProto& n, const std::string& why) const {
    fail_at(n, "attention pattern only partly recognised: " + why +
                   "; dtsim maps q, k, v projections -> Reshape/Transpose to heads -> MatMul(q, k^T) -> scale -> optional mask (Add or Where) -> Softmax -> "
                   "optional Dropout -> MatMul with v -> Transpose/Reshape back to N x T x C onto one attention layer");
  }

  // Back from a q, k or v operand of attention's matmuls through the views that split heads
  // (Reshape, Transpose, Split, Slice, Gather, Squeeze, Unsqueeze) and a constant scale, to the tensor
  // they start from: a projection's N x T x C output.
  std::string heads_source(std::string t, std::vector<const onnx::NodeProto*>& nodes) const {
    static const std::set<std::string> layout = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Split", "Slice", "Gather", "Identity", "Cast", "Flatten", "Mul", "Div"};
    for (;;) {
      const onnx::NodeProto* p = producer(t);
      if (!p || !layout.count(p->op_type())) return t;
      auto ins = dynamic_inputs(*p);
      bool scale = p->op_type() == "Mul" || p->op_type() == "Div";
      if (ins.size() != 1 || (!scale && p->input(0) != ins[0]) || (p->op_type() == "Div" && p->input(0) != ins[0])) return t;
      nodes.push_back(p);
      t = ins[0];
    }
  }

  // The rows of a mask that attention may read, from its values: causal (each query sees the keys up
  // to its own position), nothing masked, or neither. `keep_true`: true entries keep the score (Where's
  // condition when the scores are its second input); otherwise an additive mask keeps where it is 0.
  enum class Mask { Causal, None, Other, Unknown };
  Mask mask_kind(const std::string& mask, bool where, bool keep_true) const {
    std::set<std::string> seen;
    auto k = known_.find(mask);
    if (k == known_.end() || k->second.dims.size() < 2) {
      // is_causal=True exports Trilu(ConstantOfShape(...)) into Where(...): a triangle whatever its size.
      std::vector<std::string> stack = {mask};
      while (!stack.empty()) {
        std::string s = stack.back();
        stack.pop_back();
        if (!seen.insert(s).second) continue;
        const onnx::NodeProto* p = producer(s);
        if (!p) continue;
        if (p->op_type() == "Trilu") return Mask::Causal;
        for (const auto& in : p->input()) stack.push_back(in);
      }
      return Mask::Unknown;
    }
    const auto& d = k->second.dims;
    int64_t tq = d[d.size() - 2], tk = d.back();
    const auto& v = k->second.values;
    if (static_cast<int64_t>(v.size()) < tq * tk) return Mask::Other;
    bool causal = true, none = true;
    for (size_t off = 0; off < v.size(); off += static_cast<size_t>(tq * tk))
      for (int64_t i = 0; i < tq; ++i)
        for (int64_t j = 0; j < tk; ++j) {
          double x = v[off + static_cast<size_t>(i * tk + j)];
          bool keep = where ? (x != 0) == keep_true : x == 0;
          if (!where && x != 0 && x > -1e4) return Mask::Other;  // not an additive 0 / -inf mask
          causal &= keep == (j <= i + tk - tq);
          none &= keep;
        }
    return none ? Mask::None : causal ? Mask::Causal : Mask::Other;
  }

  // Back from the Softmax to the scores MatMul(q, k^T) through a scale (Mul, Div), a mask (Add, Where)
  // and casts; none when the Softmax is not attention's.
  const onnx::NodeProto* attention_scores(const onnx::NodeProto& s, std::vector<const onnx::NodeProto*>& nodes, Fused& f) {
    std::string t = s.input(0);
    for (;;) {
      const onnx::NodeProto* p = producer(t);
      if (!p) return nullptr;
      const std::string& op = p->op_type();
      auto ins = dynamic_inputs(*p);
      if (op == "MatMul") return ins.size() == 2 ? p : nullptr;
      if (ins.size() != 1 || (op != "Add" && op != "Where" && op != "Mul" && op != "Div" && op != "Cast" && op != "Identity")) return nullptr;
      if (op == "Add" || op == "Where") {
        bool where = op == "Where";
        const std::string& mask = where ? p->input(0) : (p->input(0) == ins[0] ? p->input(1) : p->input(0));
        if (where && p->input(0) == ins[0]) return nullptr;
        Mask m = mask_kind(mask, where, where && p->input(1) == ins[0]);
        if (m == Mask::Other) partial_attention(*p, "its mask '" + mask + "' is neither causal (a lower triangle) nor empty");
        if (m == Mask::Unknown)
          g_.notes.push_back(path_ + ": node '" + node_name(*p) + "': the values of attention mask '" + mask +
                             "' are not stored in the file or too large to read; taken as causal (a lower triangle)");
        f.causal = m != Mask::None;
      }
      nodes.push_back(p);
      t = ins[0];
    }
  }

  // Forward from the Softmax through Dropout and casts to MatMul(probabilities, v).
  const onnx::NodeProto* attention_values(const onnx::NodeProto& s, std::vector<const onnx::NodeProto*>& nodes, Fused& f) {
    std::string t = s.output(0);
    for (;;) {
      auto r = readers(t);
      if (r.size() != 1 || is_graph_output(t))
        partial_attention(s, "its probabilities '" + t + "' are read by " + std::to_string(r.size()) + " nodes" + (is_graph_output(t) ? " and are a graph output" : "") +
                                 ", expected one MatMul with v");
      const onnx::NodeProto* p = r[0];
      const std::string& op = p->op_type();
      if (op == "MatMul" && p->input(0) == t && per_sample_tensor(p->input(1))) return p;
      if (op != "Dropout" && op != "Cast" && op != "Identity") partial_attention(*p, "the attention probabilities go to " + op + ", not to a MatMul with v");
      if (op == "Dropout") {
        auto ratio = const_scalar(*p, 1);
        f.dropout = ratio ? *ratio : 0.5;
      }
      nodes.push_back(p);
      t = p->output(0);
    }
  }

  // Attention as torch.onnx.export writes scaled_dot_product_attention or a module written out
  // (GPT-2, ViT): q, k and v from N x T x C projections (three, or one fused N x T x 3C split), split
  // into heads by Reshape and Transpose, MatMul(q, k^T), a scale, an optional causal mask, Softmax,
  // optional Dropout, MatMul with v, and Transpose and Reshape back to N x T x C. Anchored at the
  // Softmax: a Softmax not fed by a MatMul of two activations is not attention; once it is, a pattern
  // only partly there is an error naming the node where it stops.
  void find_attention(const onnx::NodeProto& s) {
    Fused f;
    f.op = Op::Attention;
    f.anchor = &s;
    std::vector<const onnx::NodeProto*> nodes = {&s};
    const onnx::NodeProto* qk = attention_scores(s, nodes, f);
    if (!qk) return;
    const onnx::NodeProto* pv = attention_values(s, nodes, f);
    nodes.push_back(qk);
    nodes.push_back(pv);
    std::string q = heads_source(qk->input(0), nodes), k = heads_source(qk->input(1), nodes), v = heads_source(pv->input(1), nodes);
    const auto* qd = complete_shape(q);
    const auto* hd = complete_shape(qk->input(0));
    auto qs = sample(q);
    if (!qs || !hd || !qs->seq)
      partial_attention(*qk, "q '" + qk->input(0) + "' does not come from an N x T x C tensor by Reshape, Transpose, Split or Slice (it starts at '" + q + "'" +
                                 (qd ? " " + dims_str(*qd) : " of unknown shape") + ")");
    bool fused_qkv = q == k && k == v;
    if (!fused_qkv && (q == k || k == v || q == v)) partial_attention(*qk, "q, k and v come from " + q + ", " + k + " and " + v + ": one fused projection or three are supported");
    int64_t tokens = qs->h, width = fused_qkv ? qs->c / 3 : qs->c, head_dim = hd->back();
    for (const auto& t : {k, v})
      if (!(sample(t) == qs)) partial_attention(*pv, "k or v '" + t + "' is not an N x T x C tensor like q's " + dims_str(*qd));
    if (head_dim <= 0 || width % head_dim) partial_attention(*qk, "heads of " + std::to_string(head_dim) + " do not divide the width " + std::to_string(width));
    f.heads = width / head_dim;
    auto qb = qd ? batch_axis(q, *qd) : std::nullopt;
    f.mha_layout = qb && qb->first != 0;
    // Back to N x T x C: Transpose and Reshape.
    std::string out = pv->output(0);
    const onnx::NodeProto* last = pv;
    for (;;) {
      if (sample(out) == std::optional<Shape>(Shape{width, tokens, 1, false, true})) break;
      auto r = readers(out);
      static const std::set<std::string> back = {"Transpose", "Reshape", "Flatten", "Identity", "Cast"};
      if (r.size() != 1 || !back.count(r[0]->op_type()) || r[0]->input(0) != out || is_graph_output(out))
        partial_attention(*last, "its output '" + out + "' is not brought back to N x T x C " + dims_str({opt_.batch, tokens, width}) + " by Transpose and Reshape");
      last = r[0];
      nodes.push_back(last);
      out = last->output(0);
    }
    std::set<const onnx::NodeProto*> inside(nodes.begin(), nodes.end());
    for (const auto* p : nodes)
      for (const auto& o : p->output()) {
        if (o.empty() || o == out) continue;
        for (const auto* r : readers(o))
          if (!inside.count(r)) partial_attention(*r, "it reads '" + o + "', a tensor inside the attention between q, k, v and its output");
        if (is_graph_output(o)) partial_attention(*p, "its output '" + o + "' inside the attention is a graph output");
      }
    for (const auto* p : nodes)
      if (absorbed_.count(p)) partial_attention(*p, "the node belongs to two attention patterns");
    absorbed_.insert(nodes.begin(), nodes.end());
    f.inputs = fused_qkv ? std::vector<std::string>{q} : std::vector<std::string>{q, k, v};
    f.output = out;
    fused_[last] = f;
  }

  // ---- transformers: operators ---------------------------------------------------------------------

  // Static tensors that layers read as tables: a Gather of a float matrix initializer by constant
  // indices (learned positions gathered by a Range), and the transpose of a matrix initializer (x @ W.T).
  void static_table(const onnx::NodeProto& n) {
    if (n.output_size() != 1 || n.input_size() < 1) return;
    const std::string& data = canonical(n.input(0));
    auto init = initializers_.find(data);
    if (init == initializers_.end() || !is_float_type(init->second->data_type()) || init->second->dims_size() != 2) return;
    if (n.op_type() == "Gather" && attr_int(n, "axis", 0) == 0) position_table_[n.output(0)] = data;
    auto perm = attr_ints(n, "perm");
    if (n.op_type() == "Transpose" && (perm.empty() || perm == std::vector<int64_t>{1, 0})) transposed_init_[n.output(0)] = data;
  }

  // Gather(table, token ids): an embedding of the model's token input.
  bool embedding(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
    if (!token_input_ || acts.size() != 1 || n.input_size() != 2 || n.input(1) != input_name_ || attr_int(n, "axis", 0) != 0) return false;
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
  bool positions(const onnx::NodeProto& n, const std::string& x) {
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
  bool token_types(const onnx::NodeProto& n, const std::string& x, const std::string& rows, const std::string& table) {
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
  std::string learned_token(std::string t, int64_t c) {
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
  bool select(const onnx::NodeProto& n, int64_t axis) {
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
  bool patches(const onnx::NodeProto& n) {
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

  void layernorm(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
    const std::string& x = n.input(0);
    if (acts.size() != 1 || acts[0] != x) return unsupported(n, acts, "LayerNormalization with a scale or bias computed from activations is not supported");
    int64_t r = static_cast<int64_t>(rank(n, x)), axis = attr_int(n, "axis", -1);
    if (axis < 0) axis += r;
    if (axis != r - 1 || r < 2 || r > 3)
      return unsupported(n, acts, "LayerNormalization is supported over the last dimension of N x T x C or N x F tensors (axis -1)");
    Shape in = per_sample(n, x);
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
    add(n, l, {x}, n.output(0), in);
    for (int o = 1; o < n.output_size(); ++o) values_[n.output(o)] = Value{false, -1};  // mean, inverse standard deviation
  }

  void gelu(const onnx::NodeProto& n, const std::vector<std::string>& acts) {
    if (acts.size() != 1) return unsupported(n, acts, "Gelu of a computed parameter is not supported");
    Layer l;
    l.op = Op::Activation;
    l.activation = gelu_.at(&n);
    add(n, l, acts, n.output(0), per_sample(n, acts[0]));
  }

  // A node inside a recognised pattern: its outputs are read only inside it (or for their shapes); the
  // pattern's last node adds its layer.
  void fused(const onnx::NodeProto& n) {
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

  void node(const onnx::NodeProto& n, int) {
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
    if (kViews.count(op)) return views(n, acts);
    if (op == "Transpose") return transpose(n, acts);
    if (op == "Pad" || op == "Expand" || op == "Tile" || op == "Resize" || op == "Upsample") return eltwise(n, acts);
    unsupported(n, acts, "operator '" + op + "' is not supported");
  }

  // ---- the end: loss, checks, notes --------------------------------------------------------------------

  void outputs() {
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
  void check_shapes() {
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

  void add_notes() {
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

  std::string path_;
  ModelLoadOptions opt_;
  onnx::ModelProto model_, prepared_;
  std::optional<std::string> reason_;
  std::optional<std::unordered_map<std::string, TensorInfo>> probe_;  // shapes for one sample more (batch_axis)
  int64_t opset_ = 0;
  int max_opset_ = 0;
  std::string input_name_;
  std::unordered_map<const onnx::NodeProto*, int> node_index_;
  std::unordered_map<std::string, TensorInfo> shapes_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  std::unordered_map<std::string, std::string> initializer_alias_;  // Identity outputs of initializers -> the initializer
  std::unordered_map<std::string, onnx_fold::Known> known_;                    // tensors whose values are known
  std::unordered_map<const onnx::NodeProto*, std::string> unevaluated_;       // why a node has no value
  std::unordered_map<std::string, const onnx::NodeProto*> producer_;          // tensor -> the node writing it
  std::set<std::string> dynamic_;                                             // tensors computed per sample
  std::unordered_map<std::string, int> consumers_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, std::string> gate_input_;     // sigmoid output -> its input
  std::unordered_map<std::string, int> bias_free_linear_;       // MatMul output -> its layer
  std::set<std::string> counted_;                               // initializers already counted as parameters
  std::set<std::string> used_names_;
  std::map<std::string, std::vector<std::string>> unknown_;     // op type -> nodes costed by roofline
  std::vector<std::string> asymmetric_pads_;
  int convs_ = 0, conv_biases_ = 0, batchnorms_ = 0, inference_bns_ = 0, dropouts_ = 0, layernorms_ = 0;
  // Transformers (recognise() and the operators after it).
  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> users_;  // tensor -> the nodes reading it
  std::unordered_map<const onnx::NodeProto*, std::string> gelu_;                // Gelu nodes (rewritten as Identity) -> variant
  std::set<const onnx::NodeProto*> absorbed_;                                    // nodes inside a recognised pattern
  std::unordered_map<const onnx::NodeProto*, Fused> fused_;                      // the last node of a pattern -> its layer
  std::unordered_map<std::string, std::string> position_table_;  // static Gather of a float table -> the table
  std::unordered_map<std::string, std::string> transposed_init_; // static Transpose of a matrix initializer -> it
  std::unordered_map<std::string, int> embedding_of_;            // embedding table -> its Embedding layer
  std::unordered_map<std::string, std::string> flat_map_;        // [N, C, H*W] view of a map feeding a Transpose -> the map
  std::string inference_bn_;
  bool loss_ = false;
  bool token_input_ = false;  // the input is N x T int64 token ids
  Graph g_;
  std::vector<Shape> expected_;      // per layer: the output shape ONNX inferred
  std::vector<std::string> origin_;  // per layer: the node it comes from, for errors
};

}  // namespace

const std::vector<std::string>& onnx_supported_ops() {
  static const std::vector<std::string> ops = [] {
    std::set<std::string> s = {"Conv", "Gemm", "MatMul", "BatchNormalization", "LayerNormalization", "Gelu", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                               "ReduceMean", "Concat", "Dropout", "Softmax", "LogSoftmax", "Transpose", "Pad", "Expand", "Tile", "Resize", "Upsample"};
    s.insert(kUnaryActivations.begin(), kUnaryActivations.end());
    s.insert(kBinary.begin(), kBinary.end());
    s.insert(kViews.begin(), kViews.end());
    s.insert(kShapeOps.begin(), kShapeOps.end());
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
