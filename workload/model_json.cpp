#include "workload/model_json.hpp"

#include "core/config_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "core/error.hpp"
#include "workload/onnx/onnx_import.hpp"

namespace dtsim {

namespace fs = std::filesystem;

// Geometry limits: generous, but small enough that products of them cannot overflow int64.
static constexpr int64_t kMaxDim = 1 << 20;

// An integer or [h, w] pair.
static void read_pair(JsonObject& o, const std::string& key, int64_t& h, int64_t& w, int64_t min) {
  const Json& v = o.raw(key);
  auto check = [&](const Json& x) -> int64_t {
    if (!x.is_number_integer()) o.fail(key, "must be an integer or a pair [h, w] of integers");
    int64_t n = x.get<int64_t>();
    if (n < min || n > kMaxDim) o.fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(kMaxDim) + "], got " + std::to_string(n));
    return n;
  };
  if (v.is_array()) {
    if (v.size() != 2) o.fail(key, "a pair must have exactly two elements [h, w]");
    h = check(v[0]);
    w = check(v[1]);
  } else {
    h = w = check(v);
  }
}

static const std::map<std::string, Op>& op_table() {
  static const std::map<std::string, Op> t = [] {
    std::map<std::string, Op> ops = {
        {"conv2d", Op::Conv2d},         {"linear", Op::Linear},
        {"batchnorm2d", Op::BatchNorm2d}, {"maxpool2d", Op::MaxPool2d},
        {"avgpool2d", Op::AvgPool2d},   {"adaptive_avgpool2d", Op::AdaptiveAvgPool2d},
        {"add", Op::Add},               {"mul", Op::Mul},
        {"concat", Op::Concat},
        {"dropout", Op::Dropout},       {"flatten", Op::Flatten},
        {"softmax_cross_entropy", Op::SoftmaxCrossEntropy},
        {"embedding", Op::Embedding},   {"positional_embedding", Op::PositionalEmbedding},
        {"layernorm", Op::LayerNorm},   {"attention", Op::Attention},
        {"to_sequence", Op::ToSequence}, {"class_token", Op::ClassToken},
        {"select", Op::Select},
    };
    for (const std::string& a : activation_names()) ops[a] = Op::Activation;  // each activation is an op by its own name
    return ops;
  }();
  return t;
}

