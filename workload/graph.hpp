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
  // Imported models (workload/onnx/) also use:
  Mul,      // elementwise product of two inputs; one may be a C x 1 x 1 gate (squeeze-and-excitation)
  View,     // reshape, slice, split, squeeze: a view of (part of) its input, no kernel
  Eltwise,  // an operator costed by the bytes it moves: transpose, softmax, an operator dtsim doesn't know
  // Transformers (docs/transformers.md):
  Embedding,            // token ids -> T x embedding_dim rows gathered from a num_embeddings x dim table
  PositionalEmbedding,  // adds learned positions (num_embeddings x C, the first T used) to a sequence
  LayerNorm,            // over the last dimension (features), with weight and bias
  Attention,            // multi-head scaled_dot_product_attention of q, k, v (three inputs or one fused qkv)
  ToSequence,           // C x H x W image -> sequence of H*W tokens of C features (ViT's patches)
  ClassToken,           // a learned C-vector concatenated in front of a sequence: T + 1 tokens
  Select,               // one token of a sequence (x[:, index]) as a vector of C features
};

const char* op_name(Op op);

// The activations dtsim knows by name: the ops of a model JSON that are an Op::Activation, and the
// variants `dtsim kernel --kind activation` takes.
const std::vector<std::string>& activation_names();

// The kernel variants of activations: activation_names() and the tanh-approximated GELU
// (nn.GELU(approximate="tanh"): a model JSON's {"op": "gelu", "approximate": "tanh"}).
const std::vector<std::string>& activation_variants();

// A per-sample tensor: a C x H x W feature map, a vector of C features (h = w = 1), or a sequence of
// h tokens of c features each (seq; w = 1). A language model's input is a sequence of token ids:
// one "feature" per token (Graph::token_input).
struct Shape {
  int64_t c = 0, h = 1, w = 1;
  bool vector = false;
  bool seq = false;
  int64_t elements() const { return c * h * w; }
  // Tokens of a sequence; 1 for images and vectors.
  int64_t tokens() const { return seq ? h : 1; }
  // A feature map with a spatial extent (the layouts channels_last changes); not a vector or a sequence.
  bool spatial() const { return !vector && !seq && h * w > 1; }
  std::string str() const;
  bool operator==(const Shape& o) const { return c == o.c && h == o.h && w == o.w && vector == o.vector && seq == o.seq; }
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
  // linear: the index of the embedding layer whose weight this layer's weight is (tie_weight: GPT-2's
  // lm_head.weight = wte.weight); -1: its own. A tied weight is one parameter, counted at the embedding.
  int tied_to = -1;
  // embedding, positional_embedding: the table's rows and (embedding) width
  int64_t num_embeddings = 0, embedding_dim = 0;
  // layernorm: learned weight (and bias, `bias`)
  bool affine = true;
  // attention
  int64_t num_heads = 1;
  bool causal = false;
  // attention: run as nn.MultiheadAttention (its layout copies in training; the zoo's "module")
  bool mha_layout = false;
  // select: the token taken
  int64_t index = 0;
  // adaptive pooling
  int64_t out_h = 1, out_w = 1;
  double dropout_p = 0.5;
  // Op::View and Op::Eltwise: the per-sample output shape, as the model's source states it.
  Shape given_out;
  // Op::Eltwise: the operator it stands for, as the source names it ("Transpose", "Softmax").
  std::string source_op;
  // Op::Eltwise: an operator dtsim does not know, costed by roofline from its tensor sizes only
  // (--allow-unknown-ops), so that reports can say so.
  bool roofline_only = false;
  // Trainable tensors of a layer whose op has no weights of its own (a learned scale feeding a mul,
  // a PReLU slope, an unknown operator's initializers); counted as weights.
  int64_t extra_params = 0;

  // Inferred.
  std::vector<Shape> in;  // one per input
  Shape out;
  int consumers = 0;  // layers that read this layer's output

  int64_t weight_params() const;
  int64_t bias_params() const;
  int64_t params() const { return weight_params() + bias_params(); }
  // Multiply-accumulates of one sample's forward pass: convolutions, linear layers, and attention's two
  // matrix products (QK^T and PV, 2 T^2 C, counted dense whether causal or not, as the published
  // figures count them).
  int64_t fwd_macs() const;
  // Attention: the width C of q, k and v (heads x head_dim); 0 for other layers.
  int64_t attention_width() const;
  // The weight a matmul layer reads (conv, linear; a tied linear's too), which autocast casts to 16 bits.
  int64_t matmul_weight_elements() const;
};

struct Graph {
  std::string name;
  std::string source;  // where the definition comes from
  Shape input;
  // The input is a sequence of input.h token ids (int64), not FP32 samples: a language model.
  bool token_input = false;
  std::vector<Layer> layers;
  // What an importer assumed or could not cost exactly, one line each, for the user to check.
  std::vector<std::string> notes;

  int64_t params() const;
  int64_t fwd_macs_per_sample() const;
  // Number of parameter tensors (weights and biases), as model.parameters() would list them.
  int64_t param_tensors() const;
  // Tokens per sample of a language model (its input sequence length); 0 for other models.
  int64_t tokens_per_sample() const { return token_input ? input.h : 0; }
};

// Fills in Layer::in, Layer::out and Layer::consumers; `what` names the source for errors, which
// are InputErrors at "$.layers[i]".
void infer_shapes(Graph& g, const std::string& what);

}  // namespace dtsim
