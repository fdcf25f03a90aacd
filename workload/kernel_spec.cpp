#include "workload/kernel_spec.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/args.hpp"
#include "core/error.hpp"

namespace dtsim {

const std::vector<KernelKind>& spec_kinds() {
  static const std::vector<KernelKind> k = {KernelKind::Conv2d, KernelKind::Gemm,      KernelKind::BatchNorm,
                                            KernelKind::Activation, KernelKind::Pool,  KernelKind::Add,
                                            KernelKind::Concat,     KernelKind::SoftmaxCE,  KernelKind::SgdUpdate, KernelKind::AdamUpdate,
                                            KernelKind::Eltwise,    KernelKind::LayerNorm, KernelKind::Attention,
                                            KernelKind::Embedding};
  return k;
}

namespace {

// The passes a kernel of this kind runs in training.
std::vector<Pass> passes_of(KernelKind kind) {
  switch (kind) {
    case KernelKind::Conv2d: return {Pass::Fwd, Pass::BwdData, Pass::BwdFilter};
    case KernelKind::Gemm: return {Pass::Fwd, Pass::BwdData, Pass::BwdWeight};
    case KernelKind::SgdUpdate:
    case KernelKind::AdamUpdate: return {Pass::Update};
    default: return {Pass::Fwd, Pass::Bwd};
  }
}

// The kernel's kind, pass and math mode, its shape still empty.
KernelDesc kind_pass_and_math(const KernelSpec& spec) {
  const std::optional<KernelKind> kind = parse_kind(spec.kind);
  const auto& kinds = spec_kinds();
  if (!kind || std::find(kinds.begin(), kinds.end(), *kind) == kinds.end())
    throw InputError("--kind", "unknown kernel kind '" + spec.kind + "'");
  const std::optional<Pass> pass = parse_pass(spec.pass);
  if (!pass) throw InputError("--pass", "unknown pass '" + spec.pass + "'");
  const std::vector<Pass> valid = passes_of(*kind);
  if (std::find(valid.begin(), valid.end(), *pass) == valid.end())
    throw InputError("--pass", "'" + spec.pass + "' is not a pass of " + spec.kind);
  return KernelDesc{*kind, *pass, math_mode_for(*kind, parse_precision(spec.dtype)), -1, {}, "", 0, 0};
}

// The NAME=VALUE fields of a shape, and which of them the kind has asked for.
class ShapeFields {
 public:
  ShapeFields(const std::string& text, const std::string& kind) : kind_(kind) {
    for (const auto& item : split(text, ',')) {
      auto eq = item.find('=');
      if (eq == std::string::npos) throw InputError("--shape", "'" + item + "' must be NAME=VALUE");
      auto vals = parse_int_list("--shape", item.substr(eq + 1), 0, int64_t(1) << 40);
      if (vals.size() != 1) throw InputError("--shape", "'" + item + "' must have one value");
      values_[item.substr(0, eq)] = vals[0];
    }
  }

  // The field's value, else the fallback; a field without either is missing.
  int64_t get(const std::string& name, std::optional<int64_t> fallback = std::nullopt) {
    used_.insert(name);
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    if (fallback) return *fallback;
    throw InputError("--shape", "missing " + name + " for " + kind_);
  }

  // A field the kind never asked for is a typo or a field of another kind.
  void reject_unused() const {
    for (const auto& [name, value] : values_)
      if (!used_.count(name)) throw InputError("--shape", "'" + name + "' is not a field of " + kind_);
  }

