// Shapes to measure: the layers of dtsim's model zoo (configs/models/*.json, docs/model-format.md)
// at many batch sizes, plus randomised shapes around them.
#pragma once

#include <random>
#include <string>
#include <vector>

namespace dh {

// Per-sample layer shapes (no batch), deduplicated across the zoo; `source` names the first
// model/layer that has the shape.
struct ConvLayer {
  int C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, groups;
  std::string source;
};
struct LinearLayer {
  int in, out;
  std::string source;
};
struct BnLayer {
  int C, H, W;
  std::string source;
};
struct PoolLayer {
  std::string mode;  // max | avg
  int C, H, W, R, S, stride, pad;
  std::string source;
};
struct EltLayer {  // relu/relu6 (op), add: elements per sample
  std::string op;
  long long elements;
  std::string source;
};
// One input of a concatenation along channels: the harness copies each input into its slice of the
// output with a kernel of its own (train_kernels.cu concat_slice).
struct ConcatSlice {
  int Cs, Cd;        // the input's channels, the output's
  long long HW;      // spatial elements per channel
  std::string source;
};
struct ClassLayer {  // softmax cross-entropy: classes per sample
  int classes;
  std::string source;
};
struct ModelParams {  // optimizer update: all parameters of a model
  long long params;
  std::string source;
};

struct Zoo {
  std::vector<std::string> models;
  std::vector<ConvLayer> conv;
  std::vector<LinearLayer> linear;
  std::vector<BnLayer> bn;
  std::vector<PoolLayer> pool;
  std::vector<EltLayer> act, add;
  std::vector<ClassLayer> softmax;
  std::vector<ConcatSlice> concat;
  std::vector<ModelParams> params;
};

// Reads every *.json in `dir` (skipping names in `skip`, e.g. "tiny"); throws on malformed files.
Zoo load_zoo(const std::string& dir, const std::vector<std::string>& only, const std::vector<std::string>& skip);

// Random integer, log-uniform in [lo, hi].
int log_uniform(std::mt19937_64& rng, int lo, int hi);

}  // namespace dh
