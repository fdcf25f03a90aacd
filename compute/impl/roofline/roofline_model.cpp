#include "compute/impl/roofline/roofline_model.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dtsim {

double roofline_compute_s(const KernelDesc& k, const GpuSpec& gpu) {
  const double peak = gpu.peak_flops[static_cast<int>(k.math)];
  // A GPU without units for the mode (peak_tflops null, e.g. V100 and bf16): no rate to divide by.
  if (!(peak > 0))
    throw InputError("gpu " + gpu.name, std::string("has no ") + math_name(k.math) + " math (peak_tflops." + math_name(k.math) +
                                            " is null in its spec): it cannot run this precision");
  return k.flops / (peak * gpu.compute_efficiency_for(k.math));
}

double roofline_memory_s(const KernelDesc& k, const GpuSpec& gpu) {
  return k.bytes / (gpu.memory_bandwidth_Bps * gpu.memory_efficiency);
}

double physics_floor_s(const KernelDesc& k, const GpuSpec& gpu) {
  return std::max(k.flops / gpu.peak_flops[static_cast<int>(k.math)], k.bytes / gpu.memory_bandwidth_Bps);
}

KernelTime RooflineModel::time(const KernelDesc& k) const {
  double c = roofline_compute_s(k, gpu_), m = roofline_memory_s(k, gpu_);
  // Attainment factors are at most 1 (gpu_spec.cpp), so this is never below physics_floor_s.
  return KernelTime{std::max(c, m) + gpu_.kernel_overhead_s, m > c, TimeSource::Roofline, true};
}

DTSIM_REGISTER(ComputeModelRegistry, {"roofline", 2, "analytical: FLOPs at the attained peak of the math unit, bytes at the attained memory bandwidth, plus a fixed cost per kernel",
                                       [](const GpuSpec& g) -> std::unique_ptr<ComputeModel> { return std::make_unique<RooflineModel>(g); }})

}  // namespace dtsim
