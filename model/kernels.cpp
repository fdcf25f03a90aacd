#include "model/kernels.hpp"

#include "common/error.hpp"

namespace dtsim {

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "tf32") return Precision::TF32;
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  throw InputError("--precision", "unknown precision '" + s + "' (fp32, tf32, bf16, fp16)");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
  }
  return "?";
}

const char* math_name(MathMode m) {
  static const char* n[] = {"fp32", "tf32", "bf16", "fp16"};
  return n[static_cast<int>(m)];
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

const std::vector<const char*>& kernel_shape_fields(KernelKind k) {
  static const std::vector<const char*> conv = {"N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "groups"};
  static const std::vector<const char*> gemm = {"M", "N", "K", "transA", "transB"};
  static const std::vector<const char*> nchw = {"N", "C", "H", "W"};
  static const std::vector<const char*> pool = {"N", "C", "H", "W", "R", "S", "stride", "pad"};
  static const std::vector<const char*> elems = {"elements"};
  static const std::vector<const char*> ce = {"N", "classes"};
  static const std::vector<const char*> params = {"params"};
  switch (k) {
    case KernelKind::Conv2d: return conv;
    case KernelKind::Gemm: return gemm;
    case KernelKind::BatchNorm: return nchw;
    case KernelKind::Pool: return pool;
    case KernelKind::SoftmaxCE: return ce;
    case KernelKind::SgdUpdate: return params;
    default: return elems;
  }
}

int activation_bytes(Precision p) { return (p == Precision::BF16 || p == Precision::FP16) ? 2 : 4; }

namespace {

// The math convolutions and matmuls run in, per training precision (PyTorch's defaults).
MathMode conv_math(Precision p) {
  switch (p) {
    case Precision::FP32: case Precision::TF32: return MathMode::TF32;
    case Precision::BF16: return MathMode::BF16;
    case Precision::FP16: return MathMode::FP16;
  }
  return MathMode::FP32;
}

MathMode gemm_math(Precision p) {
  switch (p) {
    case Precision::FP32: return MathMode::FP32;
    case Precision::TF32: return MathMode::TF32;
    case Precision::BF16: return MathMode::BF16;
    case Precision::FP16: return MathMode::FP16;
  }
  return MathMode::FP32;
}

// Memory-bound kernels run on CUDA cores in the activations' type; FP32 is the honest label.
MathMode vector_math(Precision p) {
  return (p == Precision::BF16) ? MathMode::BF16 : (p == Precision::FP16) ? MathMode::FP16 : MathMode::FP32;
}

struct Lowering {
  const Graph& g;
  int64_t n;  // batch
  Precision prec;
  double ab;  // bytes per activation element
  IterationKernels out;

  KernelDesc make(KernelKind kind, Pass pass, MathMode m, int layer, std::initializer_list<int64_t> shape, double flops, double bytes) {
    KernelDesc k{kind, pass, m, layer, {}, flops, bytes};
    int i = 0;
    for (int64_t v : shape) k.shape[i++] = v;
    return k;
  }

  // An elementwise kernel over `elems` elements that reads `reads` tensors and writes `writes`.
  KernelDesc eltwise(KernelKind kind, Pass pass, int layer, double elems, double reads, double writes, double flops_per_elem) {
    return make(kind, pass, vector_math(prec), layer, {static_cast<int64_t>(elems)}, flops_per_elem * elems, (reads + writes) * elems * ab);
  }

  void layer(int li) {
    const Layer& l = g.layers[li];
    const Shape& x = l.in[0];
    const double in_el = static_cast<double>(n) * x.elements();
    const double out_el = static_cast<double>(n) * l.out.elements();
    const bool input_needs_grad = !(l.inputs.size() == 1 && l.inputs[0] < 0);
    std::vector<KernelDesc>& fw = out.forward;
    std::vector<KernelDesc> bw;  // this layer's backward kernels, in execution order
    switch (l.op) {
      case Op::Conv2d: {
        MathMode m = conv_math(prec);
        std::initializer_list<int64_t> s = {n, x.c, x.h, x.w, l.out_channels, l.kh, l.kw, l.sh, l.sw, l.ph, l.pw, l.dh, l.dw, l.groups};
        double flops = 2.0 * n * l.fwd_macs();
        double w_bytes = static_cast<double>(l.params()) * ab;
        fw.push_back(make(KernelKind::Conv2d, Pass::Fwd, m, li, s, flops, (in_el + out_el) * ab + w_bytes));
        if (input_needs_grad) bw.push_back(make(KernelKind::Conv2d, Pass::BwdData, m, li, s, flops, (in_el + out_el) * ab + w_bytes));
        bw.push_back(make(KernelKind::Conv2d, Pass::BwdFilter, m, li, s, flops, (in_el + out_el) * ab + w_bytes));
        break;
      }
      case Op::Linear: {
        MathMode m = gemm_math(prec);
        int64_t in_f = x.c, out_f = l.out_features;
        double flops = 2.0 * n * in_f * out_f;
        auto gemm_bytes = [&](double M, double N, double K) { return (M * K + K * N + M * N) * ab; };
        // Row-major view of nn.Linear: Y = X W^T, dX = dY W, dW = dY^T X.
        fw.push_back(make(KernelKind::Gemm, Pass::Fwd, m, li, {n, out_f, in_f, 0, 1}, flops, gemm_bytes(n, out_f, in_f)));
        if (input_needs_grad) bw.push_back(make(KernelKind::Gemm, Pass::BwdData, m, li, {n, in_f, out_f, 0, 0}, flops, gemm_bytes(n, in_f, out_f)));
        bw.push_back(make(KernelKind::Gemm, Pass::BwdWeight, m, li, {out_f, in_f, n, 1, 0}, flops, gemm_bytes(out_f, in_f, n)));
        break;
      }
      case Op::BatchNorm2d: {
        MathMode m = vector_math(prec);
        // Training forward: statistics and normalisation; backward: two reductions and dx.
        fw.push_back(make(KernelKind::BatchNorm, Pass::Fwd, m, li, {n, x.c, x.h, x.w}, 8.0 * in_el, 2.0 * in_el * ab));
        bw.push_back(make(KernelKind::BatchNorm, Pass::Bwd, m, li, {n, x.c, x.h, x.w}, 12.0 * in_el, 3.0 * in_el * ab));
        break;
      }
      case Op::Activation:
        fw.push_back(eltwise(KernelKind::Activation, Pass::Fwd, li, in_el, 1, 1, 1));
        bw.push_back(eltwise(KernelKind::Activation, Pass::Bwd, li, in_el, 2, 1, 1));
        break;
      case Op::MaxPool2d:
      case Op::AvgPool2d:
      case Op::AdaptiveAvgPool2d: {
        MathMode m = vector_math(prec);
        int64_t r = l.kh, s = l.kw, st = l.sh, pad = l.ph;
        if (l.op == Op::AdaptiveAvgPool2d) {  // PyTorch's adaptive windows: at most ceil(in/out) wide
          r = (x.h + l.out_h - 1) / l.out_h;
          s = (x.w + l.out_w - 1) / l.out_w;
          st = x.h / l.out_h;
          pad = 0;
        }
        std::initializer_list<int64_t> sh = {n, x.c, x.h, x.w, r, s, st, pad};
        double window_flops = out_el * r * s;
        fw.push_back(make(KernelKind::Pool, Pass::Fwd, m, li, sh, window_flops, (in_el + out_el) * ab));
        bw.push_back(make(KernelKind::Pool, Pass::Bwd, m, li, sh, window_flops, (in_el + out_el) * ab));
        break;
      }
      case Op::Add:
        // Backward of an add passes the gradient through: no kernel. The accumulation where a tensor
        // fans out is costed at the producer (below).
        fw.push_back(eltwise(KernelKind::Add, Pass::Fwd, li, out_el, static_cast<double>(l.in.size()), 1, static_cast<double>(l.in.size() - 1)));
        break;
      case Op::Concat:
        fw.push_back(eltwise(KernelKind::Concat, Pass::Fwd, li, out_el, 1, 1, 0));
        bw.push_back(eltwise(KernelKind::Concat, Pass::Bwd, li, out_el, 1, 1, 0));
        break;
      case Op::Dropout: {
        // The mask is one byte per element.
        double mask = 1.0 / ab;
        fw.push_back(eltwise(KernelKind::Dropout, Pass::Fwd, li, in_el, 1, 1 + mask, 2));
        bw.push_back(eltwise(KernelKind::Dropout, Pass::Bwd, li, in_el, 1 + mask, 1, 1));
        break;
      }
      case Op::Flatten:
        break;  // a view
      case Op::SoftmaxCrossEntropy: {
        // Autocast runs the loss in FP32.
        double b = 4.0;
        fw.push_back(make(KernelKind::SoftmaxCE, Pass::Fwd, MathMode::FP32, li, {n, x.c}, 5.0 * in_el, 2.0 * in_el * b));
        bw.push_back(make(KernelKind::SoftmaxCE, Pass::Bwd, MathMode::FP32, li, {n, x.c}, 2.0 * in_el, 2.0 * in_el * b));
        break;
      }
    }
    // A tensor read by k layers gets k-1 gradient accumulations before its producer's backward.
    for (int c = 1; c < l.consumers; ++c)
      grad_accum[li].push_back(eltwise(KernelKind::Add, Pass::Bwd, li, out_el, 2, 1, 1));
    pending_backward[li] = std::move(bw);
  }

  std::vector<std::vector<KernelDesc>> pending_backward;
  std::vector<std::vector<KernelDesc>> grad_accum;

  void run() {
    const int L = static_cast<int>(g.layers.size());
    pending_backward.assign(L, {});
    grad_accum.assign(L, {});
    for (int i = 0; i < L; ++i) layer(i);
    for (int i = L - 1; i >= 0; --i) {
      for (auto& k : grad_accum[i]) out.backward.push_back(k);
      for (auto& k : pending_backward[i]) out.backward.push_back(k);
    }
    // SGD with momentum on FP32 parameters: read parameter, gradient and momentum, write parameter and
    // momentum (5 x 4 bytes), one kernel per layer's parameters.
    for (int i = 0; i < L; ++i) {
      int64_t p = g.layers[i].params();
      if (p == 0) continue;
      out.update.push_back(make(KernelKind::SgdUpdate, Pass::Update, MathMode::FP32, i, {p}, 4.0 * p, 20.0 * p));
    }
  }
};

}  // namespace

IterationKernels lower_iteration(const Graph& g, int64_t batch, Precision p) {
  Lowering low{g, batch, p, static_cast<double>(activation_bytes(p)), {}, {}, {}};
  low.run();
  return std::move(low.out);
}

}  // namespace dtsim
