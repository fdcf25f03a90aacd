#include "workload/graph.hpp"

#include <string>

#include "core/error.hpp"

namespace dtsim {

const char* op_name(Op op) {
  switch (op) {
    case Op::Conv2d: return "conv2d";
    case Op::Linear: return "linear";
    case Op::BatchNorm2d: return "batchnorm2d";
    case Op::Activation: return "activation";
    case Op::MaxPool2d: return "maxpool2d";
    case Op::AvgPool2d: return "avgpool2d";
    case Op::AdaptiveAvgPool2d: return "adaptive_avgpool2d";
    case Op::Add: return "add";
    case Op::Concat: return "concat";
    case Op::Dropout: return "dropout";
    case Op::Flatten: return "flatten";
    case Op::SoftmaxCrossEntropy: return "softmax_cross_entropy";
    case Op::Mul: return "mul";
    case Op::View: return "view";
    case Op::Eltwise: return "eltwise";
    case Op::Embedding: return "embedding";
    case Op::PositionalEmbedding: return "positional_embedding";
    case Op::LayerNorm: return "layernorm";
    case Op::Attention: return "attention";
    case Op::ToSequence: return "to_sequence";
    case Op::ClassToken: return "class_token";
    case Op::Select: return "select";
  }
  return "?";
}

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {"relu", "relu6", "sigmoid", "tanh", "silu", "gelu", "hardswish"};
  return names;
}

const std::vector<std::string>& activation_variants() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = activation_names();
    v.push_back("gelu_tanh");
    return v;
  }();
  return names;
}

std::string Shape::str() const {
  if (vector) return std::to_string(c);
  if (seq) return std::to_string(h) + " tokens x " + std::to_string(c);
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

int64_t Layer::weight_params() const {
  switch (op) {
    case Op::Conv2d: return out_channels * (in[0].c / groups) * kh * kw;
    case Op::Linear: return tied_to >= 0 ? 0 : out_features * in[0].c;
    case Op::BatchNorm2d: return in[0].c;
    case Op::Embedding: return num_embeddings * embedding_dim;
    case Op::PositionalEmbedding: return num_embeddings * in[0].c;
    case Op::LayerNorm: return affine ? in[0].c : 0;
    case Op::ClassToken: return in[0].c;
    default: return extra_params;
  }
}

int64_t Layer::bias_params() const {
  switch (op) {
    case Op::Conv2d: return bias ? out_channels : 0;
    case Op::Linear: return bias ? out_features : 0;
    case Op::BatchNorm2d: return in[0].c;
    case Op::LayerNorm: return affine && bias ? in[0].c : 0;
    default: return 0;
  }
}

int64_t Layer::attention_width() const {
  if (op != Op::Attention) return 0;
  return in.size() == 1 ? in[0].c / 3 : in[0].c;  // one fused qkv input of 3C features, or q, k, v
}

int64_t Layer::fwd_macs() const {
  switch (op) {
    case Op::Conv2d: return out.elements() * (in[0].c / groups) * kh * kw;
    case Op::Linear: return out_features * in[0].c * in[0].tokens();
    case Op::Attention: return 2 * in[0].h * in[0].h * attention_width();
    default: return 0;
  }
}

int64_t Layer::matmul_weight_elements() const {
  switch (op) {
    case Op::Conv2d: return weight_params();
    case Op::Linear: return out_features * in[0].c;
    default: return 0;
  }
}

int64_t Graph::params() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.params();
  return n;
}

int64_t Graph::fwd_macs_per_sample() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.fwd_macs();
  return n;
}

int64_t Graph::param_tensors() const {
  int64_t n = 0;
  for (const auto& l : layers) n += (l.weight_params() > 0) + (l.bias_params() > 0);
  return n;
}

// PyTorch's pooling output size, including ceil mode's rule that the last window must start
// inside the input or its left padding.
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// Size limits per sample, far beyond any trained network (ResNet-50: 2^20 activations in its largest
// layer, VGG-16: 2^31 MACs in its largest layer), chosen so that times the largest batch (2^20),
// the element size and the passes, every count stays within int64.
static constexpr double kMaxElementsPerSample = 17179869184.0;  // 2^34
static constexpr double kMaxLayerParams = 68719476736.0;        // 2^36
static constexpr double kMaxLayerMacs = 1099511627776.0;        // 2^40

static double elements_of(const Shape& s) { return static_cast<double>(s.c) * static_cast<double>(s.h) * static_cast<double>(s.w); }

