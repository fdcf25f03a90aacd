#include "network/impl/ring.hpp"

#include <algorithm>

namespace dtsim {

LinkCost RingAlgorithm::link_cost(const Placement& p, const ClusterSpec& c) {
  const AlphaBeta t = textbook_costs(p, c);
  LinkCost l;
  l.base_s = t.base_s;
  l.gamma_s_per_byte = t.gamma_s_per_byte;
  l.alpha_s = t.alpha_intra_s;
  if (p.nodes > 1) {
    l.alpha_inter_s = t.alpha_inter_s;
    l.inter_steps_per_pass = p.nodes;
  }
  l.beta_s_per_byte = t.beta_ring_s_per_byte;
  l.bottleneck = t.bottleneck;
  return l;
}

double ring_time(CollectiveOp op, double bytes, const AlphaBeta& t) {
  if (t.ranks <= 1 || bytes <= 0) return 0;  // nothing leaves the GPU; NCCL returns at once on count 0
  const double steps = t.ranks - 1;
  const double share = steps / t.ranks;  // (p-1)/p
  const double inter_per_pass = t.nodes > 1 ? std::min<double>(steps, t.nodes) : 0;
  // Latency of `passes` trips around the ring: p-1 steps each, of which some cross the network.
  auto latency = [&](double passes) {
    double inter = inter_per_pass * passes;
    return t.base_s + (steps * passes - inter) * t.alpha_intra_s + inter * t.alpha_inter_s;
  };
  const double b = t.beta_ring_s_per_byte, g = t.gamma_s_per_byte;
  switch (op) {
    case CollectiveOp::AllReduce: return latency(2) + 2 * share * bytes * b + share * bytes * g;
    case CollectiveOp::ReduceScatter: return latency(1) + share * bytes * (b + g);
    case CollectiveOp::AllGather: return latency(1) + share * bytes * b;
    case CollectiveOp::Broadcast: return latency(1) + bytes * b;
    case CollectiveOp::Reduce: return latency(1) + bytes * (b + g);
  }
  return 0;
}

CollectiveEstimate RingAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  return {ring_time(op, bytes, textbook_costs(p, c)), name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"ring", 3, "the ring schedule on the cluster's own alpha-beta-gamma costs (intra_node, inter_node, collectives.base_latency_s)",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<RingAlgorithm>(); }})

}  // namespace dtsim
