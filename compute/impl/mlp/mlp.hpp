#pragma once
// Trained kernel-time predictors and their inference. A predictor folder holds manifest.json (the
// features, their normalisation, the layer sizes, the data it was trained on and its held-out
// error) and weights.bin (float32, little-endian, each layer's weight matrix row-major then its
// bias). The manifest records weights.bin's size and each predictor's block checksum, so that a
// damaged or mismatched file is an input error, never a wrong time. A process reads a predictor's
// block only when a kernel first asks for it (cached_predictors). Inference is Eigen, batched per
// predictor: no LibTorch at run time.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "core/json_util.hpp"
#include "compute/impl/mlp/features.hpp"
#include "workload/kernels.hpp"
#include "hardware/gpu_spec.hpp"

namespace dtsim::mlp {

struct Mlp {
  std::string key;
  std::vector<std::string> feature_names;
  Eigen::VectorXf feature_mean, feature_std;
  float target_mean = 0, target_std = 1;  // of log(measured seconds / baseline seconds)
  std::vector<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> weights;  // [out x in]
  std::vector<Eigen::VectorXf> biases;
  // Per layer, how many equal blocks on the diagonal its weight matrix is (1: dense). An ensemble
  // packed into one MLP (trainer --ensemble E) has E independent members, so every layer between
  // two hidden layers is block-diagonal; inference multiplies the blocks alone (found at load).
  std::vector<int> diagonal_blocks;
  Json heldout;  // the error the trainer measured: rows, mape, median_ape, max_ape
  // The range of each raw feature over the training rows (manifest feature_min / feature_max; empty in
  // files written before they existed). A kernel outside it is an extrapolation: its features are
  // clamped to the range, so that a ReLU network's linear growth beyond the data cannot carry a kernel
  // past the roofline; the efficiency of the nearest measured kernels is held instead.
  Eigen::VectorXf feature_min, feature_max;
  // The largest achieved fraction of the roofline, max(FLOPs / peak, bytes / bandwidth) / time, over the
  // training rows (manifest max_roofline_fraction; 0 in files written before it existed): no prediction
  // claims a kernel runs closer to the roofline than any measured kernel of its kind did.
  double max_roofline_fraction = 0;
  // A ratio predictor (manifest "ratio_of": the key of another predictor, e.g. "conv2d/fwd/bf16" for
  // "conv2d/fwd/bf16/nhwc"): its output is log(seconds / base seconds), the base being the time the
  // measured compute model gives the kernel's contiguous twin on the same GPU (MlpComputeModel), so
  // time = base prediction x learned ratio. Empty: the output is log(seconds / baseline), as above.
  std::string ratio_of;

  // log(seconds / baseline) for each row of raw (unnormalised) features; with `in_range`, whether each
  // row lay inside the training range (always true where the manifest has no range).
  void predict_log_ratio(const Eigen::MatrixXf& raw_features, Eigen::VectorXf& log_ratio, std::vector<bool>* in_range = nullptr) const;
};

struct PredictorSet {
  struct Lazy;  // the predictors whose layers are still in weights.bin (a lazily read set)
  std::string dir;
  std::string gpu;  // GPU name the data was measured on
  int sm_count = 0;
  Baseline baseline;
  Json manifest;
  // Every predictor by key. In a lazily read set (cached_predictors) a predictor's layers are empty
  // until find() first returns it; load_predictors reads them all.
  std::map<std::string, Mlp> by_key;
  bool has_ratio_predictors = false;  // any predictor with ratio_of
  std::shared_ptr<Lazy> lazy;         // null once every predictor is complete

  // The predictor of a key, complete (its layers read and checked), or null. Thread-safe.
  const Mlp* find(const std::string& key) const;
  // Seconds on the measured GPU for every kernel a predictor covers; NaN for the others. With
  // `in_range`, whether each covered kernel lay inside its predictor's training range. A kernel whose
  // predictor is a ratio predictor takes its base time from `base_seconds` (one per kernel, on this
  // set's GPU: ratio_bases in mlp_model.hpp); without one, or where it is NaN, it stays NaN.
  void predict(const std::vector<KernelDesc>& kernels, std::vector<double>& seconds, std::vector<bool>* in_range = nullptr,
               const std::vector<double>* base_seconds = nullptr) const;
};

// The largest E <= 16 dividing both sides of w such that w is zero outside E equal diagonal blocks.
int diagonal_block_count(const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& w);

// Reads a predictor folder; InputError naming the file on anything malformed. `lazy`: each predictor's
// layers are read (and checked) when find() first asks for it, the rest of the file never.
PredictorSet load_predictors(const std::string& dir, bool lazy = false);
// As load_predictors(dir, true), from the binary index at index_path where that index was made from
// the folder's manifest as it is now (write_predictor_index); from the JSON otherwise. The index
// leaves PredictorSet::manifest empty.
PredictorSet load_predictors_indexed(const std::string& dir, const std::string& index_path);
void write_predictor_index(const std::string& dir, const std::string& index_path);
// Where the build keeps a predictor folder's index: $DTSIM_PREDICTOR_INDEX_DIR (empty: none), else
// the build tree's predictor_index/, as <folder name>.idx.
std::string predictor_index_path(const std::string& dir);
// Cached and lazy: a predictor folder's manifest (or its index) is read once per process, its blocks
// as needed.
std::shared_ptr<const PredictorSet> cached_predictors(const std::string& dir);

// A float vector as the manifest stores it: the base64 of its little-endian float32 values (exact,
// and read without parsing decimals); the reader takes such a string or a JSON array of numbers.
Json float_vector_json(const Eigen::VectorXf& v);
// The checksum a manifest records for a predictor's block of weights.bin: FNV-1a (64 bit) over the
// block's little-endian 32-bit words, as 16 hex digits.
std::string weights_checksum(const void* block, size_t floats);

// Where shipped predictors live: $DTSIM_PREDICTOR_DIR, else the source tree's kernels_mlp/pretrained.
std::string pretrained_root();
// GPU names that have a predictor folder (with a manifest) under pretrained_root().
std::vector<std::string> pretrained_gpus();

// The baseline and SM count of a GPU spec, and their manifest form.
Baseline baseline_of(const GpuSpec& gpu);
Json baseline_json(const Baseline& b, int sm_count);

// Writes a predictor folder (the trainer's output); the manifest must hold "gpu" and "baseline".
void write_predictors(const std::string& dir, const Json& manifest_without_predictors, const std::vector<Mlp>& mlps);

}  // namespace dtsim::mlp
