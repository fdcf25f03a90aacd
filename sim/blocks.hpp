#pragma once
// A model's blocks: the units that activation checkpointing wraps (torch.utils.checkpoint around each
// transformer block) and that FSDP and ZeRO-3 gather and free one at a time (FSDP's auto-wrap policy
// per block). A block is a maximal run of consecutive layers whose names share the prefix up to and
// including their first ".<index>." ("transformer.h.3.", "model.layers.17.", "layer2.1."); layers
// outside every block (embeddings, the final norm, the head, the loss) belong to none.
#include <vector>

#include "workload/graph.hpp"
#include "workload/kernels.hpp"

namespace dtsim {

struct LayerBlock {
  int first = 0, last = 0;  // layer indices, inclusive
};

std::vector<LayerBlock> layer_blocks(const Graph& g);
// Per layer, the index of its block in layer_blocks(g), -1 outside every block.
std::vector<int> block_of_layers(const Graph& g, const std::vector<LayerBlock>& blocks);

// Activation checkpointing: each block's forward kernels issued again in the backward pass, just
// before the block's first backward kernel (what checkpoint's recomputation runs), in k.backward
// (and k.eager_backward where the step is compiled).
void add_recompute(const Graph& g, IterationKernels& k);

}  // namespace dtsim
