#include "roofline/impl/roofline_model.hpp"

#include <algorithm>

namespace dtsim {

double roofline_compute_s(const KernelDesc& k, const GpuSpec& gpu) {
  return k.flops / (gpu.peak_flops[static_cast<int>(k.math)] * gpu.compute_efficiency);
}

double roofline_memory_s(const KernelDesc& k, const GpuSpec& gpu) {
  return k.bytes / (gpu.memory_bandwidth_Bps * gpu.memory_efficiency);
}

KernelTime RooflineModel::time(const KernelDesc& k) const {
  double c = roofline_compute_s(k, gpu_), m = roofline_memory_s(k, gpu_);
  return KernelTime{std::max(c, m) + gpu_.kernel_overhead_s, m > c};
}

}  // namespace dtsim
