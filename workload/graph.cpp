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
  }
  return "?";
}

std::string Shape::str() const {
  if (vector) return std::to_string(c);
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

int64_t Layer::weight_params() const {
  switch (op) {
    case Op::Conv2d: return out_channels * (in[0].c / groups) * kh * kw;
    case Op::Linear: return out_features * in[0].c;
    case Op::BatchNorm2d: return in[0].c;
    default: return extra_params;
  }
}

int64_t Layer::bias_params() const {
  switch (op) {
    case Op::Conv2d: return bias ? out_channels : 0;
    case Op::Linear: return bias ? out_features : 0;
    case Op::BatchNorm2d: return in[0].c;
    default: return 0;
  }
}

int64_t Layer::fwd_macs() const {
  switch (op) {
    case Op::Conv2d: return out.elements() * (in[0].c / groups) * kh * kw;
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

void infer_shapes(Graph& g, const std::string& what) {
  if (g.input.c <= 0 || g.input.h <= 0 || g.input.w <= 0) throw InputError(what + ": $.input", "sizes must be positive");
  if (elements_of(g.input) > kMaxElementsPerSample)
    throw InputError(what + ": $.input", "more than 2^34 elements per sample (" + g.input.str() + ")");
  for (size_t i = 0; i < g.layers.size(); ++i) {
    Layer& l = g.layers[i];
    std::string where = what + ": $.layers[" + std::to_string(i) + "] (" + l.name + ")";
    auto fail = [&](const std::string& rule) { throw InputError(where, rule); };
    l.in.clear();
    for (int idx : l.inputs) {
      if (idx >= static_cast<int>(i)) fail("input must be a layer listed earlier");
      l.in.push_back(idx < 0 ? g.input : g.layers[idx].out);
      if (idx >= 0) g.layers[idx].consumers++;
    }
    if (l.in.empty()) fail("has no input");
    const Shape& x = l.in[0];
    auto need_map = [&]() { if (x.vector) fail(std::string(op_name(l.op)) + " needs a C x H x W input, got a vector of " + std::to_string(x.c)); };
    auto need_one = [&]() { if (l.in.size() != 1) fail(std::string(op_name(l.op)) + " takes exactly one input"); };
    switch (l.op) {
      case Op::Conv2d: {
        need_one(); need_map();
        if (x.c % l.groups != 0) fail("input channels " + std::to_string(x.c) + " not divisible by groups " + std::to_string(l.groups));
        if (l.out_channels % l.groups != 0) fail("out_channels not divisible by groups");
        int64_t ho = pool_out(x.h, l.kh, l.sh, l.ph, l.dh, false), wo = pool_out(x.w, l.kw, l.sw, l.pw, l.dw, false);
        if (ho <= 0 || wo <= 0) fail("kernel larger than the padded input " + x.str());
        l.out = Shape{l.out_channels, ho, wo, false};
        break;
      }
      case Op::MaxPool2d:
      case Op::AvgPool2d: {
        need_one(); need_map();
        if (l.ph * 2 > l.kh || l.pw * 2 > l.kw) fail("padding must be at most half the kernel");
        int64_t ho = pool_out(x.h, l.kh, l.sh, l.ph, 1, l.ceil_mode), wo = pool_out(x.w, l.kw, l.sw, l.pw, 1, l.ceil_mode);
        if (ho <= 0 || wo <= 0) fail("kernel larger than the padded input " + x.str());
        l.out = Shape{x.c, ho, wo, false};
        break;
      }
      case Op::AdaptiveAvgPool2d:
        need_one(); need_map();
        l.out = Shape{x.c, l.out_h, l.out_w, false};
        break;
      case Op::Linear:
        need_one();
        if (!x.vector) fail("linear needs a vector input (add a flatten layer), got " + x.str());
        l.out = Shape{l.out_features, 1, 1, true};
        break;
      case Op::BatchNorm2d:
        need_one(); need_map();
        l.out = x;
        break;
      case Op::Activation:
      case Op::Dropout:
        need_one();
        l.out = x;
        break;
      case Op::Flatten:
        need_one();
        l.out = Shape{x.elements(), 1, 1, true};
        break;
      case Op::Add:
        if (l.in.size() < 2) fail("add takes two or more inputs");
        for (const auto& s : l.in)
          if (!(s == x)) fail("add inputs differ in shape: " + x.str() + " and " + s.str());
        l.out = x;
        break;
      case Op::Concat: {
        if (l.in.size() < 2) fail("concat takes two or more inputs");
        int64_t c = 0;
        for (const auto& s : l.in) {
          if (s.vector || s.h != x.h || s.w != x.w) fail("concat inputs must be feature maps of equal height and width: " + x.str() + " and " + s.str());
          c += s.c;
        }
        l.out = Shape{c, x.h, x.w, false};
        break;
      }
      case Op::Mul: {
        // Same shapes, or a per-channel gate C x 1 x 1 scaling a C x H x W map (either order).
        if (l.in.size() != 2) fail("mul takes exactly two inputs");
        const Shape& y = l.in[1];
        auto is_gate_of = [](const Shape& gate, const Shape& map) {
          return !gate.vector && !map.vector && gate.c == map.c && gate.h == 1 && gate.w == 1;
        };
        if (x == y || is_gate_of(y, x)) l.out = x;
        else if (is_gate_of(x, y)) l.out = y;
        else fail("mul inputs must have equal shapes or one must be a C x 1 x 1 gate of the other: " + x.str() + " and " + y.str());
        break;
      }
      case Op::View:
        need_one();
        if (l.given_out.elements() <= 0 || l.given_out.elements() > x.elements())
          fail("a view must have between 1 and " + std::to_string(x.elements()) + " elements per sample, got " + l.given_out.str());
        l.out = l.given_out;
        break;
      case Op::Eltwise:
        if (l.given_out.c <= 0 || l.given_out.h <= 0 || l.given_out.w <= 0) fail("output shape must be positive, got " + l.given_out.str());
        l.out = l.given_out;
        break;
      case Op::SoftmaxCrossEntropy:
        need_one();
        if (!x.vector) fail("softmax_cross_entropy needs a vector of class scores, got " + x.str());
        if (i + 1 != g.layers.size()) fail("softmax_cross_entropy must be the last layer");
        l.out = Shape{1, 1, 1, true};
        break;
    }
    // Checked in floating point before anything multiplies the sizes in int64.
    if (l.out.c <= 0 || l.out.h <= 0 || l.out.w <= 0) fail("output shape must be positive, got " + l.out.str());
    if (elements_of(l.out) > kMaxElementsPerSample) fail("output " + l.out.str() + " has more than 2^34 elements per sample");
    double per_out = 0, params = static_cast<double>(l.extra_params);
    if (l.op == Op::Conv2d) {
      per_out = static_cast<double>(x.c / l.groups) * static_cast<double>(l.kh) * static_cast<double>(l.kw);
      params = static_cast<double>(l.out_channels) * per_out;
    } else if (l.op == Op::Linear) {
      per_out = static_cast<double>(x.c);
      params = static_cast<double>(l.out_features) * per_out;
    }
    if (params > kMaxLayerParams) fail("more than 2^36 parameters in one layer");
    if (elements_of(l.out) * per_out > kMaxLayerMacs) fail("more than 2^40 multiply-accumulates per sample in one layer");
  }
  if (g.layers.empty()) throw InputError(what + ": $.layers", "must hold at least one layer");
}

}  // namespace dtsim
