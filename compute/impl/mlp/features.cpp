#include "compute/impl/mlp/features.hpp"

#include <cmath>
#include <map>
#include <mutex>

namespace dtsim::mlp {

static double lg(double x) { return std::log2(std::max(x, 1.0)); }

// PyTorch's log_softmax forward (aten/src/ATen/native/cuda/SoftMax.cu) keeps a row on chip, in
// registers or in the block's shared memory, while it fits CUDA's default 48 KiB per block; a longer
// row is read three times (max, sum of exp, the write pass) by one block of 1024 threads, at most two
// of which an SM's 2,048 threads hold (taken as two: the kernel's register use was not measured).
constexpr double kLossOnChipRowBytes = 48 * 1024;
constexpr double kLossRowsPerSm = 2;

static bool multi_pass_loss(const KernelDesc& k) {
  return k.kind == KernelKind::SoftmaxCE && k.pass == Pass::Fwd &&
         static_cast<double>(k.shape[1]) * element_bytes(k.math) > kLossOnChipRowBytes;
}

// PyTorch's layer norm (aten/src/ATen/native/cuda/layer_norm_kernel.cu) runs one 128-thread block per
// row, 16 of which an SM's 2,048 threads hold, where the row is a multiple of its 4-element vectors. The
// forward reads its row for the statistics, then again to normalize and write it; the second read hits
// L2 while the x and y of the resident rows fit in it. A forward row of other lengths is two kernels
// (the statistics of every row, then the normalization), so there the whole x and y must fit. The
// backward's input gradient also reads dy and x twice, but its time per element shows no such step
// (H100 FP32, 2,500+ rows: 9.3-9.7 ps from 2,048 to 16,384 features; its weight-gradient kernel reads
// both again), so the baseline leaves it as counted.
constexpr double kLayerNormRowsPerSm = 16;
constexpr int64_t kLayerNormVectorElements = 4;

static bool layernorm_vectorized(const KernelDesc& k) { return k.shape[1] % kLayerNormVectorElements == 0; }

// Whether the layer norm forward's second read comes from memory: x and y of the rows resident at a time
// (all of them when there are fewer than the GPU holds, or for the two-kernel forward) outgrow L2.
static bool layernorm_rereads_memory(const KernelDesc& k, const Baseline& base) {
  if (k.kind != KernelKind::LayerNorm || k.pass != Pass::Fwd || base.l2_cache_bytes <= 0 || base.sm_count <= 0) return false;
  const double rows = static_cast<double>(k.shape[0]), row_elements = static_cast<double>(k.shape[1]);
  const double resident_rows = layernorm_vectorized(k) ? std::min(rows, kLayerNormRowsPerSm * base.sm_count) : rows;
  return 2 * resident_rows * row_elements * element_bytes(k.math) > base.l2_cache_bytes;
}

// The multi-pass forward moves the logits three times and its output once: twice the two passes
// KernelDesc::bytes counts (workload/kernels.cpp), where the re-reads miss L2 (kernel_view below).
// A layer norm forward whose second read misses L2 moves x once more.
double Baseline::traffic_bytes(const KernelDesc& k) const {
  if (multi_pass_loss(k)) return 2 * k.bytes;
  if (layernorm_rereads_memory(k, *this)) return k.bytes + static_cast<double>(k.shape[0]) * k.shape[1] * element_bytes(k.math);
  return k.bytes;
}

double Baseline::seconds(const KernelDesc& k) const { return std::max(compute_s(k), memory_s(k)) + floor_s; }

// The kernel as the MLP sees it. Once the rows resident at a time (two per SM) no longer fit in L2,
// every re-read of the multi-pass loss comes from memory and the time per element stops depending on
// the row's length (H100, 3,000+ rows: 5.2, 5.5, 5.4 ps per element at 50,257, 89,004 and 128,256
// classes): the MLP sees such a row at the length where that starts, the baseline (traffic_bytes)
// scales the time to the real one. Without this, classes beyond the training range were clamped
// while N x classes and the roofline times were not, a combination no training row had.
static KernelDesc kernel_view(const KernelDesc& k, int sm_count, const Baseline& base) {
  if (!multi_pass_loss(k) || base.l2_cache_bytes <= 0) return k;
  const double resident_rows = kLossRowsPerSm * std::max(sm_count, 1);
  const auto l2_row_classes = static_cast<int64_t>(base.l2_cache_bytes / (resident_rows * element_bytes(k.math)));
  if (k.shape[1] <= l2_row_classes) return k;
  KernelDesc seen = k;
  seen.shape[1] = l2_row_classes;
  set_cost(seen);
  return seen;
}

KernelDesc layernorm_trained_view(const KernelDesc& k, int64_t longest_row_elements) {
  if (k.kind != KernelKind::LayerNorm || longest_row_elements <= 0 || k.shape[1] <= longest_row_elements) return k;
  KernelDesc seen = k;
  seen.shape[1] = longest_row_elements;
  while (seen.shape[1] > 1 && seen.shape[1] % kLayerNormVectorElements != k.shape[1] % kLayerNormVectorElements) --seen.shape[1];
  set_cost(seen);
  return seen;
}

// Output tiles of a GEMM-like kernel against the SMs: log2 of the tile count and the fill of the last
// wave. 128 x 128 is the common tile of cuDNN/cuBLAS tensor-core kernels on Hopper.
static void waves(double m, double n, double batch, int sms, std::vector<double>& out) {
  double tiles = std::ceil(m / 128.0) * std::ceil(n / 128.0) * batch;
  double w = tiles / std::max(sms, 1);
  out.push_back(lg(tiles));
  out.push_back(w - std::floor(w));
}

// Every predictor also sees the baseline's two floors, in log2 microseconds.
static const std::vector<std::string> kBaselineFeatures = {"roofline_compute_us", "roofline_memory_us"};

static const std::vector<std::string>& kind_feature_names(KernelKind kind) {
  static const std::vector<std::string> conv = {"N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w",
                                                "groups", "P", "Q", "gemm_m", "gemm_n", "gemm_k", "flops", "bytes", "intensity", "waves",
                                                "last_wave_fill", "depthwise", "c_align8", "k_align8",
                                                // The pass's own implicit GEMM (bwd_data: M = N*H*W, N = C, K = K*R*S;
                                                // bwd_filter: M = K, N = C*R*S, K = N*P*Q), its tiles and last-wave fill
                                                // for the tile shapes cuDNN's Hopper kernels use, the three tensors' bytes
                                                // and the shape's class.
                                                "pass_gemm_m", "pass_gemm_n", "pass_gemm_k", "tiles_64x64", "fill_64x64",
                                                "tiles_128x64", "fill_128x64", "tiles_128x128", "fill_128x128", "tiles_256x128",
                                                "fill_256x128", "input_bytes", "output_bytes", "weight_bytes", "c_over_k",
                                                "compute_over_memory", "is_1x1", "is_stride1", "is_pure_gemm"};
  static const std::vector<std::string> gemm = {"M", "N", "K", "flops", "bytes", "intensity", "waves", "last_wave_fill", "m_align8", "n_align8",
                                                "k_align8"};
  static const std::vector<std::string> bn = {"N", "C", "HW", "elements", "per_channel", "bytes"};
  static const std::vector<std::string> elem = {"elements", "bytes"};
  static const std::vector<std::string> pool = {"N", "C", "H", "W", "R", "S", "stride", "pad", "P", "Q", "in_elements", "out_elements", "bytes"};
  static const std::vector<std::string> add = {"elements", "inputs", "bytes"};
  static const std::vector<std::string> ce = {"N", "classes", "elements"};
  static const std::vector<std::string> sgd = {"params", "bytes"};
  // FlashAttention-2 on Hopper: one CTA per 128-row block of queries and (batch, head), its waves over
  // the SMs and the last one's fill; head_elements is T x head_dim, one head's q (or k, v, o).
  static const std::vector<std::string> attention = {"N", "heads", "T", "head_dim", "causal", "flops", "bytes", "intensity",
                                                     "query_blocks", "waves", "last_wave_fill", "head_elements"};
  // PyTorch's layer norm kernels run one block per row: row_waves is log2(rows / SMs); vectorized is 1
  // for rows of whole 4-element vectors (one kernel, vector loads), 0 for others (scalar loads; the
  // forward is two kernels).
  static const std::vector<std::string> layernorm = {"rows", "features", "elements", "bytes", "row_waves", "vectorized"};
  static const std::vector<std::string> embedding = {"rows", "dim", "num_embeddings", "bytes", "table_bytes"};
  switch (kind) {
    case KernelKind::Conv2d: return conv;
    case KernelKind::Gemm: return gemm;
    case KernelKind::BatchNorm: return bn;
    case KernelKind::Pool: return pool;
    case KernelKind::Add: return add;
    case KernelKind::SoftmaxCE: return ce;
    case KernelKind::SgdUpdate:
    case KernelKind::AdamUpdate: return sgd;
    case KernelKind::LayerNorm: return layernorm;
    case KernelKind::Attention: return attention;
    case KernelKind::Embedding: return embedding;
    default: return elem;
  }
}

const std::vector<std::string>& feature_names(KernelKind kind) {
  static std::map<KernelKind, std::vector<std::string>> all;
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < kKernelKinds; ++i) {
      auto kind = static_cast<KernelKind>(i);
      auto names = kind_feature_names(kind);
      names.insert(names.end(), kBaselineFeatures.begin(), kBaselineFeatures.end());
      all[kind] = names;
    }
  });
  return all.at(kind);
}

