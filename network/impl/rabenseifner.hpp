#pragma once
#include "network/collective.hpp"
#include "network/topology.hpp"

namespace dtsim {

// Rabenseifner (MPICH's choice for long messages): a reduce-scatter by recursive halving, then an
// all-gather by recursive doubling, the big halves exchanged at the smallest distances:
//   all-reduce  2 lg p a + 2(p-1)/p n b + (p-1)/p n g
//   reduce-scatter, all-gather  lg p a + (p-1)/p n b  (+ g for the reduction)
//   broadcast (scatter + all-gather, van de Geijn)  2 lg p a + 2(p-1)/p n b
//   reduce (reduce-scatter + gather)  2 lg p a + 2(p-1)/p n b + (p-1)/p n g
class RabenseifnerAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "rabenseifner"; }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
};

double rabenseifner_time(CollectiveOp op, double bytes, const AlphaBeta& t);

}  // namespace dtsim
