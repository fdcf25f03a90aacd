#include "workload/kernels.hpp"

#include <mutex>
#include <set>

#include "core/error.hpp"

namespace dtsim {

const char* intern_variant(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> names;  // set nodes never move: their c_str() stays valid
  std::lock_guard<std::mutex> lock(mu);
  return names.insert(name).first->c_str();
}

bool pytorch_runs_native_batchnorm(const KernelDesc& k) {
  return k.kind == KernelKind::BatchNorm && k.math == MathMode::BF16 && k.format == MemoryFormat::Contiguous;
}

bool is_compiled_pool(const KernelDesc& k) {
  if (k.kind != KernelKind::Pool) return false;
  const std::string v = k.variant;
  return v == kInductorMaxPool || v == kInductorAvgPool;
}

bool pytorch_runs_native_depthwise(const KernelDesc& k) {
  const int64_t channels = k.shape[1], groups = k.shape[13];
  return k.kind == KernelKind::Conv2d && groups > 1 && groups == channels && k.format == MemoryFormat::Contiguous &&
         k.math != MathMode::FP16;
}

const char* kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Conv2d: return "conv2d";
    case KernelKind::Gemm: return "gemm";
    case KernelKind::BatchNorm: return "batchnorm";
    case KernelKind::Activation: return "activation";
    case KernelKind::Pool: return "pool";
    case KernelKind::Add: return "add";
    case KernelKind::Concat: return "concat";
    case KernelKind::Dropout: return "dropout";
    case KernelKind::SoftmaxCE: return "softmax_ce";
    case KernelKind::SgdUpdate: return "sgd_update";
    case KernelKind::Eltwise: return "eltwise";
    case KernelKind::AdamUpdate: return "adam_update";
    case KernelKind::LayerNorm: return "layernorm";
    case KernelKind::Attention: return "attention";
    case KernelKind::Embedding: return "embedding";
  }
  return "?";
}

const char* pass_name(Pass p) {
  switch (p) {
    case Pass::Fwd: return "fwd";
    case Pass::BwdData: return "bwd_data";
    case Pass::BwdFilter: return "bwd_filter";
    case Pass::BwdWeight: return "bwd_weight";
    case Pass::Bwd: return "bwd";
    case Pass::Update: return "update";
  }
  return "?";
}

const char* memory_format_name(MemoryFormat f) { return f == MemoryFormat::ChannelsLast ? "channels_last" : "contiguous"; }

std::optional<MemoryFormat> parse_memory_format(const std::string& name) {
  for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
    if (name == memory_format_name(f)) return f;
  return std::nullopt;
}

const char* optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::AdamW: return "adamw";
    case Optimizer::Adam: return "adam";
  }
  return "?";
}

std::optional<Optimizer> parse_optimizer(const std::string& name) {
  for (Optimizer o : {Optimizer::Sgd, Optimizer::AdamW, Optimizer::Adam})
    if (name == optimizer_name(o)) return o;
  return std::nullopt;
}

const char* execution_name(Execution e) {
  switch (e) {
    case Execution::Eager: return "eager";
    case Execution::CudaGraphs: return "cuda-graphs";
    case Execution::Compile: return "compile";
    case Execution::CompileCudaGraphs: return "compile-cuda-graphs";
  }
  return "?";
}

std::optional<Execution> parse_execution(const std::string& name) {
  for (Execution e : {Execution::Eager, Execution::CudaGraphs, Execution::Compile, Execution::CompileCudaGraphs})
    if (name == execution_name(e)) return e;
  return std::nullopt;
}

std::optional<KernelKind> parse_kind(const std::string& name) {
  for (int i = 0; i < kKernelKinds; ++i)
    if (name == kind_name(static_cast<KernelKind>(i))) return static_cast<KernelKind>(i);
  return std::nullopt;
}

std::optional<Pass> parse_pass(const std::string& name) {
  for (int i = 0; i < kPasses; ++i)
    if (name == pass_name(static_cast<Pass>(i))) return static_cast<Pass>(i);
  return std::nullopt;
}

MathMode math_mode_for(KernelKind kind, Precision p) {
  const bool sixteen = p == Precision::BF16 || p == Precision::FP16;
  const MathMode sixteen_mode = p == Precision::BF16 ? MathMode::BF16 : MathMode::FP16;
  switch (kind) {
    case KernelKind::Conv2d:  // cuDNN's allow_tf32 is on by default: TF32 under fp32 and tf32 alike
      return sixteen ? sixteen_mode : MathMode::TF32;
    case KernelKind::Gemm:  // cuBLAS's matmuls run in TF32 only when asked to
    // scaled_dot_product_attention: flash attention in bf16/fp16; in fp32 (which flash attention does
    // not take) the memory-efficient kernel, whose FP32 matmuls are no faster than cuBLAS's strict ones.
    case KernelKind::Attention:
      return sixteen ? sixteen_mode : p == Precision::TF32 ? MathMode::TF32 : MathMode::FP32;
    case KernelKind::LayerNorm:  // layer_norm is on autocast's FP32 list: it runs (and writes) FP32
    case KernelKind::Embedding:  // not autocast: it gathers rows of the FP32 weight into an FP32 output
    case KernelKind::SgdUpdate:  // the optimizer updates the FP32 parameters
    case KernelKind::AdamUpdate:
      return MathMode::FP32;
    // The loss too: cross_entropy is on autocast's FP32 list, yet PyTorch 2.11 runs log_softmax and its
    // backward on the 16-bit logits (torch.profiler: cunn_SoftMaxForward<8, BFloat16, float, BFloat16>
    // in gpt2_small, bert_base and vit_b_16 steps, validation/data/h100-sxm/kernel_profile/transformers).
    default:  // memory-bound kernels, on CUDA cores in the activations' type
      return sixteen ? sixteen_mode : MathMode::FP32;
  }
}

int batch_shape_field(const KernelDesc& k) {
  switch (k.kind) {
    case KernelKind::Gemm: return k.pass == Pass::BwdWeight ? 2 : 0;  // {out_f, in_f, rows} against {rows, ...}
    case KernelKind::Eltwise:
    case KernelKind::SgdUpdate:
    case KernelKind::AdamUpdate: return -1;
    default: return 0;  // N, rows or elements
  }
}