static void kind_features(const KernelDesc& k, int sm_count, std::vector<double>& out);

// A convolution's output size and the implicit GEMM its pass runs (per group): fwd M = N*P*Q,
// N = K/g, K = C/g*R*S; bwd_data M = N*H*W, N = C/g, K = K/g*R*S; bwd_filter M = K/g, N = C/g*R*S, K = N*P*Q.
struct ConvGemm {
  double p, q, m, n, k;
};
static ConvGemm conv_gemm(const KernelDesc& kd) {
  const auto& s = kd.shape;
  const double n = s[0], c = s[1], h = s[2], w = s[3], kk = s[4], r = s[5], sw = s[6], g = static_cast<double>(s[13]);
  const double p = static_cast<double>((s[2] + 2 * s[9] - s[11] * (s[5] - 1) - 1) / s[7] + 1);
  const double q = static_cast<double>((s[3] + 2 * s[10] - s[12] * (s[6] - 1) - 1) / s[8] + 1);
  if (kd.pass == Pass::BwdData) return {p, q, n * h * w, c / g, kk / g * r * sw};
  if (kd.pass == Pass::BwdFilter) return {p, q, kk / g, c / g * r * sw, n * p * q};
  return {p, q, n * p * q, kk / g, c / g * r * sw};
}

