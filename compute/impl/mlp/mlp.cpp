#include "compute/impl/mlp/mlp.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "core/error.hpp"
#include "core/output.hpp"
#include "compute/impl/mlp/features.hpp"

namespace dtsim::mlp {

namespace fs = std::filesystem;

void Mlp::predict_log_ratio(const Eigen::MatrixXf& raw, Eigen::VectorXf& log_ratio, std::vector<bool>* in_range) const {
  // Rows are kernels. Clamp to the training range, normalise, then affine + ReLU through the hidden
  // layers, affine out.
  // Eigen's matrix product sums a row's products in one order where the row falls in a whole panel
  // of mr rows (gebp_traits), and in another (two accumulators over the depth, then added) where it
  // is left over in a smaller panel; one row alone takes the matrix-vector product, another order
  // again. The same kernel's time then differed in float's last digits (up to 4e-7 of it) with the
  // list it was in, which broke the equalities the batch ladder leaves (batch_monotone_times: a
  // kernel as fast as its half-batch twin in one prediction, a little faster in the next). Padded to
  // whole panels, every row sums alike.
  constexpr Eigen::Index packet = Eigen::internal::gebp_traits<float, float>::mr;
  if (raw.rows() % packet != 0) {
    const Eigen::Index rows = raw.rows(), padded = (rows / packet + 1) * packet;
    Eigen::MatrixXf whole(padded, raw.cols());
    whole.topRows(rows) = raw;
    whole.bottomRows(padded - rows).rowwise() = raw.row(rows - 1);
    predict_log_ratio(whole, log_ratio, in_range);
    log_ratio.conservativeResize(rows);
    if (in_range) in_range->resize(static_cast<size_t>(rows));
    return;
  }
  Eigen::MatrixXf h;
  if (feature_min.size() == raw.cols()) {
    Eigen::MatrixXf clamped = raw;
    for (Eigen::Index c = 0; c < raw.cols(); ++c) clamped.col(c) = raw.col(c).cwiseMax(feature_min(c)).cwiseMin(feature_max(c));
    if (in_range) {
      in_range->resize(static_cast<size_t>(raw.rows()));
      // A little slack: a feature computed in float at the range's edge is still measured ground.
      const Eigen::VectorXf slack = 1e-3f * (feature_max - feature_min).cwiseAbs() + Eigen::VectorXf::Constant(raw.cols(), 1e-5f);
      for (Eigen::Index r = 0; r < raw.rows(); ++r)
        (*in_range)[static_cast<size_t>(r)] = ((raw.row(r) - clamped.row(r)).cwiseAbs().array() <= slack.transpose().array()).all();
    }
    h = (clamped.rowwise() - feature_mean.transpose()).array().rowwise() / feature_std.transpose().array();
  } else {
    if (in_range) in_range->assign(static_cast<size_t>(raw.rows()), true);
    h = (raw.rowwise() - feature_mean.transpose()).array().rowwise() / feature_std.transpose().array();
  }
  for (size_t l = 0; l < weights.size(); ++l) {
    const auto& w = weights[l];
    const int nb = l < diagonal_blocks.size() ? diagonal_blocks[l] : 1;
    Eigen::MatrixXf z(h.rows(), w.rows());
    if (nb <= 1) {
      z.noalias() = h * w.transpose();
    } else {
      const Eigen::Index bo = w.rows() / nb, bi = w.cols() / nb;
      for (Eigen::Index b = 0; b < nb; ++b)
        z.middleCols(b * bo, bo).noalias() = h.middleCols(b * bi, bi) * w.block(b * bo, b * bi, bo, bi).transpose();
    }
    z.rowwise() += biases[l].transpose();
    if (l + 1 < weights.size()) z = z.cwiseMax(0.0f);
    h = std::move(z);
  }
  log_ratio = (h.col(0).array() * target_std + target_mean).matrix();
}

int diagonal_block_count(const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& w) {
  for (Eigen::Index e = 16; e >= 2; --e) {
    if (w.rows() % e || w.cols() % e) continue;
    const Eigen::Index bo = w.rows() / e, bi = w.cols() / e;
    bool zero_outside = true;
    for (Eigen::Index r = 0; r < w.rows() && zero_outside; ++r)
      for (Eigen::Index c = 0; c < w.cols(); ++c)
        if (r / bo != c / bi && w(r, c) != 0.0f) {
          zero_outside = false;
          break;
        }
    if (zero_outside) return static_cast<int>(e);
  }
  return 1;
}

namespace {
// Subnormal floats flushed to zero while the MLPs run, as the weights are when loaded: hidden
// activations reach the subnormal range too, and each operation on one costs a microcode assist on
// many x86 cores (resnet50's kernels 0.86 -> 0.58 ms with the three-layer conv2d predictors on this
// project's Intel Xeon). The caller's floating-point mode is restored on the way out.
class FlushSubnormals {
 public:
#if defined(__SSE2__)
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }

