#pragma once
// torch.compile's generated pooling kernels (workload/kernels.hpp kInductorMaxPool, kInductorAvgPool).
// They run far below their bytes' time where the window overlaps (max 3x3/s2: about 1.25e12 window
// elements a second on an H200 in bf16 and fp32 alike, a third of the bandwidth's rate in bf16): the
// SMs' issue of the index arithmetic, compares and gathers bounds them, not the memory. So a kernel
// takes the longer of its bytes at the profile's bandwidth fraction and its elements' SM cycles at
// the GPU's SM count and clock, plus the GPU's per-kernel overhead, as the roofline adds it
// (validation/scripts/compiled_pool_fit.py fits the cycles; docs/training-modes.md, "Pooling").
#include <optional>

#include "compute/compute_model.hpp"
#include "hardware/gpu_spec.hpp"
#include "network/cluster.hpp"
#include "workload/kernels.hpp"

namespace dtsim {

// The time of a compiled pooling kernel; nullopt for any other kernel, where the profile gives no
// cost for its mode and pass, or where the GPU preset lacks its SM count or clock (the compute model
// prices it then).
std::optional<KernelTime> compiled_pool_time(const CompiledPooling& p, const KernelDesc& k, const GpuSpec& gpu);

}  // namespace dtsim