// log2 of the output tiles of an M x N GEMM (times `batch` independent ones) and the fill of the last
// wave over the SMs, for each tile shape.
template <size_t T>
static void tile_waves(double m, double n, double batch, const double (&tiles_mn)[T][2], int sm_count, std::vector<double>& out) {
  for (const auto& t : tiles_mn) {
    double tiles = std::ceil(m / t[0]) * std::ceil(n / t[1]) * batch;
    double waves = tiles / std::max(sm_count, 1);
    out.push_back(lg(tiles));
    out.push_back(waves - std::floor(waves));
  }
}

// A convolution's view as the implicit GEMM its pass runs, tiled for several tile shapes.
static void conv_pass_features(const KernelDesc& k, int sm_count, const Baseline& base, std::vector<double>& out) {
  const auto& s = k.shape;
  const double n = s[0], c = s[1], h = s[2], w = s[3], kk = s[4], r = s[5], sw = s[6], g = static_cast<double>(s[13]);
  const ConvGemm cg = conv_gemm(k);
  const double p = cg.p, q = cg.q;
  out.push_back(lg(cg.m));
  out.push_back(lg(cg.n));
  out.push_back(lg(cg.k));
  static const double kTiles[4][2] = {{64, 64}, {128, 64}, {128, 128}, {256, 128}};
  tile_waves(cg.m, cg.n, g, kTiles, sm_count, out);
  const double eb = element_bytes(k.math);
  out.push_back(lg(n * c * h * w * eb));
  out.push_back(lg(n * kk * p * q * eb));
  out.push_back(lg(kk * c / g * r * sw * eb));
  out.push_back(std::log2(std::max(c, 1.0) / std::max(kk, 1.0)));
  out.push_back(std::log2((base.compute_s(k) + 1e-9) / (base.memory_s(k) + 1e-9)));
  const bool one = s[5] == 1 && s[6] == 1, stride1 = s[7] == 1 && s[8] == 1;
  out.push_back(one ? 1.0 : 0.0);
  out.push_back(stride1 ? 1.0 : 0.0);
  out.push_back(one && stride1 && s[9] == 0 && s[10] == 0 ? 1.0 : 0.0);
}

const std::vector<std::string>& extra_feature_names(KernelKind kind) {
  static const std::vector<std::string> conv = {"c_pow2", "k_pow2", "hw_pow2", "pq_pow2", "nhw_pow2", "npq_pow2",
                                                "pass_m_pow2", "pass_n_pow2", "pass_k_pow2"};
  // A GEMM's M, N, K alignment, its tiles and last-wave fill for the tile shapes of cuBLAS's Hopper
  // kernels (as the convolutions' pass features), and the three matrices' bytes.
  static const std::vector<std::string> gemm = {"m_pow2", "n_pow2", "k_pow2", "tiles_64x64", "fill_64x64",
                                                "tiles_128x64", "fill_128x64", "tiles_256x128", "fill_256x128",
                                                "a_bytes", "b_bytes", "c_bytes", "compute_over_memory"};
  static const std::vector<std::string> none;
  return kind == KernelKind::Conv2d ? conv : kind == KernelKind::Gemm ? gemm : none;
}

