#pragma once
#include "compute/compute_model.hpp"

namespace dtsim {

// t = max(FLOPs / (peak(math) * compute_efficiency(math)), bytes / (bandwidth * memory_efficiency))
//     + kernel_overhead_s
class RooflineModel : public ComputeModel {
 public:
  explicit RooflineModel(GpuSpec gpu) : gpu_(std::move(gpu)) {}
  std::string name() const override { return "roofline"; }
  std::string note() const override { return "roofline of " + gpu_.name + " (datasheet peaks x attainment factors)"; }
  KernelTime time(const KernelDesc& k) const override;

 private:
  GpuSpec gpu_;
};

}  // namespace dtsim
