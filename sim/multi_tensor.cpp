#include "sim/multi_tensor.hpp"

#include <algorithm>

namespace dtsim {

std::vector<int64_t> multi_tensor_launches(const MultiTensorOptimizer& m, const MultiTensorPass& pass, const std::vector<int64_t>& tensors) {
  std::vector<int64_t> launches;
  int64_t elements = 0;
  int in_launch = 0, blocks = 0;
  for (int64_t n : tensors) {
    if (n <= 0) continue;
    ++in_launch;
    const int64_t chunks = (n + m.chunk_elements - 1) / m.chunk_elements;
    for (int64_t c = 0; c < chunks; ++c) {
      elements += std::min(m.chunk_elements, n - c * m.chunk_elements);
      ++blocks;
      const bool last_chunk = c == chunks - 1;
      if ((in_launch == pass.max_tensors && last_chunk) || blocks == m.max_blocks) {
        launches.push_back(elements);
        elements = 0;
        blocks = 0;
        in_launch = last_chunk ? 0 : 1;  // a tensor cut here goes on in the next launch
      }
    }
  }
  if (blocks > 0) launches.push_back(elements);
  return launches;
}

std::string update_optimizer_name(const KernelDesc& k) { return k.kind == KernelKind::SgdUpdate ? "sgd" : k.variant; }

bool runs_multi_tensor(const MultiTensorOptimizer& m, const std::string& name) { return m.passes.count(name) > 0; }

double multi_tensor_step_bytes(const MultiTensorOptimizer& m, const std::string& name, const std::vector<int64_t>& tensors) {
  const auto it = m.passes.find(name);
  if (it == m.passes.end()) return 0;
  double bytes = 0;
  for (const MultiTensorPass& pass : it->second)
    for (int64_t elements : multi_tensor_launches(m, pass, tensors)) bytes += elements * pass.bytes_per_param;
  return bytes;
}

double multi_tensor_step_s(const MultiTensorOptimizer& m, const std::string& name, const std::vector<int64_t>& tensors,
                           double memory_bandwidth_Bps) {
  const auto it = m.passes.find(name);
  if (it == m.passes.end()) return 0;
  const double stream_Bps = m.bandwidth_fraction * memory_bandwidth_Bps;
  double s = 0;
  for (const MultiTensorPass& pass : it->second)
    for (int64_t elements : multi_tensor_launches(m, pass, tensors)) s += m.launch_s + elements * pass.bytes_per_param / stream_Bps;
  return s;
}

}  // namespace dtsim
