#pragma once
// The links a job's collectives cross, from the cluster spec and the placement: GPUs of a node talk
// over NVLink/NVSwitch or PCIe, nodes over NICs (shared by the node's GPUs, thinned by
// oversubscription). The textbook algorithms read these alpha-beta-gamma costs.
#include <string>

#include "network/collective.hpp"

namespace dtsim {

struct AlphaBeta {
  int ranks = 1, nodes = 1, local = 1;  // local: GPUs on the fullest node
  double base_s = 0;                    // per call
  double alpha_intra_s = 0;             // per message inside a node
  double alpha_inter_s = 0;             // per message across the network
  double beta_intra_s_per_byte = 0;     // one GPU's intra-node link
  // One GPU's share of its node's network when every GPU of the node sends at once.
  double beta_inter_s_per_byte = 0;
  // A ring or tree leaves each node once per pass: the lesser of a GPU's intra link and the whole
  // node's network.
  double beta_ring_s_per_byte = 0;
  double gamma_s_per_byte = 0;  // per byte reduced
  std::string bottleneck;       // the link behind beta_ring, in words

  // Pairwise exchanges at rank distance d (ranks filled node by node): inside a node while d < local.
  bool crosses_network(int d) const { return nodes > 1 && d >= local; }
  double alpha(int d) const { return crosses_network(d) ? alpha_inter_s : alpha_intra_s; }
  double beta(int d) const { return crosses_network(d) ? beta_inter_s_per_byte : beta_intra_s_per_byte; }
};

// The cluster's own numbers: intra_node, inter_node and collectives.base_latency_s.
AlphaBeta textbook_costs(const Placement& p, const ClusterSpec& c);

int ceil_log2(int p);   // rounds of a recursive algorithm on p ranks (0 for p <= 1)
int floor_log2(int p);

}  // namespace dtsim
