#pragma once
// The ONNX importer's parts (workload/onnx/onnx_import.hpp is the interface): one class, Importer, whose
// members are defined in four files:
//   onnx_read.cpp      reading the file, ONNX shape inference with constant evaluation, tensor shapes;
//   onnx_patterns.cpp  patterns of several nodes that become one layer (attention, GELU, LayerNorm);
//   onnx_translate.cpp the operators, node by node, as dtsim layers;
//   onnx_import.cpp    the run in order, building layers, the loss, the checks and notes, the interface.
// Only workload/onnx/ includes this header (and libonnx's).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "workload/graph.hpp"
#include "workload/model_json.hpp"
#include "workload/onnx/onnx_fold.hpp"

namespace dtsim::onnx_import {

// Per-sample sizes beyond these are not a model that trains on one GPU; they also keep products of
// dimensions far from int64 overflow.
inline constexpr int64_t kMaxDim = int64_t{1} << 31;
inline constexpr int64_t kMaxElements = int64_t{1} << 40;
// Files bigger than this are weights, not graphs: protobuf cannot parse over 2 GiB anyway.
inline constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{2} << 30;

inline const std::set<std::string> kUnaryActivations = {
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign",
    "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal", "Cast", "Clip", "ThresholdedRelu"};
inline const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"};
// Operators that only rearrange or select: views in PyTorch (reshape, slicing, chunk), no kernel.
inline const std::set<std::string> kViews = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Split", "Slice", "Gather", "Identity"};
// Integer and boolean operators of position ids and masks computed from the token ids (RoBERTa's
// positions: Equal, Not, CumSum), and selections by a condition: costed by the bytes they move.
inline const std::set<std::string> kIndexOps = {"Equal", "Not", "And", "Or", "Xor", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                                "CumSum", "Where", "Range", "IsNaN", "GatherElements", "Trilu", "ConstantOfShape"};
// Operators that compute shapes and constants, not activations: free, whatever they read.
inline const std::set<std::string> kShapeOps = {"Shape", "Size"};
// Operators that read inputs for their values (a target shape, sizes, scales, axes, pads), by index:
// ONNX takes the output shape from them, so the importer must know them (onnx_fold.hpp), and they are
// never parameters. The first input of each is its data. (Resize: sizes and scales; opset 10's
// scales are input 1, later opsets' roi.)
inline const std::map<std::string, std::vector<int>> kShapeInputs = {
    {"Reshape", {1}}, {"Expand", {1}},    {"Tile", {1}},  {"Resize", {3, 2, 1}},   {"Upsample", {1}},
    {"Slice", {1, 2, 3, 4}}, {"Pad", {1}}, {"Split", {1}}, {"Squeeze", {1}}, {"Unsqueeze", {1}},
    {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}}};

