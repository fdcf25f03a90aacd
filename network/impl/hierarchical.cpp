#include "network/impl/hierarchical.hpp"

#include <algorithm>

#include "network/impl/ring.hpp"

namespace dtsim {

CollectiveEstimate HierarchicalAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  if (p.gpus <= 1 || bytes <= 0) return {0, name(), "", 0};
  const AlphaBeta all = textbook_costs(p, c);
  // The two levels as rings of their own; the call's fixed cost is paid once.
  AlphaBeta intra = all;
  intra.ranks = all.local;
  intra.nodes = 1;
  intra.beta_ring_s_per_byte = all.beta_intra_s_per_byte;
  intra.base_s = 0;
  AlphaBeta inter = all;
  inter.ranks = all.nodes;
  inter.local = 1;
  inter.alpha_intra_s = inter.alpha_inter_s;  // every step of the inter-node ring crosses the network
  inter.nodes = 1;
  inter.base_s = 0;
  // g rings run side by side, each on one GPU's share of the node's NICs.
  inter.beta_ring_s_per_byte = all.beta_inter_s_per_byte;
  AlphaBeta inter_one = inter;  // one GPU per node: the whole node's network (or its own link)
  inter_one.beta_ring_s_per_byte = all.beta_ring_s_per_byte;
  const double g = all.local;
  double s = all.base_s;
  switch (op) {
    case CollectiveOp::AllReduce:
      s += ring_time(CollectiveOp::ReduceScatter, bytes, intra) + ring_time(CollectiveOp::AllReduce, bytes / g, inter) +
           ring_time(CollectiveOp::AllGather, bytes, intra);
      break;
    case CollectiveOp::ReduceScatter:
      s += ring_time(CollectiveOp::ReduceScatter, bytes, intra) + ring_time(CollectiveOp::ReduceScatter, bytes / g, inter);
      break;
    case CollectiveOp::AllGather:
      s += ring_time(CollectiveOp::AllGather, bytes / g, inter) + ring_time(CollectiveOp::AllGather, bytes, intra);
      break;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce:
      s += ring_time(op, bytes, inter_one) + ring_time(op, bytes, intra);
      break;
  }
  return {s, name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"hierarchical", 7, "two levels of rings: inside each node, then across nodes, on the cluster's own alpha-beta-gamma costs",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<HierarchicalAlgorithm>(); }})

}  // namespace dtsim
