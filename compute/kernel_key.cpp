#include "compute/kernel_key.hpp"

#include <mutex>
#include <tuple>
#include <unordered_map>

namespace dtsim {

std::string dataset_math(const KernelDesc& k) {
  // FP16 autocast runs the same cuDNN and cuBLAS kernels as BF16 on the same bytes: measured through
  // PyTorch on one H100 (validation/data/h100-sxm/kernels_beyond), fp16 / bf16 time ratio median 1.000
  // for 138 convolutions and 1.009 for 271 GEMMs of 20 us and more. So FP16 kernels take the bf16
  // data's predictors. (PyTorch's own batchnorm differs: sim/schedule.cpp framework_kernel_key.)
  const bool sixteen = k.math == MathMode::BF16 || k.math == MathMode::FP16;
  switch (k.kind) {
    case KernelKind::Conv2d:  // PyTorch's default fp32 runs convolutions in TF32: the "fp32" data
      return k.math == MathMode::TF32 ? "fp32" : sixteen ? "bf16" : "";
    default:
      return k.math == MathMode::FP32 ? "fp32" : sixteen ? "bf16" : "";
  }
}

static std::string spell_predictor_key(const KernelDesc& k) {
  std::string m = dataset_math(k);
  if (m.empty()) return "";
  // A gradient accumulation (add, bwd) is the same two-input sum as a forward add: one predictor.
  Pass pass = k.kind == KernelKind::Add ? Pass::Fwd : k.pass;
  std::string key = std::string(kind_name(k.kind)) + "/" + pass_name(pass) + "/" + m;
  if (k.kind == KernelKind::Pool || k.kind == KernelKind::Activation) key += std::string("/") + k.variant;
  if (k.kind == KernelKind::Attention && *k.variant) key += std::string("/") + k.variant;  // attention/fwd/bf16/dropout
  // concat/fwd/bf16/slice: one input's copy into its slice (the harness's lowering, FrameworkSpec::concat_copy_per_input)
  if (k.kind == KernelKind::Concat && *k.variant) key += std::string("/") + k.variant;
  // NHWC convolutions have their own measurements (validation/data/<gpu>/kernels_nhwc): on the same
  // shapes they take about half the NCHW time, the transposes cuDNN adds around NCHW tensors gone.
  // PyTorch's channels_last batchnorm too (validation/data/<gpu>/kernels_nhwc/batchnorm.csv): relative to
  // the NCHW kernels its time varies by shape from a quarter to more than the same (cuDNN's NHWC kernels
  // on some shapes, PyTorch's own on others), which one factor per key cannot follow.
  if ((k.kind == KernelKind::Conv2d || k.kind == KernelKind::BatchNorm) && k.format == MemoryFormat::ChannelsLast) key += "/nhwc";
  // conv2d/fwd/bf16/native_depthwise: a depthwise convolution PyTorch runs with its own kernels
  // (conv_depthwise2d_*), not cuDNN's (FrameworkSpec::depthwise_conv_native).
  if (k.kind == KernelKind::Conv2d && *k.variant) key += std::string("/") + k.variant;
  // batchnorm/fwd/bf16/native: PyTorch's own bf16 batchnorm kernels (FrameworkSpec::batchnorm_native_bf16).
  if (k.kind == KernelKind::BatchNorm && *k.variant) key += std::string("/") + k.variant;
  return key;
}

// A key depends on the kernel's kind, pass, math mode, layout and variant alone, and a prediction asks
// for it thousands of times (each kernel, in each configuration of a sweep): each is spelt once.
std::string predictor_key(const KernelDesc& k) {
  struct Parts {
    KernelKind kind;
    Pass pass;
    MathMode math;
    MemoryFormat format;
    std::string variant;
    bool operator==(const Parts& o) const {
      return std::tie(kind, pass, math, format, variant) == std::tie(o.kind, o.pass, o.math, o.format, o.variant);
    }
  };
  struct Hash {
    size_t operator()(const Parts& p) const {
      return std::hash<std::string>()(p.variant) ^ (size_t(p.kind) | size_t(p.pass) << 8 | size_t(p.math) << 16 | size_t(p.format) << 24);
    }
  };
  static std::mutex mu;
  static std::unordered_map<Parts, std::string, Hash> spelt;
  Parts parts{k.kind, k.pass, k.math, k.format, k.variant};
  std::lock_guard<std::mutex> lock(mu);
  if (const auto it = spelt.find(parts); it != spelt.end()) return it->second;
  return spelt.emplace(std::move(parts), spell_predictor_key(k)).first->second;
}

}  // namespace dtsim
