#include "kernels_mlp/mlp_model.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "roofline/impl/roofline_model.hpp"

namespace dtsim::mlp {

bool have_predictors() { return !pretrained_gpus().empty(); }

// Closeness of two GPUs on the roofline's axes: peak FLOP/s per math mode and memory bandwidth.
static double distance(const GpuSpec& a, const GpuSpec& b) {
  double d = std::pow(std::log(a.memory_bandwidth_Bps / b.memory_bandwidth_Bps), 2);
  for (int m = 0; m < kMathModes; ++m) d += std::pow(std::log(a.peak_flops[m] / b.peak_flops[m]), 2);
  return d;
}

MlpComputeModel::MlpComputeModel(GpuSpec target) : target_(std::move(target)) {
  auto gpus = pretrained_gpus();
  if (gpus.empty()) throw InputError("--compute-model", "no measured predictors under " + pretrained_root());
  std::string pick;
  if (std::find(gpus.begin(), gpus.end(), target_.name) != gpus.end()) {
    pick = target_.name;
  } else {
    double best = 0;
    for (const auto& g : gpus) {
      double d = distance(load_gpu(g), target_);
      if (pick.empty() || d < best) pick = g, best = d;
    }
  }
  measured_ = load_gpu(pick);
  set_ = cached_predictors(pretrained_root() + "/" + pick);
}

std::string MlpComputeModel::note() const {
  if (measured_.name == target_.name && distance(measured_, target_) == 0) return "mlp predictors measured on " + measured_.name;
  return "mlp predictors measured on " + measured_.name + ", scaled to " + target_.name + " by the ratio of their roofline times";
}

void MlpComputeModel::times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const {
  std::vector<double> measured;
  set_->predict(ks, measured);
  out.resize(ks.size());
  RooflineModel target_roof(target_), measured_roof(measured_);
  for (size_t i = 0; i < ks.size(); ++i) {
    KernelTime t = target_roof.time(ks[i]);
    if (!std::isnan(measured[i])) {
      const double fixed_diff_s = target_.kernel_overhead_s - measured_.kernel_overhead_s;
      t.seconds = measured[i] * ((t.seconds - fixed_diff_s) / measured_roof.time(ks[i]).seconds) + fixed_diff_s;
    }
    out[i] = t;
  }
}

KernelTime MlpComputeModel::time(const KernelDesc& k) const {
  std::vector<KernelTime> out;
  times({k}, out);
  return out[0];
}

}  // namespace dtsim::mlp
