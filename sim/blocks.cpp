#include "sim/blocks.hpp"

#include <cctype>
#include <string>

namespace dtsim {

// The name's prefix up to and including its first ".<digits>."; empty where it has none.
static std::string block_prefix(const std::string& name) {
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '.') continue;
    size_t j = i + 1;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    if (j > i + 1 && j < name.size() && name[j] == '.') return name.substr(0, j + 1);
  }
  return "";
}

std::vector<LayerBlock> layer_blocks(const Graph& g) {
  std::vector<LayerBlock> out;
  std::string current;
  for (int i = 0; i < static_cast<int>(g.layers.size()); ++i) {
    const std::string p = block_prefix(g.layers[i].name);
    if (p.empty()) {
      current.clear();
      continue;
    }
    if (p == current) {
      out.back().last = i;
    } else {
      out.push_back({i, i});
      current = p;
    }
  }
  return out;
}

std::vector<int> block_of_layers(const Graph& g, const std::vector<LayerBlock>& blocks) {
  std::vector<int> of(g.layers.size(), -1);
  for (int b = 0; b < static_cast<int>(blocks.size()); ++b)
    for (int i = blocks[b].first; i <= blocks[b].last; ++i) of[i] = b;
  return of;
}

static void recompute_in(const std::vector<int>& of, const std::vector<KernelDesc>& forward, std::vector<KernelDesc>& backward, size_t blocks) {
  std::vector<std::vector<KernelDesc>> fwd(blocks);
  for (const KernelDesc& k : forward)
    if (k.layer >= 0 && of[k.layer] >= 0) fwd[of[k.layer]].push_back(k);
  std::vector<bool> done(blocks, false);
  std::vector<KernelDesc> out;
  out.reserve(backward.size() + forward.size());
  for (const KernelDesc& k : backward) {
    const int b = k.layer >= 0 ? of[k.layer] : -1;
    if (b >= 0 && !done[b]) {
      out.insert(out.end(), fwd[b].begin(), fwd[b].end());
      done[b] = true;
    }
    out.push_back(k);
  }
  backward = std::move(out);
}

void add_recompute(const Graph& g, IterationKernels& k) {
  const std::vector<LayerBlock> blocks = layer_blocks(g);
  const std::vector<int> of = block_of_layers(g, blocks);
  recompute_in(of, k.forward, k.backward, blocks.size());
  if (!k.eager_backward.empty()) recompute_in(of, k.eager_forward, k.eager_backward, blocks.size());
}

}  // namespace dtsim
