#include "network/impl/rabenseifner.hpp"

#include "network/impl/recursive_doubling.hpp"

namespace dtsim {

double rabenseifner_time(CollectiveOp op, double bytes, const AlphaBeta& t) {
  if (t.ranks <= 1 || bytes <= 0) return 0;
  // Ranks beyond a power of two fold into their neighbours first (recursive_doubling.hpp).
  const FoldedRanks f = fold_ranks(t);
  const double rs = recursive_rounds_time(f.core, true, rounds_bytes_halved, bytes);
  const double ag = recursive_rounds_time(f.core, false, rounds_bytes_halved, bytes);
  const double whole_in = fold_step_s(f, bytes, true), whole_out = fold_step_s(f, bytes, false);
  const double piece = bytes / t.ranks;
  switch (op) {
    case CollectiveOp::AllReduce: return t.base_s + whole_in + rs + ag + whole_out;
    case CollectiveOp::ReduceScatter: return t.base_s + whole_in + rs + fold_step_s(f, piece, false);
    case CollectiveOp::AllGather: return t.base_s + fold_step_s(f, piece, false) + ag + whole_out;
    case CollectiveOp::Broadcast: return t.base_s + 2 * ag + whole_out;
    case CollectiveOp::Reduce: return t.base_s + whole_in + rs + ag;
  }
  return 0;
}

CollectiveEstimate RabenseifnerAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  return {rabenseifner_time(op, bytes, textbook_costs(p, c)), name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"rabenseifner", 6, "reduce-scatter by halving, all-gather by doubling (MPICH's choice for long messages) on the cluster's own alpha-beta-gamma costs",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<RabenseifnerAlgorithm>(); }})

}  // namespace dtsim