 private:
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;  // MXCSR bits
  unsigned saved_;
#endif
};
}  // namespace

// A layer norm row longer than any the predictor was trained on (its manifest's feature_max of
// "features") is seen at the longest of them (layernorm_trained_view).
static KernelDesc trained_row_view(const Mlp& m, const KernelDesc& k) {
  if (k.kind != KernelKind::LayerNorm || m.feature_max.size() == 0) return k;
  const auto it = std::find(m.feature_names.begin(), m.feature_names.end(), "features");
  if (it == m.feature_names.end()) return k;
  return layernorm_trained_view(k, std::llround(std::exp2(m.feature_max(it - m.feature_names.begin()))));
}

void PredictorSet::predict(const std::vector<KernelDesc>& kernels, std::vector<double>& seconds, std::vector<bool>* in_range,
                           const std::vector<double>* base_seconds) const {
  const FlushSubnormals flush;
  seconds.assign(kernels.size(), std::numeric_limits<double>::quiet_NaN());
  if (in_range) in_range->assign(kernels.size(), true);
  // Group kernels by predictor so that each MLP runs once over a matrix of kernels.
  std::map<const Mlp*, std::vector<size_t>> groups;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (const Mlp* m = find(predictor_key(kernels[i]))) groups[m].push_back(i);
  std::vector<double> f;
  for (const auto& [m, idx] : groups) {
    const Eigen::Index nf = static_cast<Eigen::Index>(m->feature_names.size());
    // A predictor trained with the optional features lists more names than the standard set.
    const auto& names = feature_names(kernels[idx.front()].kind);
    const bool extended = m->feature_names.size() > names.size();
    // One trained on another feature set (e.g. layernorm's before "vectorized") would read shifted inputs.
    if (m->feature_names.size() < names.size() || !std::equal(names.begin(), names.end(), m->feature_names.begin()))
      throw InputError(m->key, "trained on other features than this build computes; retrain it (dtsim-train-predictors)");
    Eigen::MatrixXf x(static_cast<Eigen::Index>(idx.size()), nf);
    for (size_t r = 0; r < idx.size(); ++r) {
      f.clear();
      features(trained_row_view(*m, kernels[idx[r]]), sm_count, baseline, f, extended);
      for (Eigen::Index c = 0; c < nf; ++c) x(static_cast<Eigen::Index>(r), c) = static_cast<float>(f[c]);
    }
    Eigen::VectorXf y;
    std::vector<bool> inside;
    m->predict_log_ratio(x, y, &inside);
    for (size_t r = 0; r < idx.size(); ++r) {
      const KernelDesc& k = kernels[idx[r]];
      if (m->ratio_of.empty()) {
        seconds[idx[r]] = baseline.seconds(k) * std::exp(y(static_cast<Eigen::Index>(r)));
      } else {  // a ratio predictor: the base predictor's time of the contiguous twin times the ratio
        const double b = base_seconds && idx[r] < base_seconds->size() ? (*base_seconds)[idx[r]] : std::numeric_limits<double>::quiet_NaN();
        if (!(b > 0)) continue;  // no base: not covered (NaN)
        seconds[idx[r]] = b * std::exp(y(static_cast<Eigen::Index>(r)));
      }
      if (m->max_roofline_fraction > 0)  // the predicted efficiency is bounded by the measured one
        seconds[idx[r]] = std::max(seconds[idx[r]], baseline.roofline_s(k) / m->max_roofline_fraction);
      if (in_range) (*in_range)[idx[r]] = inside[r];
    }
  }
}

namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const unsigned char* data, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = uint32_t(data[i]) << 16 | (i + 1 < n ? uint32_t(data[i + 1]) << 8 : 0) | (i + 2 < n ? data[i + 2] : 0);
    out += kBase64[v >> 18 & 63];
    out += kBase64[v >> 12 & 63];
    out += i + 1 < n ? kBase64[v >> 6 & 63] : '=';
    out += i + 2 < n ? kBase64[v & 63] : '=';
  }
  return out;
}

