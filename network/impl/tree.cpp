#include "network/impl/tree.hpp"

namespace dtsim {

CollectiveEstimate DoubleBinaryTreeAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  if (!supports(op)) unsupported(op);
  if (p.gpus <= 1 || bytes <= 0) return {0, name(), "", 0};
  const AlphaBeta t = textbook_costs(p, c);
  const double depth = ceil_log2(t.local) * t.alpha_intra_s + ceil_log2(t.nodes) * t.alpha_inter_s;
  const double move = bytes * t.beta_ring_s_per_byte, reduce = bytes * t.gamma_s_per_byte;
  double s = t.base_s;
  switch (op) {
    // Two passes (reduce up, broadcast down), each of which moves the whole buffer through a link.
    case CollectiveOp::AllReduce: s += 2 * depth + 2 * move + reduce; break;
    case CollectiveOp::Broadcast: s += depth + move; break;
    case CollectiveOp::Reduce: s += depth + move + reduce; break;
    default: break;
  }
  return {s, name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"tree", 4, "double binary tree (all-reduce, broadcast, reduce) on the cluster's own alpha-beta-gamma costs",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<DoubleBinaryTreeAlgorithm>(); }})

}  // namespace dtsim
