#include "network/impl/rabenseifner.hpp"

#include "network/impl/recursive_doubling.hpp"

namespace dtsim {

double rabenseifner_time(CollectiveOp op, double bytes, const AlphaBeta& t) {
  if (t.ranks <= 1 || bytes <= 0) return 0;
  const double rs = recursive_rounds_time(t, true, rounds_bytes_halved, bytes);
  const double ag = recursive_rounds_time(t, false, rounds_bytes_halved, bytes);
  switch (op) {
    case CollectiveOp::AllReduce: return t.base_s + rs + ag;
    case CollectiveOp::ReduceScatter: return t.base_s + rs;
    case CollectiveOp::AllGather: return t.base_s + ag;
    case CollectiveOp::Broadcast: return t.base_s + 2 * ag;
    case CollectiveOp::Reduce: return t.base_s + rs + ag;
  }
  return 0;
}

CollectiveEstimate RabenseifnerAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  return {rabenseifner_time(op, bytes, textbook_costs(p, c)), name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"rabenseifner", 6, "reduce-scatter by halving, all-gather by doubling (MPICH's choice for long messages) on the cluster's own alpha-beta-gamma costs",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<RabenseifnerAlgorithm>(); }})

}  // namespace dtsim
