#pragma once
// A GPU as the roofline sees it: peak arithmetic per math mode, memory bandwidth and capacity, plus
// the fractions of those peaks that real cuDNN/cuBLAS kernels reach (modelling constants, in data).
#include <array>
#include <string>

#include "common/json_util.hpp"
#include "model/kernels.hpp"

namespace dtsim {

struct GpuSpec {
  std::string name;
  std::array<double, kMathModes> peak_flops{};  // FLOP/s, dense, indexed by MathMode
  double memory_bandwidth_Bps = 0;
  double memory_bytes = 0;
  int sm_count = 0;
  // Roofline attainment: the share of peak FLOP/s and of memory bandwidth a well-tuned kernel
  // reaches, and a fixed per-kernel cost on the GPU (ramp-up, tail, launch gap).
  double compute_efficiency = 1;
  double memory_efficiency = 1;
  double kernel_overhead_s = 0;
};

// A GPU object (inline in a cluster file) or a name resolved in configs/gpus/NAME.json.
GpuSpec parse_gpu(JsonObject o);
GpuSpec load_gpu(const std::string& name_or_path);

}  // namespace dtsim
