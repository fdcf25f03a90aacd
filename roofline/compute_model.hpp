#pragma once
// Compute models: predict one kernel's time on one GPU. Implementations live in roofline/impl/ and
// kernels_mlp/ and are chosen by name.
#include <memory>
#include <string>
#include <vector>

#include "model/kernels.hpp"
#include "roofline/gpu_spec.hpp"

namespace dtsim {

struct KernelTime {
  double seconds = 0;
  bool memory_bound = false;  // limited by bytes rather than FLOPs
};

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  virtual std::string name() const = 0;
  virtual KernelTime time(const KernelDesc& k) const = 0;
};

std::unique_ptr<ComputeModel> make_compute_model(const std::string& name, const GpuSpec& gpu);
std::vector<std::string> compute_model_names();

// The roofline's two floors, exposed for tests and the what-if ratio of later predictors.
double roofline_compute_s(const KernelDesc& k, const GpuSpec& gpu);
double roofline_memory_s(const KernelDesc& k, const GpuSpec& gpu);

}  // namespace dtsim
