#pragma once
// The layer graph: a DAG of layers in topological order, with per-sample tensor shapes inferred
// from the input. Parameter and multiply-accumulate counts follow PyTorch's definitions.
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

enum class Op {
  Conv2d,
  Linear,
  BatchNorm2d,
  Activation,  // relu, relu6, sigmoid, ... (Layer::activation says which)
  MaxPool2d,
  AvgPool2d,
  AdaptiveAvgPool2d,
  Add,
  Concat,
  Dropout,
  Flatten,
  SoftmaxCrossEntropy,
};

const char* op_name(Op op);

// A per-sample tensor: a C x H x W feature map, or a vector of C features (h = w = 1).
struct Shape {
  int64_t c = 0, h = 1, w = 1;
  bool vector = false;
  int64_t elements() const { return c * h * w; }
  std::string str() const;
  bool operator==(const Shape& o) const { return c == o.c && h == o.h && w == o.w && vector == o.vector; }
};

struct Layer {
  std::string name;
  Op op = Op::Activation;
  std::string activation;   // for Op::Activation
  std::vector<int> inputs;  // indices of earlier layers; -1 is the model input

  // conv2d / pooling geometry
  int64_t out_channels = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  bool ceil_mode = false;
  bool bias = false;
  // linear
  int64_t out_features = 0;
  // adaptive pooling
  int64_t out_h = 1, out_w = 1;
  double dropout_p = 0.5;

  // Inferred.
  std::vector<Shape> in;  // one per input
  Shape out;
  int consumers = 0;  // layers that read this layer's output

  int64_t weight_params() const;
  int64_t bias_params() const;
  int64_t params() const { return weight_params() + bias_params(); }
  // Multiply-accumulates of one sample's forward pass (convolutions and linear layers only).
  int64_t fwd_macs() const;
};

struct Graph {
  std::string name;
  std::string source;  // where the definition comes from
  Shape input;
  std::vector<Layer> layers;

  int64_t params() const;
  int64_t fwd_macs_per_sample() const;
  // Number of parameter tensors (weights and biases), as model.parameters() would list them.
  int64_t param_tensors() const;
};

// Fills in Layer::in, Layer::out and Layer::consumers; `what` names the source for errors, which
// are InputErrors at "$.layers[i]".
void infer_shapes(Graph& g, const std::string& what);

}  // namespace dtsim