// Helpers of the messages and of the mapping (onnx_import.cpp).
std::string lower_snake(const std::string& op);  // "LeakyRelu" -> "leaky_relu", dtsim's JSON spelling
std::string first_line(const std::string& s);    // a message's first line, at most 300 characters
std::string printable(std::string s);            // control characters (from the file's names) as '?'
std::string dims_str(const std::vector<int64_t>& d);
bool is_float_type(int32_t t);

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

  Graph run();

 private:
  [[noreturn]] void fail(const std::string& rule) const { throw InputError(path_, rule); }
  [[noreturn]] void fail_at(const onnx::NodeProto& n, const std::string& rule) const { throw InputError(node_where(n), rule); }
  std::string node_where(const onnx::NodeProto& n) const { return path_ + ": node '" + node_name(n) + "' (" + n.op_type() + ")"; }
  std::string node_name(const onnx::NodeProto& n) const {
    return n.name().empty() ? n.op_type() + "_" + std::to_string(node_index_.at(&n)) : n.name();
  }

  // ---- reading and shape inference ---------------------------------------------------------------
  void read();
  void reduce_axes_to_attribute();
  void prepare_inputs();
  bool side_input(onnx::ValueInfoProto& v);
  bool embeds(const std::string& tensor) const;
  void check_nodes();
  void infer();
  static bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }
  static bool shape_op(const onnx::NodeProto& n) { return default_domain(n) && kShapeOps.count(n.op_type()); }
  void index_nodes();
  onnx::ModelProto without_weight_values() const;
  onnx::ModelProto with_known_values(const onnx::ModelProto& skeleton) const;
  bool evaluate_constants();
  const std::vector<int64_t>* complete_shape(const std::string& tensor) const;
  void check_shape_inputs();
  std::string input_name(const onnx::NodeProto& n, int i) const;
  std::optional<std::string> unknown_because(std::string t) const;
  std::string inference_reason();
  void read_shapes(const onnx::GraphProto& graph);
  void collect();

  // ---- tensors -------------------------------------------------------------------------------------
  const Value& value(const onnx::NodeProto& n, const std::string& name);
  const std::vector<int64_t>& dims(const onnx::NodeProto& n, const std::string& tensor);
  std::optional<std::pair<size_t, int64_t>> batch_axis(const std::string& t, const std::vector<int64_t>& d);
  Shape per_sample(const onnx::NodeProto& n, const std::string& tensor);
  std::optional<Shape> sample(const std::string& t);
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
  std::optional<double> const_scalar(const onnx::NodeProto& n, int i);

  // ---- building layers -----------------------------------------------------------------------------
  std::string unique_name(const std::string& base);
  int add(const onnx::NodeProto& n, Layer l, const std::vector<std::string>& inputs, const std::string& output, const Shape& expect, const std::string& suffix = "");
  void alias(const std::string& output, const std::string& input) { values_[output] = values_[input]; }
  const std::string& canonical(const std::string& name) const;
  std::string parameter_source(const std::string& t) const;
  int64_t trainable_elements(const onnx::NodeProto& n);
  void unsupported(const onnx::NodeProto& n, const std::vector<std::string>& acts, const std::string& why);
  void eltwise(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool roofline_only = false);
  void view(const onnx::NodeProto& n, const std::string& in, const std::string& out);
  template <class F>
  int64_t symmetric_pad(const onnx::NodeProto& n, int64_t begin, int64_t end, int64_t expect, F out_of, const char* axis);
  std::vector<int64_t> pads(const onnx::NodeProto& n, const std::vector<int64_t>& in_hw, const std::vector<int64_t>& k, const std::vector<int64_t>& s, const std::vector<int64_t>& d);
  std::vector<int64_t> pair_attr(const onnx::NodeProto& n, const std::string& name, int64_t def);

  // ---- operators -----------------------------------------------------------------------------------
  void conv(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  std::string tokens(const onnx::NodeProto& n, const std::string& x);
  void untokens(const onnx::NodeProto& n, const std::string& from, const std::string& output, const Shape& out);
  void gemm(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool matmul);
  void batchnorm(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void pool(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void global_pool(const onnx::NodeProto& n, const std::vector<std::string>& acts, bool keep_dims);
  void reduce_mean(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void activation(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void binary(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void concat(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void dropout(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void softmax(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void views(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void transpose(const onnx::NodeProto& n, const std::vector<std::string>& acts);

  // ---- transformers: patterns of several nodes -------------------------------------------------------
  std::vector<const onnx::NodeProto*> readers(const std::string& t) const;
  const onnx::NodeProto* producer(const std::string& t) const;
  bool per_sample_tensor(const std::string& t) const { return !t.empty() && dynamic_.count(t) > 0; }
  std::vector<std::string> dynamic_inputs(const onnx::NodeProto& n) const;
  bool is_graph_output(const std::string& t) const;
  void recognise();
  void find_layernorm(const onnx::NodeProto& r);
  void find_gelu(const onnx::NodeProto& t);
  [[noreturn]] void partial_attention(const onnx::NodeProto& n, const std::string& why) const;
  std::string heads_source(std::string t, std::vector<const onnx::NodeProto*>& nodes) const;
  // The rows of a mask that attention may read, from its values: causal (each query sees the keys up
  // to its own position), nothing masked, or neither. `keep_true`: true entries keep the score (Where's
  // condition when the scores are its second input); otherwise an additive mask keeps where it is 0.
  enum class Mask { Causal, None, Padding, Other, Unknown };
  Mask mask_kind(const std::string& mask, bool where, bool keep_true) const;
  bool grid_comparison(const onnx::NodeProto& p) const;
  std::string rotary_source(const onnx::NodeProto& add, std::vector<const onnx::NodeProto*>& nodes) const;
  const onnx::NodeProto* attention_scores(const onnx::NodeProto& s, std::vector<const onnx::NodeProto*>& nodes, Fused& f);
  const onnx::NodeProto* attention_values(const onnx::NodeProto& s, std::vector<const onnx::NodeProto*>& nodes, Fused& f);
  void find_attention(const onnx::NodeProto& s);

  // ---- transformers: operators ---------------------------------------------------------------------
  void static_table(const onnx::NodeProto& n);
  bool embedding(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  bool positions(const onnx::NodeProto& n, const std::string& x);
  bool token_types(const onnx::NodeProto& n, const std::string& x, const std::string& rows, const std::string& table);
  std::string learned_token(std::string t, int64_t c);
  bool select(const onnx::NodeProto& n, int64_t axis);
  bool patches(const onnx::NodeProto& n);
  void layernorm(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void gelu(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void fused(const onnx::NodeProto& n);
  void loss(const onnx::NodeProto& n, const std::vector<std::string>& acts);
  void node(const onnx::NodeProto& n, int);

  // ---- the end: loss, checks, notes --------------------------------------------------------------------
  void outputs();
  void check_shapes();
  void add_notes();

  std::string path_;
  ModelLoadOptions opt_;
  onnx::ModelProto model_, prepared_;
  std::optional<std::string> reason_;
  std::optional<std::unordered_map<std::string, TensorInfo>> probe_;  // shapes for one sample more (batch_axis)
  int64_t opset_ = 0;
  int max_opset_ = 0;
  std::string input_name_;
  std::set<std::string> side_inputs_;  // integer inputs after the first: labels, attention masks
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
  bool padding_mask_noted_ = false;
  mutable int rotary_ = 0;  // rotary embeddings absorbed into attention layers (recognise())
  bool token_input_ = false;  // the input is N x T int64 token ids
  Graph g_;
  std::vector<Shape> expected_;      // per layer: the output shape ONNX inferred
  std::vector<std::string> origin_;  // per layer: the node it comes from, for errors
};

}  // namespace dtsim::onnx_import
