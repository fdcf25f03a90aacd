#pragma once
// The measured compute model: a kernel's time is its predictor's time on the measured GPU, times
// the ratio of the target's and the measured GPU's roofline times for that kernel — 1 on the
// measured GPU itself, the what-if scaling on any other. Kernels without a predictor (kinds or
// math modes the harness does not measure) take the target's roofline time.
#include <memory>

#include "kernels_mlp/mlp.hpp"
#include "roofline/compute_model.hpp"

namespace dtsim::mlp {

bool have_predictors();

class MlpComputeModel : public ComputeModel {
 public:
  // Uses the predictors of `target` if shipped, else those of the closest measured GPU.
  explicit MlpComputeModel(GpuSpec target);
  std::string name() const override { return "mlp"; }
  std::string note() const override;
  KernelTime time(const KernelDesc& k) const override;
  void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const override;

  const GpuSpec& measured_gpu() const { return measured_; }
  // Whether a measured predictor (rather than the roofline) times this kernel.
  bool covers(const KernelDesc& k) const { return set_->find(predictor_key(k)) != nullptr; }

 private:
  GpuSpec target_, measured_;
  std::shared_ptr<const PredictorSet> set_;
};

}  // namespace dtsim::mlp
