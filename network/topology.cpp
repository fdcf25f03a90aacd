#include "network/topology.hpp"

#include <algorithm>

namespace dtsim {

int ceil_log2(int p) {
  int r = 0;
  while ((1 << r) < p) ++r;
  return r;
}

int floor_log2(int p) {
  int r = 0;
  while ((2 << r) <= p) ++r;
  return r;
}

AlphaBeta textbook_costs(const Placement& p, const ClusterSpec& c) {
  AlphaBeta t;
  t.ranks = p.gpus;
  t.nodes = p.nodes;
  t.local = p.local_gpus();
  t.base_s = c.collectives.base_latency_s;
  t.alpha_intra_s = c.intra.latency_s;
  t.alpha_inter_s = c.inter.latency_s;
  t.beta_intra_s_per_byte = 1.0 / c.intra.bandwidth_Bps;
  // A reduction reads two operands and writes one: three bytes of GPU memory traffic per byte.
  t.gamma_s_per_byte = 3.0 / c.gpu.memory_bandwidth_Bps;
  const double node_bw = c.inter.node_bandwidth_Bps();
  t.beta_inter_s_per_byte = 1.0 / std::min(c.intra.bandwidth_Bps, node_bw / t.local);
  if (p.nodes > 1 && node_bw < c.intra.bandwidth_Bps) {
    t.beta_ring_s_per_byte = 1.0 / node_bw;
    t.bottleneck = "inter-node network";
  } else {
    t.beta_ring_s_per_byte = 1.0 / c.intra.bandwidth_Bps;
    t.bottleneck = "intra-node " + c.intra.kind;
  }
  return t;
}

}  // namespace dtsim
