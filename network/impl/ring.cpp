#include "network/impl/ring.hpp"

#include <algorithm>

namespace dtsim {

LinkCost RingAlgorithm::link_cost(const Placement& p, const ClusterSpec& c) {
  LinkCost l;
  l.base_s = c.collectives.base_latency_s;
  // A reduction reads two operands and writes one: three bytes of GPU memory traffic per byte.
  l.gamma_s_per_byte = 3.0 / c.gpu.memory_bandwidth_Bps;
  if (p.nodes <= 1) {
    l.alpha_s = c.intra.latency_s;
    l.beta_s_per_byte = 1.0 / c.intra.bandwidth_Bps;
    l.bottleneck = "intra-node " + c.intra.kind;
    return l;
  }
  double node_bw = c.inter.node_bandwidth_Bps();
  l.alpha_s = c.intra.latency_s;
  l.alpha_inter_s = c.inter.latency_s;
  l.inter_steps_per_pass = p.nodes;
  if (node_bw < c.intra.bandwidth_Bps) {
    l.beta_s_per_byte = 1.0 / node_bw;
    l.bottleneck = "inter-node network";
  } else {
    l.beta_s_per_byte = 1.0 / c.intra.bandwidth_Bps;
    l.bottleneck = "intra-node " + c.intra.kind;
  }
  return l;
}

double RingAlgorithm::time_s(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  if (p.gpus <= 1 || bytes <= 0) return 0;  // nothing leaves the GPU; NCCL returns at once on count 0
  const LinkCost l = link_cost(p, c);
  const double steps = p.gpus - 1;
  const double share = steps / p.gpus;  // (p-1)/p
  // Latency of `passes` trips around the ring: p-1 steps each, of which some cross the network.
  auto latency = [&](double passes) {
    double inter = std::min(steps, l.inter_steps_per_pass) * passes;
    return l.base_s + (steps * passes - inter) * l.alpha_s + inter * l.alpha_inter_s;
  };
  switch (op) {
    case CollectiveOp::AllReduce:
      return latency(2) + 2 * share * bytes * l.beta_s_per_byte + share * bytes * l.gamma_s_per_byte;
    case CollectiveOp::ReduceScatter:
      return latency(1) + share * bytes * (l.beta_s_per_byte + l.gamma_s_per_byte);
    case CollectiveOp::AllGather:
      return latency(1) + share * bytes * l.beta_s_per_byte;
    case CollectiveOp::Broadcast:
      return latency(1) + bytes * l.beta_s_per_byte;
  }
  return 0;
}

}  // namespace dtsim
