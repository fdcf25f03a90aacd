#pragma once
// Measured kernel times as the harness writes them (validation/README.md: one CSV per kernel kind,
// shape fields by name, time statistics, provenance beside them), read back as KernelDescs so that
// the features of a measured kernel and of a predicted one come from the same code.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "workload/kernels.hpp"

namespace dtsim::mlp {

struct Sample {
  KernelDesc kernel;
  double time_s = 0;  // median over repeats, back to back on one stream (the harness's definition)
  std::string key;    // predictor_key(kernel)
  // Files with a `split` column (validation/pytorch/kernel_sweep.py) decide it from the shape before
  // anything is fitted: "heldout" rows lie beyond the training range and are never trained on.
  bool beyond = false;
  // GPU time alone (a CUDA-graph replay of many calls), where the file has `time_graph_s`; else NaN.
  double graph_time_s = std::numeric_limits<double>::quiet_NaN();
  // A depthwise convolution that PyTorch timed (algo "torch") on contiguous tensors in fp32 or bf16:
  // PyTorch runs those with its own conv_depthwise2d kernels, not cuDNN's (aten Convolution.cpp,
  // use_cudnn_depthwise: cuDNN for contiguous depthwise only in fp16, by a shape heuristic), so no
  // predictor trained on cuDNN's kernels describes them: such a row's kernel has the variant
  // kNativeDepthwise and its own predictor key (conv2d/PASS/MATH/native_depthwise).
  bool pytorch_native_depthwise = false;
};

// Reads one kernel CSV; rows whose kind has no predictor key are skipped. Convolutions measured on
// channels_last tensors (impl cudnn_graph_autotune_nhwc, or a layout column saying nhwc) are
// MemoryFormat::ChannelsLast, keyed conv2d/PASS/MATH/nhwc. Malformed files are InputErrors naming
// the file, line and column.
std::vector<Sample> read_kernel_csv(const std::string& path);

// Every *.csv of a folder (skipped.csv excepted), grouped by predictor key.
std::map<std::string, std::vector<Sample>> read_kernel_dataset(const std::string& dir, std::vector<std::string>* files = nullptr);

// FNV-1a 64 of a file's bytes, as hex: the manifest records which data a predictor was trained on.
std::string file_fnv1a64(const std::string& path);

// Held-out part: about one shape in five, chosen by the shape's hash.
bool is_heldout(const KernelDesc& k);

}  // namespace dtsim::mlp