const std::vector<const char*>& kernel_shape_fields(KernelKind k) {
  static const std::vector<const char*> conv = {"N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "groups"};
  static const std::vector<const char*> gemm = {"M", "N", "K", "transA", "transB"};
  static const std::vector<const char*> nchw = {"N", "C", "H", "W"};
  static const std::vector<const char*> pool = {"N", "C", "H", "W", "R", "S", "stride", "pad", "P", "Q"};
  static const std::vector<const char*> add = {"elements", "inputs"};
  static const std::vector<const char*> elems = {"elements"};
  static const std::vector<const char*> ce = {"N", "classes"};
  static const std::vector<const char*> params = {"params"};
  static const std::vector<const char*> eltwise = {"read", "written"};
  static const std::vector<const char*> layernorm = {"rows", "features"};
  static const std::vector<const char*> attention = {"N", "heads", "T", "head_dim", "causal"};
  static const std::vector<const char*> embedding = {"rows", "dim", "num_embeddings"};
  switch (k) {
    case KernelKind::Conv2d: return conv;
    case KernelKind::Gemm: return gemm;
    case KernelKind::BatchNorm: return nchw;
    case KernelKind::Pool: return pool;
    case KernelKind::Add: return add;
    case KernelKind::SoftmaxCE: return ce;
    case KernelKind::SgdUpdate:
    case KernelKind::AdamUpdate: return params;
    case KernelKind::Eltwise: return eltwise;
    case KernelKind::LayerNorm: return layernorm;
    case KernelKind::Attention: return attention;
    case KernelKind::Embedding: return embedding;
    default: return elems;
  }
}

int element_bytes(MathMode m) { return (m == MathMode::BF16 || m == MathMode::FP16) ? 2 : 4; }

// LayerNorm over the last dimension (PyTorch's vectorized_layer_norm_kernel and its backward), in FP32
// under autocast. Forward: per row a mean and a variance, then (x - mean) * rstd * weight + bias, about 8
// operations per element; it reads x and writes y, plus mean and rstd (FP32) per row. Backward: dx
// (two row reductions of dy * weight and dy * x_hat, then the combination) and the weight and bias
// gradients (column reductions of dy * x_hat and dy), about 12 operations per element; at least
// dy and x read and dx written once, mean and rstd read, the weight read and its two gradients written.
static void set_layernorm_cost(KernelDesc& k) {
  const auto& s = k.shape;
  const double eb = element_bytes(k.math), rows = static_cast<double>(s[0]), f = static_cast<double>(s[1]), e = rows * f;
  const bool fwd = k.pass == Pass::Fwd;
  k.flops = (fwd ? 8.0 : 12.0) * e;
  k.bytes = (fwd ? 2.0 : 3.0) * e * eb + 2.0 * rows * 4 + (fwd ? 2.0 : 3.0) * f * 4;
}

// Flash attention (FlashAttention-2, what scaled_dot_product_attention runs in bf16/fp16 on Hopper):
// one fused kernel per pass over N x heads x T x head_dim tensors.
//   FLOPs: forward QK^T and PV, 2 x 2 N H T^2 d = 4 N H T^2 d; backward recomputes QK^T and computes
//   dV, dP, dQ, dK: 5 products, 10 N H T^2 d (2.5x the forward, as the FlashAttention-2 paper counts).
//   Causal: flash attention skips the blocks above the diagonal, so both passes do about half the
//   work; counted as exactly half (the diagonal blocks, computed whole, add T/block of it).
//   Bytes, as flash attention moves them (never the T x T scores, which stay on chip): forward reads
//   q, k, v and writes o and the logsumexp (FP32, one per row and head); backward reads q, k, v, o,
//   dO and the logsumexp and writes dq, dk, dv (its FP32 dq accumulator and the rowsum(dO * o)
//   preprocessing are left out: a floor, not an estimate of them).
static void set_attention_cost(KernelDesc& k) {
  const auto& s = k.shape;
  const double eb = element_bytes(k.math), n = static_cast<double>(s[0]), h = static_cast<double>(s[1]), t = static_cast<double>(s[2]),
               d = static_cast<double>(s[3]);
  const bool fwd = k.pass == Pass::Fwd;
  const double causal = s[4] ? 0.5 : 1.0;
  const double qkvo = n * h * t * d, lse = n * h * t * 4;
  k.flops = (fwd ? 4.0 : 10.0) * n * h * t * t * d * causal;
  k.bytes = fwd ? 4.0 * qkvo * eb + lse : 8.0 * qkvo * eb + lse;
}

// nn.Embedding (FP32 weight; ids int64). Forward: a gather of `rows` rows of `dim` from the table,
// reading the ids and the rows, writing the output. Backward (embedding_dense_backward): the weight
// gradient is a num_embeddings x dim FP32 tensor, zero-filled, into which each row of dY is added at
// its id (PyTorch sorts the ids and sums each id's rows first); at least dY and the ids read and the
// whole gradient written; one add per element of dY.
static void set_embedding_cost(KernelDesc& k) {
  const auto& s = k.shape;
  const double rows = static_cast<double>(s[0]), dim = static_cast<double>(s[1]), table = static_cast<double>(s[2]) * dim;
  if (k.pass == Pass::Fwd) {
    k.flops = 0;
    k.bytes = rows * 8 + 2.0 * rows * dim * 4;
  } else {
    k.flops = rows * dim;
    k.bytes = rows * 8 + rows * dim * 4 + table * 4;
  }
}

void set_cost(KernelDesc& k) {
  const auto& s = k.shape;
  const double eb = element_bytes(k.math);
  const bool fwd = k.pass == Pass::Fwd;
  switch (k.kind) {
    case KernelKind::Conv2d: {
      double n = s[0], c = s[1], h = s[2], w = s[3], kk = s[4], R = s[5], S = s[6], g = s[13];
      double p_out = static_cast<double>((s[2] + 2 * s[9] - s[11] * (s[5] - 1) - 1) / s[7] + 1);
      double q_out = static_cast<double>((s[3] + 2 * s[10] - s[12] * (s[6] - 1) - 1) / s[8] + 1);
      double out = n * kk * p_out * q_out, weights = kk * (c / g) * R * S;
      // Every pass does the forward's multiply-accumulates: dX = conv^T(dY, W), dW = corr(X, dY).
      k.flops = 2.0 * out * (c / g) * R * S;
      k.bytes = (n * c * h * w + out + weights) * eb;
      break;
    }
    case KernelKind::Gemm: {
      double m = s[0], n = s[1], kk = s[2];
      k.flops = 2.0 * m * n * kk;
      k.bytes = (m * kk + kk * n + m * n) * eb;
      break;
    }
    case KernelKind::BatchNorm: {
      // Training forward: statistics and normalisation; backward: two reductions and dx.
      double e = static_cast<double>(s[0]) * s[1] * s[2] * s[3];
      k.flops = (fwd ? 8.0 : 12.0) * e;
      k.bytes = (fwd ? 2.0 : 3.0) * e * eb;
      break;
    }
    case KernelKind::Activation:
      k.flops = static_cast<double>(s[0]);
      k.bytes = (fwd ? 2.0 : 3.0) * s[0] * eb;  // backward reads the output (or input) and dY
      break;
    case KernelKind::Pool: {
      double in = static_cast<double>(s[0]) * s[1] * s[2] * s[3], out = static_cast<double>(s[0]) * s[1] * s[8] * s[9];
      k.flops = out * s[4] * s[5];
      k.bytes = (in + out) * eb;
      break;
    }
    case KernelKind::Add:
      // Forward sums `inputs` tensors; backward is a gradient accumulation where a tensor fans out.
      k.flops = static_cast<double>(s[0]) * (fwd ? s[1] - 1 : 1);
      k.bytes = static_cast<double>(s[0]) * (fwd ? s[1] + 1 : 3) * eb;
      break;
    case KernelKind::Concat:
      k.flops = 0;
      k.bytes = 2.0 * s[0] * eb;
      break;
    case KernelKind::Dropout:  // a one-byte mask per element
      k.flops = (fwd ? 2.0 : 1.0) * s[0];
      k.bytes = static_cast<double>(s[0]) * (2 * eb + 1);
      break;
    case KernelKind::SoftmaxCE: {
      double e = static_cast<double>(s[0]) * s[1];
      k.flops = (fwd ? 5.0 : 2.0) * e;
      k.bytes = 2.0 * e * element_bytes(k.math);  // the logits read, the log-probabilities (or their gradient) written
      break;
    }
    case KernelKind::SgdUpdate:
      // SGD with momentum on FP32 parameters: read parameter, gradient and momentum, write parameter
      // and momentum.
      k.flops = 4.0 * s[0];
      k.bytes = 20.0 * s[0];
      break;
    case KernelKind::Eltwise:  // one operation per element written
      k.flops = static_cast<double>(s[1]);
      k.bytes = static_cast<double>(s[0] + s[1]) * eb;
      break;
    case KernelKind::AdamUpdate:
      // Adam(W) on FP32 parameters, fused: read parameter, gradient and both moments, write parameter
      // and moments. A framework that runs it as separate multi-tensor passes moves more
      // (FrameworkHostCosts::optimizer_bytes_per_param).
      k.flops = 12.0 * s[0];
      k.bytes = 28.0 * s[0];
      break;
    case KernelKind::LayerNorm: set_layernorm_cost(k); break;
    case KernelKind::Attention: set_attention_cost(k); break;
    case KernelKind::Embedding: set_embedding_cost(k); break;
  }
}

// Autocast's dtype flow (bf16/fp16): embeddings (FP32 weight gathers), the positions' and the class
// token's FP32 tables and layernorms produce FP32; convolutions, linear layers and attention
// produce 16 bits; an op of several inputs promotes to the widest (an FP32 + bf16 add is FP32) and the
// rest keep their input's type. The model input counts as 16-bit (the first conv's cast is not
// costed), so a CNN has no FP32 activation. Under fp32/tf32 every entry is false.
std::vector<bool> autocast_fp32_outputs(const Graph& g, Precision p) {
  std::vector<bool> f(g.layers.size(), false);
  if (p != Precision::BF16 && p != Precision::FP16) return f;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    switch (l.op) {
      case Op::Embedding: case Op::PositionalEmbedding: case Op::ClassToken: case Op::LayerNorm: f[i] = true; break;
      case Op::Conv2d: case Op::Linear: case Op::Attention: break;
      default:
        for (int j : l.inputs) f[i] = f[i] || (j >= 0 && f[j]);
    }
  }
  return f;
}