// Decodes base64 (with its '=' padding); false on any other character or a length not a multiple of 4.
bool unbase64(const std::string& s, std::vector<unsigned char>& out) {
  static const auto table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kBase64[i])] = static_cast<int8_t>(i);
    return t;
  }();
  if (s.size() % 4) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = s[i + j];
      const bool last_group = i + 4 == s.size();
      if (c == '=' && last_group && j >= 2 && (j == 3 || s[i + 3] == '=')) {
        ++pad;
        v <<= 6;
        continue;
      }
      const int8_t d = table[static_cast<unsigned char>(c)];
      if (d < 0 || pad) return false;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<unsigned char>(v >> 16));
    if (pad < 2) out.push_back(static_cast<unsigned char>(v >> 8 & 255));
    if (pad < 1) out.push_back(static_cast<unsigned char>(v & 255));
  }
  return true;
}

// A manifest's float vector: base64 of float32 values (float_vector_json) or an array of numbers.
Eigen::VectorXf vec(const Json& j, const std::string& what) {
  if (j.is_string()) {
    std::vector<unsigned char> bytes;
    if (!unbase64(j.get<std::string>(), bytes) || bytes.size() % sizeof(float))
      throw InputError(what, "must be base64 of float32 values or an array of numbers");
    Eigen::VectorXf v(static_cast<Eigen::Index>(bytes.size() / sizeof(float)));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
  if (!j.is_array()) throw InputError(what, "must be an array of numbers");
  Eigen::VectorXf v(static_cast<Eigen::Index>(j.size()));
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number()) throw InputError(what, "must be an array of numbers");
    v(static_cast<Eigen::Index>(i)) = j[i].get<float>();
  }
  return v;
}

// Subnormal weights (L1 and weight decay leave thousands of them) are read as zero: their products
// are below float's normal range anyway, and on many x86 cores each one costs a microcode assist,
// which made resnet50's kernels 2-4x slower to predict on this project's Intel Xeon machines.
float weight(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? 0.0f : x; }

// Where one predictor's floats lie in weights.bin and how they form its layers: read from the
// manifest and checked against it at load, so that only the floats themselves wait for first use.
struct Block {
  std::string where;         // "manifest.json: predictor KEY", for errors
  std::vector<int> sizes;    // layer widths, features first, 1 last
  std::vector<int> blocks;   // per layer, its diagonal blocks (1: dense)
  bool stored_blocks = false;
  size_t offset = 0, floats = 0;  // in floats
  std::string checksum;           // weights_checksum of the block; empty in files written before it
};

// weights.bin's size in floats, checked against the manifest's weights_bytes where it has one.
size_t weight_file_floats(const std::string& path, const Json& manifest, const std::string& mpath) {
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  if (ec) throw InputError(path, "cannot open file");
  if (manifest.contains("weights_bytes") && manifest.at("weights_bytes").get<uint64_t>() != bytes)
    throw InputError(path, std::to_string(bytes) + " bytes, but " + mpath + " was written with " + manifest.at("weights_bytes").dump() +
                               " (a damaged or mismatched file: copy the folder again or retrain)");
  return bytes / sizeof(float);
}

// The floats [offset, offset + n) of weights.bin, one read.
std::vector<float> read_floats(const std::string& path, size_t offset, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v(n);
  if (!in || !in.seekg(static_cast<std::streamoff>(offset * sizeof(float))) ||
      !in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float))))
    throw InputError(path, "cannot read " + std::to_string(n) + " floats at float " + std::to_string(offset));
  return v;
}

// The datasheet numbers of the measured GPU that the predictors' baseline was computed with.
void read_baseline(PredictorSet& set, const std::string& mpath) {
  const Json& b = set.manifest.at("baseline");
  set.sm_count = b.at("sm_count").get<int>();
  for (int m = 0; m < kMathModes; ++m) set.baseline.peak_flops[m] = b.at("peak_flops").at(math_name(static_cast<MathMode>(m))).get<double>();
  set.baseline.memory_bandwidth_Bps = b.at("memory_bandwidth_Bps").get<double>();
  set.baseline.floor_s = b.at("floor_s").get<double>();
  set.baseline.l2_cache_bytes = b.value("l2_cache_bytes", 0.0);
  set.baseline.sm_count = set.sm_count;
  if (set.baseline.l2_cache_bytes < 0) throw InputError(mpath, "baseline l2_cache_bytes must not be negative");
  if (set.sm_count <= 0 || set.baseline.memory_bandwidth_Bps <= 0) throw InputError(mpath, "baseline must have positive sm_count and bandwidth");
  for (double p : set.baseline.peak_flops)
    if (!(p > 0)) throw InputError(mpath, "baseline peak_flops must be positive");
}

