#pragma once
#include "network/collective.hpp"

namespace dtsim {

// A gRPC-style parameter server (docs/design.md §4 Collectives, §5 Beyond data parallelism): every
// worker pushes its n bytes of gradients, sharded over S server ranks, and pulls the summed n back.
// A server receives n/S from each of p workers, so its link carries n max(p/S, 1) each way:
//   all-reduce (push + pull)  2 n max(p/S, 1) b_server + 2 a;  reduce (push)  and broadcast (pull)
//   half of that. b_server: one NIC at the RPC stack's efficiency; a: one RPC.
// Constants: collectives.parameter_server (S = 0: one server per node of the job).
class ParameterServerAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "ps"; }
  bool supports(CollectiveOp op) const override {
    return op == CollectiveOp::AllReduce || op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
  }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
};

}  // namespace dtsim