// nn.MultiheadAttention (batch_first) hands its output back as a B x T x C view of a T x B x C
// tensor, and the residual stream keeps that layout: the out_proj, dropouts and adds after it take
// their input's layout (an add its first operand's). Per layer: its output is such a permuted view.
// LayerNorm writes a contiguous output. Elsewhere (and with no such attention) every entry is false.
std::vector<bool> permuted_outputs(const Graph& g) {
  std::vector<bool> p(g.layers.size(), false);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    switch (l.op) {
      case Op::Attention: p[i] = l.mha_layout; break;
      case Op::Linear: case Op::Dropout: case Op::Activation: case Op::Add:
        for (int j : l.inputs) p[i] = p[i] || (j >= 0 && p[j]);
        break;
      default: break;
    }
  }
  return p;
}

namespace {

struct Lowering {
  const Graph& g;
  int64_t n;  // batch
  Precision prec;
  StepMode mode;
  IterationKernels out;
  std::vector<std::vector<KernelDesc>> pending_backward;
  std::vector<std::vector<KernelDesc>> grad_accum;
  std::vector<bool> requires_grad;  // per layer: its output depends on a parameter
  std::vector<bool> fp32;           // per layer: its output is FP32 under autocast
  std::vector<bool> permuted;       // per layer: its output is a permuted view (permuted_outputs)

  static KernelDesc make(KernelKind kind, Pass pass, MathMode m, int layer, std::initializer_list<int64_t> shape, const char* variant = "") {
    KernelDesc k{kind, pass, m, layer, {}, variant, 0, 0};
    int i = 0;
    for (int64_t v : shape) k.shape[i++] = v;
    set_cost(k);
    return k;
  }

  // A layer over images (a spatial extent in or out): the layers whose tensors channels_last lays out
  // as NHWC. Vectors (N x F, after the flatten) have one layout only.
  bool over_images(int li) const {
    const Layer& l = g.layers[li];
    bool spatial = l.out.spatial();
    for (const Shape& x : l.in) spatial = spatial || x.spatial();
    return spatial;
  }

  // Inductor lays out a network with convolutions channels_last whatever its inputs' format
  // (torch._inductor.config.layout_optimization, on by default): under torch.compile, the resnet50
  // profile's convolutions are cuDNN's NHWC kernels without the NCHW transposes.
  bool channels_last() const { return mode.memory_format == MemoryFormat::ChannelsLast || inductor_compiled(mode.execution); }