// A predictor's features and their standardisation, its target's, and the training range.
void read_scaling(const Json& p, const std::string& where, Mlp& m) {
  m.feature_names = p.at("features").get<std::vector<std::string>>();
  m.feature_mean = vec(p.at("feature_mean"), where + ".feature_mean");
  m.feature_std = vec(p.at("feature_std"), where + ".feature_std");
  m.target_mean = p.at("target_mean").get<float>();
  m.target_std = p.at("target_std").get<float>();
  m.heldout = p.value("heldout", Json::object());
  m.max_roofline_fraction = p.value("max_roofline_fraction", 0.0);
  m.ratio_of = p.value("ratio_of", std::string());
  if (p.contains("ratio_of") && (m.ratio_of.empty() || m.ratio_of == m.key))
    throw InputError(where + ".ratio_of", "must name another predictor's key (the base the ratio multiplies)");
  if (m.max_roofline_fraction < 0 || m.max_roofline_fraction > 1)
    throw InputError(where + ".max_roofline_fraction", "must be in (0, 1] (an achieved fraction of the datasheet roofline)");
  if (p.contains("feature_min") != p.contains("feature_max")) throw InputError(where, "feature_min and feature_max come together");
  if (p.contains("feature_min")) {
    m.feature_min = vec(p.at("feature_min"), where + ".feature_min");
    m.feature_max = vec(p.at("feature_max"), where + ".feature_max");
    if (m.feature_min.size() != static_cast<Eigen::Index>(m.feature_names.size()) || m.feature_max.size() != m.feature_min.size() ||
        (m.feature_max.array() < m.feature_min.array()).any())
      throw InputError(where + ".feature_min", "must have one entry per feature, each at most its feature_max");
  }
}

// A predictor's layer sizes, blocks and place in weights.bin, checked against its features and the file.
Block read_block_plan(const Json& p, const std::string& where, const Mlp& m, size_t file_floats) {
  Block b;
  b.where = where;
  b.sizes = p.at("layers").get<std::vector<int>>();
  b.offset = p.at("weights_offset").get<size_t>();
  b.checksum = p.value("weights_fnv1a64", std::string());
  const auto& sizes = b.sizes;
  if (sizes.size() < 2 || static_cast<size_t>(sizes.front()) != m.feature_names.size() || sizes.back() != 1 ||
      m.feature_mean.size() != sizes.front() || m.feature_std.size() != sizes.front())
    throw InputError(where, "layer sizes do not match the features");
  // An ensemble's hidden layers are block-diagonal (one block per member): only the blocks are stored.
  b.stored_blocks = p.contains("weight_blocks");
  b.blocks = p.value("weight_blocks", std::vector<int>(sizes.size() - 1, 1));
  if (b.blocks.size() + 1 != sizes.size()) throw InputError(where + ".weight_blocks", "must have one entry per layer");
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    const int in = sizes[l], out = sizes[l + 1], k = b.blocks[l];
    if (in <= 0 || out <= 0) throw InputError(where + ".layers", "sizes must be positive");
    if (k <= 0 || in % k || out % k) throw InputError(where + ".weight_blocks", "each must be positive and divide its layer's sizes");
    b.floats += size_t(k) * (in / k) * (out / k) + out;
    if (b.offset + b.floats > file_floats) throw InputError(where, "weights run past the end of weights.bin");
  }
  return b;
}

