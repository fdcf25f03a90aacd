#pragma once
// A GPU as the roofline sees it: peak arithmetic per math mode, memory bandwidth and capacity, plus
// the fractions of those peaks that real cuDNN/cuBLAS kernels reach (modelling constants, in data).
#include <array>
#include <string>

#include "core/json_util.hpp"
#include "core/precision.hpp"

namespace dtsim {

// What a GPU preset's numbers rest on (configs/gpus/*.json "basis"; docs/cluster-format.md).
//   datasheet            peaks, bandwidth, capacity and SMs from NVIDIA's documents; the roofline
//                        attainment is not a measurement of this GPU (borrowed or assumed: its note says)
//   datasheet+published  as datasheet, with the attainment from published microbenchmarks of this GPU
//   datasheet+measured   as datasheet+published, and this project measured the GPU itself (kernel
//                        predictors, validation runs)
//   unstated             a GPU file or inline object that does not say (allowed outside configs/gpus)
const char* const kGpuBases[] = {"datasheet", "datasheet+published", "datasheet+measured"};

struct GpuSpec {
  std::string name;
  std::array<double, kMathModes> peak_flops{};  // FLOP/s, dense, indexed by MathMode; 0: no such math
  // Whether the GPU has units for a math mode. A mode given as null in peak_tflops has none: TF32
  // then runs at the FP32 rate (cuDNN/cuBLAS run TF32-permitted math in FP32 where there are no TF32
  // units), BF16 and FP16 at no rate at all (peak 0: a kernel in that mode is an input error).
  std::array<bool, kMathModes> native{};
  double memory_bandwidth_Bps = 0;
  double memory_bytes = 0;  // memory_GiB * 2^30
  int sm_count = 0;
  // SM (boost) clock, Hz; 0 where the preset does not give it. With sm_count it is the rate at which
  // the SMs issue work, which sets the time of a kernel that neither its FLOPs nor its bytes bound.
  double sm_clock_Hz = 0;
  // L2 cache, from the datasheet; 0 where a preset does not give it. The loss predictors use it to tell
  // whether PyTorch's multi-pass log_softmax re-reads its rows from L2 or from memory (compute/impl/mlp/features.cpp).
  double l2_cache_bytes = 0;
  // Roofline attainment: the share of peak FLOP/s and of memory bandwidth a well-tuned kernel
  // reaches, and a fixed per-kernel cost on the GPU (ramp-up, tail, launch gap).
  double compute_efficiency = 1;
  // Per math unit where a preset cites a figure for that unit (roofline.compute_efficiency_by_math):
  // 0 for a mode not given, which falls back to compute_efficiency. Use compute_efficiency_for().
  std::array<double, kMathModes> compute_efficiency_by_math{};
  double memory_efficiency = 1;
  double kernel_overhead_s = 0;
  std::string basis = "unstated";  // one of kGpuBases, or "unstated"
  std::string basis_note;

  bool supports(MathMode m) const { return native[static_cast<int>(m)]; }
  // The compute efficiency of the unit that runs math mode m: its own figure where given; TF32 on a
  // GPU without TF32 units runs on the FP32 units and takes fp32's; otherwise compute_efficiency.
  double compute_efficiency_for(MathMode m) const {
    const double own = compute_efficiency_by_math[static_cast<int>(m)];
    if (own > 0) return own;
    const double fp32 = compute_efficiency_by_math[static_cast<int>(MathMode::FP32)];
    if (m == MathMode::TF32 && !supports(MathMode::TF32) && fp32 > 0) return fp32;
    return compute_efficiency;
  }
};

// A GPU object (inline in a cluster file) or a name resolved in configs/gpus/NAME.json.
GpuSpec parse_gpu(JsonObject o);
GpuSpec load_gpu(const std::string& name_or_path);

}  // namespace dtsim
