#pragma once
#include "network/collective.hpp"
#include "network/topology.hpp"

namespace dtsim {

// Hierarchical (two-level) collectives on N nodes of g GPUs, each level a ring:
//   all-reduce  intra-node reduce-scatter of n, then g inter-node all-reduces of n/g in parallel
//               (one per local rank, each on its share of the NICs), then intra-node all-gather
//   reduce-scatter  intra reduce-scatter of n, inter reduce-scatter of n/g
//   all-gather  inter all-gather of n/g, intra all-gather of n
//   broadcast  inter broadcast among one GPU per node, then intra broadcast; reduce the reverse
// On one node it is the intra-node ring.
class HierarchicalAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "hierarchical"; }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
};

}  // namespace dtsim