// A predictor's layers from its block's floats (weights.bin from the block's offset on).
void read_layers(const Block& b, const float* w, Mlp& m) {
  size_t off = 0;
  for (size_t l = 0; l + 1 < b.sizes.size(); ++l) {
    const int in = b.sizes[l], out = b.sizes[l + 1], k = b.blocks[l];
    const int bi = in / k, bo = out / k;
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> wl =
        Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>::Zero(out, in);
    for (int blk = 0; blk < k; ++blk)
      for (int r = 0; r < bo; ++r)
        for (int c = 0; c < bi; ++c) wl(blk * bo + r, blk * bi + c) = weight(w[off++]);
    Eigen::VectorXf bias(out);
    for (int r = 0; r < out; ++r) bias(r) = weight(w[off++]);
    // Files written before weight_blocks existed stored ensembles dense: find their blocks.
    m.diagonal_blocks.push_back(b.stored_blocks ? k : diagonal_block_count(wl));
    m.weights.push_back(std::move(wl));
    m.biases.push_back(std::move(bias));
  }
}

void check_block(const Block& b, const float* w, const std::string& path) {
  if (!b.checksum.empty() && weights_checksum(w, b.floats) != b.checksum)
    throw InputError(path, "the block of " + b.where.substr(b.where.rfind(' ') + 1) + " does not match its checksum in manifest.json (a damaged or "
                               "mismatched file: copy the folder again or retrain)");
}

}  // namespace

Json float_vector_json(const Eigen::VectorXf& v) {
  static_assert(sizeof(float) == 4, "float32");
  return base64(reinterpret_cast<const unsigned char*>(v.data()), static_cast<size_t>(v.size()) * sizeof(float));
}

std::string weights_checksum(const void* block, size_t floats) {
  const auto* bytes = static_cast<const unsigned char*>(block);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < floats; ++i) {
    uint32_t word;
    std::memcpy(&word, bytes + i * sizeof word, sizeof word);
    h = (h ^ word) * 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

struct PredictorSet::Lazy {
  std::string weights_path;
  std::mutex mu;
  std::map<std::string, Block> pending;  // by key, until read

  void complete(const std::string& key, Mlp& m) {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = pending.find(key);
    if (it == pending.end()) return;
    const std::vector<float> w = read_floats(weights_path, it->second.offset, it->second.floats);
    check_block(it->second, w.data(), weights_path);
    read_layers(it->second, w.data(), m);
    pending.erase(it);
  }
};

const Mlp* PredictorSet::find(const std::string& key) const {
  const auto it = by_key.find(key);
  if (it == by_key.end()) return nullptr;
  // A lazily read set is never made const (cached_predictors owns it): its predictors complete here.
  if (lazy) lazy->complete(key, const_cast<Mlp&>(it->second));
  return &it->second;
}

namespace {

// The predictor index: what load_predictors reads from a manifest, in a binary file that is read
// without parsing (the build writes one per shipped GPU; dtsim-index-predictors). It carries the
// FNV-1a of the manifest's bytes it was made from, so a manifest edited or retrained since is read
// from its JSON instead; weights.bin is checked as from the JSON (its size, each block's checksum).
constexpr char kIndexMagic[8] = {'d', 't', 's', 'i', 'm', 'P', 'I', '1'};

// FNV-1a over the bytes taken 8 at a time (the tail zero-padded), with the length folded in last.
uint64_t bytes_fnv1a64(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, std::min<size_t>(8, bytes.size() - i));
    h = (h ^ word) * 0x100000001b3ULL;
  }
  return (h ^ bytes.size()) * 0x100000001b3ULL;
}