  // A kernel in the math its kind runs in at the training precision, on the activations' layout.
  KernelDesc kernel(KernelKind kind, Pass pass, int layer, std::initializer_list<int64_t> shape, const char* variant = "",
                    bool dtype_flow = true) const {
    const bool activation_kernel = kind != KernelKind::Gemm && kind != KernelKind::SoftmaxCE && kind != KernelKind::SgdUpdate &&
                                   kind != KernelKind::AdamUpdate && kind != KernelKind::Attention && kind != KernelKind::Embedding &&
                                   kind != KernelKind::LayerNorm;
    // A memory-bound kernel of a layer with an FP32 output under autocast (a residual add, a dropout
    // on the FP32 stream, their gradients) runs in FP32.
    const bool wide = dtype_flow && activation_kernel && layer >= 0 && fp32[layer];
    KernelDesc k = make(kind, pass, wide ? MathMode::FP32 : math_mode_for(kind, prec), layer, shape, variant);
    if (channels_last() && activation_kernel && layer >= 0 && over_images(layer)) k.format = MemoryFormat::ChannelsLast;
    return k;
  }

  // cuDNN and cuBLAS leave the bias out (PyTorch 2.x: cudnn_convolution then output.add_(bias);
  // grad_bias = grad_output.sum over all but the channel dimension), so a layer with a bias runs two
  // more memory-bound kernels: a broadcast add over its output and a reduction of its output gradient.
  // They cost as much as a ReLU on vgg16's first layers.
  void bias_kernels(int li, int64_t out_el, int64_t channels, std::vector<KernelDesc>& bw) {
    out.forward.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {out_el + channels, out_el}, "bias_add"));
    bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {out_el, channels}, "bias_grad"));
  }

  // Autocast (bf16/fp16) keeps FP32 weights: each matmul layer reads a 16-bit copy of its weight,
  // cast in the forward pass, and the 16-bit weight gradient is cast back to FP32 in the backward
  // pass (ToCopyBackward). Both are memory-bound kernels over the weight; FP32 eltwise with the 16-bit
  // side counted as half as many elements gives their bytes (4 + 2 per weight). On vgg16's 103 M-weight
  // classifier.0 the gradient cast takes longer than the layer's two GEMMs.
  void autocast_kernels(int li, int64_t weights, std::vector<KernelDesc>& bw) {
    if (prec != Precision::BF16 && prec != Precision::FP16) return;
    const int64_t half = (weights + 1) / 2;
    out.forward.push_back(make(KernelKind::Eltwise, Pass::Fwd, MathMode::FP32, li, {weights, half}, "autocast"));
    bw.push_back(make(KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, li, {half, weights}, "autocast"));
  }

  void conv2d(int li, bool input_needs_grad, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const Shape& x = l.in[0];
    std::initializer_list<int64_t> s = {n, x.c, x.h, x.w, l.out_channels, l.kh, l.kw, l.sh, l.sw, l.ph, l.pw, l.dh, l.dw, l.groups};
    std::vector<KernelDesc> casts;
    autocast_kernels(li, l.weight_params(), casts);
    out.forward.push_back(kernel(KernelKind::Conv2d, Pass::Fwd, li, s));
    if (input_needs_grad) bw.push_back(kernel(KernelKind::Conv2d, Pass::BwdData, li, s));
    bw.push_back(kernel(KernelKind::Conv2d, Pass::BwdFilter, li, s));
    for (auto& k : casts) bw.push_back(k);
    if (l.bias) bias_kernels(li, n * l.out.elements(), l.out_channels, bw);
  }

  void linear(int li, bool input_needs_grad, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const int64_t in_f = l.in[0].c, out_f = l.out_features;
    // Row-major view of nn.Linear: Y = X W^T, dX = dY W, dW = dY^T X. On a sequence the rows are the
    // batch's tokens, [B*T, in] (F.linear folds a contiguous 3-D input to 2-D for addmm): in cuBLAS's
    // terms forward M = out, N = B*T, K = in (validation/README.md, "GEMMs as nn.Linear issues them").
    const int64_t rows = n * l.in[0].tokens();
    std::vector<KernelDesc> casts;
    autocast_kernels(li, l.matmul_weight_elements(), casts);  // a tied weight is cast all the same
    // An FP32 input (the residual stream's layernorm) is cast to 16 bits for the GEMM (FP32 eltwise,
    // the 16-bit side as half the elements: 4 + 2 bytes each), and its 16-bit gradient back to FP32.
    // Inductor fuses the cast into the kernel that produces the input.
    const int64_t in_el = n * l.in[0].elements(), half = (in_el + 1) / 2;
    const bool cast = l.inputs[0] >= 0 && fp32[l.inputs[0]] && !inductor_compiled(mode.execution);
    if (cast) out.forward.push_back(make(KernelKind::Eltwise, Pass::Fwd, MathMode::FP32, li, {in_el, half}, "autocast_cast"));
    out.forward.push_back(kernel(KernelKind::Gemm, Pass::Fwd, li, {rows, out_f, in_f, 0, 1}));
    if (input_needs_grad) bw.push_back(kernel(KernelKind::Gemm, Pass::BwdData, li, {rows, in_f, out_f, 0, 0}));
    if (input_needs_grad && cast) bw.push_back(make(KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, li, {half, in_el}, "autocast_cast"));
    bw.push_back(kernel(KernelKind::Gemm, Pass::BwdWeight, li, {out_f, in_f, rows, 1, 0}));
    for (auto& k : casts) bw.push_back(k);
    if (l.bias) bias_kernels(li, n * l.out.elements(), out_f, bw);
  }

  void pool(int li, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const Shape& x = l.in[0];
    int64_t r = l.kh, s = l.kw, st = l.sh, pad = l.ph;
    if (l.op == Op::AdaptiveAvgPool2d) {  // PyTorch's adaptive windows: at most ceil(in/out) wide
      r = (x.h + l.out_h - 1) / l.out_h;
      s = (x.w + l.out_w - 1) / l.out_w;
      st = x.h / l.out_h;
      pad = 0;
    }
    const char* mode = l.op == Op::MaxPool2d ? "max" : "avg";
    if (compiled_pool(l)) mode = l.op == Op::MaxPool2d ? kInductorMaxPool : kInductorAvgPool;
    std::initializer_list<int64_t> sh = {n, x.c, x.h, x.w, r, s, st, pad, l.out.h, l.out.w};
    out.forward.push_back(kernel(KernelKind::Pool, Pass::Fwd, li, sh, mode));
    bw.push_back(kernel(KernelKind::Pool, Pass::Bwd, li, sh, mode));
  }

  void residual_add(int li, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const int64_t out_el = n * l.out.elements();
    std::vector<KernelDesc>& fw = out.forward;
    // Backward of an add passes the gradient through: no kernel. The accumulation where a tensor
    // fans out is costed at the producer (layer()).
    KernelDesc add = kernel(KernelKind::Add, Pass::Fwd, li, {out_el, static_cast<int64_t>(l.in.size())}, add_variant(li));
    // Under autocast the residual add of a 16-bit branch into the FP32 stream reads that input at
    // 2 bytes an element, not the FP32 kernel's 4 (the model input counts as 16-bit).
    // Its backward then casts the FP32 gradient to the branch's 16 bits (autograd gives each input a
    // gradient of its own dtype: the profiles' bfloat16_copy kernels, one per residual add).
    if (fp32[li])
      for (int j : l.inputs)
        if (j < 0 || !fp32[j]) {
          add.bytes -= 2.0 * static_cast<double>(out_el);
          if (j >= 0 && requires_grad[j])
            bw.push_back(make(KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, li, {out_el, (out_el + 1) / 2}, "autocast_cast"));
        }
    fw.push_back(add);
  }

  // Operands of different layouts (a permuted residual stream and a contiguous branch) make ATen run
  // its strided add, slower still when the operand read out of order is FP32.
  const char* add_variant(int li) const {
    const char* strided = "";
    for (int j : g.layers[li].inputs)
      if (permuted[li] && !(j >= 0 && permuted[j]))
        strided = (prec != Precision::BF16 && prec != Precision::FP16) || (j >= 0 && fp32[j]) ? "strided_wide" : "strided";
    return strided;
  }

  // scaled_dot_product_attention, and nn.MultiheadAttention's layout copies around it.
  void attention(int li, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const Shape& x = l.in[0];
    const int64_t in_el = n * x.elements(), out_el = n * l.out.elements();
    const int64_t heads = l.num_heads, head_dim = l.attention_width() / l.num_heads;
    // Dropout inside flash attention (philox per score) runs at about 40% of its rate without
    // (validation/data/h100-sxm/kernels_transformer: bf16 forward 150-190 against 350-500 TFLOP/s).
    // nn.MultiheadAttention (batch_first) in training: F.multi_head_attention_forward transposes its
    // input to T x B x C (a strided copy), makes the packed q, k, v contiguous (3C) and permutes
    // the output back (C); backward copies the gradients alike (the vit_b_16 profile's direct_copy
    // kernels). Its in_proj bias add is the linear layer's bias_add.
    // Under torch.compile none of these copies run as kernels of their own: Inductor reads and writes
    // the permuted layouts inside its generated kernels (vit_b_16's compiled profile on one H200 has
    // no direct_copy, fill or add kernel of them; validation/data/h200-sxm/pytorch_transformers/compile),
    // whose time the profile's contiguous inductor_* factors carry.
    const int64_t c = in_el / static_cast<int64_t>(l.in.size() == 1 ? 3 : 1);
    const bool copies = !inductor_compiled(mode.execution);
    if (l.mha_layout && copies) {
      out.forward.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {c, c}, "mha_input_transpose"));
      out.forward.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {in_el, in_el}, "mha_qkv_contiguous"));
      // The output's gradient arrives in the FP32 stream's layout and is made contiguous first (the
      // profile's third strided FP32 copy per layer in backward, beside the two LayerNorms').
      bw.push_back(make(KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, li, {out_el, out_el}, "permuted_stream_copy"));
      bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {out_el, out_el}, "mha_output_permute"));
    }
    both_passes(KernelKind::Attention, li, {n, heads, x.h, head_dim, l.causal ? 1 : 0}, bw, l.dropout_p > 0 ? "dropout" : "");
    // q, k and v split from one packed projection (GPT-2's c_attn): the backward concatenates their
    // gradients into the packed one (the profile's CatArrayBatchedCopy, one per layer).
    if (!l.mha_layout && l.in.size() == 1 && copies) bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {in_el, in_el}, "qkv_split_grad"));
    if (l.mha_layout && l.in.size() == 1 && copies) {
      // q, k and v are selected from the packed in_proj output; each select's backward zero-fills
      // a gradient of the packed size and copies its slice in, and the three are summed (the
      // vit_b_16 profile: 3 fills, 3 device copies, 2 adds per layer, at the attention's dtype).
      for (int i = 0; i < 3; ++i) {
        bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {0, in_el}, "mha_qkv_grad_fill"));
        bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {c, c}, "mha_qkv_grad_copy"));
      }
      for (int i = 0; i < 2; ++i) bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {2 * in_el, in_el}, "mha_qkv_grad_add"));
    }
    if (l.mha_layout && copies) {
      out.forward.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {out_el, out_el}, "mha_output_permute"));
      bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {in_el, in_el}, "mha_qkv_contiguous"));
      bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {c, c}, "mha_input_transpose"));
    }
  }

  void layernorm(int li, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const Shape& x = l.in[0];
    const int64_t in_el = n * x.elements();
    // On a permuted residual stream LayerNorm first makes its input contiguous (ATen's strided copy,
    // validation/data/h100-sxm/op_times/strided_eltwise.csv); its gradient goes back alike.
    const bool copy = l.inputs[0] >= 0 && permuted[l.inputs[0]] && !inductor_compiled(mode.execution);  // Inductor reads it strided
    if (copy) out.forward.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {in_el, in_el}, "permuted_stream_copy"));
    both_passes(KernelKind::LayerNorm, li, {n * x.tokens(), x.c}, bw);
    if (copy) bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {in_el, in_el}, "permuted_stream_copy"));
  }

  // The transformer layers (docs/transformers.md). Token counts: rows = batch x tokens.
  void transformer_kernels(int li, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const Shape& x = l.in[0];
    const int64_t in_el = n * x.elements(), out_el = n * l.out.elements();
    switch (l.op) {
      case Op::Embedding: {
        both_passes(KernelKind::Embedding, li, {n * x.h, l.embedding_dim, l.num_embeddings}, bw);
        // A weight tied to a later linear layer (GPT-2's wte and lm_head) gets two gradients: the
        // linear's, computed first in the backward pass and kept as .grad, and this one, which
        // AccumulateGrad adds to it: one FP32 add over the whole table.
        for (const Layer& other : g.layers)
          if (other.tied_to == li)
            bw.push_back(make(KernelKind::Add, Pass::Bwd, MathMode::FP32, li, {l.num_embeddings * l.embedding_dim, 2}));
        break;
      }
      case Op::PositionalEmbedding: {
        // x + P[:T], P broadcast over the batch; backward passes dY through to x (no kernel) and sums it
        // over the batch into P's gradient (its num_embeddings x C rows written, the unused ones zero).
        const int64_t table = l.num_embeddings * x.c;
        out.forward.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {in_el + x.h * x.c, out_el}, "position_add"));
        bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {out_el, table}, "position_grad"));
        break;
      }
      case Op::LayerNorm: layernorm(li, bw); break;
      case Op::Attention: attention(li, bw); break;
      case Op::ToSequence: break;  // reshape and permute: views (the class token's cat copies)
      case Op::ClassToken:
        // torch.cat([class_token.expand(B, -1, -1), x], dim=1): a copy of x and the token; backward
        // splits dY into dx and the token's gradient (summed over the batch).
        out.forward.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {in_el + x.c, out_el}, "class_token_cat"));
        bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {out_el, in_el + x.c}, "class_token_grad"));
        break;
      case Op::Select:
        // x[:, index] is a view; its backward (select_backward) writes a zero tensor of x's size with
        // the selected token's gradient in place.
        bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {out_el, in_el}, "select_backward"));
        break;
      default: break;
    }
  }

  // A forward and a backward kernel of one kind over the same shape.
  void both_passes(KernelKind kind, int li, std::initializer_list<int64_t> shape, std::vector<KernelDesc>& bw, const char* variant = "") {
    out.forward.push_back(kernel(kind, Pass::Fwd, li, shape, variant));
    bw.push_back(kernel(kind, Pass::Bwd, li, shape, variant));
  }

  // This layer's kernels: forward ones appended to out.forward, backward ones to bw in execution order.
  void layer_kernels(int li, bool input_needs_grad, std::vector<KernelDesc>& bw) {
    const Layer& l = g.layers[li];
    const Shape& x = l.in[0];
    const int64_t in_el = n * x.elements();
    const int64_t out_el = n * l.out.elements();
    std::vector<KernelDesc>& fw = out.forward;
    switch (l.op) {
      case Op::Conv2d: conv2d(li, input_needs_grad, bw); break;
      case Op::Linear: linear(li, input_needs_grad, bw); break;
      case Op::BatchNorm2d: both_passes(KernelKind::BatchNorm, li, {n, x.c, x.h, x.w}, bw); break;
      case Op::Activation: both_passes(KernelKind::Activation, li, {in_el}, bw, intern_variant(l.activation)); break;
      case Op::MaxPool2d:
      case Op::AvgPool2d:
      case Op::AdaptiveAvgPool2d: pool(li, bw); break;
      case Op::Add: residual_add(li, bw); break;
      case Op::Concat: both_passes(KernelKind::Concat, li, {out_el}, bw); break;
      case Op::Dropout: both_passes(KernelKind::Dropout, li, {in_el}, bw); break;
      case Op::Flatten:
      case Op::View:
        // A view, except of an NHWC image: flattening it to N x (C*H*W) in PyTorch's NCHW order needs
        // a contiguous copy (.reshape copies), and its gradient is copied back.
        if (channels_last() && x.spatial()) both_passes(KernelKind::Eltwise, li, {in_el, in_el}, bw, "channels_last_copy");
        break;
      case Op::Mul: {
        // y = a * b (b possibly a C x 1 x 1 gate); backward reads dy, a and b and writes da and db
        // (the gate's gradient reduced over H x W in the same pass).
        const int64_t a_el = n * l.in[0].elements(), b_el = n * l.in[1].elements();
        fw.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {a_el + b_el, out_el}, "mul"));
        bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {out_el + a_el + b_el, a_el + b_el}, "mul"));
        break;
      }
      case Op::Eltwise: {
        // Known only by its tensors: forward reads the inputs and writes the output, backward reads
        // the output's gradient and writes the inputs' gradients.
        int64_t in_all = 0;
        for (const auto& s : l.in) in_all += n * s.elements();
        fw.push_back(kernel(KernelKind::Eltwise, Pass::Fwd, li, {in_all, out_el}, intern_variant(l.source_op)));
        bw.push_back(kernel(KernelKind::Eltwise, Pass::Bwd, li, {out_el, in_all}, intern_variant(l.source_op)));
        break;
      }
      // A language model's loss: one row of class scores per token.
      case Op::SoftmaxCrossEntropy: {
        const int64_t rows = n * x.tokens(), el = rows * x.c, half = (el + 1) / 2;
        // Under autocast PyTorch 2.11 runs log_softmax on the 16-bit logits, casts the log-probabilities
        // to FP32 for nll_loss (on autocast's FP32 list); backward zero-fills an FP32 gradient, scatters
        // into it and casts it back to 16 bits for log_softmax's backward (torch.profiler, bert_base b32
        // T=512: 1.03 + 1.55 ms forward, 0.60 + 0.98 + 1.28 ms backward;
        // validation/data/h100-sxm/kernel_profile/transformers). FP32 eltwise, the 16-bit side counted
        // as half the elements. Under torch.compile Inductor generates the loss: left as one kernel each way.
        const bool casts = (prec == Precision::BF16 || prec == Precision::FP16) && !inductor_compiled(mode.execution);
        fw.push_back(kernel(KernelKind::SoftmaxCE, Pass::Fwd, li, {rows, x.c}));
        if (casts) {
          fw.push_back(make(KernelKind::Eltwise, Pass::Fwd, MathMode::FP32, li, {half, el}, "loss_cast"));
          bw.push_back(make(KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, li, {0, el}, "loss_grad_fill"));
          bw.push_back(make(KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, li, {el, half}, "loss_cast"));
        }
        bw.push_back(kernel(KernelKind::SoftmaxCE, Pass::Bwd, li, {rows, x.c}));
        break;
      }
      case Op::Embedding:
      case Op::PositionalEmbedding:
      case Op::LayerNorm:
      case Op::Attention:
      case Op::ToSequence:
      case Op::ClassToken:
      case Op::Select: transformer_kernels(li, bw); break;
    }
  }

  void layer(int li) {
    const Layer& l = g.layers[li];
    // Autograd computes a gradient only for tensors that depend on a parameter: the network's input
    // and anything derived from it by parameter-free layers (a flatten, a pooling) need none.
    bool input_needs_grad = false;
    for (int j : l.inputs) input_needs_grad = input_needs_grad || (j >= 0 && requires_grad[j]);
    requires_grad[li] = input_needs_grad || l.params() > 0 || l.tied_to >= 0;
    std::vector<KernelDesc> bw;  // this layer's backward kernels, in execution order
    layer_kernels(li, input_needs_grad, bw);
    if (!requires_grad[li]) return;  // no gradient flows here: no backward kernels
    // A tensor read by k layers gets k-1 gradient accumulations before its producer's backward; a
    // compiled pooling's backward kernel sums them itself (torch.profiler, compiled resnet50 b256 on one
    // H200: the stem pooling's backward kernel fuses the residual gradient's add).
    const int64_t out_el = n * l.out.elements();
    for (int c = 1; c < l.consumers && !compiled_pool(l); ++c) grad_accum[li].push_back(kernel(KernelKind::Add, Pass::Bwd, li, {out_el, 2}));
    pending_backward[li] = std::move(bw);
  }

  // Inductor (torch.compile) fuses each maximal run of memory-bound layers between convolutions and
  // matmuls (batchnorm, activations, adds, pooling, dropout, elementwise) into generated kernels: per
  // run, one reduction kernel for each training batchnorm's statistics and one pointwise kernel that
  // reads the run's inputs once and writes its outputs once; the backward pass alike (a reduction per
  // batchnorm over its input and output gradient, one pointwise kernel writing the input gradients).
  // torch.profiler, resnet50 b128 bf16 on one H100 under mode="reduce-overhead": 565 generated
  // kernels (triton_red_fused_* and triton_poi_fused_*) in place of the 843 batchnorm, elementwise
  // and pooling kernels of the eager channels_last step; the convolutions still cuDNN's
  // (validation/data/h100-sxm/pytorch_modes/profiles, docs/training-modes.md).
  // A transformer's layernorms fuse the same way with the residual adds and dropouts around them (one
  // reduction per layernorm, as per batchnorm); attention, embeddings and matmuls stay as they are.
  // A max or average pooling with a window runs under Inductor as a generated kernel of its own: the
  // layers in front write their output and the pooling reads it (torch.profiler, compiled resnet18 and
  // resnet50 b256 on one H200: the stem's pooling as triton_poi_fused_max_pool2d_with_indices kernels,
  // forward and backward, beside the batchnorm-ReLU ones; validation/data/h200-sxm/pytorch_modes/
  // compiled_pool). A global (adaptive) average pooling is a reduction and fuses as before.
  bool compiled_pool(const Layer& l) const {
    return inductor_compiled(mode.execution) && (l.op == Op::MaxPool2d || l.op == Op::AvgPool2d) && l.kh * l.kw > 1;
  }

  bool fusable(const Layer& l) const { return fusable(l.op) && !compiled_pool(l); }

  static bool fusable(Op op) {
    switch (op) {
      case Op::BatchNorm2d: case Op::Activation: case Op::Add: case Op::MaxPool2d: case Op::AvgPool2d:
      case Op::AdaptiveAvgPool2d: case Op::Dropout: case Op::Mul: case Op::Eltwise: case Op::LayerNorm: return true;
      default: return false;
    }
  }

  struct FusedRun {
    int64_t inputs_el = 0, outputs_el = 0, batchnorm_el = 0;
    int batchnorms = 0;
    int first = -1;
    // Only compiled poolings read what the run writes: without a batchnorm its backward (a ReLU's
    // threshold_backward) joins the pooling's backward kernel (torch.profiler, compiled vgg16 b64 on
    // one H200: triton_poi_fused_max_pool2d_with_indices_max_pool2d_with_indices_backward_threshold_backward).
    bool only_pools_read = true;
  };

  // Runs of consecutive fusable layers: run[li] is the layer's run index or -1.
  std::vector<FusedRun> fused_runs(std::vector<int>& run) const {
    const int L = static_cast<int>(g.layers.size());
    run.assign(L, -1);
    std::vector<FusedRun> runs;
    for (int i = 0; i < L; ++i) {
      if (!fusable(g.layers[i])) continue;
      if (i == 0 || run[i - 1] < 0) runs.push_back(FusedRun{0, 0, 0, 0, i, true});
      run[i] = static_cast<int>(runs.size()) - 1;
    }
    std::vector<std::vector<int>> readers(L);
    for (int i = 0; i < L; ++i)
      for (int j : g.layers[i].inputs)
        if (j >= 0) readers[j].push_back(i);
    std::vector<int> counted(L + 1, -1);  // an outside tensor read twice in a run is read once
    for (int i = 0; i < L; ++i) {
      if (run[i] < 0) continue;
      const Layer& l = g.layers[i];
      FusedRun& r = runs[run[i]];
      for (size_t k = 0; k < l.inputs.size(); ++k) {
        const int j = l.inputs[k];
        if (j >= 0 && run[j] == run[i]) continue;
        if (counted[j + 1] == run[i]) continue;
        counted[j + 1] = run[i];
        r.inputs_el += n * l.in[k].elements();
      }
      bool read_outside = readers[i].empty();
      for (int c : readers[i]) read_outside = read_outside || run[c] != run[i];
      for (int c : readers[i])
        if (run[c] != run[i] && !compiled_pool(g.layers[c])) r.only_pools_read = false;
      if (readers[i].empty()) r.only_pools_read = false;
      if (read_outside) r.outputs_el += n * l.out.elements();
      if (l.op == Op::BatchNorm2d || l.op == Op::LayerNorm) r.batchnorms++, r.batchnorm_el += n * l.in[0].elements();
    }
    return runs;
  }

  // The run's generated kernels for one pass, attached to its first layer.
  // Priced in the precision's activation type: Inductor's kernels mix the FP32 stream and 16-bit
  // tensors (and fuse the autocast casts), which the run's sums do not tell apart.
  void fused_kernels(const FusedRun& r, Pass pass, std::vector<KernelDesc>& to) const {
    if (pass == Pass::Bwd && r.batchnorms == 0 && r.only_pools_read) return;  // in the pooling's backward kernel
    const int64_t per_bn = r.batchnorms > 0 ? r.batchnorm_el / r.batchnorms : 0;
    for (int b = 0; b < r.batchnorms; ++b)  // statistics (fwd) or weight and bias gradients (bwd)
      to.push_back(kernel(KernelKind::Eltwise, pass, r.first, {pass == Pass::Fwd ? per_bn : 2 * per_bn, 0}, "inductor_reduction", false));
    if (pass == Pass::Fwd) to.push_back(kernel(KernelKind::Eltwise, pass, r.first, {r.inputs_el, r.outputs_el}, "inductor_pointwise", false));
    else to.push_back(kernel(KernelKind::Eltwise, pass, r.first, {r.outputs_el + r.inputs_el, r.inputs_el}, "inductor_pointwise", false));
  }

  // Inductor decomposes a convolution or matmul with a bias into the library call without it and a
  // bias add, which joins the pointwise kernel of the run that reads the output (the run reads that
  // output anyway); the bias gradient becomes a generated reduction over the output gradient.
  // torch.profiler, vgg16 b64 bf16 on one H200 under mode="reduce-overhead": forward kernels named
  // triton_poi_fused__to_copy_convolution_relu_*, backward triton_red_fused_convolution_backward_*,
  // and no bias kernels of their own (validation/data/h200-sxm/pytorch_modes/profiles).
  // bias_absorbed[li]: every reader of layer li's output is in a fused run, so its bias add is free.
  std::vector<bool> bias_absorbed(const std::vector<int>& run) const {
    const int L = static_cast<int>(g.layers.size());
    std::vector<int> readers(L, 0), fused_readers(L, 0);
    for (int i = 0; i < L; ++i)
      for (int j : g.layers[i].inputs)
        if (j >= 0) ++readers[j], fused_readers[j] += run[i] >= 0 ? 1 : 0;
    std::vector<bool> absorbed(L);
    for (int i = 0; i < L; ++i) absorbed[i] = readers[i] > 0 && fused_readers[i] == readers[i];
    return absorbed;
  }

  // Replaces the fusable layers' kernels in one pass's list with their runs' generated kernels, where
  // the run's first kernel stood; bias kernels as Inductor runs them (bias_absorbed).
  void fuse(std::vector<KernelDesc>& list, Pass pass, const std::vector<int>& run, const std::vector<FusedRun>& runs) const {
    std::vector<KernelDesc> fused;
    std::vector<bool> emitted(runs.size(), false);
    const std::vector<bool> absorbed = bias_absorbed(run);
    for (const KernelDesc& k : list) {
      const bool bias = k.kind == KernelKind::Eltwise && k.layer >= 0;
      if (bias && std::string(k.variant) == "bias_add" && absorbed[k.layer]) continue;
      if (bias && std::string(k.variant) == "bias_grad") {
        fused.push_back(kernel(KernelKind::Eltwise, pass, k.layer, {k.shape[0], k.shape[1]}, "inductor_bias_grad", false));
        continue;
      }
      const int r = k.layer >= 0 && k.layer < static_cast<int>(run.size()) ? run[k.layer] : -1;
      const bool own = r >= 0 && !(k.kind == KernelKind::Eltwise && std::string(k.variant) == "autocast");
      if (!own) {
        fused.push_back(k);
        continue;
      }
      if (!emitted[r]) fused_kernels(runs[r], pass, fused);
      emitted[r] = true;
    }
    list = std::move(fused);
  }

  void run() {
    const int L = static_cast<int>(g.layers.size());
    pending_backward.assign(L, {});
    grad_accum.assign(L, {});
    requires_grad.assign(L, false);
    fp32 = autocast_fp32_outputs(g, prec);
    permuted = permuted_outputs(g);
    for (int i = 0; i < L; ++i) layer(i);
    for (int i = L - 1; i >= 0; --i) {
      for (auto& k : grad_accum[i]) out.backward.push_back(k);
      for (auto& k : pending_backward[i]) out.backward.push_back(k);
    }
    if (inductor_compiled(mode.execution)) {
      std::vector<int> run;
      const std::vector<FusedRun> runs = fused_runs(run);
      fuse(out.forward, Pass::Fwd, run, runs);
      fuse(out.backward, Pass::Bwd, run, runs);
    }
    // fp16 autocast trains with torch.amp.GradScaler: the loss is multiplied by the scale before the
    // backward pass; before the optimizer, one multi-tensor kernel unscales every FP32 gradient and
    // checks it for inf/NaN (reads and writes each gradient), the host reads the flag back, and a small
    // kernel updates the scale (torch.profiler on one H100, resnet50 b64: the loss multiply, 3
    // multi_tensor_apply launches over 25.6 M gradients taking 98 us, amp_update_scale_cuda_kernel).
    int64_t all_params = 0;
    for (int i = 0; i < L; ++i) all_params += g.layers[i].params();
    const bool grad_scaler = prec == Precision::FP16 && all_params > 0;
    if (grad_scaler) {
      out.forward.push_back(make(KernelKind::Eltwise, Pass::Fwd, MathMode::FP32, L - 1, {1, 1}, "amp_scale_loss"));
      out.update.push_back(make(KernelKind::Eltwise, Pass::Update, MathMode::FP32, L - 1, {all_params, all_params}, "amp_unscale"));
      out.update_host_sync_after = out.update.size();
    }
    // One optimizer kernel per layer's parameters: SGD with momentum, or foreach Adam's passes.
    for (int i = 0; i < L; ++i) {
      const int64_t p = g.layers[i].params();
      if (p <= 0) continue;
      if (mode.optimizer == Optimizer::Sgd) out.update.push_back(kernel(KernelKind::SgdUpdate, Pass::Update, i, {p}));
      else out.update.push_back(kernel(KernelKind::AdamUpdate, Pass::Update, i, {p}, optimizer_name(mode.optimizer)));
    }
    if (grad_scaler) out.update.push_back(make(KernelKind::Eltwise, Pass::Update, MathMode::FP32, L - 1, {1, 1}, "amp_update_scale"));
  }
};

}  // namespace

IterationKernels lower_iteration(const Graph& g, int64_t batch, Precision p, const StepMode& mode) {
  Lowering low{g, batch, p, mode, {}, {}, {}, {}, {}, {}};
  low.run();
  low.out.batch = batch;
  low.out.precision = p;
  if (mode.execution == Execution::Compile) {
    StepMode eager = mode;
    eager.execution = Execution::Eager;
    IterationKernels e = lower_iteration(g, batch, p, eager);
    low.out.eager_forward = std::move(e.forward);
    low.out.eager_backward = std::move(e.backward);
  }
  return std::move(low.out);
}

}  // namespace dtsim
