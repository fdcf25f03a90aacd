#pragma once
#include "network/collective.hpp"

namespace dtsim {

// NCCL's ring: all-reduce is a reduce-scatter then an all-gather, each p-1 steps of n/p bytes:
//   all-reduce  base + 2(p-1)a + 2(p-1)/p n b + (p-1)/p n g
//   reduce-scatter and all-gather  base + (p-1)a + (p-1)/p n b  (+ (p-1)/p n g for the reduction)
//   broadcast (pipelined)  base + (p-1)a + n b
// Across N nodes a pass around the ring crosses the network N times; those steps cost the network's
// latency instead of the NVLink's. Every ring leaves and enters each node once, so its bandwidth is
// the lesser of a GPU's intra-node link and its node's share of the inter-node fabric.
class RingAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "ring"; }
  double time_s(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
  static LinkCost link_cost(const Placement& p, const ClusterSpec& c);
};

}  // namespace dtsim