class IndexWriter {
 public:
  template <class T> void pod(const T& v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& v) { pod(uint64_t(v.size())), out_ += v; }
  void floats(const Eigen::VectorXf& v) {
    pod(uint64_t(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), size_t(v.size()) * sizeof(float));
  }
  void ints(const std::vector<int>& v) {
    pod(uint64_t(v.size()));
    for (int x : v) pod(int32_t(x));
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// Reads what IndexWriter wrote; false (the file is then ignored) where it runs short.
class IndexReader {
 public:
  explicit IndexReader(const std::string& b) : b_(b) {}
  template <class T> bool pod(T& v) {
    if (b_.size() - at_ < sizeof v) return false;
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return true;
  }
  bool str(std::string& v) {
    uint64_t n;
    if (!pod(n) || b_.size() - at_ < n) return false;
    v.assign(b_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool floats(Eigen::VectorXf& v) {
    uint64_t n;
    if (!pod(n) || (b_.size() - at_) / sizeof(float) < n) return false;
    v.resize(static_cast<Eigen::Index>(n));
    std::memcpy(v.data(), b_.data() + at_, n * sizeof(float));
    at_ += n * sizeof(float);
    return true;
  }
  bool ints(std::vector<int>& v) {
    uint64_t n;
    if (!pod(n) || (b_.size() - at_) / sizeof(int32_t) < n) return false;
    v.resize(n);
    for (auto& x : v) {
      int32_t y = 0;
      pod(y);
      x = y;
    }
    return true;
  }
  bool done() const { return at_ == b_.size(); }

 private:
  const std::string& b_;
  size_t at_ = 0;
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open file");
  std::string bytes;
  in.seekg(0, std::ios::end);
  bytes.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) throw InputError(path, "cannot read file");
  return bytes;
}

// A lazily read set from an index made from exactly these manifest bytes; false where the index is
// missing, of another manifest or malformed (the caller then reads the JSON).
bool read_index(const std::string& index_path, const std::string& manifest_bytes, const std::string& mpath,
                const std::string& wpath, PredictorSet& set) {
  std::string bytes;
  try {
    if (!fs::exists(index_path)) return false;
    bytes = read_whole_file(index_path);
  } catch (const InputError&) {
    return false;
  }
  IndexReader r(bytes);
  char magic[8];
  uint64_t fnv = 0, manifest_size = 0, weights_bytes = 0, count = 0;
  if (!r.pod(magic) || std::memcmp(magic, kIndexMagic, sizeof magic) || !r.pod(fnv) || !r.pod(manifest_size) ||
      fnv != bytes_fnv1a64(manifest_bytes) || manifest_size != manifest_bytes.size())
    return false;
  auto lazy = std::make_shared<PredictorSet::Lazy>();
  PredictorSet s;
  uint8_t has_ratio = 0;
  bool ok = r.pod(weights_bytes) && r.str(s.gpu) && r.pod(s.sm_count) && r.pod(s.baseline.peak_flops) &&
            r.pod(s.baseline.memory_bandwidth_Bps) && r.pod(s.baseline.floor_s) && r.pod(s.baseline.l2_cache_bytes) &&
            r.pod(has_ratio) && r.pod(count);
  for (uint64_t i = 0; ok && i < count; ++i) {
    Mlp m;
    Block b;
    std::string heldout;
    uint8_t stored_blocks = 0;
    uint64_t offset = 0, floats = 0;
    uint64_t names = 0;
    ok = r.str(m.key) && r.pod(names);
    for (uint64_t j = 0; ok && j < names; ++j) {
      std::string name;
      ok = r.str(name);
      m.feature_names.push_back(std::move(name));
    }
    ok = ok && r.floats(m.feature_mean) && r.floats(m.feature_std) && r.pod(m.target_mean) && r.pod(m.target_std) &&
         r.str(heldout) && r.pod(m.max_roofline_fraction) && r.str(m.ratio_of) && r.floats(m.feature_min) &&
         r.floats(m.feature_max) && r.ints(b.sizes) && r.ints(b.blocks) && r.pod(stored_blocks) && r.pod(offset) &&
         r.pod(floats) && r.str(b.checksum);
    if (!ok) break;
    m.heldout = Json::from_cbor(heldout, true, false);
    if (m.heldout.is_discarded()) return false;
    b.where = mpath + ": predictor " + m.key;
    b.stored_blocks = stored_blocks != 0;
    b.offset = offset;
    b.floats = floats;
    lazy->pending.emplace(m.key, std::move(b));
    std::string key = m.key;
    s.by_key.emplace(std::move(key), std::move(m));
  }
  if (!ok || !r.done()) return false;
  // weights.bin as the manifest knew it, and each block inside it: a mismatch is the JSON path's error.
  std::error_code ec;
  const auto file_bytes = fs::file_size(wpath, ec);
  if (ec) throw InputError(wpath, "cannot open file");
  if (file_bytes != weights_bytes)
    throw InputError(wpath, std::to_string(file_bytes) + " bytes, but " + mpath + " was written with " + std::to_string(weights_bytes) +
                                " (a damaged or mismatched file: copy the folder again or retrain)");
  for (const auto& [key, b] : lazy->pending)
    if (b.offset + b.floats > file_bytes / sizeof(float)) throw InputError(b.where, "weights run past the end of weights.bin");
  s.dir = set.dir;
  s.baseline.sm_count = s.sm_count;
  s.has_ratio_predictors = has_ratio != 0;
  lazy->weights_path = wpath;
  s.lazy = std::move(lazy);
  set = std::move(s);
  return true;
}

}  // namespace

PredictorSet load_predictors(const std::string& dir, bool lazy) {
  PredictorSet set;
  set.dir = dir;
  const std::string mpath = dir + "/manifest.json", wpath = dir + "/weights.bin";
  set.manifest = load_json_file(mpath);
  try {
    const size_t file_floats = weight_file_floats(wpath, set.manifest, mpath);
    set.gpu = set.manifest.at("gpu").get<std::string>();
    read_baseline(set, mpath);
    std::map<std::string, Block> blocks;
    for (const Json& p : set.manifest.at("predictors")) {
      Mlp m;
      m.key = p.at("key").get<std::string>();
      const std::string where = mpath + ": predictor " + m.key;
      read_scaling(p, where, m);
      blocks[m.key] = read_block_plan(p, where, m, file_floats);
      set.has_ratio_predictors = set.has_ratio_predictors || !m.ratio_of.empty();
      std::string key = m.key;
      set.by_key.emplace(key, std::move(m));
    }
    if (lazy) {
      set.lazy = std::make_shared<PredictorSet::Lazy>();
      set.lazy->weights_path = wpath;
      set.lazy->pending = std::move(blocks);
    } else {
      const std::vector<float> w = read_floats(wpath, 0, file_floats);
      for (auto& [key, b] : blocks) {
        check_block(b, w.data() + b.offset, wpath);
        read_layers(b, w.data() + b.offset, set.by_key.at(key));
      }
    }
  } catch (const Json::exception& e) {
    throw InputError(mpath, std::string("malformed predictor manifest (") + e.what() + ")");
  }
  return set;
}

void write_predictor_index(const std::string& dir, const std::string& index_path) {
  const std::string mpath = dir + "/manifest.json", wpath = dir + "/weights.bin";
  const std::string manifest_bytes = read_whole_file(mpath);
  const PredictorSet set = load_predictors(dir, true);
  std::error_code ec;
  const uint64_t weights_bytes = set.manifest.contains("weights_bytes") ? set.manifest.at("weights_bytes").get<uint64_t>() : fs::file_size(wpath, ec);
  IndexWriter w;
  w.pod(kIndexMagic);
  w.pod(bytes_fnv1a64(manifest_bytes));
  w.pod(uint64_t(manifest_bytes.size()));
  w.pod(weights_bytes);
  w.str(set.gpu);
  w.pod(set.sm_count);
  w.pod(set.baseline.peak_flops);
  w.pod(set.baseline.memory_bandwidth_Bps);
  w.pod(set.baseline.floor_s);
  w.pod(set.baseline.l2_cache_bytes);
  w.pod(uint8_t(set.has_ratio_predictors));
  w.pod(uint64_t(set.by_key.size()));
  for (const auto& [key, m] : set.by_key) {
    const Block& b = set.lazy->pending.at(key);
    w.str(m.key);
    w.pod(uint64_t(m.feature_names.size()));
    for (const auto& n : m.feature_names) w.str(n);
    w.floats(m.feature_mean);
    w.floats(m.feature_std);
    w.pod(m.target_mean);
    w.pod(m.target_std);
    const std::vector<std::uint8_t> heldout = Json::to_cbor(m.heldout);
    w.str(std::string(heldout.begin(), heldout.end()));
    w.pod(m.max_roofline_fraction);
    w.str(m.ratio_of);
    w.floats(m.feature_min);
    w.floats(m.feature_max);
    w.ints(b.sizes);
    w.ints(b.blocks);
    w.pod(uint8_t(b.stored_blocks));
    w.pod(uint64_t(b.offset));
    w.pod(uint64_t(b.floats));
    w.str(b.checksum);
  }
  write_file_atomic(index_path, w.bytes());
}

PredictorSet load_predictors_indexed(const std::string& dir, const std::string& index_path) {
  const std::string mpath = dir + "/manifest.json";
  PredictorSet set;
  set.dir = dir;
  if (!index_path.empty() && read_index(index_path, read_whole_file(mpath), mpath, dir + "/weights.bin", set)) return set;
  return load_predictors(dir, true);
}

std::string predictor_index_path(const std::string& dir) {
  const char* env = std::getenv("DTSIM_PREDICTOR_INDEX_DIR");
  const std::string root = env ? env : DTSIM_PREDICTOR_INDEX_DIR;
  if (root.empty()) return "";
  return root + "/" + fs::path(dir).filename().string() + ".idx";
}

Baseline baseline_of(const GpuSpec& gpu) {
  Baseline b;
  b.peak_flops = gpu.peak_flops;
  b.memory_bandwidth_Bps = gpu.memory_bandwidth_Bps;
  b.l2_cache_bytes = gpu.l2_cache_bytes;
  b.sm_count = gpu.sm_count;
  return b;
}

Json baseline_json(const Baseline& b, int sm_count) {
  Json peaks;
  for (int m = 0; m < kMathModes; ++m) peaks[math_name(static_cast<MathMode>(m))] = b.peak_flops[m];
  Json j{{"peak_flops", peaks}, {"memory_bandwidth_Bps", b.memory_bandwidth_Bps}, {"floor_s", b.floor_s}, {"sm_count", sm_count}};
  if (b.l2_cache_bytes > 0) j["l2_cache_bytes"] = b.l2_cache_bytes;  // written where the GPU's preset gives it
  return j;
}

std::shared_ptr<const PredictorSet> cached_predictors(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const PredictorSet>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[dir];
  if (!slot) slot = std::make_shared<PredictorSet>(load_predictors_indexed(dir, predictor_index_path(dir)));
  return slot;
}

std::string pretrained_root() {
  if (const char* env = std::getenv("DTSIM_PREDICTOR_DIR"); env && *env) return env;
  return DTSIM_SOURCE_PREDICTOR_DIR;
}

std::vector<std::string> pretrained_gpus() {
  std::vector<std::string> gpus;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(pretrained_root(), ec))
    if (e.is_directory() && fs::exists(e.path() / "manifest.json")) gpus.push_back(e.path().filename().string());
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

void write_predictors(const std::string& dir, const Json& manifest_base, const std::vector<Mlp>& mlps) {
  fs::create_directories(dir);
  Json manifest = manifest_base;
  Json preds = Json::array();
  std::string blob;
  size_t offset = 0;
  auto put = [&](float x) {
    char b[sizeof x];
    std::memcpy(b, &x, sizeof x);
    blob.append(b, sizeof x);
    ++offset;
  };
  for (const Mlp& m : mlps) {
    Json p;
    p["key"] = m.key;
    p["features"] = m.feature_names;
    p["feature_mean"] = float_vector_json(m.feature_mean);
    p["feature_std"] = float_vector_json(m.feature_std);
    if (m.max_roofline_fraction > 0) p["max_roofline_fraction"] = m.max_roofline_fraction;
    if (m.feature_min.size()) {
      p["feature_min"] = float_vector_json(m.feature_min);
      p["feature_max"] = float_vector_json(m.feature_max);
    }
    if (!m.ratio_of.empty()) p["ratio_of"] = m.ratio_of;
    p["target_mean"] = m.target_mean;
    p["target_std"] = m.target_std;
    std::vector<int> sizes = {static_cast<int>(m.feature_names.size())}, blocks;
    for (const auto& w : m.weights) {
      sizes.push_back(static_cast<int>(w.rows()));
      blocks.push_back(diagonal_block_count(w));
    }
    p["layers"] = sizes;
    // A packed ensemble's hidden layers are zero off their diagonal blocks: store the blocks only.
    if (std::any_of(blocks.begin(), blocks.end(), [](int k) { return k > 1; })) p["weight_blocks"] = blocks;
    p["weights_offset"] = offset;
    p["heldout"] = m.heldout;
    const size_t first = blob.size();
    for (size_t l = 0; l < m.weights.size(); ++l) {
      const Eigen::Index k = blocks[l], bo = m.weights[l].rows() / k, bi = m.weights[l].cols() / k;
      for (Eigen::Index blk = 0; blk < k; ++blk)
        for (Eigen::Index r = 0; r < bo; ++r)
          for (Eigen::Index c = 0; c < bi; ++c) put(m.weights[l](blk * bo + r, blk * bi + c));
      for (Eigen::Index r = 0; r < m.biases[l].size(); ++r) put(m.biases[l](r));
    }
    p["weights_fnv1a64"] = weights_checksum(blob.data() + first, (blob.size() - first) / sizeof(float));
    preds.push_back(std::move(p));
  }
  manifest["predictors"] = std::move(preds);
  manifest["weights_bytes"] = blob.size();
  write_file_atomic(dir + "/weights.bin", blob);
  write_file_atomic(dir + "/manifest.json", manifest.dump(1) + "\n");
}

}  // namespace dtsim::mlp
