#pragma once
#include "network/collective.hpp"
#include "network/topology.hpp"

namespace dtsim {

// The ring schedule NCCL uses, priced with the cluster's own alpha-beta-gamma (the literature's
// formula; `auto` adds NCCL's protocols and channels). All-reduce is a reduce-scatter then an
// all-gather, each p-1 steps of n/p bytes:
//   all-reduce  base + 2(p-1)a + 2(p-1)/p n b + (p-1)/p n g
//   reduce-scatter and all-gather  base + (p-1)a + (p-1)/p n b  (+ (p-1)/p n g for the reduction)
//   broadcast (pipelined)  base + (p-1)a + n b;  reduce  the same + n g
// Across N nodes a pass around the ring crosses the network N times; those steps cost the network's
// latency instead of the NVLink's. Every ring leaves and enters each node once, so its bandwidth is
// the lesser of a GPU's intra-node link and its node's share of the inter-node fabric.
class RingAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "ring"; }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
  static LinkCost link_cost(const Placement& p, const ClusterSpec& c);
};

// The ring formula on any alpha-beta-gamma costs (MPI reuses it with its own latencies).
double ring_time(CollectiveOp op, double bytes, const AlphaBeta& t);

}  // namespace dtsim