// log2 of the largest power of two dividing v, at most 7 (128): vector widths and tile alignment.
static double pow2_align(double v) {
  int64_t x = static_cast<int64_t>(v);
  int a = 0;
  while (x > 0 && x % 2 == 0 && a < 7) x /= 2, ++a;
  return a;
}

static void conv_extra_features(const KernelDesc& k, std::vector<double>& out) {
  const auto& s = k.shape;
  const double n = s[0], c = s[1], h = s[2], w = s[3], kk = s[4], g = static_cast<double>(s[13]);
  const ConvGemm cg = conv_gemm(k);
  const double p = cg.p, q = cg.q;
  for (double v : {c / g, kk / g, h * w, p * q, n * h * w, n * p * q, cg.m, cg.n, cg.k}) out.push_back(pow2_align(v));
}

static void gemm_extra_features(const KernelDesc& k, int sm_count, const Baseline& base, std::vector<double>& out) {
  const double m = static_cast<double>(k.shape[0]), n = static_cast<double>(k.shape[1]),
               kk = static_cast<double>(k.shape[2]);
  for (double v : {m, n, kk}) out.push_back(pow2_align(v));
  static const double kTiles[3][2] = {{64, 64}, {128, 64}, {256, 128}};
  tile_waves(m, n, 1, kTiles, sm_count, out);
  const double eb = element_bytes(k.math);
  out.push_back(lg(m * kk * eb));
  out.push_back(lg(kk * n * eb));
  out.push_back(lg(m * n * eb));
  out.push_back(std::log2((base.compute_s(k) + 1e-9) / (base.memory_s(k) + 1e-9)));
}

void features(const KernelDesc& kernel, int sm_count, const Baseline& base, std::vector<double>& out, bool extended) {
  const KernelDesc k = kernel_view(kernel, sm_count, base);
  kind_features(k, sm_count, out);
  if (k.kind == KernelKind::Conv2d) conv_pass_features(k, sm_count, base, out);
  out.push_back(std::log2(base.compute_s(k) * 1e6 + 1e-3));
  out.push_back(std::log2(base.memory_s(k) * 1e6 + 1e-3));
  if (extended && k.kind == KernelKind::Conv2d) conv_extra_features(k, out);
  if (extended && k.kind == KernelKind::Gemm) gemm_extra_features(k, sm_count, base, out);
}

// The transformers' kinds (feature_names: attention, layernorm, embedding).
static void transformer_features(const KernelDesc& k, int sm_count, std::vector<double>& out) {
  const auto& s = k.shape;
  const double intensity = k.bytes > 0 ? k.flops / k.bytes : 0;
  switch (k.kind) {
    case KernelKind::Attention: {
      const double n = static_cast<double>(s[0]), heads = static_cast<double>(s[1]), t = static_cast<double>(s[2]),
                   d = static_cast<double>(s[3]);
      for (int i = 0; i < 4; ++i) out.push_back(lg(s[i]));
      out.push_back(s[4] ? 1.0 : 0.0);
      out.push_back(lg(k.flops));
      out.push_back(lg(k.bytes));
      out.push_back(std::log2(intensity + 1e-3));
      const double ctas = std::ceil(t / 128.0) * n * heads, w = ctas / std::max(sm_count, 1);
      out.push_back(lg(ctas));
      out.push_back(lg(std::ceil(w)));
      out.push_back(w - std::floor(w));
      out.push_back(lg(t * d));
      break;
    }
    case KernelKind::LayerNorm: {
      const double rows = static_cast<double>(s[0]);
      out.push_back(lg(rows));
      out.push_back(lg(s[1]));
      out.push_back(lg(rows * s[1]));
      out.push_back(lg(k.bytes));
      out.push_back(std::log2(rows / std::max(sm_count, 1)));
      out.push_back(layernorm_vectorized(k) ? 1.0 : 0.0);
      break;
    }
    case KernelKind::Embedding:
      out.push_back(lg(s[0]));
      out.push_back(lg(s[1]));
      out.push_back(lg(s[2]));
      out.push_back(lg(k.bytes));
      out.push_back(lg(static_cast<double>(s[2]) * s[1] * 4));  // the FP32 table
      break;
    default:
      break;
  }
}