namespace {

// One layer under check: its place in the source for errors, and the rules several ops share.
struct LayerCheck {
  const Layer& l;
  std::string where;

  [[noreturn]] void fail(const std::string& rule) const { throw InputError(where, rule); }
  void need_map() const {
    if (l.in[0].vector) fail(std::string(op_name(l.op)) + " needs a C x H x W input, got a vector of " + std::to_string(l.in[0].c));
    if (l.in[0].seq) fail(std::string(op_name(l.op)) + " needs a C x H x W input, got a sequence of " + l.in[0].str());
  }
  void need_seq() const {
    if (!l.in[0].seq) fail(std::string(op_name(l.op)) + " needs a sequence (tokens x features), got " + l.in[0].str());
  }
  void need_one() const {
    if (l.in.size() != 1) fail(std::string(op_name(l.op)) + " takes exactly one input");
  }
};

// Fills l.in from the layers it reads and counts it as their consumer.
void connect_inputs(Graph& g, size_t i, const LayerCheck& check) {
  Layer& l = g.layers[i];
  l.in.clear();
  for (int idx : l.inputs) {
    if (idx >= static_cast<int>(i)) check.fail("input must be a layer listed earlier");
    l.in.push_back(idx < 0 ? g.input : g.layers[idx].out);
    if (idx >= 0) g.layers[idx].consumers++;
  }
  if (l.in.empty()) check.fail("has no input");
}

Shape conv2d_output(const LayerCheck& check) {
  const Layer& l = check.l;
  const Shape& x = l.in[0];
  check.need_one(); check.need_map();
  if (x.c % l.groups != 0) check.fail("input channels " + std::to_string(x.c) + " not divisible by groups " + std::to_string(l.groups));
  if (l.out_channels % l.groups != 0) check.fail("out_channels not divisible by groups");
  int64_t ho = pool_out(x.h, l.kh, l.sh, l.ph, l.dh, false), wo = pool_out(x.w, l.kw, l.sw, l.pw, l.dw, false);
  if (ho <= 0 || wo <= 0) check.fail("kernel larger than the padded input " + x.str());
  return Shape{l.out_channels, ho, wo, false};
}

Shape pool_output(const LayerCheck& check) {
  const Layer& l = check.l;
  const Shape& x = l.in[0];
  check.need_one(); check.need_map();
  if (l.ph * 2 > l.kh || l.pw * 2 > l.kw) check.fail("padding must be at most half the kernel");
  int64_t ho = pool_out(x.h, l.kh, l.sh, l.ph, 1, l.ceil_mode), wo = pool_out(x.w, l.kw, l.sw, l.pw, 1, l.ceil_mode);
  if (ho <= 0 || wo <= 0) check.fail("kernel larger than the padded input " + x.str());
  return Shape{x.c, ho, wo, false};
}

Shape add_output(const LayerCheck& check) {
  const std::vector<Shape>& in = check.l.in;
  if (in.size() < 2) check.fail("add takes two or more inputs");
  for (const auto& s : in)
    if (!(s == in[0])) check.fail("add inputs differ in shape: " + in[0].str() + " and " + s.str());
  return in[0];
}

Shape concat_output(const LayerCheck& check) {
  const std::vector<Shape>& in = check.l.in;
  const Shape& x = in[0];
  if (in.size() < 2) check.fail("concat takes two or more inputs");
  int64_t c = 0;
  for (const auto& s : in) {
    if (s.vector || s.seq || s.h != x.h || s.w != x.w) check.fail("concat inputs must be feature maps of equal height and width: " + x.str() + " and " + s.str());
    c += s.c;
  }
  return Shape{c, x.h, x.w, false};
}

// Same shapes, or a per-channel gate C x 1 x 1 scaling a C x H x W map (either order).
Shape mul_output(const LayerCheck& check) {
  const std::vector<Shape>& in = check.l.in;
  if (in.size() != 2) check.fail("mul takes exactly two inputs");
  const Shape& x = in[0];
  const Shape& y = in[1];
  auto is_gate_of = [](const Shape& gate, const Shape& map) {
    return !gate.vector && !map.vector && gate.c == map.c && gate.h == 1 && gate.w == 1;
  };
  if (x == y || is_gate_of(y, x)) return x;
  if (is_gate_of(x, y)) return y;
  check.fail("mul inputs must have equal shapes or one must be a C x 1 x 1 gate of the other: " + x.str() + " and " + y.str());
}

// q, k and v: three sequences of equal shape, or one fused qkv sequence of 3 x C features (GPT-2's
// c_attn, torchvision's in_proj), split into heads of C / num_heads.
Shape attention_output(const LayerCheck& check) {
  const Layer& l = check.l;
  const std::vector<Shape>& in = l.in;
  const Shape& x = in[0];
  if (in.size() != 1 && in.size() != 3) check.fail("attention takes one fused qkv input or three inputs q, k, v");
  for (const auto& s : in) {
    if (!s.seq) check.fail("attention needs sequences (tokens x features), got " + s.str());
    if (s.h != x.h) check.fail("q, k and v differ in shape: " + x.str() + " and " + s.str());
  }
  if (in.size() == 1 && x.c % 3 != 0) check.fail("a fused qkv input must have 3 x C features, got " + std::to_string(x.c));
  const int64_t width = l.attention_width();
  if (width % l.num_heads != 0)
    check.fail("num_heads " + std::to_string(l.num_heads) + " does not divide the width " + std::to_string(width) + " of q, k and v");
  // Grouped-query attention (Llama 3): k and v of fewer heads of q's head size, each shared by an
  // equal group of q's heads; otherwise q, k and v have one shape.
  if (in.size() == 3) {
    const int64_t head_dim = width / l.num_heads, kv = in[1].c;
    const bool grouped = in[1] == in[2] && kv % head_dim == 0 && l.num_heads % (kv / head_dim) == 0;
    if (!(in[1] == x && in[2] == x) && !grouped)
      check.fail("q, k and v differ in shape: " + x.str() + ", " + in[1].str() + " and " + in[2].str() +
                 " (k and v may be narrower only by whole heads that divide q's)");
  }
  return Shape{width, x.h, 1, false, true};
}

// The transformer ops' shapes (Op::Embedding .. Op::Select).
Shape transformer_output(const LayerCheck& check) {
  const Layer& l = check.l;
  const Shape& x = l.in[0];
  if (l.op == Op::Attention) return attention_output(check);
  check.need_one();
  switch (l.op) {
    case Op::Embedding:
      check.need_seq();
      if (x.c != 1) check.fail("embedding needs token ids (the model's input sequence), got " + x.str());
      return Shape{l.embedding_dim, x.h, 1, false, true};
    case Op::PositionalEmbedding:
      check.need_seq();
      if (x.h > l.num_embeddings)
        check.fail("a sequence of " + std::to_string(x.h) + " tokens is longer than the " + std::to_string(l.num_embeddings) +
                   " learned positions (num_embeddings)");
      return x;
    case Op::LayerNorm:
      if (!x.seq && !x.vector) check.fail("layernorm normalises the last dimension of a sequence or a vector, got " + x.str());
      return x;
    case Op::ToSequence:
      check.need_map();
      return Shape{x.c, x.h * x.w, 1, false, true};
    case Op::ClassToken:
      check.need_seq();
      return Shape{x.c, x.h + 1, 1, false, true};
    case Op::Select:
      check.need_seq();
      if (l.index >= x.h) check.fail("index " + std::to_string(l.index) + " is beyond the sequence's " + std::to_string(x.h) + " tokens");
      return Shape{x.c, 1, 1, true};
    default: break;
  }
  return l.out;
}

// The layer's output shape from its inputs, or an InputError for inputs its op cannot take.
Shape output_shape(const LayerCheck& check, bool last_layer) {
  const Layer& l = check.l;
  const Shape& x = l.in[0];
  switch (l.op) {
    case Op::Conv2d: return conv2d_output(check);
    case Op::MaxPool2d:
    case Op::AvgPool2d: return pool_output(check);
    case Op::AdaptiveAvgPool2d:
      check.need_one(); check.need_map();
      return Shape{x.c, l.out_h, l.out_w, false};
    case Op::Linear:
      check.need_one();
      if (x.seq) return Shape{l.out_features, x.h, 1, false, true};  // per token: a GEMM over [B*T, in]
      if (!x.vector) check.fail("linear needs a vector input or a sequence (add a flatten layer), got " + x.str());
      return Shape{l.out_features, 1, 1, true};
    case Op::BatchNorm2d:
      check.need_one(); check.need_map();
      return x;
    case Op::Activation:
    case Op::Dropout:
      check.need_one();
      return x;
    case Op::Flatten:
      check.need_one();
      return Shape{x.elements(), 1, 1, true};
    case Op::Add: return add_output(check);
    case Op::Concat: return concat_output(check);
    case Op::Mul: return mul_output(check);
    case Op::View:
      check.need_one();
      if (l.given_out.elements() <= 0 || l.given_out.elements() > x.elements())
        check.fail("a view must have between 1 and " + std::to_string(x.elements()) + " elements per sample, got " + l.given_out.str());
      return l.given_out;
    case Op::Eltwise:
      if (l.given_out.c <= 0 || l.given_out.h <= 0 || l.given_out.w <= 0) check.fail("output shape must be positive, got " + l.given_out.str());
      return l.given_out;
    case Op::Embedding:
    case Op::PositionalEmbedding:
    case Op::LayerNorm:
    case Op::Attention:
    case Op::ToSequence:
    case Op::ClassToken:
    case Op::Select: return transformer_output(check);
    case Op::SoftmaxCrossEntropy:
      check.need_one();
      if (!x.vector && !x.seq) check.fail("softmax_cross_entropy needs a vector of class scores (or a sequence of them, one per token), got " + x.str());
      if (!last_layer) check.fail("softmax_cross_entropy must be the last layer");
      return Shape{1, 1, 1, true};
  }
  return l.out;
}

// The size limits, checked in floating point before anything multiplies the sizes in int64.
void check_size(const LayerCheck& check) {
  const Layer& l = check.l;
  const Shape& x = l.in[0];
  if (l.out.c <= 0 || l.out.h <= 0 || l.out.w <= 0) check.fail("output shape must be positive, got " + l.out.str());
  if (elements_of(l.out) > kMaxElementsPerSample) check.fail("output " + l.out.str() + " has more than 2^34 elements per sample");
  double per_out = 0, params = static_cast<double>(l.extra_params);
  if (l.op == Op::Conv2d) {
    per_out = static_cast<double>(x.c / l.groups) * static_cast<double>(l.kh) * static_cast<double>(l.kw);
    params = static_cast<double>(l.out_channels) * per_out;
  } else if (l.op == Op::Linear) {
    per_out = static_cast<double>(x.c);
    params = static_cast<double>(l.out_features) * per_out;
  } else if (l.op == Op::Attention) {
    per_out = 2.0 * static_cast<double>(x.h);  // 2 T^2 C multiply-accumulates over T x C outputs
  } else if (l.op == Op::Embedding) {
    params = static_cast<double>(l.num_embeddings) * static_cast<double>(l.embedding_dim);
  } else if (l.op == Op::PositionalEmbedding) {
    params = static_cast<double>(l.num_embeddings) * static_cast<double>(x.c);
  }
  if (params > kMaxLayerParams) check.fail("more than 2^36 parameters in one layer");
  if (elements_of(l.out) * per_out > kMaxLayerMacs) check.fail("more than 2^40 multiply-accumulates per sample in one layer");
}

// A linear layer whose weight is an earlier embedding's (GPT-2's lm_head and wte): the same matrix,
// num_embeddings x embedding_dim = out_features x in_features.
void check_tied(const Graph& g, const Layer& l, const LayerCheck& check) {
  const Layer& e = g.layers[l.tied_to];
  if (l.op != Op::Linear) check.fail("only a linear layer ties its weight");
  if (e.op != Op::Embedding) check.fail("tie_weight must name an embedding layer, '" + e.name + "' is " + op_name(e.op));
  if (e.num_embeddings != l.out_features || e.embedding_dim != l.in[0].c)
    check.fail("tie_weight: '" + e.name + "' has a " + std::to_string(e.num_embeddings) + " x " + std::to_string(e.embedding_dim) +
               " weight, this layer's is " + std::to_string(l.out_features) + " x " + std::to_string(l.in[0].c) + " (out_features x in_features)");
}

}  // namespace

void infer_shapes(Graph& g, const std::string& what) {
  if (g.input.c <= 0 || g.input.h <= 0 || g.input.w <= 0) throw InputError(what + ": $.input", "sizes must be positive");
  if (elements_of(g.input) > kMaxElementsPerSample)
    throw InputError(what + ": $.input", "more than 2^34 elements per sample (" + g.input.str() + ")");
  for (size_t i = 0; i < g.layers.size(); ++i) {
    Layer& l = g.layers[i];
    const LayerCheck check{l, what + ": $.layers[" + std::to_string(i) + "] (" + l.name + ")"};
    connect_inputs(g, i, check);
    l.out = output_shape(check, i + 1 == g.layers.size());
    check_size(check);
    if (l.tied_to >= 0) check_tied(g, l, check);
  }
  if (g.layers.empty()) throw InputError(what + ": $.layers", "must hold at least one layer");
}

}  // namespace dtsim
