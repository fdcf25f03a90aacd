#pragma once
// Where a job's GPUs sit in a cluster's nodes, and the groups that hierarchical schemes talk in.
// network/collective.hpp places a job on a cluster (place()); the collectives price a placement.
#include <cstdint>

namespace dtsim {

// Where a job's GPUs sit: ceil(gpus / gpus_per_node) nodes, filled in order.
struct Placement {
  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  // GPUs on the fullest node: they share its NICs.
  int local_gpus() const { return gpus < gpus_per_node ? gpus : gpus_per_node; }
};
// Largest job dtsim prices: 2^24 GPUs (16.7 million); beyond it the answer would be fiction.
constexpr int64_t kMaxGpus = int64_t(1) << 24;

// Where hierarchical schemes (hierarchical, hierarchical-leader, daso) talk: the GPUs of the job's
// fullest node, and one GPU per node.
Placement node_placement(const Placement& where);
Placement one_per_node_placement(const Placement& where);

}  // namespace dtsim