static void kind_features(const KernelDesc& k, int sm_count, std::vector<double>& out) {
  const auto& s = k.shape;
  const double intensity = k.bytes > 0 ? k.flops / k.bytes : 0;
  switch (k.kind) {
    case KernelKind::Conv2d: {
      for (int i = 0; i < 9; ++i) out.push_back(lg(s[i]));
      out.push_back(lg(s[9] + 1));
      out.push_back(lg(s[10] + 1));
      out.push_back(lg(s[11]));
      out.push_back(lg(s[12]));
      out.push_back(lg(s[13]));
      double p = (s[2] + 2 * s[9] - s[11] * (s[5] - 1) - 1) / s[7] + 1, q = (s[3] + 2 * s[10] - s[12] * (s[6] - 1) - 1) / s[8] + 1;
      double g = static_cast<double>(s[13]);
      double gm = s[0] * p * q, gn = s[4] / g, gk = s[1] / g * s[5] * s[6];
      out.push_back(lg(p));
      out.push_back(lg(q));
      out.push_back(lg(gm));
      out.push_back(lg(gn));
      out.push_back(lg(gk));
      out.push_back(lg(k.flops));
      out.push_back(lg(k.bytes));
      out.push_back(std::log2(intensity + 1e-3));
      waves(gm, gn, g, sm_count, out);
      out.push_back(s[13] > 1 && s[13] == s[1] ? 1.0 : 0.0);
      out.push_back(s[1] % 8 == 0 ? 1.0 : 0.0);
      out.push_back(s[4] % 8 == 0 ? 1.0 : 0.0);
      break;
    }
    case KernelKind::Gemm:
      out.push_back(lg(s[0]));
      out.push_back(lg(s[1]));
      out.push_back(lg(s[2]));
      out.push_back(lg(k.flops));
      out.push_back(lg(k.bytes));
      out.push_back(std::log2(intensity + 1e-3));
      waves(s[0], s[1], 1, sm_count, out);
      for (int i = 0; i < 3; ++i) out.push_back(s[i] % 8 == 0 ? 1.0 : 0.0);
      break;
    case KernelKind::BatchNorm: {
      double e = static_cast<double>(s[0]) * s[1] * s[2] * s[3];
      out.push_back(lg(s[0]));
      out.push_back(lg(s[1]));
      out.push_back(lg(static_cast<double>(s[2]) * s[3]));
      out.push_back(lg(e));
      out.push_back(lg(e / s[1]));
      out.push_back(lg(k.bytes));
      break;
    }
    case KernelKind::Pool:
      for (int i = 0; i < 7; ++i) out.push_back(lg(s[i]));
      out.push_back(lg(s[7] + 1));
      out.push_back(lg(s[8]));
      out.push_back(lg(s[9]));
      out.push_back(lg(static_cast<double>(s[0]) * s[1] * s[2] * s[3]));
      out.push_back(lg(static_cast<double>(s[0]) * s[1] * s[8] * s[9]));
      out.push_back(lg(k.bytes));
      break;
    case KernelKind::Add:
      out.push_back(lg(s[0]));
      out.push_back(static_cast<double>(s[1]));
      out.push_back(lg(k.bytes));
      break;
    case KernelKind::SoftmaxCE:
      out.push_back(lg(s[0]));
      out.push_back(lg(s[1]));
      out.push_back(lg(static_cast<double>(s[0]) * s[1]));
      break;
    case KernelKind::Attention:
    case KernelKind::LayerNorm:
    case KernelKind::Embedding:
      transformer_features(k, sm_count, out);
      break;
    default:
      out.push_back(lg(s[0]));
      out.push_back(lg(k.bytes));
      break;
  }
}

uint64_t shape_hash(const KernelDesc& k) {
  // FNV-1a over the kind, the shape fields and the variant.
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  mix(static_cast<uint64_t>(k.kind));
  auto shape = k.shape;
  if (k.kind == KernelKind::Gemm) {  // one nn.Linear (batch, in, out) whatever the pass
    const auto& s = k.shape;
    if (k.pass == Pass::Fwd) shape = {s[0], s[2], s[1]};
    else if (k.pass == Pass::BwdData) shape = {s[0], s[1], s[2]};
    else shape = {s[2], s[1], s[0]};
  }
  for (int64_t v : shape) mix(static_cast<uint64_t>(v));
  for (const char* c = k.variant; *c; ++c) mix(static_cast<uint64_t>(*c));
  return h;
}

}  // namespace dtsim::mlp