 private:
  std::string kind_;
  std::map<std::string, int64_t> values_;
  std::set<std::string> used_;
};

// Strides, padding and dilation default to PyTorch's (1, 0, 1), per dimension or for both at once.
void conv2d_shape(ShapeFields& f, KernelDesc& k) {
  auto& s = k.shape;
  int64_t stride = f.get("stride", 1), pad = f.get("pad", 0), dil = f.get("dil", 1);
  s = {f.get("N"), f.get("C"), f.get("H"), f.get("W"), f.get("K"), f.get("R"), f.get("S"), f.get("stride_h", stride), f.get("stride_w", stride),
       f.get("pad_h", pad), f.get("pad_w", pad), f.get("dil_h", dil), f.get("dil_w", dil), f.get("groups", 1)};
  if (s[7] < 1 || s[8] < 1 || s[11] < 1 || s[13] < 1 || s[1] % s[13] || s[4] % s[13])
    throw InputError("--shape", "stride, dil and groups must be positive; groups must divide C and K");
  if (s[2] + 2 * s[9] < s[11] * (s[5] - 1) + 1 || s[3] + 2 * s[10] < s[12] * (s[6] - 1) + 1)
    throw InputError("--shape", "kernel larger than the padded input");
}

// The stride defaults to the window (PyTorch's); the output size P x Q follows from the rest.
void pool_shape(ShapeFields& f, const std::string& variant, KernelDesc& k) {
  int64_t R = f.get("R"), S = f.get("S"), st = f.get("stride", R), pad = f.get("pad", 0), H = f.get("H"), W = f.get("W");
  if (st < 1 || H + 2 * pad < R || W + 2 * pad < S) throw InputError("--shape", "pool window larger than the padded input, or stride < 1");
  k.shape = {f.get("N"), f.get("C"), H, W, R, S, st, pad, (H + 2 * pad - R) / st + 1, (W + 2 * pad - S) / st + 1};
  // inductor_max, inductor_avg: torch.compile's own pooling kernels (FrameworkSpec::compiled_pooling).
  if (variant == kInductorMaxPool || variant == kInductorAvgPool) {
    k.variant = variant == kInductorMaxPool ? kInductorMaxPool : kInductorAvgPool;
    return;
  }
  if (variant != "" && variant != "avg" && variant != "max") throw InputError("--variant", "pool takes max, avg, inductor_max or inductor_avg");
  k.variant = variant == "avg" ? "avg" : "max";
}

void activation_shape(ShapeFields& f, const std::string& variant, KernelDesc& k) {
  k.shape = {f.get("elements")};
  const std::vector<std::string>& acts = activation_variants();
  auto a = std::find(acts.begin(), acts.end(), variant.empty() ? "relu" : variant);
  if (a == acts.end()) throw InputError("--variant", "unknown activation '" + variant + "'");
  k.variant = a->c_str();
}

void read_shape(ShapeFields& f, const std::string& variant, KernelDesc& k) {
  auto& s = k.shape;
  switch (k.kind) {
    case KernelKind::Conv2d:
      conv2d_shape(f, k);
      // native_depthwise: PyTorch's own depthwise kernels (conv_depthwise2d_*), not cuDNN's
      if (variant == kNativeDepthwise) {
        k.variant = kNativeDepthwise;
        if (!pytorch_runs_native_depthwise(k))
          throw InputError("--variant", "native_depthwise is a depthwise convolution (groups = C > 1) on contiguous tensors outside fp16; PyTorch runs the others on cuDNN");
      } else if (!variant.empty()) {
        throw InputError("--variant", "conv2d takes native_depthwise (PyTorch's own depthwise kernels) or nothing (cuDNN)");
      }
      break;
    case KernelKind::Gemm: {  // transposes as the lowering's passes have them (workload/kernels.cpp)
      int64_t ta = k.pass == Pass::BwdWeight ? 1 : 0, tb = k.pass == Pass::Fwd ? 1 : 0;
      s = {f.get("M"), f.get("N"), f.get("K"), f.get("transA", ta), f.get("transB", tb)};
      break;
    }
    case KernelKind::BatchNorm: s = {f.get("N"), f.get("C"), f.get("H"), f.get("W")}; break;
    case KernelKind::Pool: pool_shape(f, variant, k); break;
    case KernelKind::Add: s = {f.get("elements"), f.get("inputs", 2)}; break;
    case KernelKind::SoftmaxCE: s = {f.get("N"), f.get("classes")}; break;
    case KernelKind::SgdUpdate: s = {f.get("params")}; break;
    case KernelKind::AdamUpdate:  // torch.optim.Adam or AdamW, as the lowering names them
      s = {f.get("params")};
      if (variant != "" && variant != "adamw" && variant != "adam") throw InputError("--variant", "adam_update takes adamw (default) or adam");
      k.variant = variant == "adam" ? "adam" : "adamw";
      break;
    case KernelKind::Eltwise:
      s = {f.get("read"), f.get("written")};
      k.variant = intern_variant(variant);
      break;
    case KernelKind::LayerNorm: s = {f.get("rows"), f.get("features")}; break;
    case KernelKind::Attention:
      s = {f.get("N"), f.get("heads"), f.get("T"), f.get("head_dim"), f.get("causal", 0)};
      if (s[4] != 0 && s[4] != 1) throw InputError("--shape", "causal must be 0 or 1");
      break;
    case KernelKind::Embedding: s = {f.get("rows"), f.get("dim"), f.get("num_embeddings")}; break;
    case KernelKind::Concat:  // the elements written: all inputs (torch.cat), or one input's slice (variant slice, the harness's)
      s = {f.get("elements")};
      if (variant != "" && variant != "slice") throw InputError("--variant", "concat takes slice (one input's copy) or nothing (one kernel for all inputs)");
      k.variant = variant == "slice" ? "slice" : "";
      break;
    default: activation_shape(f, variant, k); break;  // activation (spec_kinds has no dropout)
  }
}

// NHWC measurements exist for convolutions and batchnorm alone; any other kind is refused rather than
// silently priced as its contiguous kernel.
MemoryFormat memory_format_of(const KernelSpec& spec) {
  const std::optional<MemoryFormat> f = parse_memory_format(spec.memory_format);
  if (!f) throw InputError("--memory-format", "unknown memory format '" + spec.memory_format + "' (contiguous or channels_last)");
  if (*f == MemoryFormat::ChannelsLast && spec.kind != kind_name(KernelKind::Conv2d) && spec.kind != kind_name(KernelKind::BatchNorm))
    throw InputError("--memory-format", "channels_last is only for conv2d and batchnorm, not " + spec.kind);
  return *f;
}

// Every field positive, but padding and the GEMM's transpose flags, which may be 0.
void check_positive(const KernelDesc& k) {
  const auto& fields = kernel_shape_fields(k.kind);
  for (size_t i = 0; i < fields.size(); ++i)
    if (k.shape[i] <= 0 && !(k.kind == KernelKind::Conv2d && (i == 9 || i == 10)) && !(k.kind == KernelKind::Pool && i == 7) &&
        !(k.kind == KernelKind::Gemm && i >= 3) && !(k.kind == KernelKind::Attention && i == 4))
      throw InputError("--shape", std::string(fields[i]) + " must be positive");
}

}  // namespace

KernelDesc parse_kernel_spec(const KernelSpec& spec) {
  KernelDesc k = kind_pass_and_math(spec);
  k.format = memory_format_of(spec);
  ShapeFields fields(spec.shape, spec.kind);
  read_shape(fields, spec.variant, k);
  fields.reject_unused();
  check_positive(k);
  set_cost(k);
  return k;
}

}  // namespace dtsim
