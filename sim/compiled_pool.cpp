#include "sim/compiled_pool.hpp"

#include <algorithm>
#include <string>

namespace dtsim {

std::optional<KernelTime> compiled_pool_time(const CompiledPooling& p, const KernelDesc& k, const GpuSpec& gpu) {
  if (!is_compiled_pool(k) || p.bandwidth_fraction <= 0 || gpu.sm_count <= 0 || gpu.sm_clock_Hz <= 0) return std::nullopt;
  const bool max = std::string(k.variant) == kInductorMaxPool;
  const bool fwd = k.pass == Pass::Fwd;
  const auto it = p.cost.find(std::string(max ? "max" : "avg") + (fwd ? "/fwd" : "/bwd"));
  if (it == p.cost.end()) return std::nullopt;
  const auto& s = k.shape;  // N C H W R S stride pad P Q
  const double in = static_cast<double>(s[0]) * s[1] * s[2] * s[3], out = static_cast<double>(s[0]) * s[1] * s[8] * s[9];
  const int64_t stride = std::max<int64_t>(s[6], 1);
  // Forward: each output reads its window. Backward: each input gathers from the outputs whose
  // windows may hold it, ceil(R/stride) x ceil(S/stride) of them.
  const double windows = fwd ? out * s[4] * s[5] : in * ((s[4] + stride - 1) / stride) * ((s[5] + stride - 1) / stride);
  // Input and output once; max pooling keeps its argmax as a one-byte offset in the window per output.
  const double bytes = (in + out) * element_bytes(k.math) + (max ? out : 0.0);
  const double memory_s = bytes / (p.bandwidth_fraction * gpu.memory_bandwidth_Bps);
  const double issue_s = (windows * it->second.window_cycles + in * it->second.input_cycles) / (gpu.sm_count * gpu.sm_clock_Hz);
  KernelTime t;
  t.seconds = std::max({memory_s, issue_s, physics_floor_s(k, gpu)}) + gpu.kernel_overhead_s;
  t.memory_bound = memory_s >= issue_s;
  return t;
}

}  // namespace dtsim
