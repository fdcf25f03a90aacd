#pragma once
#include "network/collective.hpp"
#include "network/topology.hpp"

namespace dtsim {

// Double binary tree (NCCL's tree, Sanders et al.): two complementary binary trees, each carrying
// half of the buffer, pipelined; every rank is a leaf in one tree and inner in the other, so each
// pass sends and receives about n through a rank's link:
//   all-reduce (reduce up, then broadcast down: two passes)  2 depth a + 2 n b + n g
//   broadcast  depth a + n b;  reduce  depth a + n b + n g
// depth = ceil(lg g) levels inside a node plus ceil(lg N) across nodes, the latter at the
// network's latency; bandwidth is the ring's (each tree leaves a node once).
class DoubleBinaryTreeAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "tree"; }
  bool supports(CollectiveOp op) const override {
    return op == CollectiveOp::AllReduce || op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
  }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
};

}  // namespace dtsim
