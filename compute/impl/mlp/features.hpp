#pragma once
// What an MLP sees of a kernel. One predictor per key (compute/kernel_key.hpp predictor_key);
// its inputs are log-scaled shape fields plus derived quantities that explain where time goes:
// FLOPs, bytes, arithmetic intensity, the implicit GEMM's dimensions and how many waves of output
// tiles fill the GPU (the tail of the last wave is time spent with idle SMs).
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "compute/kernel_key.hpp"
#include "workload/kernels.hpp"

namespace dtsim::mlp {

// The analytical time an MLP corrects: max(FLOPs / peak, bytes / bandwidth) + floor, on the measured
// GPU's datasheet numbers. Predictors learn log(measured / baseline): how far real kernels fall short
// of the roofline varies smoothly with shape, the time itself spans five decades.
struct Baseline {
  std::array<double, kMathModes> peak_flops{};
  double memory_bandwidth_Bps = 1;
  double floor_s = 2e-6;  // launch and ramp: no kernel runs faster
  // The measured GPU's L2 and SMs (0: not known; softmax_ce's row view is then not capped, and a layer
  // norm forward's second read is taken to hit L2).
  double l2_cache_bytes = 0;
  int sm_count = 0;
  double compute_s(const KernelDesc& k) const { return k.flops / peak_flops[static_cast<int>(k.math)]; }
  double memory_s(const KernelDesc& k) const { return traffic_bytes(k) / memory_bandwidth_Bps; }
  // The bytes the baseline charges a kernel: its own count, except where the measured kernel is known
  // to move more (PyTorch's log_softmax forward on rows it cannot keep on chip reads them three times;
  // its layer norm forward reads a row twice, the second time from memory once the resident rows
  // overflow L2).
  double traffic_bytes(const KernelDesc& k) const;
  // The kernel's own roofline, max(FLOPs / peak, KernelDesc::bytes / bandwidth): the bound that
  // max_roofline_fraction is measured against. memory_s may charge more than the least a kernel must
  // move (the multi-pass loss's and the layer norm's re-reads, which hit L2 on shorter rows), so it is
  // no such bound.
  double roofline_s(const KernelDesc& k) const { return std::max(compute_s(k), k.bytes / memory_bandwidth_Bps); }
  double seconds(const KernelDesc& k) const;
};

const std::vector<std::string>& feature_names(KernelKind kind);
// Appends feature_names(k.kind).size() values; `sm_count` sizes the wave features. With `extended`,
// then also extra_feature_names(k.kind).size() more (a predictor trained with them lists them after
// the others, so predictors trained without them see exactly what they were trained on).
void features(const KernelDesc& k, int sm_count, const Baseline& base, std::vector<double>& out, bool extended = false);
// Optional features (dtsim-train-predictors --extra-features): convolutions' power-of-two alignment
// of the channel counts, spatial sizes and the pass's implicit GEMM dimensions. Empty for other kinds.
const std::vector<std::string>& extra_feature_names(KernelKind kind);

// A layer norm whose row is longer than `longest_row_elements` (the longest a predictor was trained on)
// as its predictor sees it: a row of that length, or up to 3 elements shorter so that it keeps the
// real row's remainder of whole 4-element vectors (whether PyTorch runs its vectorized kernel), every
// feature alike. The baseline, which counts the forward's second read from memory once the resident
// rows overflow L2 (Baseline::traffic_bytes), scales the time to the real row: past that overflow the
// time per element at a given row count no longer depends on the row's length (H100, FP32 forward,
// 2,500+ rows: 4.0 to 4.2 ps per element from 4,096 to 16,384 features), and below a GPU's worth of
// rows a row's latency grows with its length as its bytes do. Without this the features were clamped while
// the elements, bytes and roofline features were not, a combination no training row had.
KernelDesc layernorm_trained_view(const KernelDesc& k, int64_t longest_row_elements);

// Stable identity of a kernel's shape, without its pass, math and memory format: a shape lands wholly
// in the training or wholly in the held-out part, its NCHW and NHWC measurements alike.
uint64_t shape_hash(const KernelDesc& k);

}  // namespace dtsim::mlp