static std::string known_ops() {
  std::string s;
  for (const auto& [k, v] : op_table()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// The layers a layer reads: its "inputs" by name, else the layer listed before it.
static std::vector<int> read_inputs(JsonObject& o, size_t i, const std::unordered_map<std::string, int>& index) {
  if (!o.has("inputs")) return {static_cast<int>(i) - 1};  // the previous layer; -1 is the model input
  std::vector<int> inputs;
  const Json& ins = o.raw("inputs");
  if (!ins.is_array() || ins.empty()) o.fail("inputs", "must be a non-empty array of layer names");
  for (const auto& n : ins) {
    if (!n.is_string()) o.fail("inputs", "must be a non-empty array of layer names");
    std::string name = n.get<std::string>();
    if (name == "input") { inputs.push_back(-1); continue; }
    auto f = index.find(name);
    if (f == index.end()) o.fail("inputs", "'" + name + "' is not a layer defined earlier");
    inputs.push_back(f->second);
  }
  return inputs;
}

// The fields of the layer's op (geometry, bias, ...), with PyTorch's defaults.
static void read_op_fields(JsonObject& o, Layer& l) {
  switch (l.op) {
    case Op::Conv2d:
      l.out_channels = o.integer("out_channels", 1, kMaxDim);
      read_pair(o, "kernel", l.kh, l.kw, 1);
      l.sh = l.sw = 1; if (o.has("stride")) read_pair(o, "stride", l.sh, l.sw, 1);
      l.ph = l.pw = 0; if (o.has("padding")) read_pair(o, "padding", l.ph, l.pw, 0);
      l.dh = l.dw = 1; if (o.has("dilation")) read_pair(o, "dilation", l.dh, l.dw, 1);
      l.groups = o.integer_or("groups", 1, 1, kMaxDim);
      l.bias = o.boolean_or("bias", true);
      break;
    case Op::Linear:
      l.out_features = o.integer("out_features", 1, kMaxDim);
      l.bias = o.boolean_or("bias", true);
      break;
    case Op::BatchNorm2d:
      o.number_or("eps", 1e-5, 0, 1);
      break;
    case Op::MaxPool2d:
    case Op::AvgPool2d:
      read_pair(o, "kernel", l.kh, l.kw, 1);
      l.sh = l.kh; l.sw = l.kw;
      if (o.has("stride")) read_pair(o, "stride", l.sh, l.sw, 1);
      if (o.has("padding")) read_pair(o, "padding", l.ph, l.pw, 0);
      l.ceil_mode = o.boolean_or("ceil_mode", false);
      break;
    case Op::AdaptiveAvgPool2d:
      read_pair(o, "output", l.out_h, l.out_w, 1);
      break;
    case Op::Dropout:
      l.dropout_p = o.number_or("p", 0.5, 0.0, 1.0);
      break;
    case Op::Embedding:
      l.num_embeddings = o.integer("num_embeddings", 1, kMaxDim);
      l.embedding_dim = o.integer("embedding_dim", 1, kMaxDim);
      break;
    case Op::PositionalEmbedding:
      l.num_embeddings = o.integer("num_embeddings", 1, kMaxDim);
      break;
    case Op::LayerNorm:
      o.number_or("eps", 1e-5, 0, 1);
      l.affine = o.boolean_or("elementwise_affine", true);
      l.bias = o.boolean_or("bias", true);
      break;
    case Op::Attention:
      l.num_heads = o.integer("num_heads", 1, kMaxDim);
      l.causal = o.boolean_or("is_causal", false);
      if (o.has("module") && o.str("module") != "nn.MultiheadAttention") o.fail("module", "must be \"nn.MultiheadAttention\" when given");
      l.mha_layout = o.has("module");
      // applied inside the attention kernel, which then draws random numbers: a kernel variant of its own
      l.dropout_p = o.number_or("dropout_p", 0.0, 0.0, 1.0);
      break;
    case Op::Select:
      l.index = o.integer_or("index", 0, 0, kMaxDim);
      break;
    case Op::Activation:
      // nn.GELU(approximate="tanh"): GPT-2's gelu_new, a variant of its own.
      if (l.activation == "gelu" && o.has("approximate")) {
        const std::string a = o.str("approximate");
        if (a != "none" && a != "tanh") o.fail("approximate", "must be \"none\" or \"tanh\", got '" + a + "'");
        if (a == "tanh") l.activation = "gelu_tanh";
      }
      break;
    default:
      break;
  }
}

// A linear layer's tie_weight: an earlier embedding layer whose weight it uses (shapes checked by
// infer_shapes).
static void read_tie(JsonObject& o, Layer& l, const std::unordered_map<std::string, int>& index) {
  if (!o.has("tie_weight")) return;
  if (l.op != Op::Linear) o.fail("tie_weight", "only a linear layer ties its weight to an embedding");
  const std::string name = o.str("tie_weight");
  auto f = index.find(name);
  if (f == index.end()) o.fail("tie_weight", "'" + name + "' is not a layer defined earlier");
  l.tied_to = f->second;
}

// Layer i of $.layers; `index` holds the names of the layers before it.
static Layer read_layer(JsonObject& o, size_t i, const std::unordered_map<std::string, int>& index) {
  Layer l;
  l.name = o.str("name");
  if (l.name.empty()) o.fail("name", "must not be empty");
  if (l.name == "input") o.fail("name", "'input' is reserved for the model's input");
  if (index.count(l.name)) o.fail("name", "'" + l.name + "' is used by an earlier layer");
  std::string op = o.str("op");
  auto it = op_table().find(op);
  if (it == op_table().end()) o.fail("op", "unknown op '" + op + "' (known: " + known_ops() + ")");
  l.op = it->second;
  if (l.op == Op::Activation) l.activation = op;
  l.inputs = read_inputs(o, i, index);
  read_op_fields(o, l);
  read_tie(o, l, index);
  o.reject_unknown();
  return l;
}

// $.input: an image {channels, height, width}, or a language model's token ids {sequence_length}.
static void read_input(JsonObject& top, Graph& g) {
  JsonObject in = top.object("input");
  if (in.has("sequence_length")) {
    g.input = Shape{1, in.integer("sequence_length", 1, kMaxDim), 1, false, true};
    g.token_input = true;
  } else {
    g.input = Shape{in.integer("channels", 1, kMaxDim), in.integer("height", 1, kMaxDim), in.integer("width", 1, kMaxDim), false};
  }
  in.reject_unknown();
}

// --seq-len: a language model's sequence length in place of its file's; the model's learned
// positions bound it.
static void apply_seq_len(Graph& g, int64_t seq_len) {
  if (seq_len <= 0) return;
  if (!g.token_input) {
    bool patches = false;  // a vision transformer: its image size fixes its sequence
    for (const Layer& l : g.layers) patches = patches || l.op == Op::ToSequence;
    throw InputError("--seq-len", "applies to language models (input: token ids); " + g.name + "'s input is a " + g.input.str() + " image" +
                                      (patches ? ", whose size fixes its sequence of patches" : ", with no token sequence"));
  }
  if (seq_len > kMaxDim) throw InputError("--seq-len", "must be in [1, " + std::to_string(kMaxDim) + "], got " + std::to_string(seq_len));
  for (const Layer& l : g.layers)
    if (l.op == Op::PositionalEmbedding && seq_len > l.num_embeddings)
      throw InputError("--seq-len", std::to_string(seq_len) + " is longer than " + g.name + "'s " + std::to_string(l.num_embeddings) +
                                        " learned positions (layer " + l.name + ")");
  g.input.h = seq_len;
}

Graph parse_model(const Json& doc, const std::string& what, int64_t seq_len) {
  JsonObject top(doc, what, "$");
  Graph g;
  g.name = top.str("name");
  g.source = top.str_or("source", "");
  top.str_or("description", "");
  read_input(top, g);

  const Json& layers = top.raw("layers");
  if (!layers.is_array()) top.fail("layers", "must be an array of layer objects");
  if (layers.empty()) top.fail("layers", "must hold at least one layer");
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < layers.size(); ++i) {
    JsonObject o = array_object(layers, i, what, "$.layers");
    g.layers.push_back(read_layer(o, i, index));
    index[g.layers.back().name] = static_cast<int>(i);
  }
  top.reject_unknown();
  apply_seq_len(g, seq_len);
  infer_shapes(g, what);
  return g;
}

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || ends_with(s, ".json") || ends_with(s, ".onnx") || ends_with(s, ".onnx.gz");
}

std::vector<std::string> zoo_models() { return config_presets("models"); }

bool is_onnx_path(const std::string& name_or_path) { return ends_with(name_or_path, ".onnx") || ends_with(name_or_path, ".onnx.gz"); }

Graph load_model(const std::string& name_or_path, const ModelLoadOptions& options) {
  if (options.seq_len < 0) throw InputError("--seq-len", "must be in [1, " + std::to_string(kMaxDim) + "], got " + std::to_string(options.seq_len));
  if (is_onnx_path(name_or_path)) {
    if (options.seq_len > 0) throw InputError("--seq-len", "applies to zoo and JSON language models, not to ONNX files (their shapes are the export's)");
    return import_onnx(name_or_path, options);
  }
  std::string path = name_or_path;
  if (!looks_like_path(name_or_path)) {
    const auto preset = config_preset_file("models", name_or_path);
    if (!preset)
      throw InputError("--model", "unknown model '" + name_or_path + "' (built-in: " + config_preset_list("models") +
                                      "; or give a path to a .json or .onnx file)");
    path = *preset;
  }
  return parse_model(load_json_file(path), path, options.seq_len);
}

}  // namespace dtsim
