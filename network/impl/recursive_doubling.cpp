#include "network/impl/recursive_doubling.hpp"

#include <algorithm>

namespace dtsim {

double recursive_rounds_time(const AlphaBeta& t, bool reduce, double (*bytes_of)(int k, double n, int p), double n) {
  double s = 0;
  const int rounds = ceil_log2(t.ranks);
  for (int k = 0; k < rounds; ++k) {
    const int d = 1 << k;
    const double b = bytes_of(k, n, t.ranks);
    s += t.alpha(d) + b * t.beta(d) + (reduce ? b * t.gamma_s_per_byte : 0);
  }
  return s;
}

double rounds_bytes_whole(int, double n, int) { return n; }
// All-gather by doubling: round k sends what the rank has gathered so far, 2^k pieces of n/p.
double rounds_bytes_gathered(int k, double n, int p) { return std::min<double>(1 << k, p - (1 << k)) * n / p; }
// Reduce-scatter by halving, distance doubling (the big halves stay inside a node): n/2, n/4, ...;
// the last round takes what is left of (p-1)/p n, which keeps the sum exact when p is no power of 2.
double rounds_bytes_halved(int k, double n, int p) {
  const int rounds = ceil_log2(p);
  if (k + 1 < rounds) return n / (2 << k);
  return n * (1.0 / (1 << (rounds - 1)) - 1.0 / p);
}

double recursive_doubling_time(CollectiveOp op, double bytes, const AlphaBeta& t) {
  if (t.ranks <= 1 || bytes <= 0) return 0;
  switch (op) {
    case CollectiveOp::AllReduce: return t.base_s + recursive_rounds_time(t, true, rounds_bytes_whole, bytes);
    case CollectiveOp::AllGather: return t.base_s + recursive_rounds_time(t, false, rounds_bytes_gathered, bytes);
    case CollectiveOp::ReduceScatter: return t.base_s + recursive_rounds_time(t, true, rounds_bytes_halved, bytes);
    case CollectiveOp::Broadcast: return t.base_s + recursive_rounds_time(t, false, rounds_bytes_whole, bytes);
    case CollectiveOp::Reduce: return t.base_s + recursive_rounds_time(t, true, rounds_bytes_whole, bytes);
  }
  return 0;
}

CollectiveEstimate RecursiveDoublingAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  return {recursive_doubling_time(op, bytes, textbook_costs(p, c)), name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"recursive-doubling", 5, "recursive doubling (MPICH's choice for short messages) on the cluster's own alpha-beta-gamma costs",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<RecursiveDoublingAlgorithm>(); }})

}  // namespace dtsim
