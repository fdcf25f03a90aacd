#pragma once
// A hand-made predictor for tests: the kind's features, standardised as they come (mean 0, std 1),
// the target unscaled (mean 0, std 1), and the given layers.
#include <string>
#include <vector>

#include "compute/impl/mlp/features.hpp"
#include "compute/impl/mlp/mlp.hpp"

namespace test_mlp {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline dtsim::mlp::Mlp with_layers(const std::string& key, dtsim::KernelKind kind, std::vector<RowMajor> weights,
                                   std::vector<Eigen::VectorXf> biases) {
  dtsim::mlp::Mlp m;
  m.key = key;
  m.feature_names = dtsim::mlp::feature_names(kind);
  const Eigen::Index n = static_cast<Eigen::Index>(m.feature_names.size());
  m.feature_mean = Eigen::VectorXf::Zero(n);
  m.feature_std = Eigen::VectorXf::Ones(n);
  m.weights = std::move(weights);
  m.biases = std::move(biases);
  m.target_mean = 0.0f;
  m.target_std = 1.0f;
  m.heldout = dtsim::Json{{"mape", 0.0}};
  return m;
}

// Input width of a predictor of this kind (its feature count).
inline Eigen::Index features_of(dtsim::KernelKind kind) { return static_cast<Eigen::Index>(dtsim::mlp::feature_names(kind).size()); }

}  // namespace test_mlp
